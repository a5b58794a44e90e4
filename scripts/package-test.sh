#!/usr/bin/env bash
# Installs the Debian packages of `make package` into a scratch root
# (dpkg -x: no root, nothing touches the system) and builds and runs a
# small C program against them twice: with pkg-config and with CMake's
# find_package. The program must load libaccel from the scratch root.
# Usage: scripts/package-test.sh [build-dir-with-the-debs]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-pkg}
shopt -s nullglob
runtime=("$dir"/libaccel0_*.deb) dev=("$dir"/libaccel-dev_*.deb)
if [ ${#runtime[@]} -ne 1 ] || [ ${#dev[@]} -ne 1 ]; then
  echo "package-test: want one libaccel0 and one libaccel-dev .deb in $dir"; exit 1
fi
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
dpkg-deb -f "${runtime[0]}" Package Depends
dpkg-deb -f "${dev[0]}" Package Depends
dpkg -x "${runtime[0]}" "$root"
dpkg -x "${dev[0]}" "$root"
pc=$(dirname "$(find "$root" -name accel.pc)")
libdir=$(dirname "$pc")
# The runtime package holds only the shared library (and its links) and
# backend modules.
# Every check below reads a command's output from a variable, not through a
# pipe into `grep -q`: under pipefail, grep -q leaving at its first match
# fails the writer with SIGPIPE, and the check with it, at random.
files=$(dpkg-deb -c "${runtime[0]}" | awk '{print $6}')
grep -v '/$' <<<"$files" |
  grep -vE 'libaccel\.so\.|libaccel-backend-[a-z]+\.so$' >/dev/null &&
  { echo "libaccel0 holds more than the library"; exit 1; }
# libaccel-dev ships the man pages (scripts/manpages.py), gzipped.
devfiles=$(dpkg-deb -c "${dev[0]}" | awk '{print $6}')
for page in man3/accel_submit.3.gz man7/accel.7.gz; do
  grep -qx "\./usr/share/man/$page" <<<"$devfiles" ||
    { echo "libaccel-dev lacks /usr/share/man/$page"; exit 1; }
done
page=$(zcat "$root/usr/share/man/man3/accel_submit.3.gz")
grep -q '^\.SH SYNOPSIS' <<<"$page" || { echo "accel_submit.3.gz is not a man page"; exit 1; }
# A CPU-only program links no CUDA: libaccel.so needs no CUDA library.
dyn=$(readelf -d "$root"/usr/lib/*/libaccel.so.0)
if grep -qi 'NEEDED.*cuda' <<<"$dyn"; then
  echo "libaccel.so.0 links CUDA"; exit 1
fi

# pkg-config: the .pc finds its prefix from its own place (${pcfiledir}).
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs accel)
case "$flags" in *"$root"*) ;; *) echo "pkg-config flags miss the scratch root: $flags"; exit 1;; esac
cc -std=c11 -Wall -Werror -o "$root/hello-pc" tests/package/hello.c $flags
LD_LIBRARY_PATH="$libdir" "$root/hello-pc"
loaded=$(LD_LIBRARY_PATH="$libdir" ldd "$root/hello-pc")
grep -qF "$libdir/libaccel.so.0" <<<"$loaded" ||
  { echo "hello-pc did not load the packaged libaccel"; exit 1; }

# The static library, as README shows it.
cc -std=c11 -Wall -Werror -o "$root/hello-static" tests/package/hello.c \
   "$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir accel)/libaccel.a" \
   $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --static --libs accel)
"$root/hello-static"
loaded=$(ldd "$root/hello-static")
if grep -q libaccel <<<"$loaded"; then
  echo "hello-static loads a shared libaccel"; exit 1
fi

# CMake: find_package(accel) with CMAKE_PREFIX_PATH at the scratch /usr.
cmake -S tests/package -B "$root/cm" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$root/cm" >/dev/null
LD_LIBRARY_PATH="$libdir" "$root/cm/hello"
echo "package-test: ok"
