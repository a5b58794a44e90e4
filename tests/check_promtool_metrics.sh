#!/usr/bin/env bash
# The C exposition checked by Prometheus' own parser: promtool_scrapes
# writes scrapes (odd ids, many sessions, a session closing while another
# opens with its id, scrapes under open/close churn) and each goes through
# `promtool check metrics`. A scrape fails the test if promtool cannot
# parse it (exit 1, "error while linting") or its linter finds a problem
# (exit 3: the C output is lint-clean, keep it so), or if one series is
# written twice: promtool's parser does not look for that, Prometheus
# rejects such a scrape, so the check here does (the label set of each
# sample, its value cut off, must be unique). Planted copies (a sample
# written twice, an invalid escape) must be reported, or the check itself
# is broken.
# promtool is taken from PATH, else from .tools/prometheus, where
# scripts/deps.sh unpacks Debian's prometheus package without installing
# it (make test runs it first): without promtool this test fails.
# Usage: check_promtool_metrics.sh path/to/promtool_scrapes
set -u
prog=$1
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
PATH="$PATH:$root/.tools/prometheus/usr/bin"
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not found on PATH nor in .tools/prometheus: run 'make deps'" \
       "(scripts/deps.sh unpacks it from Debian's prometheus package)"
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$prog" "$dir" || { echo "FAIL: $prog could not write the scrapes"; exit 1; }

# check FILE: prints what is wrong with it; exit status 0 if nothing is.
check() {
  local f=$1 out rc dups bad=0
  out=$(promtool check metrics <"$f" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    echo "$(basename "$f"): promtool check metrics exit $rc:"
    echo "${out:0:2000}"
    bad=1
  fi
  dups=$(grep -v '^#' "$f" | sed 's/ [^ ]*$//' | sort | uniq -d)
  if [ -n "$dups" ]; then
    echo "$(basename "$f"): series written twice:"
    echo "${dups:0:2000}"
    bad=1
  fi
  return $bad
}

files=("$dir"/*.prom)
[ "${#files[@]}" -ge 5 ] || { echo "FAIL: only ${#files[@]} scrapes written"; exit 1; }
failed=0
for f in "${files[@]}"; do
  check "$f" || failed=$((failed + 1))
done
[ "$failed" -eq 0 ] || { echo "FAIL: $failed of ${#files[@]} scrapes rejected"; exit 1; }

# The check must see what it is for: a sample written twice, and a label
# value with an escape the format does not have.
src="$dir/odd_ids.prom"
last=$(grep -v '^#' "$src" | tail -n 1)
{ cat "$src"; printf '%s\n' "$last"; } >"$dir/planted_dup"
sed '0,/session="/s//session="\\q/' "$src" >"$dir/planted_escape"
for p in planted_dup planted_escape; do
  if check "$dir/$p" >/dev/null; then
    echo "FAIL: the check passed $p (the planted fault went unseen)"
    exit 1
  fi
done
echo "promtool: ok (${#files[@]} scrapes of the C exposition: no error," \
     "no lint problem, no series twice; planted faults reported;" \
     "$(promtool --version 2>&1 | sed -n '1s/^promtool, //p'))"
