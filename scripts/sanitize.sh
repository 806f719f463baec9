#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (gcc), in build-asan/.
# The subset that fits CI's time: everything that does not need LibTorch (the build is
# configured with -DMLH_WITH_TORCH=OFF), i.e. the test areas below plus the fuzz corpus and
# regression replays (CTest label "fuzz"), less the tests that run a LibTorch plugin. LibTorch itself is not instrumented, and the
# LibTorch-based areas (runtime, sdk, the algorithms' toyreg, protonet, ppo, ppo_networks, trm_model, trm) take longer to
# build with the sanitizers than CI allows; they run in the ordinary build only.
#   scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
areas="abi;plugins;algorithm_plugins;configs;protonet_data;ppo_env;trm_data;cpu;cuda;mps;host;cli"  # algorithm_plugins: its C plugin only
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# -O0: the instrumented code compiles in half the time or less (plan_values.cpp 13 s at -O1,
# 7 s; tests/cli/cli_run_test.cpp 69 s, 21 s), and the tests it runs are short.
# -g1: line tables, all a sanitizer's report needs (function, file and line of each frame);
# full debug info made each host file compile half again as long (plan_values.cpp: 30 s, 21 s).
start=$(date +%s)
launcher=$(bash scripts/ccache-launcher.sh)  # as scripts/build.sh: ccache where installed
nice -n 19 cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1" \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DMLH_WITH_TORCH=OFF -DMLH_BUILD_TESTS=ON -DMLH_TEST_AREAS="$areas" >/dev/null
nice -n 19 cmake --build build-asan
built=$(date +%s)

# Plugins are MODULE libraries built with the same flags: they need the sanitizer runtimes
# but do not load them themselves; the host and the test programs (linked with
# -fsanitize=address) load them first, so a dlopen'ed plugin shares that runtime.
# handle_segv/sigbus/sigfpe=0: the fault-injection plugins crash on purpose, and the host
# must see the real signal (as without sanitizers), not ASan's report and exit status 1.
# detect_leaks=1 (the default) stays on; there are no suppressions.
export ASAN_OPTIONS="handle_segv=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Left out: the tests that run the toyreg algorithm plugin, which needs LibTorch (not built
# here): cli's RunTest.*, WorkerLifetimeTest.*, SoakTest.*, RestartTest.*, SharedMachineTest.*, DistributedTest.*, TorchrunTest.*, CalibrationTest.*,
# MemoryTest.*, PlanEffectsCliTest.*
# and one cuda test.
needs_torch='^(RunTest|WorkerLifetimeTest|SoakTest|RestartTest|SharedMachineTest|DistributedTest|TorchrunTest|CalibrationTest|MemoryTest|PlanEffectsCliTest)\.|^CudaInHost\.GpusNeedAnAlgorithmWithACudaLibTorch$'
nice -n 19 ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -E "$needs_torch" "$@"
echo "sanitize: build $((built - start)) s, tests $(($(date +%s) - built)) s"
