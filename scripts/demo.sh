#!/usr/bin/env bash
# Sets up, builds, and runs the main job: probe this machine, pick a device, plan the run,
# and train Prototypical Networks on Fashion-MNIST classes 0-4, then evaluate 5-way 5-shot
# on the unseen classes 5-9 (a short run: about a minute on 2 CPU cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
echo
echo "== host --probe =="
build/bin/host --probe
run_dir=runs/demo-protonet-$(date +%Y%m%d-%H%M%S)
echo
echo "== training ProtoNet on Fashion-MNIST classes 0-4 (run folder $run_dir) =="
build/bin/host --algorithm protonet --run-dir "$run_dir" --set epochs=6 --set episodes_per_epoch=40
echo
echo "validation accuracy by epoch (from $run_dir/metrics.csv):"
grep val/acc "$run_dir/metrics.csv" | cut -d, -f1,3
echo
echo "== 5-way 5-shot on the unseen classes 5-9 =="
build/bin/host --algorithm protonet --run-dir "$run_dir" --resume --command eval --set eval_episodes=300
