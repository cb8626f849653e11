# shellcheck shell=bash
# Helpers sourced by scripts/demo.sh and scripts/test.sh: step banners with
# timing, and CMake configuration of a build directory with Ninja.

MTIA_JOBS="${MTIA_JOBS:-2}"
MTIA_STEP_TIMES=()
_mtia_step=""
_mtia_step_start=0
_mtia_script_start=$SECONDS

# Ends the current step (if any) and starts one: mtia_step "title".
mtia_step() {
  mtia_step_end
  _mtia_step="$1"
  _mtia_step_start=$SECONDS
  printf '\n==== [%s] %s\n' "$(date +%H:%M:%S)" "$_mtia_step"
}

mtia_step_end() {
  [[ -n "$_mtia_step" ]] || return 0
  local took=$((SECONDS - _mtia_step_start))
  printf '==== done in %ss: %s\n' "$took" "$_mtia_step"
  MTIA_STEP_TIMES+=("$(printf '%6ss  %s' "$took" "$_mtia_step")")
  _mtia_step=""
}

mtia_print_times() {
  printf '\n==== step times\n'
  local line
  for line in "${MTIA_STEP_TIMES[@]}"; do printf '%s\n' "$line"; done
  printf '%6ss  total so far\n' "$((SECONDS - _mtia_script_start))"
}

# On failure, names the step that failed; prints nothing on success so that
# the last lines of a run stay those of its last command.
_mtia_on_exit() {
  local rc=$?
  if ((rc != 0)); then
    printf '\n==== FAILED (exit %s) in step: %s (after %ss)\n' "$rc" "${_mtia_step:-setup}" \
      "$((SECONDS - _mtia_step_start))" >&2
  fi
}
trap _mtia_on_exit EXIT

# mtia_cmake_configure DIR [cmake args...]: configures DIR with Ninja from
# the current directory. A DIR configured by another generator or from
# another source tree is configured afresh instead of failing.
mtia_cmake_configure() {
  local dir="$1"
  shift
  local fresh=()
  local cache="$dir/CMakeCache.txt"
  if [[ -f "$cache" ]]; then
    if ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache" ||
      ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" "$cache"; then
      fresh=(--fresh)
    fi
  fi
  cmake -S . -B "$dir" -G Ninja "${fresh[@]}" "$@"
}
