#!/usr/bin/env bash
# Installs what is missing, then builds and runs the whole test suite three
# ways, each stage failing the run:
#   1. Meson build in build-meson/ (optimised, no sanitizer; meson test)
#   2. CMake ASan+UBSan build in build-asan/ (ctest)
#   3. CMake TSan build in build-tsan/ (RelWithDebInfo; ctest, last: the run
#      ends with ctest's summary)
# check_format reads only the sources: the sanitizer stages leave it to the
# Meson stage (they run it when MTIA_SKIP_MESON=1).
# Between 1 and 2, tools/check_build_parity.py compares the configured CMake
# and Meson builds (libraries, programs, their sources, test names).
# A plain CMake build adds little to these (the TSan stage is CMake's optimised
# configuration, the Meson stage the unsanitised one) and cost a quarter of
# the run, so CI leaves it out.
# The TSan stage leaves out the tests labelled no_tsan (single-threaded op sweeps, packaging, fuzzers:
# tests/torch/CMakeLists.txt says why): MTIA_TSAN_ALL=1 keeps them.
# Environment: MTIA_SKIP_SANITIZERS=1 replaces stages 2 and 3 by a plain CMake
# build in build/, MTIA_SKIP_MESON=1 skips stage 1 (quick local runs);
# MTIA_JOBS (default 2) sets the parallelism.
# The stages' build options are in scripts/stages.sh (compile_times.sh measures
# them). Every stage builds the PyTorch integration (MTIA_TORCH=ON, torch=enabled):
# install-deps.sh installs it, so a configuration that cannot build it fails
# the run instead of dropping the torch_* tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
source scripts/stages.sh

# The fuzzers (tests/fuzz) are built with clang, whatever the stage: once, shared by the stages.
export MTIA_FUZZ_BUILD_DIR="${MTIA_FUZZ_BUILD_DIR:-$PWD/build-fuzz}"

mtia_step "install dependencies"
bash scripts/install-deps.sh

mtia_step_end
if [[ "${MTIA_SKIP_MESON:-0}" == 1 ]]; then
  echo "MTIA_SKIP_MESON=1: Meson stage skipped"
else
  mtia_step "meson: configure build-meson/"
  mtia_stage_configure meson
  mtia_step "meson: compile"
  mtia_stage_build meson
  mtia_step "meson: test"
  meson test -C build-meson --print-errorlogs --num-processes "$MTIA_JOBS"
fi

mtia_step_end
once_only=()
if [[ "${MTIA_SKIP_SANITIZERS:-0}" == 1 ]]; then
  # Quick local runs: a plain CMake build in build/ instead of the sanitizer builds.
  echo "MTIA_SKIP_SANITIZERS=1: sanitizer stages skipped; a plain CMake build in build/ instead"
  last=build
  mtia_step "cmake: configure build/"
  mtia_cmake_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMTIA_TORCH=ON
else
  # check_format reads the sources, not the build: the Meson stage runs it, the sanitizer stages
  # would only repeat it (20 s of a CPU each). Without the Meson stage they run it.
  once_only=()
  [[ "${MTIA_SKIP_MESON:-0}" == 1 ]] || once_only=(-E '^check_format$')
  mtia_step "asan+ubsan: configure build-asan/"
  mtia_stage_configure asan
  if [[ "${MTIA_SKIP_MESON:-0}" != 1 ]]; then
    mtia_step "both builds define the same libraries, sources and tests"
    python3 tools/check_build_parity.py build-asan build-meson
  fi
  mtia_step "asan+ubsan: build"
  mtia_stage_build asan
  mtia_step "asan+ubsan: ctest"
  # A caller's own settings come last and win.
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:print_stacktrace=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    ctest --test-dir build-asan --output-on-failure -j "$MTIA_JOBS" "${once_only[@]}"

  mtia_step_end
  last=build-tsan
  mtia_step "tsan: configure build-tsan/"
  mtia_stage_configure tsan
fi
mtia_step "cmake: build $last/"
cmake --build "$last" -j "$MTIA_JOBS"
mtia_step_end
mtia_print_times

# Last: the run's output ends with ctest's summary (TSAN_OPTIONS matter only to the TSan build).
# The TSan stage leaves out the tests labelled no_tsan (tests/torch/CMakeLists.txt says why), which
# the Meson and ASan stages run; MTIA_TSAN_ALL=1 keeps them.
no_tsan=()
[[ "$last" != build-tsan || "${MTIA_TSAN_ALL:-0}" == 1 ]] || no_tsan=(-LE no_tsan)
mtia_step "cmake: ctest $last/"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
  ctest --test-dir "$last" --output-on-failure -j "$MTIA_JOBS" "${once_only[@]}" "${no_tsan[@]}"
