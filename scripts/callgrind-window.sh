#!/usr/bin/env bash
# loadgen's --window-hook under `CALLGRIND=1 scripts/load.sh …`: counts instructions over the
# measured window alone. `on`: zero the counters and start instrumenting; `off`: stop and dump
# (callgrind.out.<pid>.<n> beside the profile file load.sh names).
#   scripts/callgrind-window.sh <server pid> on|off
set -euo pipefail
pid=$1
case "$2" in
  on) callgrind_control --zero "$pid" >/dev/null && callgrind_control --instr=on "$pid" >/dev/null ;;
  off) callgrind_control --instr=off "$pid" >/dev/null && callgrind_control --dump "$pid" >/dev/null ;;
  *) echo "usage: $0 <pid> on|off" >&2; exit 2 ;;
esac
