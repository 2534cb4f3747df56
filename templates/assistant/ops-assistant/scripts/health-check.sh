#!/usr/bin/env bash
# Host health check: disk usage, memory, load average. Read-only; changes nothing.
# Works on Linux (procps or busybox) and macOS.
#
# Usage: bash scripts/health-check.sh [--quiet]
#   --quiet   print only WARN and CRIT lines plus the summary line
#
# Thresholds (environment variables, percentages or load per CPU core):
#   DISK_WARN=80 DISK_CRIT=90   used space per mounted filesystem
#   MEM_WARN=85  MEM_CRIT=95    used memory (excluding reclaimable cache)
#   LOAD_WARN=1.0 LOAD_CRIT=2.0 5-minute load average divided by CPU cores
#
# Output: one line per check, "STATUS check: detail", then "SUMMARY: ...".
# Exit status: 0 all OK, 1 at least one WARN, 2 at least one CRIT, 3 a check could not run.

set -u

DISK_WARN=${DISK_WARN:-80}
DISK_CRIT=${DISK_CRIT:-90}
MEM_WARN=${MEM_WARN:-85}
MEM_CRIT=${MEM_CRIT:-95}
LOAD_WARN=${LOAD_WARN:-1.0}
LOAD_CRIT=${LOAD_CRIT:-2.0}

QUIET=0
case "${1:-}" in
  --quiet|-q) QUIET=1 ;;
  ""|--) ;;
  -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "health-check.sh: unknown option '$1' (try --help)" >&2; exit 3 ;;
esac

WORST=0        # 0 ok, 1 warn, 2 crit, 3 unknown
COUNT_OK=0
COUNT_WARN=0
COUNT_CRIT=0
COUNT_UNKNOWN=0

report() {     # report STATUS CHECK DETAIL
  local status=$1 check=$2 detail=$3 rank=0
  case $status in
    OK) COUNT_OK=$((COUNT_OK + 1)) ;;
    WARN) COUNT_WARN=$((COUNT_WARN + 1)); rank=1 ;;
    CRIT) COUNT_CRIT=$((COUNT_CRIT + 1)); rank=2 ;;
    *) COUNT_UNKNOWN=$((COUNT_UNKNOWN + 1)); rank=3 ;;
  esac
  # Severity order for the exit status: CRIT > WARN > UNKNOWN > OK.
  if [ "$rank" -eq 3 ]; then
    if [ "$WORST" -eq 0 ]; then WORST=3; fi
  elif [ "$rank" -gt 0 ]; then
    if [ "$WORST" -eq 3 ] || [ "$rank" -gt "$WORST" ]; then WORST=$rank; fi
  fi
  if [ "$QUIET" -eq 0 ] || [ "$rank" -gt 0 ]; then
    printf '%-7s %s: %s\n' "$status" "$check" "$detail"
  fi
}

level() {      # level VALUE WARN CRIT -> OK|WARN|CRIT (floating-point safe)
  awk -v v="$1" -v w="$2" -v c="$3" 'BEGIN { if (v >= c) print "CRIT"; else if (v >= w) print "WARN"; else print "OK" }'
}

human_kb() {   # human_kb KILOBYTES -> 12.3G
  awk -v k="$1" 'BEGIN { split("K M G T P", u, " "); i = 1; while (k >= 1024 && i < 5) { k /= 1024; i++ } printf "%.1f%s", k, u[i] }'
}

cpu_count() {
  local n=""
  if command -v nproc >/dev/null 2>&1; then n=$(nproc 2>/dev/null); fi
  if [ -z "$n" ]; then n=$(getconf _NPROCESSORS_ONLN 2>/dev/null); fi
  if [ -z "$n" ]; then n=$(sysctl -n hw.ncpu 2>/dev/null); fi
  case $n in ''|*[!0-9]*|0) n=1 ;; esac
  echo "$n"
}

check_disk() {
  local lines
  # -P: POSIX format, one line per filesystem; -k: 1K blocks.
  if ! lines=$(df -Pk 2>/dev/null); then
    report UNKNOWN disk "df failed"
    return
  fi
  local found=0
  while read -r fs size used avail pct mount; do
    case $fs in
      Filesystem|tmpfs|devtmpfs|overlay|shm|udev|none|map*|devfs|efivarfs|/dev/loop*) continue ;;
    esac
    case $mount in
      /proc*|/sys*|/dev|/dev/*|/run|/run/*|/snap/*|/System/Volumes/VM|/System/Volumes/Preboot|/System/Volumes/Update|/System/Volumes/xarts|/System/Volumes/iSCPreboot|/System/Volumes/Hardware) continue ;;
    esac
    case $size in ''|*[!0-9]*) continue ;; esac
    [ "$size" -ge 65536 ] || continue   # ignore pseudo and tiny mounts under 64 MB
    pct=${pct%\%}
    case $pct in ''|*[!0-9]*) continue ;; esac
    found=1
    report "$(level "$pct" "$DISK_WARN" "$DISK_CRIT")" "disk $mount" \
      "${pct}% used, $(human_kb "$avail") free of $(human_kb "$size") ($fs)"
  done <<EOF
$lines
EOF
  [ "$found" -eq 1 ] || report UNKNOWN disk "no regular filesystems found in df output"
}

check_memory() {
  local total_kb avail_kb
  if [ -r /proc/meminfo ]; then
    total_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
    avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    if [ -z "$avail_kb" ]; then   # kernels before 3.14 have no MemAvailable
      avail_kb=$(awk '/^(MemFree|Buffers|Cached):/ { s += $2 } END { print s }' /proc/meminfo)
    fi
  elif command -v vm_stat >/dev/null 2>&1; then
    local page_size pages
    total_kb=$(( $(sysctl -n hw.memsize 2>/dev/null || echo 0) / 1024 ))
    page_size=$(vm_stat | awk '/page size of/ { print $8 }')
    pages=$(vm_stat | awk -F: '/Pages (free|inactive|speculative|purgeable)/ { gsub(/[ .]/, "", $2); s += $2 } END { print s }')
    avail_kb=$(( ${pages:-0} * ${page_size:-4096} / 1024 ))
  fi
  case "${total_kb:-}" in ''|*[!0-9]*|0) report UNKNOWN memory "cannot read memory statistics"; return ;; esac
  local used_pct
  used_pct=$(awk -v t="$total_kb" -v a="$avail_kb" 'BEGIN { printf "%.0f", (t - a) * 100 / t }')
  report "$(level "$used_pct" "$MEM_WARN" "$MEM_CRIT")" memory \
    "${used_pct}% used, $(human_kb "$avail_kb") available of $(human_kb "$total_kb")"

  if [ -r /proc/meminfo ]; then
    local swap_total swap_free
    swap_total=$(awk '/^SwapTotal:/ { print $2 }' /proc/meminfo)
    swap_free=$(awk '/^SwapFree:/ { print $2 }' /proc/meminfo)
    if [ "${swap_total:-0}" -gt 0 ]; then
      local swap_pct
      swap_pct=$(awk -v t="$swap_total" -v f="$swap_free" 'BEGIN { printf "%.0f", (t - f) * 100 / t }')
      report "$(level "$swap_pct" 50 80)" swap "${swap_pct}% used of $(human_kb "$swap_total")"
    fi
  fi
}

check_load() {
  local l1 l5 l15 cores
  if [ -r /proc/loadavg ]; then
    read -r l1 l5 l15 _ < /proc/loadavg
  else
    # "... load averages: 1.23 1.10 0.98" (macOS) or "load average: 1.23, 1.10, 0.98" (Linux)
    set -- $(uptime | sed 's/.*load average[s]*: *//; s/,/ /g')
    l1=${1:-}; l5=${2:-}; l15=${3:-}
  fi
  case "${l5:-}" in ''|*[!0-9.]*) report UNKNOWN load "cannot read load average"; return ;; esac
  cores=$(cpu_count)
  local per_core
  per_core=$(awk -v l="$l5" -v c="$cores" 'BEGIN { printf "%.2f", l / c }')
  report "$(level "$per_core" "$LOAD_WARN" "$LOAD_CRIT")" load \
    "1/5/15 min $l1 $l5 $l15 on $cores cores (${per_core} per core over 5 min)"
}

HOST=$(hostname 2>/dev/null || uname -n)
[ "$QUIET" -eq 1 ] || echo "Health check for $HOST at $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
check_disk
check_memory
check_load

case $WORST in
  0) overall=OK ;;
  1) overall=WARN ;;
  2) overall=CRIT ;;
  *) overall=UNKNOWN ;;
esac
echo "SUMMARY: $overall ($COUNT_OK ok, $COUNT_WARN warn, $COUNT_CRIT crit, $COUNT_UNKNOWN unknown)"
exit "$WORST"
