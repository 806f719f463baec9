#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (what CI runs, via .ci/run), in three stages:
#   1. Debian's LibTorch 1.13 (CPU): everything built into build/, the whole suite.
#   2. PyPI's LibTorch 2.x (a CUDA build; without a GPU the GPU-only tests skip, saying why):
#      everything built into build-pypi/, the whole suite.
#   3. The LibTorch-free part again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build-asan/, scripts/sanitize.sh).
# Every stage runs even when an earlier one fails; the exit status is non-zero if any failed.
# MLH_TEST_STAGES selects stages (e.g. "debian pypi"); default all three.
set -uo pipefail
cd "$(dirname "$0")/.."
stages=${MLH_TEST_STAGES:-debian pypi sanitize}

bash scripts/setup.sh --torch pypi || exit 1

summary=()
failed=0
run_stage() {  # name, command...
  local name=$1 start=$SECONDS status=0
  shift
  echo
  echo "== test stage: $name =="
  "$@" || status=$?
  summary+=("$(printf '%-9s %-6s %5d s' "$name" "$([[ $status == 0 ]] && echo passed || echo FAILED)" $((SECONDS - start)))")
  [[ $status == 0 ]] || failed=1
}
suite() {  # build folder, build.sh arguments...
  local build=$1
  shift
  bash scripts/build.sh "$@" && ctest --test-dir "$build" --output-on-failure -j2 --timeout 600
}

for stage in $stages; do
  case $stage in
    debian) run_stage debian suite build ;;
    pypi) run_stage pypi suite build-pypi --torch pypi ;;
    sanitize) run_stage sanitize bash scripts/sanitize.sh ;;
    *) echo "test.sh: unknown stage '$stage' in MLH_TEST_STAGES (debian, pypi, sanitize)" >&2; exit 2 ;;
  esac
done

echo
echo "== test stages =="
printf '%s\n' "${summary[@]}"
exit $failed
