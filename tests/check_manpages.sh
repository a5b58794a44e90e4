#!/bin/sh
# The man pages (scripts/manpages.py): every public accel_* function of
# include/accel/*.h has a comment to make its page from, and the pages
# are valid roff (groff -man -ww: every warning counts). Planted copies
# must fail: a header with an undocumented function at its end, one with
# an undocumented function written right under a documented one, and a
# page with a roff error. Without groff the roff part is skipped (exit
# 77, ctest's SKIP_RETURN_CODE) after the comment check has passed.
# Usage: check_manpages.sh <source-root>
set -eu
root=$1
py=python3
gen="$root/scripts/manpages.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$py" "$gen" --check "$root"/include/accel/*.h ||
  { echo "check_manpages: a public function above has no comment"; exit 1; }

# Planted: a function with no comment at the end of accel.h, and one right
# under accel_ctx_free's declaration (it must not borrow that comment).
plant() { # $1: what; then the copy is checked and must fail naming the function
  if "$py" "$gen" --check "$tmp"/h/*.h > "$tmp/out.txt"; then
    cat "$tmp/out.txt"
    echo "check_manpages: $1 was not reported"; exit 1
  fi
  grep -q 'accel_planted has no comment' "$tmp/out.txt" ||
    { cat "$tmp/out.txt"; echo "check_manpages: $1: the function not named"; exit 1; }
}
mkdir "$tmp/h"
cp "$root"/include/accel/*.h "$tmp/h/"
printf '\nACCEL_API int accel_planted(void);\n' >> "$tmp/h/accel.h"
plant "an undocumented function at the end of accel.h"
cp "$root"/include/accel/accel.h "$tmp/h/"
sed -i 's/^ACCEL_API void accel_ctx_free(.*);$/&\nACCEL_API int accel_planted(void);/' "$tmp/h/accel.h"
grep -q '^ACCEL_API int accel_planted' "$tmp/h/accel.h" ||
  { echo "check_manpages: could not plant under accel_ctx_free"; exit 1; }
plant "an undocumented function under accel_ctx_free"

if ! command -v groff >/dev/null 2>&1; then
  echo "check_manpages: comments ok; groff not found (Debian: groff-base):" \
       "the roff check is skipped"
  exit 77
fi
"$py" "$gen" --out "$tmp/man" "$root"/include/accel/*.h
n=0
for page in "$tmp"/man/man3/*.3 "$tmp"/man/man7/accel.7; do
  w=$(groff -man -ww -z -Tutf8 "$page" 2>&1) || true
  if [ -n "$w" ]; then
    echo "$page:"; echo "$w"; n=$((n + 1))
  fi
  grep -q '^\.SH NAME' "$page" && grep -q '^\.SH SYNOPSIS' "$page" &&
    grep -q '^\.SH DESCRIPTION' "$page" ||
    { echo "check_manpages: $page lacks NAME, SYNOPSIS or DESCRIPTION"; exit 1; }
done
[ "$n" -eq 0 ] || { echo "check_manpages: $n pages with roff warnings (above)"; exit 1; }
# Planted: groff must report a page with an unknown request and a bad font.
cp "$tmp/man/man3/accel_submit.3" "$tmp/bad.3"
printf '.XQ unknown request\n\\fZbad font\\fP\n' >> "$tmp/bad.3"
w=$(groff -man -ww -z -Tutf8 "$tmp/bad.3" 2>&1) || true
[ -n "$w" ] || { echo "check_manpages: groff -ww did not report a planted roff error"; exit 1; }
pages=$(ls "$tmp"/man/man3 | wc -l)
echo "check_manpages: ok ($pages function pages and accel(7), valid roff;" \
     "planted undocumented functions and a roff error are reported)"
