#!/usr/bin/env bash
# Builds each of the three algorithm plugins on its own against an installed mlhost, as a user
# does (docs/plugin-guide.md, "Copying an algorithm"), with the SDK test's own steps
# (tests/sdk/sdk_install_test.cpp): the build installed into a temporary prefix,
# share/mlhost/algorithms/<name> copied out of it and renamed my<name>, built with only the
# prefix in CMAKE_PREFIX_PATH, and loaded beside the original by the installed host. The test
# suite builds protonet's copy; ppo's and trm's take several minutes each on two cores with an
# empty compiler cache, more than the suite's time allows, so they are built here
# (MLH_SDK_TEST_STANDALONE=1 turns their test on). Prints each copy's build time.
#   bash scripts/standalone-builds.sh [BUILD_DIR]     after scripts/build.sh (default: build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
program=$build/bin/mlhost_sdk_install_tests
[[ -x $program ]] || {
  echo "standalone-builds: no $program: build first (bash scripts/build.sh, with the sdk tests)" >&2
  exit 2
}
# What the test installs is the build as it is: bring it up to date first (nothing to do
# after scripts/build.sh).
cmake --build "$build"
start=$SECONDS
MLH_SDK_TEST_STANDALONE=1 "$program" --gtest_filter='InstalledSdk.ACopiedAndRenamedAlgorithm*:InstalledSdk.PpoAndTrmCopied*:InstalledSdk.ProtonetsCopyNamesLibstbDev*'
echo "standalone-builds: protonet, ppo and trm built on their own in $((SECONDS - start)) s, the install and the examples' builds included"
