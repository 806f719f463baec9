#!/usr/bin/env bash
# Installs every Debian package mlhost needs to build and test, only those missing.
# Safe to run again: with everything present it installs nothing and takes a moment.
#   bash scripts/setup.sh [--torch pypi]   (--torch pypi: also what the LibTorch 2.x build
#                                          needs of Debian; the wheel itself comes from PyPI)
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config ccache               # toolchain (ccache: fast rebuilds)
  libtorch-dev libgloo-dev                              # LibTorch 1.13 (CPU) with c10d/Gloo
  libopenblas0-openmp                                   # fast BLAS (the default reference BLAS is ~10x slower)
  libjemalloc2                                          # the training worker's allocator (the plan's default)
  libboost-dev libboost-filesystem-dev libboost-program-options-dev   # Boost.DLL, filesystem, program_options
  libspdlog-dev nlohmann-json3-dev                      # logging, JSON
  libcurl4-openssl-dev                                  # HTTP for experiment tracking (MLflow's REST API)
  libgtest-dev libgmock-dev                             # tests
  libstb-dev zlib1g-dev                                 # PNG/JPEG decoding, gzip'd IDX files
  dataset-fashion-mnist                                 # the demo data (IDX files)
  clang libclang-rt-14-dev                              # libFuzzer targets (scripts/fuzz.sh; not run by CI)
)

case ${1:-} in
  "") ;;
  --torch) [[ ${2:-} == pypi || ${2:-} == debian ]] || { echo "setup: --torch takes pypi or debian" >&2; exit 2; }
           # A virtual environment for the torch wheel (scripts/torch-venv.sh) where python3 is Debian's.
           [[ $2 == pypi ]] && packages+=(python3-venv) ;;
  *) echo "setup: unknown argument '$1' (usage: setup.sh [--torch pypi])" >&2; exit 2 ;;
esac

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
