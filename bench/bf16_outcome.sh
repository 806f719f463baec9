#!/usr/bin/env bash
# bf16 against fp32 on a CPU, by what the user gets (docs/benchmarks.md, "bf16 on CPUs"):
#   1. the demo's ProtoNet run (Fashion-MNIST classes 0-4, 6 epochs of 40 episodes) trained in
#      fp32 and in bf16 for each seed in SEEDS, each tested 5-way 5-shot on the unseen classes
#      5-9 (300 episodes: the mean accuracy and its 95% interval);
#   2. the plan's own choice for that config (`--precision auto` after `host --calibrate`),
#      with the held-out check's figures;
#   3. the training episode's speed: `host --benchmark` rounds alternating fp32 and bf16 at 1
#      and 2 threads (ROUNDS rounds of each), the median 5-way and 60-way episodes/s.
#   bench/bf16_outcome.sh [BUILD_DIR]        (default build; SEEDS "0 1", ROUNDS 2)
# Run it on a quiet machine: the speed rounds alternate so that drift hits both precisions.
set -euo pipefail
cd "$(dirname "$0")/.."
host=${1:-build}/bin/host
seeds=${SEEDS:-0 1}
rounds=${ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export XDG_CACHE_HOME="$out/cache"
demo=(--algorithm protonet --set epochs=6 --set episodes_per_epoch=40)

lscpu | grep -E '^Model name' || true
grep -o -w -E 'avx512_bf16|amx_bf16|avx512_fp16' /proc/cpuinfo | sort -u | tr '\n' ' '
echo

# accuracy RUN_DIR: "75.46% +- 0.66%" from the eval command's summary.
accuracy() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]; print("%.2f%% +- %.2f%%" % (100*r["accuracy"], 100*r["ci95"]))' \
    "$1/commands/eval-1/summary.json"
}

echo "== 1. trained in each precision, tested on the unseen classes 5-9 (300 episodes)"
for seed in $seeds; do
  for precision in fp32 bf16; do
    run="$out/$precision-$seed"
    MLH_NO_CALIBRATE=1 "$host" --log-level warn "${demo[@]}" --set seed="$seed" --precision "$precision" \
      --run-dir "$run" >"$run.log" 2>&1
    MLH_NO_CALIBRATE=1 "$host" --log-level warn --algorithm protonet --run-dir "$run" --resume --command eval \
      --set eval_episodes=300 >>"$run.log" 2>&1
    echo "seed $seed $precision: $(accuracy "$run")"
  done
done

echo
echo "== 2. the plan's choice for the demo's config (host --calibrate, then --print-plan)"
"$host" --calibrate "${demo[@]}" 2>/dev/null | grep -E 'Calibration of|quality check|<- chosen' || true
"$host" --print-plan "${demo[@]}" 2>/dev/null | grep -E '^  precision ' || true

echo
echo "== 3. training episodes/s, host --benchmark rounds alternating fp32 and bf16"
for threads in 1 2; do
  for round in $(seq "$rounds"); do
    for precision in fp32 bf16; do
      MLH_NO_CALIBRATE=1 "$host" --log-level warn --algorithm protonet --benchmark --json --precision "$precision" \
        --threads "$threads" >"$out/bench-$threads-$round-$precision.json" 2>/dev/null
    done
  done
  for name in train_episode_5way_5shot_15query_28x28 train_episode_60way_5shot_5query_28x28; do
    python3 - "$out" "$threads" "$rounds" "$name" <<'EOF'
import json, statistics, sys
out, threads, rounds, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def rate(path):
    t = open(path).read()
    j = json.loads(t[t.index("{"):])
    return next(b["throughput"] for b in j["benchmarks"] if b["name"] == name)
med = {p: statistics.median(rate(f"{out}/bench-{threads}-{r}-{p}.json") for r in range(1, rounds + 1))
       for p in ("fp32", "bf16")}
print(f"{threads} thread(s), {name}: fp32 {med['fp32']:.2f}, bf16 {med['bf16']:.2f} episodes/s "
      f"(bf16/fp32 {med['bf16'] / med['fp32']:.2f}x)")
EOF
  done
done
