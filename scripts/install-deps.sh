#!/usr/bin/env bash
# Installs the Debian 12 packages this project needs to build, test and run
# its demo. Only missing packages are installed, and the package lists are
# refreshed only when something is missing, so a second run does nothing.
#
# Runs as root, or through sudo otherwise. Non-interactive (CI has no stdin).
# More packages for one run: MTIA_EXTRA_PACKAGES="python3-torch ...".
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
  # integrations/torch and tests/torch: Debian's PyTorch 1.13 (headers and
  # libraries for the extension, the Python package for the tests) and pytest;
  # libtorch-dev's headers include pybind11's, which it does not depend on
  python3-torch libtorch-dev pybind11-dev python3-pytest
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

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#MTIA_PACKAGES[@]} packages are installed"
  exit 0
fi

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
echo "install-deps: done"
