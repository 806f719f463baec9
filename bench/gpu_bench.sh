#!/usr/bin/env bash
# The GPU benchmark table docs/benchmarks.md records: every algorithm's benchmark command in fp32,
# fp16 and bf16, each under several settings of the plan, on one device, printed as a Markdown
# table (throughput and the CUDA peak memory of each benchmark), then TRM's model FLOPs
# utilization per model size and precision and its training step's peak memory without and
# with checkpointing.
#   bench/gpu_bench.sh [BUILD_DIR]        (default build-gpu, as scripts/gpu.sh builds)
# Environment: DEVICE (cuda), ALGORITHMS ("protonet ppo trm"), PRECISIONS ("fp32 fp16 bf16"),
# SETTINGS (the plan settings of each run, ';' between runs, each a hardware settings line
# key=value or "default": "default;gradient_checkpointing=true"), RUN_TIMEOUT (seconds for one
# benchmark run, 150). Runs skip the calibration (MLH_NO_CALIBRATE): the table compares
# precisions and settings under one plan, and a calibration in each run would only add time.
# Each run's time goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
host=$build/bin/host
device=${DEVICE:-cuda}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
IFS=';' read -r -a settings <<<"${SETTINGS:-default;gradient_checkpointing=true}"
# One benchmark run's rows (and TRM's MFU and peak-memory lines), printed as soon as it ends,
# so that a run cut short by a time limit still leaves the rows it finished.
rows() {
  python3 - "$1" "$2" <<'PY'
import json, os, sys
path, run = sys.argv[1], sys.argv[2]
algorithm, precision, setting = os.path.basename(path)[:-5].split("-", 2)
try:
    report = json.load(open(path))
except ValueError:
    sys.exit(0)
for b in report.get("benchmarks", []):
    peak = b.get("peak_memory_bytes")
    print(f"| {algorithm} | {precision} | {setting} | {b['name']} | {b['throughput']:.1f} {b['unit']}/s | "
          f"{'-' if peak is None else round(peak / 2**20)} |")
try:
    result = json.load(open(os.path.join(run, "summary.json"))).get("result") or {}
except (OSError, ValueError):
    result = {}
name = os.path.basename(run)
for key, m in sorted(result.get("mfu", {}).items()):
    print(f"  {name} {key}: MFU {100 * m.get('mfu_vs_datasheet', m['mfu_vs_measured_matmul']):.1f}%"
          f" ({'datasheet' if 'mfu_vs_datasheet' in m else 'measured matmul'} peak)")
if "peak_bytes_plain" in result:
    print(f"  {name}: TRM step peak {result['peak_bytes_plain'] / 2**20:.0f} MiB plain, "
          f"{result['peak_bytes_checkpointed'] / 2**20:.0f} MiB with checkpointing")
PY
}
echo "| algorithm | precision | settings | benchmark | throughput | peak MiB |"
echo "|---|---|---|---|---|---|"
for algorithm in ${ALGORITHMS:-protonet ppo trm}; do
  for precision in ${PRECISIONS:-fp32 fp16 bf16}; do
    for setting in "${settings[@]}"; do
      [[ $setting == default ]] && : >"$out/$setting.ini" || printf '%s\n' "${setting/=/ = }" >"$out/$setting.ini"
      run=$out/$algorithm-$precision-$setting
      start=$SECONDS
      if MLH_NO_CALIBRATE=1 timeout "${RUN_TIMEOUT:-150}" "$host" --log-level warn --algorithm "$algorithm" --benchmark --json --device "$device" \
           --precision "$precision" --hardware-config "$out/$setting.ini" --run-dir "$run" >"$run.json" 2>"$run.err"; then
        echo "$algorithm $precision $setting: $((SECONDS - start)) s" >&2
      else
        echo "$algorithm $precision $setting: failed after $((SECONDS - start)) s ($(tail -1 "$run.err"))" >&2
      fi
      rows "$run.json" "$run"
    done
  done
done
