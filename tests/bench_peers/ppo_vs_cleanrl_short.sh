#!/usr/bin/env bash
# bench/ppo_vs_cleanrl.sh, short (ctest bench_ppo_vs_cleanrl_short): both of its cases, one
# seed, 8192 steps; each must print a row for mlhost and one for CleanRL's loop. Exits 77 (a
# skip) as the script does where .venv/ lacks torch or gymnasium.
#   ppo_vs_cleanrl_short.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
cd "$1"
for case in pendulum gymnasium; do
  table=$(SEEDS=1 STEPS=8192 bash bench/ppo_vs_cleanrl.sh "$case" "$2")
  status=$?
  echo "$table"
  ((status == 0)) || exit "$status"
  rows=$(grep -c -E '^(mlhost|CleanRL loop) +1 ' <<<"$table")
  ((rows == 2)) || { echo "ppo_vs_cleanrl $case: $rows rows, expected 2" >&2; exit 1; }
done
