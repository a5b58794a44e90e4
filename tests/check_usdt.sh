#!/bin/sh
# Checks that the built library carries every USDT probe of runtime/trace.h
# (provider "accel") in its .note.stapsdt notes. Usage: check_usdt.sh LIB
set -eu
lib=$1
notes=$(readelf -n "$lib" 2>/dev/null | awk '/Provider: accel/{getline; print $2}' | sort -u)
missing=0
for p in submit visit_start visit_end op_start op_done park wake close budget_refused compensate retire batch; do
  if ! printf '%s\n' "$notes" | grep -qx "$p"; then
    echo "missing USDT probe accel:$p in $lib"; missing=1
  fi
done
[ $missing -eq 0 ] && echo "all USDT probes present in $lib:" $notes
exit $missing
