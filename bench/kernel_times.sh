#!/usr/bin/env bash
# Does the same kernel run as fast in our worker as in the Python reference's process? One
# algorithm's benchmark under each profiler, in one sitting: ours (host --benchmark with
# MLH_PROFILE_DIR) and the reference's eager and compiled steps (bench/peers.py --profile), then
# each matching operator's median time per call in each process, side by side
# (bench/profile_summary.py --calls). The same LibTorch library runs both (the default build
# links .venv/'s torch), so a kernel slower in one process points at that process's state.
#   bench/kernel_times.sh [-p PRECISION] [-o DIR] trm|protonet [HOST] [REGEX]
#     PRECISION: fp32 (default) or bf16
#     DIR:       keep the traces there (default: a temporary folder, removed after)
#     HOST:      default build/bin/host
#     REGEX:     the operators to compare (default: trm's attention and matrix products;
#                protonet's convolutions, batch norm, pooling and matrix products)
set -euo pipefail
cd "$(dirname "$0")/.."
precision=fp32 keep=
while getopts "p:o:" opt; do
  case $opt in
    p) precision=$OPTARG ;;
    o) keep=$OPTARG ;;
    *) echo "usage: bench/kernel_times.sh [-p fp32|bf16] [-o DIR] trm|protonet [HOST] [REGEX]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
algorithm=${1:-}
host=${2:-build/bin/host}
case $algorithm in
  trm) bench=train_small_h128_H2_L2_$precision regex=${3:-'attention|aten::mm$|aten::addmm$'}
       peer_args=(--trm-size small) ;;
  protonet) bench=train_episode_5way_5shot_15query_28x28 regex=${3:-'convolution|batch_norm|max_pool|aten::mm$'}
            peer_args=() ;;
  *) echo "kernel_times.sh: the algorithm is trm or protonet, not '$algorithm'" >&2; exit 2 ;;
esac
[[ $precision == fp32 || $precision == bf16 ]] || { echo "kernel_times.sh: -p $precision: fp32 or bf16" >&2; exit 2; }
[[ -x $host ]] || { echo "kernel_times.sh: no host binary at $host (bash scripts/build.sh)" >&2; exit 2; }
python=${MLH_TORCH_VENV:-.venv}/bin/python
[[ -x $python ]] || { echo "kernel_times.sh: no $python (bash scripts/torch-venv.sh --peers)" >&2; exit 2; }

if [[ -n $keep ]]; then
  out=$keep
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
echo "ours: $host --algorithm $algorithm --benchmark --precision $precision (profiled)" >&2
MLH_PROFILE_DIR=$out/ours "$host" --algorithm "$algorithm" --benchmark --json --no-calibrate \
  --precision "$precision" --run-dir "$out/run" > "$out/ours.json"
echo "theirs: bench/peers.py --workload $algorithm --precision $precision --profile (eager, compiled)" >&2
"$python" bench/peers.py --workload "$algorithm" --precision "$precision" --variant eager,compiled \
  "${peer_args[@]}" --profile "$out/theirs" > "$out/theirs.json"
ours_trace=$out/ours/$bench.trace.json
[[ -f $ours_trace ]] || { echo "kernel_times.sh: our benchmark wrote no $ours_trace" >&2; exit 1; }
traces=("$ours_trace")
for variant in eager compiled; do
  trace=$out/theirs/${bench%_"$precision"}_${precision}_$variant.trace.json
  if [[ -f $trace ]]; then traces+=("$trace"); else echo "kernel_times.sh: no reference $variant trace" >&2; fi
done
python3 bench/profile_summary.py "${traces[@]}" --calls "$regex"
