#!/usr/bin/env bash
# Installs the Debian 12 packages accel needs, only those that are missing.
# Usage: scripts/deps.sh [extra-package ...]
set -euo pipefail
# clang + its sanitizer/fuzzer runtimes (libclang-rt-14-dev is only a
# "Recommends" of clang, and we install without recommends) for the TSan
# tier and the fuzzer; spin for the protocol models; systemtap-sdt-dev for
# the USDT probes (<sys/sdt.h>); gnuplot (no X) for the charts of make bench.
pkgs=(build-essential cmake pkg-config liburcu-dev libck-dev libcriterion-dev
      clang libclang-rt-14-dev spin systemtap-sdt-dev "$@")
# Any gnuplot with the pngcairo terminal will do (gnuplot-qt or -x11 too).
command -v gnuplot >/dev/null 2>&1 || pkgs+=(gnuplot-nox)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
