"""Runs bench/peer_bench.sh in its tiny mode on the CPU against a host and checks its table:
for protonet and ppo at least one row with a numeric ours/theirs ratio, and no row without one
(a failed run of ours or of a reference). TRM's reference step runs alone (bench/peers.py,
tiny): our TRM benchmark is the longest of ours (over a minute on 2 cores), and its rows are
matched by the same code as the others'; the reference must give a throughput, and its
profiled steps (--profile) a trace whose attention calls bench/profile_summary.py --calls lists; after each
algorithm's rows, the cores' round trip before each side's run (bench/core_round_trip.cpp);
bench/kernel_times.sh refuses an unknown algorithm, precision or host with exit 2. Exit 77 (ctest: skipped) when the Python
of $MLH_TORCH_VENV (default .venv/) lacks torch, numpy, einops or pydantic; and, after the protonet
and ppo rows are checked (a failure there still fails), when the TRM reference is absent
($MLH_REFERENCE_DIR, bench/mlh_references.py).

  python3 check_table.py REPO HOST            run the script, then check
  python3 check_table.py --table FILE         check a table printed before
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import mlh_references  # noqa: E402

ALGORITHMS = ("protonet", "ppo")


def check(table):
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| workload")]
    problems, found = [], {a: 0 for a in ALGORITHMS}
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 5:
            problems.append(f"malformed row: {row}")
            continue
        algorithm = cells[0].split()[0]
        try:
            ratio = float(cells[4])
        except ValueError:
            problems.append(f"no ratio: {row}")
            continue
        if not ratio > 0:
            problems.append(f"ratio not positive: {row}")
        elif algorithm in found:
            found[algorithm] += 1
    problems += [f"no row with a ratio for {a}" for a, n in found.items() if n == 0]
    problems += check_round_trips(table)
    return problems


def check_round_trips(table):
    """One line per algorithm after its rows: the cores' round trip before ours' run and before
    the reference's (bench/core_round_trip.cpp), each a positive number of nanoseconds; on one
    core, that it was not measured and why."""
    lines = [line for line in table.splitlines() if line.startswith("  cores' round trip before each run")]
    if len(lines) != len(ALGORITHMS):
        return [f"{len(lines)} lines of the cores' round trip, expected {len(ALGORITHMS)}: {lines}"]
    pattern = re.compile(r": ours \S+ round 1 ([0-9]+) ns, theirs round 1 ([0-9]+) ns$")
    problems = []
    for line in lines:
        if len(os.sched_getaffinity(0)) < 2:  # the CPUs this test may run on, as nproc counts them
            if not line.endswith("not measured: one core"):
                problems.append(f"one core, yet: {line}")
            continue
        found = pattern.search(line)
        if not found or not all(int(n) > 0 for n in found.groups()):
            problems.append(f"no round trip before each side's run: {line}")
    return problems


def check_trm(lines, rc, repo=None):
    """The TRM reference's JSON lines: each a positive throughput, none an error; with --profile,
    each names its trace, in which bench/profile_summary.py --calls finds the attention kernel's
    calls (bench/kernel_times.sh compares them with ours)."""
    records = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
    problems = []
    for r in records:
        if repo is None or "error" in r:
            continue
        if not os.path.isfile(r.get("trace", "")):
            problems.append(f"trm reference: --profile wrote no trace ({r.get('trace')})")
            continue
        calls = subprocess.run([sys.executable, os.path.join(repo, "bench", "profile_summary.py"), r["trace"],
                                "--calls", "scaled_dot_product"], capture_output=True, text=True)
        print(calls.stdout)
        if calls.returncode != 0 or "| aten::_scaled_dot_product_flash_attention_for_cpu | " not in calls.stdout:
            problems.append(f"trm reference: profile_summary.py --calls lists no attention calls: {calls.stdout}"
                            f"{calls.stderr}")
    problems += [f"trm reference: {r.get('variant')} {r.get('precision')}: {r['error']}" for r in records if "error" in r]
    problems += [f"trm reference: no positive throughput in {r}" for r in records
                 if "error" not in r and not r.get("items_per_s", 0) > 0]
    if not records:
        problems.append("trm reference: no measurement printed")
    if rc != 0:
        problems.append(f"trm reference: peers.py exited {rc}")
    return problems


def check_kernel_times_refusals(repo, host):
    """bench/kernel_times.sh refuses what it cannot run with exit 2, naming the value, before
    it measures anything (its measurement itself takes minutes: docs/benchmarks.md)."""
    problems = []
    for args, named in ((["ppo", host], "'ppo'"), (["-p", "fp16", "trm", host], "fp16"),
                        (["trm", "/nonexistent/host"], "/nonexistent/host")):
        done = subprocess.run(["bash", os.path.join(repo, "bench", "kernel_times.sh")] + args,
                              capture_output=True, text=True)
        if done.returncode != 2 or named not in done.stderr:
            problems.append(f"kernel_times.sh {' '.join(args)}: exit {done.returncode}, {done.stderr.strip()!r}"
                            f" (expected 2 naming {named})")
    return problems


def main():
    if sys.argv[1] == "--table":
        table, rc = open(sys.argv[2]).read(), 0
    else:
        repo, host = sys.argv[1], sys.argv[2]
        venv = os.environ.get("MLH_TORCH_VENV", os.path.join(repo, ".venv"))
        python = os.path.join(venv, "bin", "python")
        probe = subprocess.run([python, "-c", "import torch, numpy, einops, pydantic"], capture_output=True, text=True) \
            if os.access(python, os.X_OK) else None
        if probe is None or probe.returncode != 0:
            why = "no " + python if probe is None else probe.stderr.strip().splitlines()[-1]
            print(f"skipped: the references need torch, numpy, einops and pydantic in {venv} ({why})")
            return 77
        env = dict(os.environ, TINY="1", DEVICE="cpu", PRECISIONS="fp32", ROUNDS="1", PYTHON=python,
                   RUN_TIMEOUT="300")
        env["ALGORITHMS"] = " ".join(ALGORITHMS)
        done = subprocess.run(["bash", os.path.join(repo, "bench", "peer_bench.sh"), host], env=env,
                              capture_output=True, text=True)
        table, rc = done.stdout, done.returncode
        print(table)
        print(done.stderr, file=sys.stderr)
        trm_absent = mlh_references.find("trm") is None
        if trm_absent:
            trm_problems = []
        else:
            with tempfile.TemporaryDirectory() as traces:
                trm = subprocess.run([python, os.path.join(repo, "bench", "peers.py"), "--workload", "trm", "--tiny",
                                      "--device", "cpu", "--precision", "fp32", "--profile", traces],
                                     capture_output=True, text=True)
                print(trm.stdout)
                print(trm.stderr, file=sys.stderr)
                trm_problems = check_trm(trm.stdout, trm.returncode, repo)
    problems = check(table) + (trm_problems if sys.argv[1] != "--table" else [])
    if sys.argv[1] != "--table":
        problems += check_kernel_times_refusals(repo, host)
    if rc != 0:
        problems.append(f"peer_bench.sh exited {rc}")
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    if sys.argv[1] != "--table" and trm_absent:  # half checked: a skip, not a pass
        print(f"skipped: protonet and ppo rows checked; the trm reference's step not: {mlh_references.why_absent('trm')}")
        return 77
    print("ok: every row has a ratio, protonet and ppo each have one; the trm reference measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
