#!/usr/bin/env bash
# Configures and builds (Release) against one LibTorch, each into its own folder.
#   bash scripts/build.sh [--torch pypi|debian|DIR] [--cuda] [--target T]... [extra cmake arguments]
#
#   --torch pypi     (the default) the LibTorch inside PyPI's torch wheel pinned in
#                    scripts/torch-pypi.txt, installed into .venv/ by scripts/torch-venv.sh: build/.
#                    Its CUDA half is compiled in where the wheel's CUDA libraries are installed
#                    (a GPU machine, --cuda, or the test command) and a CUDA compiler (nvcc) is
#                    found; otherwise the build uses LibTorch's CPU half alone and needs neither
#                    (sdk/cmake/MlhostTorch.cmake, MLH_TORCH_CUDA)
#   --torch debian   Debian's LibTorch 1.13, CPU-only (bash scripts/setup.sh --torch debian
#                    installs it): build-debian/
#   --torch DIR      any other LibTorch, by its root (DIR/share/cmake/Torch or
#                    DIR/lib/.../cmake/Torch): a libtorch zip, or an installed PyTorch's
#                    site-packages/torch (scripts/gpu.sh): build-torch/
#   --cuda           compile LibTorch's CUDA paths (installs the wheel's CUDA libraries with
#                    --torch pypi; needs the CUDA toolkit's nvcc)
#   --target T       build only T (repeatable; default: everything, tests included)
#
# BUILD_DIR overrides the folder; MLH_PREFIX_PATH adds CMake prefixes after LibTorch's (the
# unpacked Debian packages of scripts/gpu.sh). ccache is used where installed.
set -euo pipefail
cd "$(dirname "$0")/.."

torch=pypi
cuda=0
targets=()
cmake_args=()
while (($#)); do
  case $1 in
    --torch) [[ $# -ge 2 ]] || { echo "build.sh: --torch needs pypi, debian or a folder" >&2; exit 2; }
             torch=$2; shift 2 ;;
    --cuda) cuda=1; shift ;;
    --target) [[ $# -ge 2 ]] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done

case $torch in
  pypi)
    build=${BUILD_DIR:-build}
    torch_root=$(bash scripts/torch-venv.sh $( ((cuda)) && echo --full)) ;;
  debian)
    build=${BUILD_DIR:-build-debian}
    compgen -G "/usr/lib/*/cmake/Torch/TorchConfig.cmake" >/dev/null || {
      echo "build.sh: Debian's LibTorch is not installed: bash scripts/setup.sh --torch debian" >&2
      exit 2
    }
    ((!cuda)) || { echo "build.sh: Debian's LibTorch has no CUDA: --cuda needs --torch pypi or a CUDA LibTorch" >&2; exit 2; } ;;
  *)
    build=${BUILD_DIR:-build-torch}
    compgen -G "$torch/share/cmake/Torch/TorchConfig.cmake" >/dev/null ||
      compgen -G "$torch/lib/*cmake/Torch/TorchConfig.cmake" >/dev/null ||
      compgen -G "$torch/lib/*/cmake/Torch/TorchConfig.cmake" >/dev/null || {
      echo "build.sh: --torch '$torch': no LibTorch there (no share/cmake/Torch or lib/.../cmake/Torch); want pypi, debian or a LibTorch root" >&2
      exit 2
    }
    torch_root=$(cd "$torch" && pwd) ;;
esac

args=(-DCMAKE_BUILD_TYPE=Release)
command -v ninja >/dev/null && args+=(-G Ninja)
if [[ $torch != debian ]]; then
  # The LibTorch root first in the prefix path: TorchConfig.cmake finds c10 with
  # find_library, which would otherwise take Debian's /usr/lib/.../libc10.so where that is
  # installed too.
  args+=(-DCMAKE_PREFIX_PATH="$torch_root${MLH_PREFIX_PATH:+;$MLH_PREFIX_PATH}")
  # A CUDA LibTorch's own CMake files enable the CUDA language: with its CUDA half they need
  # nvcc. Without --cuda, CMake decides (AUTO) and falls back to the CPU half.
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if ((cuda)); then
    [[ -x $nvcc ]] || {
      echo "build.sh: --cuda compiles LibTorch's CUDA paths, which needs the CUDA toolkit's nvcc: not on PATH nor in /usr/local/cuda/bin" >&2
      exit 2
    }
    args+=(-DMLH_TORCH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc")
  else
    args+=(-DMLH_TORCH_CUDA=AUTO)
    [[ -x $nvcc ]] && args+=(-DCMAKE_CUDA_COMPILER="$nvcc")
  fi
fi
launcher=$(bash scripts/ccache-launcher.sh)  # ccache keyed relative to the checkout, where installed
[[ -z $launcher ]] || args+=(-DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")

# LibTorch 2.x's CMake files warn about things that do not concern us (kineto, CUDA
# architectures: we compile no CUDA kernels); errors still show.
mkdir -p "$build"
cmake -S . -B "$build" "${args[@]}" "${cmake_args[@]}" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E '^-- mlhost( runtime)?: ' "$build/configure.log" || true
cmake --build "$build" "${targets[@]}"
