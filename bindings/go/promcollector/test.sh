#!/bin/sh
# Vets and tests this module against Debian's client_golang sources
# (/usr/share/gocode/src, from golang-github-prometheus-client-golang-dev)
# with no module proxy: in GOPATH mode, with a scratch GOPATH whose
# src/accel is bindings/go (doc.go says why). Skips, with a message, when
# the Debian package is not installed. make test-go runs it.
# Usage: test.sh [go test flags ...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gocode=${ACCEL_GOCODE:-/usr/share/gocode}
if [ ! -d "$gocode/src/github.com/prometheus/client_golang/prometheus" ]; then
  echo "promcollector: skipped: no client_golang in $gocode/src" \
       "(Debian's golang-github-prometheus-client-golang-dev; make deps installs it)"
  exit 0
fi
gp=$(mktemp -d)
trap 'rm -rf "$gp"' EXIT
mkdir -p "$gp/src"
ln -s "$here/.." "$gp/src/accel"
cd "$gp/src/accel/promcollector"
export GO111MODULE=off GOPATH="$gp:$gocode" GOFLAGS= GOPROXY=off
go vet .
go test "$@" .
