#!/usr/bin/env bash
# Everything a short loan of a GPU machine checks, in one call and inside one time budget,
# the most informative first; each step is cut off where the budget ends:
#  1. the GPU's identity (nvidia-smi, PyTorch's view of it);
#  2. the build against the machine's PyTorch (scripts/gpu.sh, GPU_ONLY=1) and the test that
#     ProtoNet's episode replayed as a CUDA graph trains as the eager step;
#  3. ours beside the Python references on the same card (bench/peer_bench.sh): ProtoNet,
#     PPO CartPole and TRM, fp32 and bf16, the references eager, compiled and (ProtoNet) as a
#     CUDA graph;
#  4. the device choice each algorithm's run makes here, by measurement (host --calibrate);
#  5. the other GPU tests that matter now (out-of-memory back-off under a memory fraction,
#     fp16 and bf16 training of every algorithm);
#  6. ProtoNet's benchmark under the plan's settings one at a time (bench/gpu_bench.sh):
#     without CUDA graphs, with gradient checkpointing, without cuDNN benchmarking, without
#     channels-last; and TRM's (its MFU per precision);
#  7. where TRM's training step spends its time: LibTorch's profiler over the default model's
#     bf16 step, operators totalled by bench/profile_summary.py.
# Each step's log goes to LOG_DIR (default $OUT, the device tool's return folder, else
# gpu-logs/), at most eight files, and a summary is printed last.
#   bash scripts/gpu-lease.sh             (after scripts/gpu-debs.sh filled .debs/)
# Environment: BUDGET (seconds for all steps, 530), PEER_ROUNDS (1). Python packages the
# references need and the GPU image lacks come as wheels in .whl/ (scripts/gpu-debs.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${LOG_DIR:-${OUT:-gpu-logs}}
budget=${BUDGET:-530}
mkdir -p "$logs"
left() { echo $((budget - SECONDS)); }
# step NAME SECONDS COMMAND...: runs COMMAND into $logs/NAME.log for at most SECONDS, or what
# is left of the budget; skipped when under 20 s are left.
step() {
  local name=$1 want=$2 t
  shift 2
  t=$(left)
  ((t < 20)) && { echo "== $name: skipped, ${t} s of the budget left" | tee -a "$logs/$name.log"; return; }
  ((want < t)) && t=$want
  local start=$SECONDS
  timeout "$t" "$@" >>"$logs/$name.log" 2>&1
  echo "== $name: rc $? after $((SECONDS - start)) s (limit $t s; $(left) s of the budget left)"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  echo "cores: $(nproc)"
} >"$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/mlh-site .whl/*.whl &&
    export PYTHONPATH=/tmp/mlh-site${PYTHONPATH:+:$PYTHONPATH}
fi

export GPU_ONLY=1
step build 240 env GPU_TESTS='ProtonetEpisodeGraph' bash scripts/gpu.sh
host=build-gpu/bin/host
export MLH_FASHION_MNIST_DIR=$PWD/build-gpu/deps/usr/share/datasets/fashion-mnist
export LD_LIBRARY_PATH=$PWD/build-gpu/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # as gpu.sh
if [[ -x $host ]]; then
  step peers 210 env DEVICE=cuda ROUNDS="${PEER_ROUNDS:-1}" PEER_SECONDS=2 TRM_SIZES=default RUN_TIMEOUT=100 \
    BUDGET=205 bench/peer_bench.sh "$host"
  step choice 100 "$host" --calibrate
  step settings 90 env ALGORITHMS=protonet PRECISIONS=fp32 RUN_TIMEOUT=40 \
    SETTINGS="gradient_checkpointing=true;cudnn_benchmark=false;channels_last=false" bench/gpu_bench.sh
  step tests 100 ctest --test-dir build-gpu --output-on-failure -L gpu --timeout 90 -R 'OutOfMemory|Fp16AndBf16'
  step profile 60 env MLH_PROFILE_DIR="$PWD/build-gpu/profile" MLH_PROFILE_STEPS=2 CUDA_LAUNCH_BLOCKING=1 \
    MLH_NO_CALIBRATE=1 "$host" --log-level warn --algorithm trm --benchmark --device cuda --precision bf16 \
    --run-dir "$PWD/build-gpu/profile-run"
  python3 bench/profile_summary.py build-gpu/profile/train_default_h512_H3_L6_bf16.trace.json --top 20 \
    >>"$logs/profile.log" 2>&1
fi

echo "== summary"
cat "$logs/gpu.txt"
grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Skipped|error:|protonet 60 episodes" \
  "$logs/build.log" "$logs/tests.log" 2>/dev/null | tail -20
grep -E '^\||^round|failed|ours only|MFU' "$logs/peers.log" 2>/dev/null
grep -E "Device choice|chosen|device choice" "$logs/choice.log" 2>/dev/null
grep -E '^\||MFU|peak' "$logs/settings.log" 2>/dev/null
head -24 "$logs/profile.log" 2>/dev/null
exit 0
