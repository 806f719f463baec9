#!/usr/bin/env bash
# PPO on Pendulum-v1 beside CleanRL's continuous-action loop, in one run on one machine
# (docs/benchmarks.md, "PPO: continuous control"): the host's `pendulum` preset and
# bench/peers.py's ppo_continuous workload (CleanRL's ppo_continuous_action.py with the same
# settings, on a numpy Pendulum-v1) train the same number of steps with the same seeds, one
# after the other. For each: env steps per second over the whole run (collection and update),
# and the average return of the last 100 episodes at a quarter, half and all of the steps.
#   bench/ppo_continuous.sh [BUILD_DIR]     (default build; STEPS 196608, SEEDS "1 2 3")
# Needs .venv/ with torch (scripts/torch-venv.sh). Runs skip calibration (MLH_NO_CALIBRATE).
set -euo pipefail
cd "$(dirname "$0")/.."
host=${1:-build}/bin/host
steps=${STEPS:-196608}
seeds=${SEEDS:-1 2 3}
python=${MLH_TORCH_VENV:-.venv}/bin/python
[[ -x $python ]] || { echo "ppo_continuous: no $python (bash scripts/torch-venv.sh)" >&2; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MLH_NO_CALIBRATE=1 XDG_CACHE_HOME="$out/cache"

printf '%-12s %4s %10s %10s %10s %10s %8s\n' who seed steps/s "@1/4" "@1/2" "@all" wall_s
for seed in $seeds; do
  run=$out/host-$seed
  "$host" --log-level warn --algorithm ppo --run-dir "$run" --set preset=pendulum \
    --set total_timesteps="$steps" --set seed="$seed" >"$run.log" 2>&1 ||
    { tail -20 "$run.log" >&2; exit 1; }
  python3 - "$run" "$steps" "$seed" <<'PY'
import json, sys
run, steps, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
avg = [(m["step"], m["value"]) for m in map(json.loads, open(run + "/metrics.jsonl")) if m["name"] == "charts/avg_return_100"]
summary = json.load(open(run + "/summary.json"))["result"]
at = lambda s: [v for step, v in avg if step <= s][-1]
print(f'{"mlhost":<12} {seed:>4} {summary["env_steps_per_s"]:10.0f} {at(steps // 4):10.1f} {at(steps // 2):10.1f} '
      f'{at(steps):10.1f} {summary["wall_seconds"]:8.1f}')
PY
  "$python" bench/peers.py --workload ppo_continuous --pc-total-timesteps "$steps" --pc-seed "$seed" >"$out/peer-$seed.json"
  python3 - "$out/peer-$seed.json" "$steps" "$seed" <<'PY'
import json, sys
line, steps, seed = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]), int(sys.argv[2]), sys.argv[3]
if "error" in line:
    sys.exit(f"ppo_continuous: {line['error']}")
at = lambda s: [v for step, v in line["returns_at"] if step <= s][-1]
print(f'{"CleanRL loop":<12} {seed:>4} {line["items_per_s"]:10.0f} {at(steps // 4):10.1f} {at(steps // 2):10.1f} '
      f'{at(steps):10.1f} {line["wall_s"]:8.1f}')
PY
done
