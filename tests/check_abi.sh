#!/bin/sh
# The shared library exports exactly the public names: the functions
# declared ACCEL_API in the installed headers (accel.h, host.h, and cuda.h when
# built with CUDA), each at version node ACCEL_*, nothing else; its SONAME
# is libaccel.so.MAJOR (docs/abi.md).
# Usage: check_abi.sh LIBACCEL_SO INCLUDE_DIR HAVE_CUDA(0|1) MAJOR
set -eu
so=$1 inc=$2 cuda=$3 major=$4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
hdrs="$inc/accel/accel.h $inc/accel/host.h"
[ "$cuda" = 1 ] && hdrs="$hdrs $inc/accel/cuda.h"
grep -h 'ACCEL_API' $hdrs | grep -v '#define' | grep -o 'accel_[a-z0-9_]*(' |
  tr -d '(' | sort -u > "$tmp/want"
nm -D --defined-only "$so" | awk '$3 !~ /^ACCEL_/ {print $3}' > "$tmp/raw"
sed 's/@.*//' "$tmp/raw" | sort -u > "$tmp/got"
rc=0
if ! diff -u "$tmp/want" "$tmp/got" > "$tmp/diff"; then
  echo "exported names differ from the headers' ACCEL_API names (-want +got):"
  cat "$tmp/diff"; rc=1
fi
if grep -v '@@ACCEL_' "$tmp/raw"; then
  echo "^ exported without a version node"; rc=1
fi
soname=$(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ "$soname" != "libaccel.so.$major" ]; then
  echo "SONAME is '$soname', want libaccel.so.$major"; rc=1
fi
[ $rc -eq 0 ] && echo "ABI ok: $(wc -l < "$tmp/got") names, SONAME $soname"
exit $rc
