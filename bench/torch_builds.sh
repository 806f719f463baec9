#!/usr/bin/env bash
# CPU throughput of the two LibTorch builds side by side: every algorithm's benchmark
# (`host --algorithm NAME --benchmark --json`) with Debian's 1.13 (build/) and PyPI's 2.x
# (build-pypi/), alternating between the builds for ROUNDS rounds so that both see the same
# machine load, then the median throughput of each and the ratio 2.x / 1.13.
# Usage: bench/torch_builds.sh [ROUNDS] [ALGORITHM...]   (default 3 rounds; protonet ppo trm)
# Build both first: bash scripts/build.sh && bash scripts/build.sh --torch pypi
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
algorithms=(protonet ppo trm)
[[ $# -gt 0 ]] && algorithms=("$@")
for b in build build-pypi; do
  [[ -x $b/bin/host ]] || { echo "build first: $b/bin/host is missing (scripts/build.sh [--torch pypi])" >&2; exit 1; }
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for a in "${algorithms[@]}"; do
    for b in build build-pypi; do
      echo "round $r/$rounds: $a with $b" >&2
      "$b/bin/host" --algorithm "$a" --benchmark --json --run-dir "$out/run-$b-$a-$r" >"$out/${b}__${a}__$r.json" 2>/dev/null
    done
  done
done

python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
results = {}  # (algorithm, benchmark) -> build -> [throughput]
units, order = {}, []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    build, algorithm, _ = os.path.basename(path)[:-len(".json")].split("__")
    for b in json.load(open(path))["benchmarks"]:
        key = (algorithm, b["name"])
        if key not in units:
            units[key] = b["unit"]
            order.append(key)
        results.setdefault(key, {}).setdefault(build, []).append(b["throughput"])
print(f"{'algorithm':9} {'benchmark':40} {'unit/s':>16} {'LibTorch 1.13':>14} {'LibTorch 2.x':>13} {'2.x/1.13':>9}")
for key in order:
    old = statistics.median(results[key].get("build", [float("nan")]))
    new = statistics.median(results[key].get("build-pypi", [float("nan")]))
    print(f"{key[0]:9} {key[1]:40} {units[key]:>16} {old:14.1f} {new:13.1f} {new / old:8.2f}x")
PY
