#!/usr/bin/env bash
# Builds everything against the CUDA LibTorch inside this machine's PyTorch and runs the
# whole test suite, then the GPU-only tests (ctest label "gpu"), on a machine with an NVIDIA
# driver, nvcc, CMake and a CUDA PyTorch but no Debian development packages: those come as
# .deb files (scripts/gpu-debs.sh downloads them on Debian 12), unpacked into a prefix of
# the build folder, never into /.
#   bash scripts/gpu.sh [DEB_FOLDER]      (default .debs)
# Environment: PYTHON (python3), TORCH_CMAKE_PREFIX (default: torch.utils.cmake_prefix_path),
# BUILD_DIR (build-gpu), JOBS (all cores), GPU_ONLY=1 to skip the CPU suite.
set -euo pipefail
cd "$(dirname "$0")/.."
debs=${1:-.debs}
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
prefix=$PWD/$build/deps

ls "$debs"/*.deb >/dev/null 2>&1 || { echo "gpu.sh: no .deb files in '$debs' (run scripts/gpu-debs.sh on Debian 12)" >&2; exit 2; }
mkdir -p "$prefix"
for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu

torch_prefix=${TORCH_CMAKE_PREFIX:-$(${PYTHON:-python3} -c 'import torch; print(torch.utils.cmake_prefix_path)')}
echo "gpu.sh: LibTorch from $torch_prefix; Debian packages in $prefix"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The packages' CMake files find their libraries relative to themselves; headers without a
# CMake package (stb) come from the prefix's include folder, after every other one.
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$lib/cmake;$torch_prefix" \
  -DCMAKE_C_FLAGS="-idirafter $prefix/usr/include" -DCMAKE_CXX_FLAGS="-idirafter $prefix/usr/include" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$lib -Wl,-rpath,$lib" -DCMAKE_SHARED_LINKER_FLAGS="-L$lib -Wl,-rpath,$lib"
cmake --build "$build" -j "$jobs"

export MLH_FASHION_MNIST_DIR=$prefix/usr/share/datasets/fashion-mnist
status=0
if [[ "${GPU_ONLY:-0}" != 1 ]]; then
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -LE gpu || status=$?
fi
# One at a time: they share the GPU and measure its memory.
ctest --test-dir "$build" --output-on-failure -L gpu --timeout 900 || status=$?
exit $status
