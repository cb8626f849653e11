#!/usr/bin/env bash
# header_test.sh INCLUDE_DIR
#
# ABI rule 1: every public header compiles on its own, as C99 and as C++11
# and C++17, with -pedantic -Wall -Wextra -Werror. For each INCLUDE_DIR/mtia/*.h
# a translation unit includes it alone (twice, for the include guard); one
# more includes <mtia/mtia.h> and uses the struct initialisers, pinned types
# and values of ABI.md, and takes the address of functions to pin their
# signatures; compiled as C++ it must reference them with C linkage.
# Compilers: ${CC:-cc} and ${CXX:-c++}. Compiles only (no library needed).
set -euo pipefail

if (($# != 1)) || [[ ! -d "$1/mtia" ]]; then
  echo "usage: $0 INCLUDE_DIR   (the folder that holds mtia/mtia.h)" >&2
  exit 2
fi
include_dir="$(cd "$1" && pwd)"
cc="${CC:-cc}"
cxx="${CXX:-c++}"
nm_tool="${NM:-nm}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

warnings=(-pedantic -Wall -Wextra -Werror)
modes=(c99 c++11 c++17)
passed=0
failed=0

compile() { # compile MODE SOURCE OBJECT
  local mode="$1" src="$2" obj="$3"
  # shellcheck disable=SC2086 # CC/CXX may carry flags
  case "$mode" in
    c99) $cc -std=c99 "${warnings[@]}" -Wstrict-prototypes -I"$include_dir" -c "$src" -o "$obj" ;;
    c++*) $cxx -x c++ -std="$mode" "${warnings[@]}" -I"$include_dir" -c "$src" -o "$obj" ;;
  esac
}

check() { # check LABEL SOURCE: compiles SOURCE in every mode
  local label="$1" src="$2" mode log
  for mode in "${modes[@]}"; do
    log="$work/$label.$mode.log"
    if compile "$mode" "$src" "$work/$label.$mode.o" >"$log" 2>&1; then
      passed=$((passed + 1))
    else
      echo "FAILED: $label as $mode:"
      sed 's/^/    /' "$log"
      failed=$((failed + 1))
    fi
  done
}

headers=()
for h in "$include_dir"/mtia/*.h; do headers+=("$(basename "$h")"); done
((${#headers[@]} > 0)) || { echo "no headers in $include_dir/mtia" >&2; exit 1; }

for h in "${headers[@]}"; do
  src="$work/alone_${h%.h}.c"
  {
    echo "#include <mtia/$h>"
    echo "#include <mtia/$h>"
    # ISO C forbids an empty translation unit (mtia_version.h holds only macros).
    echo "typedef int mtia_header_test_not_empty;"
  } >"$src"
  check "alone_${h%.h}" "$src"
done

usage="$work/usage_mtia.c"
cat >"$usage" <<'EOF'
#include <mtia/mtia.h>

/* Compile-time checks that work in C99 and C++: a negative array size fails. */
#define PIN(name, cond) typedef char pin_##name[(cond) ? 1 : -1]
PIN(dim3_size, sizeof(mtiaDim3) == 12);
PIN(pool_id_size, sizeof(mtiaMemPoolId_t) == 16);
PIN(stat_size, sizeof(mtiaStat) == 32);
PIN(buffer_size, sizeof(mtiaBuffer) == sizeof(void*) + sizeof(size_t));
PIN(prop_struct_size_first, offsetof(mtiaDeviceProp, structSize) == 0);
PIN(attr_struct_size_first, offsetof(mtiaPointerAttributes, structSize) == 0);
PIN(stats_struct_size_first, offsetof(mtiaMemoryStats, structSize) == 0);
PIN(prop_name, sizeof(((mtiaDeviceProp*)0)->name) == 256);
PIN(prop_uuid, sizeof(((mtiaDeviceProp*)0)->uuid) == 16);
PIN(prop_pci, sizeof(((mtiaDeviceProp*)0)->pciBusId) == 32);
PIN(error_launch, mtiaErrorLaunchFailure == 719);
PIN(error_not_ready, mtiaErrorNotReady == 600);
PIN(error_unknown, mtiaErrorUnknown == 999);
PIN(memcpy_default, mtiaMemcpyDefault == 4);
PIN(capture_relaxed, mtiaStreamCaptureModeRelaxed == 2);
PIN(event_interprocess, mtiaEventInterprocess == 4);
PIN(version_major, MTIA_VERSION_MAJOR >= 0);

int mtia_header_usage(void);
int mtia_header_usage(void) {
  mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
  mtiaPointerAttributes attr = MTIA_POINTER_ATTRIBUTES_INIT;
  mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
  mtiaDim3 grid = {1, 1, 1};
  mtiaMemPoolId_t pool = {0, 0};
  mtiaStream_t stream = NULL;
  mtiaEvent_t event = NULL;
  mtiaFunction_t fn = NULL;
  mtiaMemcpyKind kind = mtiaMemcpyHostToDevice;
  mtiaError_t err = mtiaSuccess;

  /* Function pointers pin the ABI.md signatures and reference the symbols. */
  mtiaError_t (*get_count)(int*) = mtiaGetDeviceCount;
  mtiaError_t (*get_props)(mtiaDeviceProp*, int) = mtiaGetDeviceProperties;
  mtiaError_t (*malloc_fn)(void**, size_t) = mtiaMalloc;
  mtiaError_t (*free_fn)(void*) = mtiaFree;
  mtiaError_t (*memcpy_fn)(void*, const void*, size_t, mtiaMemcpyKind) = mtiaMemcpy;
  mtiaError_t (*builtin)(mtiaFunction_t*, const char*) = mtiaGetBuiltinFunction;
  mtiaError_t (*launch)(mtiaFunction_t, mtiaDim3, mtiaDim3, void**, size_t, mtiaStream_t) = mtiaLaunchKernel;
  mtiaError_t (*attrs)(mtiaPointerAttributes*, const void*) = mtiaPointerGetAttributes;
  mtiaError_t (*version)(int*, int*, int*) = mtiaRuntimeGetVersion;
  const char* (*error_name)(mtiaError_t) = mtiaGetErrorName;
  const char* (*last_message)(void) = mtiaGetLastErrorMessage;

  return (int)(prop.structSize == sizeof(prop)) + (int)(attr.structSize == sizeof(attr)) +
         (int)(stats.structSize == sizeof(stats)) + (int)grid.x + (int)pool.first + (stream == NULL) +
         (event == NULL) + (fn == NULL) + (int)kind + (int)err + (get_count != 0) + (get_props != 0) +
         (malloc_fn != 0) + (free_fn != 0) + (memcpy_fn != 0) + (builtin != 0) + (launch != 0) +
         (attrs != 0) + (version != 0) + (error_name != 0) + (last_message != 0);
}
EOF
check usage_mtia "$usage"

# In C++ the functions must be declared extern "C": no mangled mtia names.
for mode in c++11 c++17; do
  obj="$work/usage_mtia.$mode.o"
  [[ -f "$obj" ]] || continue
  mangled="$("$nm_tool" -u "$obj" | awk '{ print $NF }' | grep -E '^_Z.*mtia' | tr '\n' ' ' || true)"
  plain="$("$nm_tool" -u "$obj" | awk '{ print $NF }' | grep -c '^mtia' || true)"
  if [[ -n "$mangled" || "$plain" -lt 11 ]]; then
    echo "FAILED: usage_mtia as $mode: functions without C linkage (mangled: ${mangled:-none}; plain mtia references: $plain)"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done

echo "header_test: ${#headers[@]} headers; $passed passed, $failed failed"
((failed == 0))
