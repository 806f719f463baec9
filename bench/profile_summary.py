"""Where a benchmark's time goes: the operators of the Chrome traces that MLH_PROFILE_DIR
makes (sdk/runtime's run_benchmark), totalled by name as self time (an operator's time less
that of the operators it called), largest first.

  MLH_PROFILE_DIR=prof CUDA_LAUNCH_BLOCKING=1 build/bin/host --algorithm trm --benchmark
  python3 bench/profile_summary.py prof/*.trace.json [--top 15]

On a GPU, CUDA_LAUNCH_BLOCKING=1 makes each operator wait for its kernels, so its time on the
host is its time on the device (and the launches' overhead shows as the rest).
"""
import argparse
import collections
import json
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for path in args.traces:
        try:
            with open(path) as f:
                trace = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"profile_summary: {path}: {e}")
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        totals = self_times(events)
        whole = sum(t for t, _ in totals.values()) or 1.0
        print(f"{path}: {whole / 1000:.1f} ms of operators")
        print(f"  {'operator':<44} {'self ms':>9} {'share':>6} {'calls':>6}")
        for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"  {name[:44]:<44} {t / 1000:9.2f} {100 * t / whole:5.1f}% {calls:6d}")


if __name__ == "__main__":
    main()
