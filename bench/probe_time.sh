#!/usr/bin/env bash
# Median wall time of `host --probe` (every device plugin probed in its own child process)
# and of `host --list-plugins` (manifests only). Targets: <= 50 ms and <= 20 ms.
# Usage: bench/probe_time.sh [runs] [extra host args...]   (build first: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-31}
shift || true
host=build/bin/host
[[ -x $host ]] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }

median_ms() {  # runs "$@" $runs times, prints the median wall time in ms
  local times=()
  "$@" >/dev/null  # warm the page cache
  for ((i = 0; i < runs; i++)); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000)))
  done
  local sorted
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  local us=${sorted[$((runs / 2))]}
  printf '%d.%03d' $((us / 1000)) $((us % 1000))
}

baseline=$(median_ms true)
probe=$(median_ms "$host" --probe "$@")
probe_json=$(median_ms "$host" --probe --json "$@")
list=$(median_ms "$host" --list-plugins "$@")
plugins=$("$host" --list-plugins --json "$@" | grep -c '"kind": "device"' || true)
echo "runs per figure: $runs, device plugins found: $plugins"
echo "host --probe          median ${probe} ms   (target <= 50 ms)"
echo "host --probe --json   median ${probe_json} ms"
echo "host --list-plugins   median ${list} ms   (target <= 20 ms)"
echo "spawning 'true'       median ${baseline} ms   (the measuring loop's own cost, included above)"
