#!/usr/bin/env bash
# scripts/compile_times.sh [COMMIT] [STAGE...]: the compile time of CI's three
# build stages (scripts/test.sh) for COMMIT (default HEAD), from a clean copy.
#
# Exports COMMIT with git archive into a temporary folder, then configures and
# builds each stage there exactly as scripts/test.sh does (same options, same
# MTIA_JOBS parallelism, default 2) but with no compiler cache (CCACHE_DISABLE=1,
# no launcher), and prints, per stage, the build's wall time and CPU time
# (user+sys of the build and every compiler it ran). Configuration is not
# counted. Stages: meson asan tsan (default: all three, in that order).
#
# To compare two commits side by side, run it for each on the same quiet
# machine, one after the other:
#   scripts/compile_times.sh 1b2775e; scripts/compile_times.sh HEAD
# Each full run compiles everything three times (about 40 minutes on 2 cores).
# A commit's stage options come from its scripts/stages.sh (older commits: repeated below).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

commit="${1:-HEAD}"
shift || true
stages=("$@")
((${#stages[@]})) || stages=(meson asan tsan)
jobs="${MTIA_JOBS:-2}"
rev=$(git rev-parse --short "$commit^{commit}")

work=$(mktemp -d "${TMPDIR:-/tmp}/mtia-compile-times.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git archive --format=tar "$rev" | tar -x -C "$work/src"
cd "$work/src"

# No compiler cache anywhere: not as a launcher, not through CC/CXX, not by ccache's own settings.
export CCACHE_DISABLE=1
unset CC CXX CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER
no_launcher=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)

# The commit's own stage definitions (scripts/stages.sh) when it has them; older commits configured
# their stages inside scripts/test.sh, with the options repeated here.
if [[ -f scripts/stages.sh ]]; then
  # shellcheck disable=SC1091
  source scripts/lib.sh
  trap 'rm -rf "$work"' EXIT  # lib.sh sets an EXIT trap of its own
  # shellcheck disable=SC1091
  source scripts/stages.sh
  MTIA_JOBS=$jobs
  configure() {
    if [[ $1 == meson ]]; then  # meson setup takes no CMake arguments; CC and CXX are unset above
      mtia_stage_configure meson >"$work/configure-$1.log"
    else
      mtia_stage_configure "$1" "${no_launcher[@]}" >"$work/configure-$1.log"
    fi
  }
else
  configure() {
    case "$1" in
      meson) meson setup build-meson -Dtorch=enabled >"$work/configure-$1.log" ;;
      asan)
        cmake -S . -B build-asan -G Ninja "${no_launcher[@]}" -DCMAKE_BUILD_TYPE=Debug -DMTIA_TORCH=ON \
          -DMTIA_SANITIZE=address,undefined -DCMAKE_C_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 >"$work/configure-$1.log"
        ;;
      tsan)
        cmake -S . -B build-tsan -G Ninja "${no_launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMTIA_TORCH=ON \
          -DMTIA_SANITIZE=thread >"$work/configure-$1.log"
        ;;
      *) echo "compile_times.sh: unknown stage '$1' (meson, asan or tsan)" >&2; exit 2 ;;
    esac
  }
fi
# The build itself is the same command in every version (what stages.sh's mtia_stage_build runs).
build_command() {
  case "$1" in
    meson) echo "meson compile -C build-meson -j $jobs" ;;
    asan) echo "cmake --build build-asan -j $jobs" ;;
    tsan) echo "cmake --build build-tsan -j $jobs" ;;
  esac
}

printf 'compile times of %s (%s jobs, no ccache, %s)\n' "$rev" "$jobs" "$(uname -n)"
total_wall=0
total_cpu=0
for stage in "${stages[@]}"; do
  configure "$stage"
  # /usr/bin/time counts the children it waited for: ninja and every compiler and linker it ran.
  /usr/bin/time -f '%e %U %S' -o "$work/time-$stage" $(build_command "$stage") >"$work/build-$stage.log" 2>&1 || {
    tail -n 30 "$work/build-$stage.log" >&2
    echo "compile_times.sh: stage $stage failed to build" >&2
    exit 1
  }
  read -r wall user sys <"$work/time-$stage"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  printf '%-6s %s wall %8.1f s  cpu %8.1f s\n' "$stage" "$rev" "$wall" "$cpu"
  total_wall=$(awk -v a="$total_wall" -v b="$wall" 'BEGIN { print a + b }')
  total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN { print a + b }')
done
printf '%-6s %s wall %8.1f s  cpu %8.1f s\n' "total" "$rev" "$total_wall" "$total_cpu"
