#!/bin/sh
# The layering check (scripts/layers.py --strict-names): passes on runtime/
# as it is, and fails on a copy where fork.c, the lowest layer, calls up
# into session.c; on a copy where session.c includes runtime.h, the top
# layer's header (an upward #include: runtime.c calls into session.c); and
# on a copy where fork.c defines a session.c name.
set -eu
root=$1
py=python3
"$py" "$root/scripts/layers.py" --strict-names "$root/runtime" || { echo "check_layers: runtime/ has a circle of calls or #includes, or a misplaced name (above)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root"/runtime/*.c "$root"/runtime/*.h "$tmp"/
cp "$tmp/fork.c" "$tmp/fork.c.orig"
printf '\nstatic void planted(void) { accel__session_fill_stats(0, 0); }\n' >> "$tmp/fork.c"
if "$py" "$root/scripts/layers.py" "$tmp" > "$tmp/out.txt"; then
    cat "$tmp/out.txt"
    echo "check_layers: a planted fork.c -> session.c call was not reported as a circle"
    exit 1
fi
grep -q 'call in a circle' "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "check_layers: no circle named"; exit 1; }
cp "$tmp/fork.c.orig" "$tmp/fork.c"
cp "$tmp/session.c" "$tmp/session.c.orig"
printf '\n#include "runtime.h"\n' >> "$tmp/session.c"
if "$py" "$root/scripts/layers.py" "$tmp" > "$tmp/out.txt"; then
    cat "$tmp/out.txt"
    echo "check_layers: a planted #include of runtime.h in session.c was not reported"
    exit 1
fi
grep -q 'session.c includes runtime.h, whose runtime reaches back: runtime -\[' "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "check_layers: the upward #include not named"; exit 1; }
cp "$tmp/session.c.orig" "$tmp/session.c"
printf '\nvoid accel__session_planted(void)\n{\n}\n' >> "$tmp/fork.c"
if "$py" "$root/scripts/layers.py" --strict-names "$tmp" > "$tmp/out.txt"; then
    cat "$tmp/out.txt"
    echo "check_layers: a planted accel__session_* in fork.c was not reported"
    exit 1
fi
grep -q 'accel__session_planted is defined in fork.c' "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "check_layers: the misplaced name not named"; exit 1; }
echo "check_layers: ok (no circle of calls or #includes, no misplaced name; a planted one of each is reported)"
