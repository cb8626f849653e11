#!/usr/bin/env bash
# Builds the snapshot readers with Debian's clang and libFuzzer (with ASan and
# UBSan) and runs the JSON and the pickle target for a fixed number of runs
# from the committed seed corpus, as a test of both builds. Exit 77 (skip)
# when clang or libFuzzer is missing; any crash, sanitizer report, leak or
# timeout fails the test and leaves the input under BUILD_DIR/fuzz/.
# Usage: run_fuzzers.sh SOURCE_DIR BUILD_DIR FUZZER_SOURCE [RUNS]
# (FUZZER_SOURCE: the libFuzzer entry point, snapshot_fuzzer.cpp, named by the build files)
# MTIA_FUZZ_BUILD_DIR: where the fuzzers are built (default BUILD_DIR/fuzz). They do not depend on the
# build's own configuration, so scripts/test.sh shares one folder between its stages and builds them
# once.
set -euo pipefail
src=$(cd "$1" && pwd)
mkdir -p "$2/fuzz"
out=$(cd "$2/fuzz" && pwd)
mkdir -p "${MTIA_FUZZ_BUILD_DIR:-$out}"
bin=$(cd "${MTIA_FUZZ_BUILD_DIR:-$out}" && pwd)
fuzzer=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
runs=${4:-20000}

cxx=""
for c in clang++ clang++-14; do
  command -v "$c" >/dev/null && cxx=$c && break
done
if [[ -z $cxx ]]; then
  echo "SKIP: clang++ is not installed (Debian packages clang and libclang-rt-14-dev)"
  exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  "$cxx" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "SKIP: $cxx cannot link libFuzzer (Debian package libclang-rt-14-dev)"
  exit 77
fi

sources=(allocator/snapshot/model.cpp allocator/snapshot/pickle_writer.cpp allocator/snapshot/writer.cpp
  tools/mtia-mem/byte_size.cpp tools/mtia-mem/html_plot.cpp tools/mtia-mem/json_snapshot.cpp
  tools/mtia-mem/live_memory.cpp tools/mtia-mem/memory_timeline.cpp tools/mtia-mem/pickle_reader.cpp
  tools/mtia-mem/pickle_snapshot.cpp tools/mtia-mem/site_tally.cpp tools/mtia-mem/snapshot_diff.cpp
  tools/mtia-mem/snapshot_reader.cpp tools/mtia-mem/snapshot_summary.cpp tools/mtia-mem/stack_labels.cpp
  tools/mtia-mem/trace_analysis.cpp)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$src" -I"$src/tools/mtia-mem")
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)

# Rebuild only when a source or header changed since the last build (the stamp is their hash).
stamp=$(cd "$src" && cat "${sources[@]}" "$fuzzer" allocator/snapshot/*.hpp \
  tools/mtia-mem/*.hpp | sha1sum | cut -d' ' -f1)
if [[ ! -x $bin/json_fuzzer || ! -x $bin/pickle_fuzzer || "$(cat "$bin/stamp" 2>/dev/null)" != "$stamp" ]]; then
  echo "building the fuzzers with $cxx"
  rm -f "$bin/json_fuzzer" "$bin/pickle_fuzzer" "$bin/stamp"
  objects=()
  pids=()
  for s in "${sources[@]}"; do
    o=$bin/$(basename "$s" .cpp).o
    objects+=("$o")
    "$cxx" "${flags[@]}" "${sanitize[@]}" -fsanitize=fuzzer-no-link -c "$src/$s" -o "$o" &
    pids+=($!)
    if ((${#pids[@]} >= 2)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$cxx" "${flags[@]}" "${sanitize[@]}" -fsanitize=fuzzer "$fuzzer" "${objects[@]}" \
    -lfmt -lsimdjson -o "$bin/json_fuzzer" &
  json_link=$!
  "$cxx" "${flags[@]}" "${sanitize[@]}" -fsanitize=fuzzer -DMTIA_FUZZ_PICKLE "$fuzzer" \
    "${objects[@]}" -lfmt -lsimdjson -o "$bin/pickle_fuzzer"
  wait "$json_link"
  echo "$stamp" >"$bin/stamp"
fi

status=0
for format in json pickle; do
  # libFuzzer adds what it finds to the first corpus folder: a copy in the build folder, never the sources.
  rm -rf "$out/corpus-$format"
  mkdir -p "$out/corpus-$format"
  echo "fuzzing the $format reader: $runs runs"
  if ! (cd "$out" && UBSAN_OPTIONS=print_stacktrace=1 "$bin/${format}_fuzzer" -runs="$runs" -seed=1 -max_len=16384 \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
    -dict="$src/tests/fuzz/snapshot.dict" "corpus-$format" "$src/tests/fuzz/corpus/$format" \
    >"$out/$format.log" 2>&1); then
    echo "FAIL: the $format fuzzer found a problem (input saved under $out):"
    tail -n 60 "$out/$format.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$out/$format.log" | tail -n 2
  fi
done
exit $status
