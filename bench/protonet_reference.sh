#!/usr/bin/env bash
# ProtoNet's training throughput against the Python reference on PyTorch 2.x, in one sitting:
# the reference's episode (bench/protonet_reference.py) in PyPI's torch from .venv/ (installed
# by scripts/torch-venv.sh when missing), with glibc's malloc and with jemalloc; and the host's
# own benchmark with its default plan. Each in fp32 and bf16, rounds alternating so that all
# see the same machine load; medians and ratios to the reference's fp32.
#   bench/protonet_reference.sh [-r ROUNDS] [-s SECONDS] [-p "fp32 bf16"] [HOST...]
#     HOST: host binaries to compare (default: build/bin/host (LibTorch 2.x, the reference's)
#           and build-debian/bin/host (Debian's 1.13), those built)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seconds=3 precisions="fp32 bf16"
while getopts "r:s:p:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    s) seconds=$OPTARG ;;
    p) precisions=$OPTARG ;;
    *) echo "usage: bench/protonet_reference.sh [-r ROUNDS] [-s SECONDS] [-p PRECISIONS] [HOST...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
hosts=("$@")
if ((${#hosts[@]} == 0)); then
  for h in build/bin/host build-debian/bin/host; do [[ -x $h ]] && hosts+=("$h"); done
fi
((${#hosts[@]})) || { echo "protonet_reference.sh: no host built (bash scripts/build.sh)" >&2; exit 2; }
torch_root=$(bash scripts/torch-venv.sh --full)  # the reference imports torch
python=${MLH_TORCH_VENV:-.venv}/bin/python
threads=$(nproc)
jemalloc=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1 || true)
echo "torch: $torch_root; $threads threads; jemalloc: ${jemalloc:-none}" >&2

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
shapes=("5 5 15" "60 5 5")
for ((r = 1; r <= rounds; r++)); do
  for precision in $precisions; do
    for shape in "${shapes[@]}"; do
      tag="${shape// /-}"
      echo "round $r/$rounds: reference $tag $precision" >&2
      OMP_NUM_THREADS=$threads "$python" bench/protonet_reference.py $shape $precision "$seconds" \
        >>"$out/reference-glibc-$precision-$tag"
      if [[ -n $jemalloc ]]; then
        LD_PRELOAD=$jemalloc MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 OMP_NUM_THREADS=$threads \
          "$python" bench/protonet_reference.py $shape $precision "$seconds" >>"$out/reference-jemalloc-$precision-$tag"
      fi
    done
    for i in "${!hosts[@]}"; do
      echo "round $r/$rounds: ${hosts[$i]} $precision" >&2
      "${hosts[$i]}" --algorithm protonet --benchmark --json --no-calibrate --precision "$precision" \
        --run-dir "$out/run-$i-$precision-$r" >"$out/host-$i-$precision-$r.json" 2>"$out/host-$i-$precision-$r.err" ||
        { echo "${hosts[$i]} failed: $(tail -1 "$out/host-$i-$precision-$r.err")" >&2; rm -f "$out/host-$i-$precision-$r.json"; }
    done
  done
done

python3 - "$out" "${hosts[@]}" <<'PY'
import glob, json, os, statistics, sys
out, hosts = sys.argv[1], sys.argv[2:]
names = {"5-5-15": "train_episode_5way_5shot_15query_28x28", "60-5-5": "train_episode_60way_5shot_5query_28x28"}
rows = {}  # (variant, precision) -> {shape: [episodes/s]}
for path in glob.glob(os.path.join(out, "reference-*")):
    _, alloc, precision, shape = os.path.basename(path).split("-", 3)
    for line in open(path):
        rows.setdefault(("python reference, " + alloc, precision), {}).setdefault(shape, []).append(
            json.loads(line)["episodes_per_s"])
for path in glob.glob(os.path.join(out, "host-*.json")):
    _, i, precision, _ = os.path.basename(path)[:-5].split("-")
    report = json.load(open(path))
    for shape, name in names.items():
        for b in report["benchmarks"]:
            if b["name"] == name:
                rows.setdefault((hosts[int(i)] + " (" + str(report.get("allocator", "?")) + ")", precision),
                                {}).setdefault(shape, []).append(b["throughput"])
base = {s: statistics.median(v) for s, v in rows.get(("python reference, glibc", "fp32"), {}).items()}
print(f"{'variant':52} {'prec':5} {'5w5s15q ep/s':>13} {'ratio':>7} {'60w5s5q ep/s':>13} {'ratio':>7}")
for (variant, precision), shapes in sorted(rows.items()):
    cells = ""
    for s in ("5-5-15", "60-5-5"):
        m = statistics.median(shapes[s]) if s in shapes else float("nan")
        cells += f" {m:13.2f} {m / base[s] if s in base else float('nan'):6.2f}x"
    print(f"{variant:52} {precision:5}{cells}")
PY
