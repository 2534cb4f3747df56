#!/usr/bin/env bash
# `npm test` must be green on a loaded machine: a slow machine makes the suite slower, never red.
# This runs the whole suite RUNS times in a row (default 2) while LOOPS busy loops (default 2, one
# per core of the CI box) run at nice LOAD_NICE (default 10), then reports each run.
#
#   scripts/test-under-load.sh                 # 2 busy loops, npm test twice
#   LOOPS=4 RUNS=1 scripts/test-under-load.sh
#
# Logs go to test-artifacts/under-load/run-<n>.log. Exit 0 only when every run passed. The busy
# loops are this script's children and are stopped however it ends (Ctrl-C included).
set -u
cd "$(dirname "$0")/.."

LOOPS=${LOOPS:-2}
RUNS=${RUNS:-2}
LOAD_NICE=${LOAD_NICE:-10}
logs=test-artifacts/under-load
mkdir -p "$logs"

loop_pids=()
stop_loops() {
  for pid in "${loop_pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait "${loop_pids[@]}" 2>/dev/null
  loop_pids=()
}
trap stop_loops EXIT
trap 'exit 130' INT TERM

for _ in $(seq "$LOOPS"); do
  nice -n "$LOAD_NICE" sh -c 'while :; do :; done' &
  loop_pids+=($!)
done
echo "load: $LOOPS busy loop(s) at nice $LOAD_NICE (pids ${loop_pids[*]})"

failed=0
summary=()
for run in $(seq "$RUNS"); do
  log="$logs/run-$run.log"
  echo "run $run/$RUNS: npm test > $log"
  started=$(date +%s)
  npm test >"$log" 2>&1
  code=$?
  took=$(($(date +%s) - started))
  # vitest's totals, without colour codes
  totals=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^\s+(Test Files|Tests)\s' | tr -s ' ' | paste -sd ';' -)
  summary+=("run $run: exit $code after ${took} s; ${totals:-no vitest totals (lint, build or type-check failed?)}")
  if [ "$code" -ne 0 ]; then
    failed=1
    echo "run $run failed; failing tests:"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^\s*(×|FAIL)\s' | sort -u | head -40
  fi
done

stop_loops
echo
echo "under load ($LOOPS busy loop(s), nice $LOAD_NICE):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
