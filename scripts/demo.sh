#!/usr/bin/env bash
# Installs what is missing, builds with CMake into build/, runs the demo on
# the simulated device (recording memory history), summarises and plots its
# memory snapshot with mtia-mem, runs the PyTorch demo (.venv/bin/python -m torch_mtia.demo) when the build
# has the PyTorch backend, then runs mtia-smi.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

BUILD_DIR=build
DEMO=tools/mtia-demo # target path inside the build directory
SMI=tools/mtia-smi
MEM=tools/mtia-mem
SNAPSHOT="$BUILD_DIR/mtia-demo-snapshot.pickle"
PLOT="$BUILD_DIR/mtia-demo-memory.html"
TORCH_SNAPSHOT="$BUILD_DIR/torch-demo-snapshot.pickle"

mtia_step "install dependencies"
bash scripts/install-deps.sh

mtia_step "configure (CMake, RelWithDebInfo) in $BUILD_DIR/"
mtia_cmake_configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo

# Only the programs the demo runs (and what they link), not the tests.
targets=("$DEMO" "$MEM")
if ninja -C "$BUILD_DIR" -t query "$SMI" >/dev/null 2>&1; then targets+=("$SMI"); fi
# The PyTorch backend when the configuration found PyTorch 2.13 in .venv (integrations/torch).
torch_demo=0
if ninja -C "$BUILD_DIR" -t targets all 2>/dev/null | grep '^torch_mtia_C:' >/dev/null; then
  targets+=(torch_mtia_C mtia_torch_kernels)
  torch_demo=1
fi
mtia_step "build ${targets[*]}"
cmake --build "$BUILD_DIR" -j "$MTIA_JOBS" --target "${targets[@]##*/}"

mtia_step "run $BUILD_DIR/$DEMO"
[[ -x "$BUILD_DIR/$DEMO" ]] || { echo "demo: $BUILD_DIR/$DEMO was not built" >&2; exit 1; }
MTIA_DEMO_SNAPSHOT="$SNAPSHOT" "$BUILD_DIR/$DEMO"

mtia_step "mtia-mem summary $SNAPSHOT"
"$BUILD_DIR/$MEM" summary "$SNAPSHOT"
mtia_step "mtia-mem plot $SNAPSHOT -o $PLOT"
"$BUILD_DIR/$MEM" plot "$SNAPSHOT" -o "$PLOT"
echo "open $PLOT in a browser: memory over time by allocation site, the segment map, the top sites"

if ((torch_demo)); then
  mtia_step "run .venv/bin/python -m torch_mtia.demo (PyTorch 2.13 on the simulated device)"
  # --tune: the model's matrix shapes are tuned once (seconds) and read from the disk cache later.
  PYTHONPATH="$BUILD_DIR/integrations/torch" .venv/bin/python -m torch_mtia.demo --tune --snapshot "$TORCH_SNAPSHOT"
  mtia_step "mtia-mem summary $TORCH_SNAPSHOT (torch.mtia.snapshot() of the PyTorch demo)"
  "$BUILD_DIR/$MEM" summary "$TORCH_SNAPSHOT"
fi

mtia_step "run $BUILD_DIR/$SMI"
if [[ -x "$BUILD_DIR/$SMI" ]]; then
  "$BUILD_DIR/$SMI"
else
  echo "mtia-smi is not built yet (no $SMI target in this tree); skipped"
fi
mtia_step_end
