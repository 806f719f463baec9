#!/usr/bin/env bash
# Everything a short loan of a GPU machine checks, in one call and inside one time budget:
#  1. the GPU's identity (nvidia-smi, PyTorch's view of it);
#  2. scripts/gpu.sh with GPU_ONLY=1: the build against the machine's PyTorch and the GPU-only
#     tests (ctest -L gpu);
#  3. the demo's job on the GPU: probe, device choice, a short ProtoNet run with its calibration,
#     then the 5-way 5-shot evaluation on the unseen classes;
#  4. bench/gpu_bench.sh's table, each row printed as its run ends, cut off when the budget is.
# Each step's log goes to LOG_DIR (default $OUT, the device tool's return folder, else
# gpu-logs/), at most six files, and a short summary is printed last.
#   bash scripts/gpu-lease.sh             (after scripts/gpu-debs.sh filled .debs/)
# Environment: BUDGET (seconds for all steps, 540), BENCH_CHECKPOINTING (false: the TRM
# benchmark measures its checkpointed peak itself), BENCH_RUN_TIMEOUT (60).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${LOG_DIR:-${OUT:-gpu-logs}}
budget=${BUDGET:-540}
mkdir -p "$logs"
left() { local s=$((budget - SECONDS)); ((s > 5)) && echo "$s" || echo 5; }

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  echo "cores: $(nproc)"
} >"$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"

GPU_ONLY=1 timeout "$(left)" bash scripts/gpu.sh >"$logs/gpu-tests.log" 2>&1
tests_rc=$?
echo "== gpu.sh: rc $tests_rc at ${SECONDS} s"

host=build-gpu/bin/host
export MLH_FASHION_MNIST_DIR=$PWD/build-gpu/deps/usr/share/datasets/fashion-mnist
export LD_LIBRARY_PATH=$PWD/build-gpu/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # as gpu.sh
demo_dir=$(mktemp -d)/demo
if [[ -x $host ]]; then
  {
    "$host" --probe
    start=$SECONDS
    data=$MLH_FASHION_MNIST_DIR
    timeout 120 "$host" --algorithm protonet --run-dir "$demo_dir" --set epochs=6 --set episodes_per_epoch=40 \
      --set data.root=$data/train-images-idx3-ubyte.gz --set data.labels=$data/train-labels-idx1-ubyte.gz \
      --set data.test_root=$data/t10k-images-idx3-ubyte.gz --set data.test_labels=$data/t10k-labels-idx1-ubyte.gz
    echo "demo training: rc $?, $((SECONDS - start)) s"
    grep val/acc "$demo_dir/metrics.csv" | cut -d, -f1,3
    timeout 60 "$host" --algorithm protonet --run-dir "$demo_dir" --resume --command eval --set eval_episodes=300
    echo "demo eval: rc $?"
    python3 -m json.tool "$demo_dir/plan.json" | head -60
  } >"$logs/demo.log" 2>&1
  echo "== demo at ${SECONDS} s"
  CHECKPOINTING=${BENCH_CHECKPOINTING:-false} RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-60} \
    timeout "$(left)" bench/gpu_bench.sh >"$logs/bench.md" 2>"$logs/bench.err"
  echo "== bench at ${SECONDS} s"
fi

echo "== summary"
cat "$logs/gpu.txt"
grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|\(Subprocess|Skipped|Error|error:" "$logs/gpu-tests.log" | tail -25
grep -E "chosen|selected|accuracy|acc|demo " "$logs/demo.log" 2>/dev/null | tail -20
cat "$logs/bench.md" "$logs/bench.err" 2>/dev/null
exit "$tests_rc"
