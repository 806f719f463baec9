#!/usr/bin/env bash
# Sets up, builds, and runs the main job: probe this machine, pick a device, plan the run
# (calibrating it on the first run: the allocator and thread count measured), and train
# Prototypical Networks on Fashion-MNIST classes 0-4, then evaluate 5-way 5-shot on the
# unseen classes 5-9 (a short run: about a minute on 2 CPU cores, plus the calibration).
# Builds only what it runs: the host, the device plugins and the protonet plugin (the test
# command builds everything).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target host --target mlhost-plugin-cpu --target mlhost-plugin-cuda \
  --target mlhost-plugin-mps --target mlhost-plugin-protonet
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
build/bin/host --algorithm protonet --run-dir "$run_dir" --resume --command eval --set eval_episodes=300  # into $run_dir/commands/eval-1
