#!/usr/bin/env bash
# Sets up, builds, and runs the main job: probe this machine, pick a device, and train.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
echo
echo "== host --probe =="
build/bin/host --probe
echo
echo "== training: the toyreg test algorithm on the chosen device =="
run_dir=runs/demo-$(date +%Y%m%d-%H%M%S)
build/bin/host --algorithm toyreg --plugin-dir build/tests/plugins/toyreg --run-dir "$run_dir" --set steps=200
echo
echo "loss, first and last steps (from $run_dir/metrics.csv):"
grep train/loss "$run_dir/metrics.csv" | sed -n '1p;$p'
