#!/usr/bin/env bash
# mlhost's training throughput beside the Python references' (bench/peers.py) on the same device
# in the same sitting: for each algorithm, ROUNDS rounds alternating between our benchmark
# (`HOST --algorithm A --benchmark --json --no-calibrate --device D --precision P`) and the
# reference's, so that both see the same machine load; then the median over the rounds of each
# and the ratio ours/theirs, as Markdown table rows printed when each algorithm's rounds end (a
# run cut short by RUN_TIMEOUT, BUDGET or a signal still leaves the rows it finished). After
# each algorithm's rows, a line gives how far apart two cores were before each side's run
# (bench/core_round_trip.cpp, compiled with $CXX or c++): tens of nanoseconds for cores that
# share a cache, hundreds for distant ones, where a virtual machine's figures can drop.
#   bench/peer_bench.sh [HOST]
#     HOST: the host binary (default: build-gpu/bin/host for DEVICE=cuda, else build/bin/host)
# Environment:
#   DEVICE       cpu (default) or cuda
#   ROUNDS       rounds per algorithm (3; TINY: 1)
#   PRECISIONS   "fp32 bf16" (PPO is measured in fp32 only: the host keeps PPO in fp32)
#   ALGORITHMS   "protonet ppo trm"
#   VARIANTS     the references' variants, comma-separated (default: eager,compiled, on CUDA also
#                cuda_graph for ProtoNet; TINY: eager)
#   PEER_SECONDS timed seconds per reference measurement (3; TINY: 1)
#   TRM_SIZES    the TRM reference's model sizes, comma-separated: small, default (both)
#   TRM_BATCH    TRM's batch on a GPU, given to ours as --set batch_size=N (default: the plan's;
#                the CPU benchmark always uses 32). The reference gets the batch ours reports.
#   RUN_TIMEOUT  seconds one run (ours or the references' of one algorithm) may take (900)
#   BUDGET       seconds for the whole script (0: no limit); no run starts after it is spent
#   PYTHON       the Python with torch (default: the first of $MLH_TORCH_VENV/bin/python,
#                .venv/bin/python and python3 that imports torch)
#   TINY=1       the test's mode: one round, the references' small sizes (TRM small at ours'
#                batch, ProtoNet 5-way only) for a second each. Ours is its full benchmark
#                (it has no smaller one): about 3 minutes on 2 cores.
# Exit status: 0 when every row has a ratio, 1 when some run failed (its row says why).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
device=${DEVICE:-cpu}
tiny=${TINY:-0}
[[ $tiny == 0 ]] && tiny=
host=${1:-}
if [[ -z $host ]]; then
  if [[ $device == cuda ]]; then host=build-gpu/bin/host; else host=build/bin/host; fi
fi
[[ -x $host ]] || { echo "peer_bench.sh: no host binary at $host (bash scripts/build.sh, or give HOST)" >&2; exit 2; }
python=${PYTHON:-}
if [[ -z $python ]]; then  # the first that imports torch
  for p in ${MLH_TORCH_VENV:+"$MLH_TORCH_VENV/bin/python"} .venv/bin/python python3; do
    "$p" -c 'import torch' 2>/dev/null && { python=$p; break; }
  done
  python=${python:-python3}
fi
rounds=${ROUNDS:-$([[ -n $tiny ]] && echo 1 || echo 3)}
precisions=${PRECISIONS:-fp32 bf16}
algorithms=${ALGORITHMS:-protonet ppo trm}
run_timeout=${RUN_TIMEOUT:-900}
budget=${BUDGET:-0}
peer_args=(--device "$device")
[[ -n $tiny ]] && peer_args+=(--tiny)
[[ -n ${PEER_SECONDS:-} ]] && peer_args+=(--seconds "$PEER_SECONDS")
[[ -n ${VARIANTS:-} ]] && peer_args+=(--variant "$VARIANTS")
[[ -n ${TRM_SIZES:-} ]] && peer_args+=(--trm-size "$TRM_SIZES")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# How far apart two of the machine's cores are, before every run (bench/core_round_trip.cpp):
# on a virtual machine the hypervisor places its CPUs, and moves them, and two threads that
# share data can run slower on distant cores. A row's figures are read with the distance
# measured before each side ran (a line after the table).
round_trip=""
if (($(nproc) < 2)); then
  echo "not measured: one core" >"$out/round-trip-why"
elif "${CXX:-c++}" -O2 -std=c++17 -pthread bench/core_round_trip.cpp -o "$out/core_round_trip" 2>"$out/round-trip-why"; then
  round_trip=$out/core_round_trip
else
  echo "not measured: bench/core_round_trip.cpp did not compile with ${CXX:-c++}" >"$out/round-trip-why"
fi
# apart ALGORITHM WHO: the round trip now, as "WHO N ns" in $out/apart-ALGORITHM and on stderr.
apart() {
  [[ -n $round_trip ]] || return 0
  local ns
  ns=$("$round_trip" 2>&1 | sed -n 's/.*: \([0-9]*\) ns round trip.*/\1/p')
  if [[ -n $ns ]]; then
    echo "$2 $ns ns" >>"$out/apart-$1"
    echo "$2: cores ${ns} ns apart (round trip)" >&2
  else
    echo "$2 not measured (bench/core_round_trip.cpp failed)" >>"$out/apart-$1"
  fi
}
current=""  # the algorithm whose rounds are running: its rows so far when a signal stops us
trap '[[ -n $current ]] && rows "$current" "(cut short)"; exit 130' INT TERM
echo "ours: $host; theirs: $python ($("$python" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1));" \
     "device $device; $rounds round(s); $(nproc) cores" >&2

# Seconds this run may take: RUN_TIMEOUT, or less where BUDGET ends first (0: none left).
limit() {
  if ((budget > 0)); then
    local left=$((budget - SECONDS))
    ((left <= 0)) && { echo 0; return; }
    ((left < run_timeout)) && { echo "$left"; return; }
  fi
  echo "$run_timeout"
}

# ours ALGORITHM PRECISION ROUND: one host benchmark run, its report in $out/ours-A-P-R.json.
ours() {
  local a=$1 p=$2 r=$3 t
  t=$(limit)
  ((t > 0)) || return 1
  local extra=()
  [[ $a == trm && -n ${TRM_BATCH:-} ]] && extra+=(--set "batch_size=$TRM_BATCH")
  apart "$a" "ours $p round $r"
  local start=$SECONDS rc why
  timeout "$t" "$host" --log-level warn --algorithm "$a" --benchmark --json --no-calibrate --device "$device" \
    --precision "$p" "${extra[@]}" --run-dir "$out/run-$a-$p-$r" >"$out/ours-$a-$p-$r.json" 2>"$out/ours-$a-$p-$r.err"
  rc=$?
  if ((rc == 0)); then
    echo "round $r: ours $a $p: $((SECONDS - start)) s" >&2
  else
    why=$(tail -1 "$out/ours-$a-$p-$r.err" | cut -c1-120)
    ((rc == 124)) && why="stopped at the time limit ($t s: RUN_TIMEOUT or BUDGET)"
    echo "round $r: ours $a $p failed after $((SECONDS - start)) s: $why" >&2
    echo "round $r: ours $a $p: $why" >>"$out/failures-$a"
    rm -f "$out/ours-$a-$p-$r.json"
  fi
}

# theirs ALGORITHM ROUND PRECISIONS...: the references' measurements of one algorithm, one JSON
# line each in $out/theirs-A (a run cut short keeps the lines it printed).
theirs() {
  local a=$1 r=$2 t
  shift 2
  t=$(limit)
  ((t > 0)) || return 1
  local args=("${peer_args[@]}" --workload "$a" --precision "$(IFS=,; echo "$*")")
  if [[ $a == trm ]]; then  # the batch ours measured (its summary), else the CPU benchmark's 32
    local batch
    batch=$(python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "run-trm-*", "summary.json"))):
    try:
        print((json.load(open(path)).get("result") or {})["batch_size"])
        break
    except (OSError, ValueError, KeyError):
        pass
PY
)
    args+=(--batch "${batch:-${TRM_BATCH:-32}}")
  fi
  apart "$a" "theirs round $r"
  local start=$SECONDS
  timeout "$t" "$python" bench/peers.py "${args[@]}" >>"$out/theirs-$a" 2>"$out/theirs-$a-$r.err"
  local rc=$?
  echo "round $r: theirs $a: $((SECONDS - start)) s" >&2
  if ((rc != 0)); then
    local why
    why="exit $rc: $(tail -1 "$out/theirs-$a-$r.err" | cut -c1-120)"
    ((rc == 124)) && why="stopped at the time limit ($t s: RUN_TIMEOUT or BUDGET); its finished lines count"
    echo "round $r: theirs $a: $why" >&2
    echo "round $r: theirs $a: $why" >>"$out/failures-$a"
  fi
}

# rows ALGORITHM [NOTE]: the Markdown rows of one algorithm, medians over its rounds.
rows() {
  python3 - "$out" "$1" "${2:-}" <<'PY'
import glob, json, os, statistics, sys
out, algorithm, note = sys.argv[1], sys.argv[2], sys.argv[3]
ours = {}  # (benchmark, precision) -> [throughput], unit
for path in sorted(glob.glob(os.path.join(out, f"ours-{algorithm}-*.json"))):
    precision = os.path.basename(path).split("-")[2]
    try:
        report = json.load(open(path))
    except ValueError:
        continue
    for b in report.get("benchmarks", []):
        ours.setdefault((b["name"], precision), ([], b["unit"]))[0].append(b["throughput"])
theirs, errors, order = {}, {}, []
try:
    lines = open(os.path.join(out, f"theirs-{algorithm}")).read().splitlines()
except OSError:
    lines = []
for line in lines:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    key = (r.get("benchmark", algorithm), r.get("precision", "?"), r.get("variant", "?"))
    if key not in order:
        order.append(key)
    if "error" in r:
        errors[key] = r["error"]
    else:
        theirs.setdefault(key, []).append((r["items_per_s"], r["unit"]))


def ours_row(benchmark, precision):
    """Our row for a reference's benchmark: the same name (TRM's carries the precision, and one
    report of ours holds every precision's). PPO's cartpole_iteration_<N>threads, where ours ran
    with other threads than torch's default: ours' row with the plan's threads."""
    for (name, p), (values, unit) in ours.items():
        if name == benchmark and (p == precision or algorithm in ("trm", "ppo")):
            return name, values, unit
    if benchmark.startswith("cartpole_iteration_") and benchmark != "cartpole_iteration_1thread":
        for (name, p), (values, unit) in ours.items():
            if name.startswith("cartpole_iteration_") and name != "cartpole_iteration_1thread":
                return name, values, unit
    return None


def fmt(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


failures = []
try:
    failures = open(os.path.join(out, f"failures-{algorithm}")).read().splitlines()
except OSError:
    pass
for key in order:
    benchmark, precision, variant = key
    match = ours_row(benchmark, precision)
    if not match and ours and benchmark.startswith("cartpole_iteration_"):
        continue  # PPO with more threads where ours' plan has one: ours did not measure it
    label = f"{algorithm} {match[0] if match else benchmark}"
    our = statistics.median(match[1]) if match else None
    cell_ours = f"{fmt(our)} {match[2]}/s" if match else "failed" if failures else "no row"
    if key in theirs:
        values = [v for v, _ in theirs[key]]
        their = statistics.median(values)
        cell_theirs = f"{fmt(their)} {theirs[key][0][1]}/s ({variant})"
        ratio = f"{our / their:.2f}" if our else "-"
    else:
        cell_theirs = f"failed ({variant}): {errors.get(key, 'no result')[:100]}"
        ratio = "-"
    print(f"| {label} | {precision} | {cell_ours} | {cell_theirs} | {ratio} |{(' ' + note) if note else ''}")
if not order:
    print(f"| {algorithm} | - | {'failed' if not ours else 'ran'} | no result from the reference | - |")
# Ours' rows no reference has (ProtoNet without its CUDA graph, the embedding), and TRM's
# model FLOPs utilization from its summary: after the table, as lines of their own.
matched = {m[0] for m in (ours_row(b, p) for b, p, _ in order) if m}
for (name, p), (values, unit) in sorted(ours.items()):
    if algorithm == "protonet" and name not in matched:
        print(f"  ours only: {algorithm} {name} ({p}): {fmt(statistics.median(values))} {unit}/s")
for path in sorted(glob.glob(os.path.join(out, f"run-{algorithm}-*", "summary.json")))[:1]:
    try:
        mfu = (json.load(open(path)).get("result") or {}).get("mfu", {})
    except (OSError, ValueError):
        mfu = {}
    for key, m in sorted(mfu.items()):
        peak = "datasheet" if "mfu_vs_datasheet" in m else "measured matmul"
        print(f"  ours {key}: MFU {100 * m.get('mfu_vs_datasheet', m.get('mfu_vs_measured_matmul', 0)):.1f}% ({peak} peak)")
try:
    apart = ", ".join(open(os.path.join(out, f"apart-{algorithm}")).read().splitlines())
except OSError:
    try:
        apart = open(os.path.join(out, "round-trip-why")).read().strip().splitlines()[-1]
    except (OSError, IndexError):
        apart = "not measured"
print(f"  cores' round trip before each run (bench/core_round_trip.cpp): {apart}")
for f in failures:
    print(f"<!-- {algorithm}: {f} -->")
sys.stdout.flush()
PY
}

echo "| workload | precision | ours | theirs (variant) | ours/theirs |"
echo "|---|---|---|---|---|"
status=0
for a in $algorithms; do
  current=$a
  ps=$precisions
  [[ $a == ppo ]] && ps=fp32
  for ((r = 1; r <= rounds; r++)); do
    if [[ $a == trm ]]; then
      ours trm "${ps%% *}" "$r"  # one report holds every precision's rows
    else
      for p in $ps; do ours "$a" "$p" "$r"; done
    fi
    # shellcheck disable=SC2086  # the precisions are words on purpose
    theirs "$a" "$r" $ps
  done
  current=""
  table=$(rows "$a")
  echo "$table"
  grep -q -e '^| .* | - |$' -e '^<!-- ' <<<"$table" && status=1
done
exit $status
