"""Runs bench/peer_bench.sh in its tiny mode on the CPU against a host and checks its table:
for protonet and ppo at least one row with a numeric ours/theirs ratio, and no row without one
(a failed run of ours or of a reference). TRM's reference step runs alone (bench/peers.py,
tiny): our TRM benchmark is the longest of ours (over a minute on 2 cores), and its rows are
matched by the same code as the others'; the reference must give a throughput. Exit 77 (ctest: skipped) when the Python
of $MLH_TORCH_VENV (default .venv/) lacks torch, numpy, einops or pydantic; and, after the protonet
and ppo rows are checked (a failure there still fails), when the TRM reference is absent
($MLH_REFERENCE_DIR, bench/mlh_references.py).

  python3 check_table.py REPO HOST            run the script, then check
  python3 check_table.py --table FILE         check a table printed before
"""
import json
import os
import subprocess
import sys

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
    return problems


def check_trm(lines, rc):
    """The TRM reference's JSON lines: each a positive throughput, none an error."""
    records = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
    problems = [f"trm reference: {r.get('variant')} {r.get('precision')}: {r['error']}" for r in records if "error" in r]
    problems += [f"trm reference: no positive throughput in {r}" for r in records
                 if "error" not in r and not r.get("items_per_s", 0) > 0]
    if not records:
        problems.append("trm reference: no measurement printed")
    if rc != 0:
        problems.append(f"trm reference: peers.py exited {rc}")
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
            trm = subprocess.run([python, os.path.join(repo, "bench", "peers.py"), "--workload", "trm", "--tiny",
                                  "--device", "cpu", "--precision", "fp32"], capture_output=True, text=True)
            print(trm.stdout)
            print(trm.stderr, file=sys.stderr)
            trm_problems = check_trm(trm.stdout, trm.returncode)
    problems = check(table) + (trm_problems if sys.argv[1] != "--table" else [])
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
