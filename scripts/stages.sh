# shellcheck shell=bash
# The configuration of CI's three build stages, in one place: scripts/test.sh
# builds and tests with it, scripts/compile_times.sh measures it (and, for an
# older commit that has no stages.sh, falls back to that commit's options).
#
#   mtia_stage_configure STAGE [ARGS...]   configure the stage's build folder
#                                          (ARGS go to cmake or meson setup)
#   mtia_stage_dir STAGE                   its build folder
#   mtia_stage_build STAGE                 build it with $MTIA_JOBS jobs
# Needs scripts/lib.sh sourced first (mtia_cmake_configure).
# Stages: meson (optimised, no sanitizer), asan (ASan+UBSan at -O1), tsan
# (TSan, RelWithDebInfo). Every stage builds the PyTorch integration.
#
# Debug information is line tables only (-g1): what sanitizer reports and
# memory-history stacks need (file:line; the frame walker reads .eh_frame,
# not DWARF), at about a quarter less compile time than full -g. For a build
# to step through in gdb, configure one by hand (README: building by hand).

MTIA_JOBS="${MTIA_JOBS:-2}"

mtia_stage_dir() {
  case "$1" in
    meson) echo build-meson ;;
    asan) echo build-asan ;;
    tsan) echo build-tsan ;;
    *) echo "stages.sh: unknown stage '$1' (meson, asan or tsan)" >&2; return 2 ;;
  esac
}

mtia_stage_configure() {
  local stage=$1
  shift
  case "$stage" in
    meson)
      # --wipe keeps no state of an earlier configuration; a folder of another kind goes.
      if [[ -f build-meson/meson-private/coredata.dat ]]; then
        meson setup --wipe build-meson -Dtorch=enabled -Dc_args=-g1 -Dcpp_args=-g1 "$@"
      else
        rm -rf build-meson
        meson setup build-meson -Dtorch=enabled -Dc_args=-g1 -Dcpp_args=-g1 "$@"
      fi
      ;;
    asan)
      mtia_cmake_configure build-asan -DCMAKE_BUILD_TYPE=Debug -DMTIA_TORCH=ON -DMTIA_SANITIZE=address,undefined \
        -DCMAKE_C_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 "$@"
      ;;
    tsan)
      mtia_cmake_configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMTIA_TORCH=ON -DMTIA_SANITIZE=thread \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "$@"
      ;;
    *) echo "stages.sh: unknown stage '$stage' (meson, asan or tsan)" >&2; return 2 ;;
  esac
}

mtia_stage_build() {
  case "$1" in
    meson) meson compile -C build-meson -j "$MTIA_JOBS" ;;
    asan | tsan) cmake --build "$(mtia_stage_dir "$1")" -j "$MTIA_JOBS" ;;
    *) echo "stages.sh: unknown stage '$1' (meson, asan or tsan)" >&2; return 2 ;;
  esac
}
