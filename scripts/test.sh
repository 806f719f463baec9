#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 600
# The torch-free part again under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
bash scripts/sanitize.sh
