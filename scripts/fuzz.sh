#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) into
# build-fuzz/ and runs each for a fixed number of executions, starting from its seed corpus
# (fuzz/corpus/<target>/) and the regression inputs (fuzz/regressions/<target>/).
#   scripts/fuzz.sh [RUNS] [TARGET...]     RUNS: executions per target (default 50000)
# A crash, a hang (-timeout=10 s per input), a leak or a sanitizer report stops that target,
# leaves the input in build-fuzz/artifacts/<target>/ and makes the script fail. New coverage
# found goes to build-fuzz/corpus/<target>/ (the repository's seeds are left as they are).
# Environment: FUZZ_MAX_TIME (seconds per target, a guard; default 300), FUZZ_JOBS (build jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --fuzz
runs=${1:-50000}
shift || true
max_time=${FUZZ_MAX_TIME:-300}
all_targets=(manifest config overrides cli settings idx image levels checkpoint safetensors npy dataset_json arc_tasks)
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")

san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
nice -n 19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DMLH_BUILD_FUZZERS=ON -DMLH_BUILD_TESTS=OFF >/dev/null
nice -n 19 cmake --build build-fuzz -j "${FUZZ_JOBS:-2}" --target "${targets[@]/%/_fuzz}"

# Leak checking on, no suppressions (LibTorch, not instrumented, needs none here).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
printf '%-12s %10s %8s %s\n' target executions seconds result > build-fuzz/summary.txt
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" "fuzz/regressions/$t"
  log="build-fuzz/$t.log"
  start=$(date +%s.%N)
  result=ok
  nice -n 19 "build-fuzz/fuzz/${t}_fuzz" -runs="$runs" -max_total_time="$max_time" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$t/" "build-fuzz/corpus/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" \
    >"$log" 2>&1 || { result="FAILED (see $log)"; status=1; }
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%-12s %10s %8.1f %s\n' "$t" "${execs:-?}" "$secs" "$result" | tee -a build-fuzz/summary.txt
done
echo "summary: build-fuzz/summary.txt"
exit $status
