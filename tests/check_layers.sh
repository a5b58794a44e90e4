#!/bin/sh
# The layering check (scripts/layers.py): passes on runtime/ as it is, and
# fails on a copy where fork.c, the lowest layer, calls up into session.c.
set -eu
root=$1
py=python3
"$py" "$root/scripts/layers.py" "$root/runtime" || { echo "check_layers: runtime/ has a call circle (above)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root"/runtime/*.c "$root"/runtime/*.h "$tmp"/
printf '\nstatic void planted(void) { accel__session_fill_stats(0, 0); }\n' >> "$tmp/fork.c"
if "$py" "$root/scripts/layers.py" "$tmp" > "$tmp/out.txt"; then
    cat "$tmp/out.txt"
    echo "check_layers: a planted fork.c -> session.c call was not reported as a circle"
    exit 1
fi
grep -q 'call in a circle' "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "check_layers: no circle named"; exit 1; }
echo "check_layers: ok (no circle; a planted one is reported)"
