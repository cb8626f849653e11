#!/usr/bin/env bash
# Installs what this project needs to build, test and run its demo:
# 1. the Debian 12 packages (C++ libraries, toolchain, checks); only missing
#    packages are installed, and the package lists are refreshed only when
#    something is missing;
# 2. the project's Python virtual environment, .venv at the repository root
#    (git-ignored), with PyTorch 2.13.0 and the test tools pinned in
#    scripts/python-requirements.txt; made once, then checked.
# So a second run does nothing.
#
# Runs as root, or through sudo otherwise (apt-get only). Non-interactive (CI
# has no stdin). More Debian packages for one run: MTIA_EXTRA_PACKAGES="...".
# The interpreter the venv is made from: MTIA_PYTHON (default python3).
set -euo pipefail

# The one list of what the project needs. Later work adds to it here.
MTIA_PACKAGES=(
  # toolchain and build systems
  build-essential cmake ninja-build meson pkg-config
  # libraries the code uses (DESIGN.md: dependencies)
  libfmt-dev libboost-dev libnuma-dev libhwloc-dev hwloc-nox libcli11-dev
  libsimdjson-dev
  # tests and benchmarks (bench/alloc_bench dlopen()s jemalloc and mimalloc
  # as references)
  libgtest-dev libgmock-dev googletest libbenchmark-dev libjemalloc2
  libmimalloc2.0
  # the checks: python3 runs tools/check_layering.py, binutils gives nm
  # to tools/check_exports.sh, clang-format-14 formats and checks the code
  # (tools/check_format.sh; another version formats differently)
  python3 binutils clang-format-14
  # tests/fuzz: the snapshot readers' libFuzzer targets are built with clang
  # (libFuzzer ships in clang's runtime package)
  clang libclang-rt-14-dev
  # integrations/torch and tests/torch: the virtual environment (.venv, below)
  # and Python's headers for the extension; PyTorch itself comes from PyPI
  python3-venv python3-dev
  # integrations/torch/kernels: single-threaded OpenBLAS for GEMM and convolution inside the
  # device kernels (one engine thread runs one block; a threaded BLAS would oversubscribe)
  libopenblas-serial-dev
)
read -r -a _extra <<<"${MTIA_EXTRA_PACKAGES:-}"
MTIA_PACKAGES+=("${_extra[@]}")

die() {
  echo "install-deps: ERROR: $*" >&2
  exit 1
}

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian 12 only"

is_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

missing=()
for pkg in "${MTIA_PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

install_packages() {
if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  die "missing packages (${missing[*]}) and not root, and sudo is not installed; run as root: $0"
fi

echo "install-deps: installing ${missing[*]}"
apt_env=(env DEBIAN_FRONTEND=noninteractive)
apt_opts=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300)
"${as_root[@]}" "${apt_env[@]}" apt-get "${apt_opts[@]}" update ||
  die "apt-get update failed"
"${as_root[@]}" "${apt_env[@]}" apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" ||
  die "apt-get install failed for: ${missing[*]}"

still_missing=()
for pkg in "${missing[@]}"; do
  is_installed "$pkg" || still_missing+=("$pkg")
done
((${#still_missing[@]} == 0)) || die "still not installed after apt-get: ${still_missing[*]}"
}

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#MTIA_PACKAGES[@]} packages are installed"
else
  install_packages
fi

# The virtual environment. Never an unpinned torch: pip would fetch a CUDA build of several GB.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
requirements="$root/scripts/python-requirements.txt"
venv_ok() {
  [[ -x "$venv/bin/python" ]] && "$venv/bin/python" - "$requirements" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, wanted = line.split("==")
        have = version(name)
        if have.split("+")[0] != wanted:
            sys.exit(f"{name} {have} is not {wanted}")
PY
}
if venv_ok; then
  echo "install-deps: $venv has $(grep -c '==' "$requirements") pinned Python packages"
else
  python="${MTIA_PYTHON:-python3}"
  echo "install-deps: making $venv with $($python --version 2>&1) and scripts/python-requirements.txt"
  [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv" || die "$python -m venv $venv failed"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" ||
    die "pip install -r $requirements failed"
  venv_ok || die "$venv still lacks what $requirements pins"
fi
echo "install-deps: done"
