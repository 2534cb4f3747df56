#!/bin/bash
# The queued first byte (the response head of the turns that wait in a same-key burst of 10
# POST /chat: the first runs, up to 3 wait, the rest are refused), measured through
# ../shared/bench/run-anchor.sh's phases "probe d", builds taking turns in each round.
#
#   TARGETS="pre27:/path/to/a/build after:/path/to/this/checkout" ROUNDS=8 PORT=38277 bench/queued-first-byte.sh
#
# Each TARGET is name:dir with dir/bin/service.js built (npm run build). Results in
# /tmp/queued-<tag>-<name>-<round>/summary.json (phases.d_burst.queued.headers); one line per
# run, then the median over rounds of each target's p50. On a shared machine, compare targets of
# the same run only.
set -euo pipefail
B=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/bench
ROUNDS=${ROUNDS:-3}; PORT=${PORT:-38277}; TAG=${TAG:-$(date +%H%M%S)}
TARGETS=${TARGETS:-"this:$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
declare -A P50
for i in $(seq 1 "$ROUNDS"); do
  for t in $TARGETS; do
    name=${t%%:*}; dir=${t#*:}
    OUT=/tmp/queued-$TAG-$name-$i
    rm -rf "$OUT"
    TARGET_NAME=$name TARGET_DIR=$dir TARGET_CLI=$dir/bin/service.js ENGINE=engine_b \
    ASSISTANT_INIT='cd .. && rmdir "$ADIR" && node "$TARGET_CLI" init "$ADIR" --template research --engine "$ENGINE" --name bench --yes' \
    START_CMD='node "$TARGET_CLI" gateway -d "$ADIR" --port "$PORT" --host 127.0.0.1 --token "$SERVICE_TOKEN"' \
    VERSION_CMD='node "$TARGET_CLI" --version' TOKEN_ENV=SERVICE_TOKEN TERMINAL=completion PHASES="probe d" COLD_N=0 \
    OUT_DIR=$OUT PORT=$PORT bash "$B/run-anchor.sh" > "$OUT.log" 2>&1 || true
    p50=$(jq -r '.phases.d_burst.queued.headers.p50 // "null"' "$OUT/summary.json" 2>/dev/null || echo null)
    P50[$name]="${P50[$name]:-} $p50"
    echo "$name round $i (load $(cut -d' ' -f1 /proc/loadavg)): queued head p50 $p50 ms"
  done
done
for t in $TARGETS; do
  name=${t%%:*}
  echo "$name: median of the rounds' p50 $(echo ${P50[$name]} | tr ' ' '\n' | grep -v null | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}') ms (rounds:${P50[$name]})"
done
