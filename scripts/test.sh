#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (what CI runs, via .ci/run), in three stages:
#   1. Debian's LibTorch 1.13 (CPU): everything built into build/, the whole suite.
#   2. PyPI's LibTorch 2.x (a CUDA build; without a GPU the GPU-only tests skip, saying why):
#      everything built into build-pypi/ (every plugin and the runtime against 2.x and CUDA's
#      headers), and the tests of the layers that call LibTorch's version-sensitive APIs: the
#      runtime (autocast, checkpoints across versions, c10d, the gradient scaler, memory), the
#      PPO and TRM networks, the cuda plugin and the GPU tests, the SDK built out of tree
#      (chargpt and mlp-fit trained on 2.x) and the host end to end with toyreg (distributed,
#      calibration, memory), and TRM's data (no LibTorch, but its comparison with the reference's
#      ARC builder needs .venv/'s numpy, made in this stage). The algorithms' training tests and
#      the other LibTorch-free areas ran in stage 1.
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

# The test folders of stage 2 (above), and the tests it leaves out though they are built: the
# soak test kills and resumes the host's runs for two minutes, whatever LibTorch does.
# trm_data needs no LibTorch, but its comparison with the TRM reference's ARC builder needs
# .venv/'s numpy, which exists from this stage on (in stage 1 it skips); tracking holds the
# MLflow tracking tests, which need .venv/'s mlflow server (host_mlflow_tests, label mlflow).
pypi_areas="abi;plugins;algorithm_plugins;ppo_networks;trm_model;trm_data;cuda;runtime;tracking;cli;sdk;gpu"
pypi_skip='^SoakTest\.'


# Free space in GiB on the checkout's file system.
free_gib() { df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }'; }

# A stage that builds against LibTorch needs about 2 GiB for its build folder, and the 2.x
# stage 9 more for .venv/ and the wheels while they install. The largest files of a finished
# stage are its two precompiled LibTorch headers (0.4-0.6 GB each): where
# the disk is short, the finished stages' are removed (the next build there makes them again;
# nothing else is lost) rather than let the next stage fail for space.
make_room() {  # GiB wanted, build folders of finished stages...
  local want=$1
  shift
  (($(free_gib) >= want)) && return
  for build in "$@"; do
    [[ -d $build ]] || continue
    echo "test.sh: $(free_gib) GiB free, $want wanted: removing $build's precompiled headers" >&2
    find "$build" -name 'cmake_pch.hxx.gch' -delete
  done
}

summary=()
failed=0
# Each stage's output is also kept, so that the end of the run can repeat why a stage failed:
# a CI log is often read from its end, where the last stage's output would hide it.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failures=()
run_stage() {  # name, command...
  local name=$1 start=$SECONDS status=0 free
  shift
  free=$(free_gib)
  echo
  echo "== test stage: $name ($free GiB free) =="
  "$@" 2>&1 | tee "$logs/$name.log" || status=$?
  summary+=("$(printf '%-9s %-6s %5d s  (%d GiB free at its start)' "$name" \
    "$([[ $status == 0 ]] && echo passed || echo FAILED)" $((SECONDS - start)) "$free")")
  [[ $status == 0 ]] || { failed=1; failures+=("$name"); }
  echo "== test stage ended: ${summary[-1]}"  # here too: a run cut short still shows its stages' times
}
suite() {  # build folder, tests to leave out (a ctest -E pattern, or ""), build.sh arguments...
  local build=$1 skip=$2
  shift 2
  bash scripts/build.sh "$@" && ctest --test-dir "$build" --output-on-failure -j2 --timeout 600 ${skip:+-E "$skip"}
}

# Stage 2 makes .venv/, which holds PyTorch's real torchrun and the TRM reference's ARC
# evaluator's packages: the Debian build's tests of both, which skip in stage 1 for want of
# them, run again after stage 2's own suite (the TRM tests are not among stage 2's areas).
pypi_stage() {
  local status=0
  suite build-pypi "$pypi_skip" --torch pypi -DMLH_TEST_AREAS="$pypi_areas" || status=$?
  if [[ -x build/bin/host && -x .venv/bin/torchrun ]]; then
    echo "== torchrun and the TRM reference's ARC evaluator against the Debian build"
    ctest --test-dir build --output-on-failure --timeout 600 -R '^(TorchrunTest|ArcReferenceEvaluator)\.' || status=1
  fi
  return $status
}

for stage in $stages; do
  case $stage in
    debian) make_room 4 build-pypi
            run_stage debian suite build "" ;;
    pypi) make_room 12 build
          run_stage pypi pypi_stage ;;
    sanitize) make_room 4 build build-pypi
              run_stage sanitize bash scripts/sanitize.sh ;;
    *) echo "test.sh: unknown stage '$stage' in MLH_TEST_STAGES (debian, pypi, sanitize)" >&2; exit 2 ;;
  esac
done

for name in "${failures[@]}"; do
  echo
  echo "== why $name failed: the end of its output =="
  grep -E -i 'error|failed|no space|not found|timeout' "$logs/$name.log" | grep -v -E '^\s*[0-9]+% tests passed' | tail -n 15
  echo "--"
  tail -n 12 "$logs/$name.log"
done
echo
echo "== test stages =="
printf '%s\n' "${summary[@]}"
exit $failed
