#!/usr/bin/env bash
# run_install_test.sh cmake|meson BUILD_DIR
#
# Proves that outside programs can use the INSTALLED runtime. Installs the
# finished build BUILD_DIR into a temporary tree, then, against that tree only:
#   1. compiles consumer.c with cc -std=c99 -pedantic and pkg-config's flags
#      for `mtia`, and runs it;
#   2. builds and runs cmake_consumer/ (find_package(mtia) -> mtia::mtia);
#   3. builds and runs meson_consumer/ (dependency('mtia') via pkg-config);
#   4. runs the installed programs mtia-smi, mtia-mem and mtia-demo with no
#      LD_LIBRARY_PATH: their run path must find the installed libmtia.so.1;
#   5. when the build installs torch_mtia (MTIA_TORCH_PYTHON set): its extension
#      finds the installed libmtia.so.1 through its run path, its dist-info has
#      the torch.backends entry point, and with the installed site-packages on
#      PYTHONPATH `import torch` alone brings the mtia device (autoload; not in
#      sanitized builds, whose interpreter would need the sanitizer preloaded).
# cmake: `cmake --install BUILD_DIR --prefix TMP`; meson: `DESTDIR=TMP meson
# install`, read through PKG_CONFIG_SYSROOT_DIR.
# Environment: CC, CMAKE, MESON (the tools); MTIA_TEST_CFLAGS (e.g.
# -fsanitize=address,undefined for a sanitized build: added to every consumer
# compile and link so that the sanitizer runtime loads first); MTIA_TORCH_PYTHON
# (the interpreter with torch 2.13, when the build has the PyTorch integration).
set -euo pipefail

if (($# != 2)) || [[ "$1" != cmake && "$1" != meson ]] || [[ ! -d "$2" ]]; then
  echo "usage: $0 cmake|meson BUILD_DIR" >&2
  exit 2
fi
system="$1"
build="$(cd "$2" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cc="${CC:-cc}"
cmake_tool="${CMAKE:-cmake}"
meson_tool="${MESON:-meson}"
read -r -a extra_flags <<<"${MTIA_TEST_CFLAGS:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
  echo "install test FAILED: $*" >&2
  exit 1
}
# quietly CMD...: runs CMD, showing its output only when it fails.
quietly() {
  local log="$work/quiet.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$*"
  fi
}

step "install the $system build $build"
if [[ "$system" == cmake ]]; then
  root="$work/prefix"
  quietly "$cmake_tool" --install "$build" --prefix "$root"
  sysroot=""
else
  root="$work/destdir"
  quietly env DESTDIR="$root" "$meson_tool" install -C "$build" --no-rebuild
  sysroot="$root"
fi
(cd "$root" && find . -type f -o -type l | sort | sed 's|^\./|  |')

pc="$(find "$root" -path '*/pkgconfig/mtia.pc' | head -n 1)"
[[ -n "$pc" ]] || fail "no pkgconfig/mtia.pc in the install tree"
export PKG_CONFIG_PATH="${pc%/mtia.pc}"
if [[ -n "$sysroot" ]]; then export PKG_CONFIG_SYSROOT_DIR="$sysroot"; fi
read -r -a pc_cflags <<<"$(pkg-config --cflags mtia)"
read -r -a pc_libs <<<"$(pkg-config --libs mtia)"
echo "pkg-config mtia: ${pc_cflags[*]} ${pc_libs[*]}"

# The flags must lead into the install tree, not to the sources or the build.
under_root() { [[ "$(realpath -m "$1")" == "$(realpath "$root")"/* ]]; }
libdir=""
for flag in "${pc_cflags[@]}"; do
  if [[ "$flag" == -I* ]]; then
    if ! under_root "${flag#-I}" || [[ ! -f "${flag#-I}/mtia/mtia.h" ]]; then
      fail "pkg-config --cflags mtia gives $flag, not the installed include folder with mtia/mtia.h"
    fi
  fi
done
for flag in "${pc_libs[@]}"; do
  if [[ "$flag" == -L* && -z "$libdir" ]]; then libdir="${flag#-L}"; fi
done
if [[ -z "$libdir" || ! -e "$libdir/libmtia.so" ]] || ! under_root "$libdir"; then
  fail "pkg-config --libs mtia gives no -L folder of the install tree holding libmtia.so (${pc_libs[*]})"
fi
libdir="$(realpath "$libdir")"

# run_consumer EXE: runs it against the installed library and checks that
# this is the library it loaded.
run_consumer() {
  local exe="$1" loaded
  loaded="$(LD_LIBRARY_PATH="$libdir" ldd "$exe" | awk '/libmtia\.so/ { print $3 }')"
  if [[ -z "$loaded" ]] || ! under_root "$loaded"; then
    fail "$exe loads libmtia from '${loaded:-nowhere}', not the install tree"
  fi
  LD_LIBRARY_PATH="$libdir" "$exe" || fail "$exe exited with status $?"
}

step "1. cc -std=c99 -pedantic consumer.c \$(pkg-config --cflags --libs mtia)"
# shellcheck disable=SC2086 # CC may carry flags
$cc -std=c99 -pedantic -Wall -Wextra -Werror "${extra_flags[@]}" "${pc_cflags[@]}" \
  "$here/consumer.c" -o "$work/consumer" "${pc_libs[@]}" || fail "compiling consumer.c"
run_consumer "$work/consumer"

step "2. CMake consumer: find_package(mtia) -> mtia::mtia"
config="$(find "$root" -name mtiaConfig.cmake | head -n 1)"
[[ -n "$config" ]] || fail "no mtiaConfig.cmake in the install tree"
prefix="$(pkg-config --variable=prefix mtia)"
if [[ -n "$sysroot" && "$prefix" != "$sysroot"/* ]]; then prefix="$sysroot$prefix"; fi
# Meson hands its compiler command over, which starts with the launcher when ccache is installed
# ("ccache cc"): CMake takes the compiler and the launcher separately.
read -r -a cc_words <<<"$cc"
cmake_cc=(-DCMAKE_C_COMPILER="${cc_words[0]}")
if ((${#cc_words[@]} > 1)) && [[ "${cc_words[0]##*/}" == ccache ]]; then
  cmake_cc=(-DCMAKE_C_COMPILER="${cc_words[1]}" -DCMAKE_C_COMPILER_LAUNCHER="${cc_words[0]}")
fi
quietly "$cmake_tool" -S "$here/cmake_consumer" -B "$work/cmake-consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
  "${cmake_cc[@]}" -DCMAKE_C_FLAGS="${extra_flags[*]}"
grep -h '^-- mtia ' "$work/quiet.log" || true
quietly "$cmake_tool" --build "$work/cmake-consumer"
run_consumer "$work/cmake-consumer/consumer"

step "3. Meson consumer: dependency('mtia') through pkg-config"
quietly env CC="$cc" CFLAGS="${extra_flags[*]}" LDFLAGS="${extra_flags[*]}" \
  "$meson_tool" setup "$work/meson-consumer" "$here/meson_consumer"
grep -h 'Run-time dependency mtia' "$work/quiet.log" || true
quietly "$meson_tool" compile -C "$work/meson-consumer"
run_consumer "$work/meson-consumer/consumer"

step "4. the installed programs run as installed (no LD_LIBRARY_PATH)"
# run_installed NAME ARGS...: the program of the install tree, its libmtia from the install tree (its
# run path, nothing from the environment), exit status 0.
run_installed() {
  local name="$1" exe loaded
  shift
  exe="$(find "$root" -path "*/bin/$name" -type f | head -n 1)"
  [[ -n "$exe" && -x "$exe" ]] || fail "no installed program bin/$name in the install tree"
  loaded="$(env -u LD_LIBRARY_PATH ldd "$exe" | awk '/libmtia\.so/ { print $3 }')"
  [[ "$loaded" == not ]] && loaded="" # ldd: "libmtia.so.1 => not found"
  if [[ -z "$loaded" ]] || ! under_root "$loaded"; then
    env -u LD_LIBRARY_PATH ldd "$exe" | sed 's/^/    /' >&2
    fail "installed $name loads libmtia from '${loaded:-nowhere}', not the install tree (run path: $(readelf -d "$exe" | grep -E 'RPATH|RUNPATH' || echo none))"
  fi
  echo "$name: libmtia from ${loaded#"$(realpath "$root")"/}"
  local rc=0
  env -u LD_LIBRARY_PATH "$exe" "$@" >"$work/$name.out" 2>&1 || rc=$?
  if ((rc != 0)); then
    sed 's/^/    /' "$work/$name.out" >&2
    fail "installed $name $* exited with status $rc"
  fi
}
run_installed mtia-smi
run_installed mtia-smi topo -m
run_installed mtia-mem --help
run_installed mtia-demo

torch_note=""
if [[ -n "${MTIA_TORCH_PYTHON:-}" ]]; then
  step "5. the installed torch_mtia package"
  init="$(find "$root" -path '*/site-packages/torch_mtia/__init__.py' | head -n 1)"
  [[ -n "$init" ]] || fail "no site-packages/torch_mtia in the install tree"
  package="${init%/__init__.py}"
  site="${package%/torch_mtia}"
  ext="$(find "$package" -name '_C.*.so' | head -n 1)"
  [[ -n "$ext" ]] || fail "no extension _C in $package"
  [[ -f "$package/libmtia_torch_kernels.so" ]] || fail "no kernel module in $package"
  loaded="$(env -u LD_LIBRARY_PATH ldd "$ext" | awk '/libmtia\.so/ { print $3 }')"
  if [[ "$loaded" == not || -z "$loaded" ]] || ! under_root "$loaded"; then
    fail "installed $ext loads libmtia from '${loaded:-nowhere}', not the install tree (run path: $(readelf -d "$ext" | grep -E 'RPATH|RUNPATH' || echo none))"
  fi
  echo "torch_mtia/${ext##*/}: libmtia from ${loaded#"$(realpath "$root")"/}"
  entry_points="$(find "$site" -path '*/torch_mtia-*.dist-info/entry_points.txt' | head -n 1)"
  [[ -n "$entry_points" ]] || fail "no torch_mtia-*.dist-info/entry_points.txt in $site"
  grep -qx 'mtia = torch_mtia:_autoload' "$entry_points" || fail "$entry_points has no torch.backends entry point"
  if [[ -z "${MTIA_TEST_CFLAGS:-}" ]]; then
    out="$(cd "$work" && env -u LD_LIBRARY_PATH -u LD_PRELOAD PYTHONPATH="$site" "$MTIA_TORCH_PYTHON" -c \
      "import sys, torch; x = torch.ones(4, device='mtia'); print(x.device, sys.modules['torch_mtia'].__file__)" 2>&1)" ||
      fail "import torch with $site on PYTHONPATH: $out"
    [[ "$out" == "mtia:0 $package/__init__.py" ]] || fail "autoload from the install tree gave: $out"
    echo "import torch (PYTHONPATH=site-packages of the install tree): $out"
  fi
  torch_note=", torch_mtia"
fi

echo
echo "install test ($system): the installed headers, libmtia.so, mtia.pc, CMake package, programs${torch_note} work"
