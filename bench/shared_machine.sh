#!/usr/bin/env bash
# Two runs side by side on one machine, each against running alone (docs/running.md "A shared
# machine"): ProtoNet (default config) and TRM (preset sudoku-easy) train for SECONDS each,
# and the figure is each run's training throughput (the median of its perf/samples_per_s
# windows after a warm-up):
#   alone        each run by itself;
#   dedicated    both at once, each planned as if it had the machine to itself
#                (MLH_MACHINE_SHARING=dedicated: every core, the OpenMP runtime's wait policy);
#   shared       both at once, planned as users get it: ProtoNet starts first, alone, and TRM,
#                started DELAY seconds later, sees its worker (its own threads, passive waits);
#   split        likewise with shared_machine_threads = split (TRM takes the cores left).
#   bench/shared_machine.sh [BUILD_DIR]      (default build; SECONDS 45, DELAY 8)
# Runs skip calibration (MLH_NO_CALIBRATE), which would otherwise differ between the cases.
set -euo pipefail
cd "$(dirname "$0")/.."
host=${1:-build}/bin/host
seconds=${SECONDS_EACH:-45}
delay=${DELAY:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MLH_NO_CALIBRATE=1 XDG_CACHE_HOME="$out/cache"

# train NAME ALGORITHM SECONDS [options...]: a run stopped by SIGTERM after SECONDS (it saves and exits).
train() {
  local name=$1 algorithm=$2 limit=$3
  shift 3
  timeout -s TERM "$limit" "$host" --log-level warn --algorithm "$algorithm" --run-dir "$out/$name" "$@" \
    >"$out/$name.log" 2>&1 || true
}
# The median throughput of a run's windows from `after` seconds on, and its plan's threads and wait policy.
figure() {
  python3 - "$out/$1" "$2" <<'PY'
import json, statistics, sys
run, after = sys.argv[1], float(sys.argv[2])
values = [m["value"] for m in map(json.loads, open(run + "/metrics.jsonl"))
          if m["name"] == "perf/samples_per_s" and m["time"] >= after]
plan = json.load(open(run + "/plan.json"))
print(f'{statistics.median(values) if values else 0:.1f} {plan["threads"]["intra_op"]} {plan["omp_wait_policy"] or "default"}')
PY
}
trm=(--set preset=sudoku-easy)
train protonet-alone protonet "$seconds"
train trm-alone trm "$seconds" "${trm[@]}"
printf 'shared_machine_threads = split\n' >"$out/split.ini"
for mode in dedicated shared split; do
  sharing=$([ "$mode" = dedicated ] && echo dedicated || echo auto)
  settings=$([ "$mode" = split ] && echo "$out/split.ini" || echo "")
  MLH_HARDWARE_CONFIG=$settings MLH_MACHINE_SHARING=$sharing train "protonet-$mode" protonet $((seconds + delay)) &
  sleep "$delay"
  MLH_HARDWARE_CONFIG=$settings MLH_MACHINE_SHARING=$sharing train "trm-$mode" trm "$seconds" "${trm[@]}"
  wait
done

printf '| run | alone | beside the other, each planned alone | planned as shared | shared, split |\n|---|---|---|---|---|\n'
for algorithm in protonet trm; do
  warm=10
  read -r alone at ap < <(figure "$algorithm-alone" $warm)
  beside_warm=$([ "$algorithm" = protonet ] && echo $((warm + delay)) || echo $warm)
  read -r dedicated dt dp < <(figure "$algorithm-dedicated" "$beside_warm")
  read -r shared st sp < <(figure "$algorithm-shared" "$beside_warm")
  read -r split xt xp < <(figure "$algorithm-split" "$beside_warm")
  python3 -c "
a, d, s, x = $alone, $dedicated, $shared, $split
r = lambda x: f'{x / a:.2f}x' if a else '-'
print(f'| $algorithm samples/s | {a:.1f} ($at threads, $ap) | {d:.1f} = {r(d)} ($dt, $dp) | {s:.1f} = {r(s)} ($st, $sp) | {x:.1f} = {r(x)} ($xt, $xp) |')"
done
