#!/usr/bin/env bash
# Installs the Debian packages mlhost needs to build and test, only those missing.
# Safe to run again: with everything present it installs nothing and takes a moment.
#   bash scripts/setup.sh                  the default build (LibTorch 2.x from PyPI's wheel,
#                                          which scripts/torch-venv.sh installs into .venv/)
#   bash scripts/setup.sh --torch debian   also Debian's LibTorch 1.13 (CPU, apt only)
#   bash scripts/setup.sh --torch all      both LibTorch builds (the test command)
#   bash scripts/setup.sh --fuzz           also clang for the libFuzzer targets (scripts/fuzz.sh)
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config ccache               # toolchain (ccache: fast rebuilds)
  python3-venv                                          # the virtual environment of the torch wheel (scripts/torch-venv.sh)
  python3-dev                                           # embedding its Python: networks written in PyTorch (libmlhost_python)
  libjemalloc2                                          # the training worker's allocator (the plan's default)
  libgloo-dev                                           # Gloo's headers: distributed CPU training (the wheel links Gloo, ships no headers)
  libboost-dev libboost-filesystem-dev libboost-program-options-dev   # Boost.DLL, filesystem, program_options
  libspdlog-dev nlohmann-json3-dev                      # logging, JSON
  libcurl4-openssl-dev                                  # HTTP for experiment tracking (MLflow's REST API)
  libgtest-dev libgmock-dev                             # tests
  libstb-dev zlib1g-dev                                 # PNG/JPEG decoding, gzip'd IDX files
  dataset-fashion-mnist                                 # the demo data (IDX files)
)
debian_torch=(
  libtorch-dev                                          # LibTorch 1.13 (CPU) with c10d/Gloo
  libopenblas0-openmp                                   # fast BLAS for it (the default reference BLAS is ~10x slower)
)
fuzz=(clang libclang-rt-14-dev)                         # libFuzzer targets (scripts/fuzz.sh; not run by CI)

usage="usage: setup.sh [--torch pypi|debian|all] [--fuzz]"
while (($#)); do
  case $1 in
    --torch) case ${2:-} in
               pypi) ;;
               debian|all) packages+=("${debian_torch[@]}") ;;
               *) echo "setup: --torch takes pypi, debian or all ($usage)" >&2; exit 2 ;;
             esac
             shift 2 ;;
    --fuzz) packages+=("${fuzz[@]}"); shift ;;
    *) echo "setup: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "setup: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
