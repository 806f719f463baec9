#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (what CI runs, via .ci/run), in three stages:
#   1. pypi: the default build, against PyPI's LibTorch 2.x (with its CUDA half where the CUDA
#      toolkit's nvcc is found; without a GPU the GPU-only tests skip, saying why): everything
#      built into build/, the whole suite. Its .venv/ holds the torch wheel with its CUDA
#      libraries and the Python packages the suite compares with (torchrun, MLflow,
#      TensorBoard, the references' packages).
#   2. debian: Debian's LibTorch 1.13 (CPU), everything built into build-debian/ (every plugin
#      and the runtime against 1.13), and the tests of the layers that call LibTorch's
#      version-sensitive APIs: the runtime (autocast, checkpoints across versions, c10d, the
#      gradient scaler, memory), the PPO and TRM networks, ProtoNet's fused CPU block and its
#      training, the SDK built out of tree against 1.13 (chargpt and mlp-fit trained on it) and
#      the host end to end with toyreg (distributed, torchrun, restarts, calibration, memory).
#   3. sanitize: the LibTorch-free part again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build-asan/, scripts/sanitize.sh).
# Every stage runs even when an earlier one fails; the exit status is non-zero if any failed.
# MLH_TEST_STAGES selects stages (e.g. "pypi debian"); default all three.
set -uo pipefail
cd "$(dirname "$0")/.."
stages=${MLH_TEST_STAGES:-pypi debian sanitize}

bash scripts/setup.sh --torch all || exit 1

# ctest -j2 runs two test programs at once on CI's two cores, and a LibTorch worker's OpenMP
# threads spin while they wait for work (the default policy): two training tests side by side
# then ran 2-4x slower than one after the other (TrmTraining.LearnsEasySudoku: 55 s alone,
# 183 s beside a TRM worker; 78 s with both passive). A test run of our own shares the cores
# on purpose, so its OpenMP threads sleep when idle; a plan that sets omp_wait_policy still
# wins in its worker.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# Stage 2's test folders (above); the rest of the suite does not depend on which LibTorch the
# plugins link, and ran in stage 1. Of the cli folder (the host end to end), the tests whose
# workers run the runtime's version-sensitive parts: distributed training over c10d (our
# launcher and torchrun), restarts from checkpoints, calibration and memory.
debian_areas="plugins;algorithm_plugins;runtime;ppo_networks;trm_model;protonet;cli;sdk"
debian_cli='^(DistributedTest|TorchrunTest|RestartTest|CalibrationTest|MemoryTest)\.'

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

# Stage 1 makes .venv/ whole (the torch wheel's CUDA libraries, which Python's torch needs, and
# scripts/py-peers.txt) before it builds: torchrun, MLflow, TensorBoard and the references run
# from there, in this stage and in the Debian one.
pypi_stage() {
  bash scripts/torch-venv.sh --peers >/dev/null || return 1
  suite build ""
}
debian_stage() {
  local status=0
  bash scripts/build.sh --torch debian -DMLH_TEST_AREAS="$debian_areas" || return 1
  # The folders' own tests, then the cli folder's chosen ones (the Python-facing checks,
  # DocsCommands and the peers' table, ran against the default build).
  ctest --test-dir build-debian --output-on-failure -j2 --timeout 600 -LE cli || status=1
  ctest --test-dir build-debian --output-on-failure -j2 --timeout 600 -L cli -R "$debian_cli" || status=1
  return $status
}

for stage in $stages; do
  case $stage in
    pypi) make_room 12 build-debian
          run_stage pypi pypi_stage ;;
    debian) make_room 4 build
            run_stage debian debian_stage ;;
    sanitize) make_room 4 build build-debian
              run_stage sanitize bash scripts/sanitize.sh ;;
    *) echo "test.sh: unknown stage '$stage' in MLH_TEST_STAGES (pypi, debian, sanitize)" >&2; exit 2 ;;
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
