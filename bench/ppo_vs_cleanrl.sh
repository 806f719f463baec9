#!/usr/bin/env bash
# mlhost's PPO beside CleanRL's loop, in one run on one machine (docs/benchmarks.md): the host
# and bench/peers.py train the same number of steps with the same settings and seeds, one
# after the other. For each: env steps per second over the whole run (collection and update),
# and the average return of the last 100 episodes at a quarter, half and all of the steps.
#
#   bench/ppo_vs_cleanrl.sh pendulum [BUILD_DIR]   the host's pendulum preset (built-in
#                      Pendulum-v1) against CleanRL's ppo_continuous_action.py on a numpy
#                      Pendulum-v1 (peers.py ppo_continuous); STEPS 196608
#   bench/ppo_vs_cleanrl.sh gymnasium [BUILD_DIR]  env=gymnasium CartPole-v1 (Gymnasium's own,
#                      in Python workers) against CleanRL's ppo.py on Gymnasium's SyncVectorEnv
#                      (peers.py ppo_gymnasium); PPO's defaults; STEPS 99840
#
# SEEDS (default "1 2 3"). Needs .venv/ with torch and gymnasium (scripts/torch-venv.sh
# --peers). Runs skip calibration (MLH_NO_CALIBRATE).
set -euo pipefail
cd "$(dirname "$0")/.."
case=${1:?usage: bench/ppo_vs_cleanrl.sh pendulum|gymnasium [BUILD_DIR]}
host=${2:-build}/bin/host
seeds=${SEEDS:-1 2 3}
python=${MLH_TORCH_VENV:-.venv}/bin/python
[[ -x $python ]] || { echo "ppo_vs_cleanrl: no $python (bash scripts/torch-venv.sh --peers)" >&2; exit 77; }
case $case in
  pendulum)
    steps=${STEPS:-196608}
    host_args=(--set preset=pendulum)
    peer_args=(--workload ppo_continuous --pc-total-timesteps "$steps")
    seed_option=--pc-seed ;;
  gymnasium)
    steps=${STEPS:-99840}
    "$python" -c 'import gymnasium' 2>/dev/null ||
      { echo "ppo_vs_cleanrl: $python lacks gymnasium (bash scripts/torch-venv.sh --peers)" >&2; exit 77; }
    host_args=(--set env=gymnasium --set gymnasium.id=CartPole-v1 --set gymnasium.python="$python")
    peer_args=(--workload ppo_gymnasium --pg-total-timesteps "$steps")
    seed_option=--pg-seed ;;
  *) echo "ppo_vs_cleanrl: unknown case '$case' (pendulum or gymnasium)" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MLH_NO_CALIBRATE=1 XDG_CACHE_HOME="$out/cache"

printf '%-12s %4s %10s %10s %10s %10s %8s\n' who seed steps/s "@1/4" "@1/2" "@all" wall_s
for seed in $seeds; do
  run=$out/host-$seed
  "$host" --log-level warn --algorithm ppo --run-dir "$run" "${host_args[@]}" \
    --set total_timesteps="$steps" --set seed="$seed" >"$run.log" 2>&1 ||
    { tail -20 "$run.log" >&2; exit 1; }
  python3 - "$run" "$steps" "$seed" <<'PY'
import json, sys
run, steps, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
avg = [(m["step"], m["value"]) for m in map(json.loads, open(run + "/metrics.jsonl")) if m["name"] == "charts/avg_return_100"]
summary = json.load(open(run + "/summary.json"))["result"]
at = lambda s: ([v for step, v in avg if step <= s] or [float("nan")])[-1]  # nan: no iteration yet
print(f'{"mlhost":<12} {seed:>4} {summary["env_steps_per_s"]:10.0f} {at(steps // 4):10.1f} {at(steps // 2):10.1f} '
      f'{at(steps):10.1f} {summary["wall_seconds"]:8.1f}')
PY
  "$python" bench/peers.py "${peer_args[@]}" "$seed_option" "$seed" >"$out/peer-$seed.json"
  python3 - "$out/peer-$seed.json" "$steps" "$seed" <<'PY'
import json, sys
line, steps, seed = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]), int(sys.argv[2]), sys.argv[3]
if "error" in line:
    sys.exit(f"ppo_vs_cleanrl: {line['error']}")
at = lambda s: ([v for step, v in line["returns_at"] if step <= s] or [float("nan")])[-1]
print(f'{"CleanRL loop":<12} {seed:>4} {line["items_per_s"]:10.0f} {at(steps // 4):10.1f} {at(steps // 2):10.1f} '
      f'{at(steps):10.1f} {line["wall_s"]:8.1f}')
PY
done
