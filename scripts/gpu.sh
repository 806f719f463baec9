#!/usr/bin/env bash
# Builds everything against the CUDA LibTorch inside this machine's PyTorch and runs the
# whole test suite, then the GPU-only tests (ctest label "gpu"), on a machine with an NVIDIA
# driver, nvcc, CMake and a CUDA PyTorch but no Debian development packages: those come as
# .deb files (scripts/gpu-debs.sh downloads them on Debian 12), unpacked into a prefix of
# the build folder, never into /. The build is scripts/build.sh's --torch DIR, the same path
# as the LibTorch 2.x build of CI (--torch pypi).
#   bash scripts/gpu.sh [DEB_FOLDER]      (default .debs)
# Environment: PYTHON (python3), TORCH_ROOT (default: the torch package of $PYTHON),
# BUILD_DIR (build-gpu), JOBS (all cores), GPU_ONLY=1 to skip the CPU suite (and build only
# the test folders the GPU tests need, which saves most of the build's time), GPU_TESTS=REGEX to
# run only the GPU tests whose names match.
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

torch_root=${TORCH_ROOT:-$(${PYTHON:-python3} -c 'import importlib.util; print(importlib.util.find_spec("torch").submodule_search_locations[0])')}
areas=()
[[ "${GPU_ONLY:-0}" == 1 ]] && areas=(-DMLH_TEST_AREAS="algorithm_plugins;gpu")
echo "gpu.sh: LibTorch from $torch_root; Debian packages in $prefix"
# The packages' CMake files find their libraries relative to themselves; headers without a
# CMake package (stb) come from the prefix's include folder. It must be -isystem, searched
# before the compiler's own folders: with -idirafter, CMake took the folder for one of the
# compiler's implicit ones and dropped Boost's include path, so a newer Boost's headers in
# the GPU image's /usr/include were compiled against the prefix's 1.74 libraries (undefined
# boost::filesystem::detail::path_algorithms at link).
MLH_PREFIX_PATH="$prefix/usr;$lib/cmake" BUILD_DIR=$build CMAKE_BUILD_PARALLEL_LEVEL=$jobs \
  bash scripts/build.sh --torch "$torch_root" \
  -DCMAKE_C_FLAGS="-isystem $prefix/usr/include" -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$lib -Wl,-rpath,$lib" -DCMAKE_SHARED_LINKER_FLAGS="-L$lib -Wl,-rpath,$lib" \
  -DCMAKE_MODULE_LINKER_FLAGS="-L$lib -Wl,-rpath,$lib" "${areas[@]}"

export MLH_FASHION_MNIST_DIR=$prefix/usr/share/datasets/fashion-mnist
# The binaries' run path finds the prefix's libraries, but not what those need in turn (libcurl's
# libssh2 and OpenLDAP, which a GPU image may lack): RUNPATH does not reach indirect ones.
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
if [[ "${GPU_ONLY:-0}" != 1 ]]; then
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -LE gpu || status=$?
fi
# One at a time: they share the GPU and measure its memory.
ctest --test-dir "$build" --output-on-failure -L gpu --timeout 900 ${GPU_TESTS:+-R "$GPU_TESTS"} || status=$?
exit $status
