#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (what CI runs, via .ci/run), in three stages:
#   1. Debian's LibTorch 1.13 (CPU): everything built into build/, the whole suite.
#   2. PyPI's LibTorch 2.x (a CUDA build; without a GPU the GPU-only tests skip, saying why):
#      everything built into build-pypi/, and the test areas whose code LibTorch builds or runs
#      (the LibTorch-free areas behave the same with either LibTorch and ran in stage 1).
#   3. The LibTorch-free part again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build-asan/, scripts/sanitize.sh).
# Every stage runs even when an earlier one fails; the exit status is non-zero if any failed.
# MLH_TEST_STAGES selects stages (e.g. "debian pypi"); default all three.
set -uo pipefail
cd "$(dirname "$0")/.."
stages=${MLH_TEST_STAGES:-debian pypi sanitize}

bash scripts/setup.sh --torch pypi || exit 1

# ctest -j2 runs two test programs at once on CI's two cores, and a LibTorch worker's OpenMP
# threads spin while they wait for work (the default policy): two training tests side by side
# then ran 2-4x slower than one after the other (TrmTraining.LearnsEasySudoku: 55 s alone,
# 183 s beside a TRM worker; 78 s with both passive). A test run of our own shares the cores
# on purpose, so its OpenMP threads sleep when idle; a plan that sets omp_wait_policy still
# wins in its worker.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# The test folders of stage 2: every area less the LibTorch-free ones (protonet_data,
# ppo_env, trm_data, cpu, mps, host), which stages 1 and 3 cover.
pypi_areas="abi;plugins;algorithm_plugins;protonet;ppo_networks;ppo;trm_model;trm;cuda;runtime;cli;sdk;gpu"

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
  echo "== test stage ended: ${summary[-1]}"  # here too: a run cut short still shows its stages' times
}
suite() {  # build folder, build.sh arguments...
  local build=$1
  shift
  bash scripts/build.sh "$@" && ctest --test-dir "$build" --output-on-failure -j2 --timeout 600
}

for stage in $stages; do
  case $stage in
    debian) run_stage debian suite build ;;
    pypi) run_stage pypi suite build-pypi --torch pypi -DMLH_TEST_AREAS="$pypi_areas" ;;
    sanitize) run_stage sanitize bash scripts/sanitize.sh ;;
    *) echo "test.sh: unknown stage '$stage' in MLH_TEST_STAGES (debian, pypi, sanitize)" >&2; exit 2 ;;
  esac
done

echo
echo "== test stages =="
printf '%s\n' "${summary[@]}"
exit $failed
