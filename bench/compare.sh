#!/usr/bin/env bash
# Every algorithm's benchmark (`host --algorithm NAME --benchmark --json`) under several
# variants of the host command, alternating between the variants round by round so that all
# see the same machine load; then the median throughput of each benchmark per variant and
# its ratio to the first variant's.
#   bench/compare.sh [-r ROUNDS] [-a "ALGORITHM..."] LABEL=COMMAND...
#     -r   rounds (default 3)          -a   algorithms (default "protonet ppo trm")
#   LABEL=COMMAND: a name for the table and the host command with its extra options.
# Examples:
#   bench/compare.sh "2.x=build/bin/host --no-calibrate" "1.13=build-debian/bin/host --no-calibrate"
#   bench/compare.sh -a protonet "glibc=build/bin/host --no-calibrate --allocator glibc" \
#                                "jemalloc=build/bin/host --no-calibrate --allocator jemalloc"
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
algorithms="protonet ppo trm"
while getopts "r:a:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    a) algorithms=$OPTARG ;;
    *) echo "usage: bench/compare.sh [-r ROUNDS] [-a \"ALGORITHM...\"] LABEL=COMMAND..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
(($# >= 1)) || { echo "bench/compare.sh: give at least one LABEL=COMMAND" >&2; exit 2; }
labels=() commands=()
for v in "$@"; do
  [[ $v == *=* ]] || { echo "bench/compare.sh: '$v' is not LABEL=COMMAND" >&2; exit 2; }
  labels+=("${v%%=*}")
  commands+=("${v#*=}")
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for a in $algorithms; do
    for i in "${!labels[@]}"; do
      echo "round $r/$rounds: $a, ${labels[$i]}" >&2
      # shellcheck disable=SC2086  # the command is words on purpose
      ${commands[$i]} --algorithm "$a" --benchmark --json --run-dir "$out/run-$i-$a-$r" >"$out/$i-$a-$r.json" 2>"$out/$i-$a-$r.err" ||
        { echo "${labels[$i]} $a failed: $(tail -1 "$out/$i-$a-$r.err")" >&2; rm -f "$out/$i-$a-$r.json"; }
    done
  done
done

python3 - "$out" "${labels[@]}" <<'PY'
import glob, json, os, statistics, sys
out, labels = sys.argv[1], sys.argv[2:]
results, units, order, settings = {}, {}, [], {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    variant, algorithm, _ = os.path.basename(path)[:-len(".json")].split("-")
    report = json.load(open(path))
    settings.setdefault(int(variant), "threads %s, allocator %s, %s" % (
        report["threads"].get("intra_op"), report.get("allocator", "?"), report["precision"]))
    for b in report["benchmarks"]:
        key = (algorithm, b["name"])
        if key not in units:
            units[key] = b["unit"]
            order.append(key)
        results.setdefault(key, {}).setdefault(int(variant), []).append(b["throughput"])
for i, label in enumerate(labels):
    print(f"{label}: {settings.get(i, 'no result')}")
head = f"{'algorithm':9} {'benchmark':40} {'unit/s':>15}" + "".join(f" {l:>14}" for l in labels)
head += "".join(f" {l + '/' + labels[0]:>12}" for l in labels[1:])
print(head)
for key in order:
    med = [statistics.median(results[key][i]) if i in results[key] else float("nan") for i in range(len(labels))]
    row = f"{key[0]:9} {key[1]:40} {units[key]:>15}" + "".join(f" {m:14.1f}" for m in med)
    row += "".join(f" {m / med[0]:11.2f}x" for m in med[1:])
    print(row)
PY
