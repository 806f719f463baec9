#!/usr/bin/env bash
# Prints the compiler launcher the builds use where ccache is installed (nothing otherwise), as
# a CMake list: ccache with its keys relative to the checkout (base_dir), so that a second
# clone (CI's clean one, a worktree) reuses what this one compiled, and the precompiled LibTorch
# headers cached too (pch_defines, time_macros: GCC writes a different .gch on every run, so the
# files compiled with one hit only when the .gch itself came from the cache). It is part of the
# launcher, so builds run by ninja itself, and the SDK test's, key the same way.
#   bash scripts/ccache-launcher.sh     (from scripts/build.sh and scripts/sanitize.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ccache >/dev/null || exit 0
echo "/usr/bin/env;CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD};CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros};ccache"
