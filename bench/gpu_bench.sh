#!/usr/bin/env bash
# The GPU benchmark table the README records: every algorithm's benchmark command in fp32,
# fp16 and bf16, each without and with gradient checkpointing, on one device, printed as a
# Markdown table (throughput and the CUDA peak memory of each benchmark), then TRM's model
# FLOPs utilization per model size and precision and its training step's peak memory
# without and with checkpointing.
#   bench/gpu_bench.sh [BUILD_DIR]        (default build-gpu, as scripts/gpu.sh builds)
# Environment: DEVICE (cuda), ALGORITHMS ("protonet ppo trm"), PRECISIONS ("fp32 fp16 bf16").
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
host=$build/bin/host
device=${DEVICE:-cuda}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ckpt in false true; do
  printf 'gradient_checkpointing = %s\n' "$ckpt" >"$out/ckpt-$ckpt.ini"
done
for algorithm in ${ALGORITHMS:-protonet ppo trm}; do
  for precision in ${PRECISIONS:-fp32 fp16 bf16}; do
    for ckpt in false true; do
      run=$out/$algorithm-$precision-$ckpt
      if "$host" --log-level warn --algorithm "$algorithm" --benchmark --json --device "$device" \
           --precision "$precision" --hardware-config "$out/ckpt-$ckpt.ini" --run-dir "$run" >"$run.json" 2>"$run.err"; then
        :
      else
        echo "$algorithm $precision checkpointing=$ckpt: failed ($(tail -1 "$run.err"))" >&2
      fi
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("| algorithm | precision | checkpointing | benchmark | throughput | peak MiB |")
print("|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    algorithm, precision, ckpt = os.path.basename(path)[:-5].rsplit("-", 2)
    try:
        report = json.load(open(path))
    except ValueError:
        continue
    for b in report.get("benchmarks", []):
        peak = b.get("peak_memory_bytes")
        print(f"| {algorithm} | {precision} | {ckpt} | {b['name']} | {b['throughput']:.1f} {b['unit']}/s | "
              f"{'-' if peak is None else round(peak / 2**20)} |")
for path in sorted(glob.glob(os.path.join(out, "trm-*", "summary.json"))):
    result = json.load(open(path)).get("result", {})
    name = os.path.basename(os.path.dirname(path))
    for key, m in sorted(result.get("mfu", {}).items()):
        print(f"{name} {key}: MFU {100 * m.get('mfu_vs_datasheet', m['mfu_vs_measured_matmul']):.1f}%"
              f" ({'datasheet' if 'mfu_vs_datasheet' in m else 'measured matmul'} peak)")
    if "peak_bytes_plain" in result:
        print(f"{name}: TRM step peak {result['peak_bytes_plain'] / 2**20:.0f} MiB plain, "
              f"{result['peak_bytes_checkpointed'] / 2**20:.0f} MiB with checkpointing")
PY
