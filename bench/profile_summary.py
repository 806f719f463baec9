"""Where a benchmark's time goes: the operators of the Chrome traces that MLH_PROFILE_DIR
makes (sdk/runtime's run_benchmark), totalled by name as self time (an operator's time less
that of the operators it called), largest first.

  MLH_PROFILE_DIR=prof CUDA_LAUNCH_BLOCKING=1 build/bin/host --algorithm trm --benchmark
  python3 bench/profile_summary.py prof/*.trace.json [--top 15]

With --calls REGEX it compares instead: for each operator whose name matches, its median time
per call (its whole time, callees included) and its number of calls in each trace, one column
per trace. Give it our trace and the Python reference's (bench/peers.py --profile DIR) to see
whether the same kernel runs as fast in both processes:

  python3 bench/profile_summary.py prof/train_small_h128_H2_L2_fp32.trace.json \
      ref/train_small_h128_H2_L2_fp32_compiled.trace.json --calls 'attention|aten::mm$'

On a GPU, CUDA_LAUNCH_BLOCKING=1 makes each operator wait for its kernels, so its time on the
host is its time on the device (and the launches' overhead shows as the rest).
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys


def self_times(events):
    """{name: [self microseconds, calls]} of complete events ("ph": "X"), nested per thread."""
    totals = collections.defaultdict(lambda: [0.0, 0])
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[e.get("tid")].append(e)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []  # [end, name, child time]
        def close(until):
            while stack and stack[-1][0] <= until:
                end, name, children, dur = stack.pop()
                totals[name][0] += dur - children
                totals[name][1] += 1
                if stack:
                    stack[-1][2] += dur
        for e in thread_events:
            start, dur = float(e["ts"]), float(e["dur"])
            close(start)
            stack.append([start + dur, e["name"], 0.0, dur])
        close(float("inf"))
    return totals


def call_times(events, pattern):
    """{name: [microseconds of each call]} of the complete events whose name matches."""
    calls = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e and pattern.search(e.get("name", "")):
            calls[e["name"]].append(float(e["dur"]))
    return calls


def compare_calls(paths, traces, pattern):
    """One row per matching operator: its median per call and its calls, in each trace."""
    per_trace = [call_times(events, pattern) for events in traces]
    names = sorted({n for calls in per_trace for n in calls},
                   key=lambda n: -max(sum(calls.get(n, [])) for calls in per_trace))
    labels = [os.path.basename(p).removesuffix(".trace.json") for p in paths]
    print("median ms per call (calls) of each operator matching " + repr(pattern.pattern))
    print("| operator | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name in names:
        cells = []
        for calls in per_trace:
            times = calls.get(name)
            cells.append(f"{statistics.median(times) / 1000:.3f} ({len(times)})" if times else "-")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if not names:
        print("(no operator matches)")


def load_events(path):
    """A Chrome trace's events (ours are a bare list, torch.profiler's an object holding them)."""
    try:
        with open(path) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"profile_summary: {path}: {e}")
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--calls", metavar="REGEX",
                        help="compare the matching operators' median time per call across the traces")
    args = parser.parse_args()
    if args.calls:
        try:
            pattern = re.compile(args.calls)
        except re.error as e:
            sys.exit(f"profile_summary: --calls {args.calls!r}: {e}")
        compare_calls(args.traces, [load_events(path) for path in args.traces], pattern)
        return
    for path in args.traces:
        totals = self_times(load_events(path))
        whole = sum(t for t, _ in totals.values()) or 1.0
        print(f"{path}: {whole / 1000:.1f} ms of operators")
        print(f"  {'operator':<44} {'self ms':>9} {'share':>6} {'calls':>6}")
        for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"  {name[:44]:<44} {t / 1000:9.2f} {100 * t / whole:5.1f}% {calls:6d}")


if __name__ == "__main__":
    main()
