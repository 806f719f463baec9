#!/usr/bin/env bash
# Configures and builds (Release) against one LibTorch, each into its own folder.
#   bash scripts/build.sh [--torch debian|pypi|DIR] [--target T]... [extra cmake arguments]
#
#   --torch debian   Debian's LibTorch 1.13, CPU-only (the default): build/
#   --torch pypi     the CUDA LibTorch inside PyPI's torch wheel pinned in
#                    scripts/torch-pypi.txt, installed into .venv/ by scripts/torch-venv.sh,
#                    with the CUDA toolkit's nvcc for its CMake files: build-pypi/
#   --torch DIR      any other LibTorch, by its root (DIR/share/cmake/Torch or
#                    DIR/lib/.../cmake/Torch): a libtorch zip, or an installed PyTorch's
#                    site-packages/torch (scripts/gpu.sh): build-torch/
#   --target T       build only T (repeatable; default: everything, tests included)
#
# BUILD_DIR overrides the folder; MLH_PREFIX_PATH adds CMake prefixes after LibTorch's (the
# unpacked Debian packages of scripts/gpu.sh). ccache is used where installed.
set -euo pipefail
cd "$(dirname "$0")/.."

torch=debian
targets=()
cmake_args=()
while (($#)); do
  case $1 in
    --torch) [[ $# -ge 2 ]] || { echo "build.sh: --torch needs debian, pypi or a folder" >&2; exit 2; }
             torch=$2; shift 2 ;;
    --target) [[ $# -ge 2 ]] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done

case $torch in
  debian)
    build=${BUILD_DIR:-build} ;;
  pypi)
    build=${BUILD_DIR:-build-pypi}
    torch_root=$(bash scripts/torch-venv.sh) ;;
  *)
    build=${BUILD_DIR:-build-torch}
    compgen -G "$torch/share/cmake/Torch/TorchConfig.cmake" >/dev/null ||
      compgen -G "$torch/lib/*cmake/Torch/TorchConfig.cmake" >/dev/null ||
      compgen -G "$torch/lib/*/cmake/Torch/TorchConfig.cmake" >/dev/null || {
      echo "build.sh: --torch '$torch': no LibTorch there (no share/cmake/Torch or lib/.../cmake/Torch); want debian, pypi or a LibTorch root" >&2
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
  # A CUDA LibTorch's CMake files enable the CUDA language: they need nvcc.
  if [[ -e $torch_root/lib/libtorch_cuda.so ]]; then
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    [[ -x $nvcc ]] || {
      echo "build.sh: this LibTorch is a CUDA build, and its CMake files need the CUDA toolkit's nvcc: not on PATH nor in /usr/local/cuda/bin" >&2
      exit 2
    }
    args+=(-DCMAKE_CUDA_COMPILER="$nvcc")
  fi
fi
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# LibTorch 2.x's CMake files warn about things that do not concern us (kineto, CUDA
# architectures: we compile no CUDA kernels); errors still show.
mkdir -p "$build"
cmake -S . -B "$build" "${args[@]}" "${cmake_args[@]}" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
cmake --build "$build" "${targets[@]}"
