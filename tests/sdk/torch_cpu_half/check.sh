#!/usr/bin/env bash
# Builds and runs fit_line against the CPU half of a CUDA LibTorch with the CUDA toolkit out
# of sight (no nvcc on PATH, no CUDACXX, /usr/local/cuda's compiler never asked for):
#   check.sh SOURCE_DIR TORCH_ROOT WORK_DIR GENERATOR
set -euo pipefail
source_dir=$1 torch_root=$2 work=$3 generator=$4
here=$(cd "$(dirname "$0")" && pwd)
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v -i cuda | paste -sd:)
unset CUDACXX CUDA_HOME CUDA_PATH
rm -rf "$work"
cmake -S "$here" -B "$work" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DMLH_SOURCE_DIR="$source_dir" \
  -DCMAKE_PREFIX_PATH="$torch_root" -DMLH_TORCH_CUDA=OFF | grep -E 'mlhost: LibTorch'
if grep -q -i 'CMAKE_CUDA_COMPILER' "$work/CMakeCache.txt"; then
  echo "check.sh: the configure looked for a CUDA compiler" >&2
  exit 1
fi
cmake --build "$work"
"$work/fit_line"
