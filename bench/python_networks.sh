#!/usr/bin/env bash
# What a network written in PyTorch costs (docs/benchmarks.md, docs/your-network-in-pytorch.md):
# the built-in network beside the same architecture written as a torch.nn.Module
# (examples/pytorch), trained by the same host in one run, alternating ROUNDS times (default 2;
# the best of each is kept: a shared machine only slows a run down).
#
#   ProtoNet  Conv-4 (model.encoder=conv4) beside examples/pytorch/my_encoder.py:SmallConvEncoder
#             (Conv-4 in PyTorch): the benchmark command's training episodes per second, 5-way
#             5-shot 15-query and 60-way 5-shot 5-query on 28x28x1 images
#   PPO       the built-in mlp beside examples/pytorch/my_policy.py:MlpPolicy (CleanRL's Agent):
#             CartPole-v1, STEPS (99840) environment steps, steps per second over the whole run and
#             the average return of the last 100 episodes
#
#   bench/python_networks.sh [BUILD_DIR]
#
# Both in fp32 with the default plan (MLH_NO_CALIBRATE). Needs the Python bridge (a build with
# PyPI's torch wheel, bash scripts/torch-venv.sh --full, python3-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
host=$build/bin/host
rounds=${ROUNDS:-2}
steps=${STEPS:-99840}
python=${MLH_TORCH_VENV:-.venv}/bin/python
[[ -x $python ]] || { echo "python_networks: no $python (bash scripts/torch-venv.sh --full)" >&2; exit 77; }
[[ -e $build/lib/libmlhost_python.so ]] ||
  { echo "python_networks: $build has no libmlhost_python.so (networks in Python need the torch wheel's build)" >&2; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MLH_NO_CALIBRATE=1 XDG_CACHE_HOME="$out/cache"
examples=$PWD/examples/pytorch
encoder=(--set model.encoder=python --set model.module="$examples/my_encoder.py:SmallConvEncoder")
policy=(--set network.kind=python --set network.module="$examples/my_policy.py:MlpPolicy")

# name, then host arguments: a run whose summary.json goes to $out/<name>-<round>.
run() {
  local name=$1 round=$2
  shift 2
  "$host" --run-dir "$out/$name-$round" --precision fp32 "$@" > "$out/$name-$round.log" 2>&1 ||
    { echo "python_networks: $name failed:" >&2; tail -20 "$out/$name-$round.log" >&2; exit 1; }
}
for ((r = 1; r <= rounds; ++r)); do
  echo "round $r of $rounds" >&2
  run protonet-builtin "$r" --algorithm protonet --command benchmark
  run protonet-python "$r" --algorithm protonet --command benchmark "${encoder[@]}"
  run ppo-builtin "$r" --algorithm ppo --set total_timesteps="$steps" --set seed="$r"
  run ppo-python "$r" --algorithm ppo --set total_timesteps="$steps" --set seed="$r" "${policy[@]}"
done

"$python" - "$out" "$rounds" <<'PY'
import json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def summaries(name):
    return [json.load(open(os.path.join(out, f"{name}-{r}", "summary.json"))) for r in range(1, rounds + 1)]
def episodes(name, bench):
    return max(b["throughput"] for s in summaries(name) for b in s["result"]["benchmarks"] if b["name"] == bench)
print(f"| work | built-in | written in PyTorch | PyTorch / built-in |")
print(f"|---|---|---|---|")
for bench, label in (("train_episode_5way_5shot_15query_28x28", "ProtoNet Conv-4, 5-way 5-shot 15-query (episodes/s)"),
                     ("train_episode_60way_5shot_5query_28x28", "ProtoNet Conv-4, 60-way 5-shot 5-query (episodes/s)")):
    a, b = episodes("protonet-builtin", bench), episodes("protonet-python", bench)
    print(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")
builtin = [s["result"] for s in summaries("ppo-builtin")]
python = [s["result"] for s in summaries("ppo-python")]
a = max(s["env_steps_per_s"] for s in builtin)
b = max(s["env_steps_per_s"] for s in python)
print(f"| PPO CartPole MLP 64-64 (env steps/s) | {a:.0f} | {b:.0f} | {b / a:.2f}x |")
returns = lambda ss: ", ".join(f"{s['avg_return_100']:.0f}" for s in ss)
print(f"\nPPO average return of the last 100 episodes after {builtin[0]['global_step']} steps, seeds 1..{rounds}: "
      f"built-in {returns(builtin)}; in PyTorch {returns(python)}")
PY
