#!/usr/bin/env bash
# checkpatch_check.sh - the kernel's own style checker (scripts/checkpatch.pl, from Debian's
# linux-source package of the headers' version: fetched once with apt-get download, only
# checkpatch.pl and its data files kept, cached under ~/.cache/dxpu) on everything dxpu.ko is
# built from. Any error or warning fails the check.
#   driver/ (dxgpu/ too) and the kernel-only headers (dxpu_kapi.h, dxgpu_ioctl.h):
#   every rule, --strict.
#   lib/core and the headers it shares with userspace C and C++ (compat.h, dxfp.h, mgmt.h,
#   tlp.h): every rule but three the shared code cannot follow, since the kernel's macros do
#   not exist in userspace: ARRAY_SIZE, PREFER_DEFINED_ATTRIBUTE_MACRO (__always_inline,
#   __aligned) and COMPLEX_MACRO (compat.h's extern "C" { for C++).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
kdir=${DXPU_KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)}
[ -f "$kdir/Makefile" ] || { echo "FAIL: no kernel headers (run tools/bootstrap)" >&2; exit 1; }
series=$(sed -n 's/^VERSION = //p;s/^PATCHLEVEL = //p' "$kdir/Makefile" | paste -sd.)
if [ -z "$series" ]; then # Debian's header tree: the version is in the directory's name
  series=$(basename "$kdir" | sed -E 's/^linux-headers-([0-9]+\.[0-9]+).*/\1/')
fi
cache=${DXPU_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/dxpu}/checkpatch-$series
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [ ! -f "$cache/scripts/checkpatch.pl" ]; then
  rm -rf "$cache.tmp"
  mkdir -p "$cache.tmp"
  (cd "$cache.tmp" && apt-get download -q "linux-source-$series" >/dev/null 2>&1) ||
    { echo "FAIL: cannot download linux-source-$series (apt-get download)" >&2; exit 1; }
  dpkg-deb --fsys-tarfile "$cache.tmp"/linux-source-"$series"_*.deb |
    tar -xO "./usr/src/linux-source-$series.tar.xz" |
    tar -xJ -C "$cache.tmp" --strip-components=1 "linux-source-$series/scripts/checkpatch.pl" \
      "linux-source-$series/scripts/spelling.txt" "linux-source-$series/scripts/const_structs.checkpatch"
  rm -f "$cache.tmp"/linux-source-*.deb
  rm -rf "$cache"
  mv "$cache.tmp" "$cache"
fi
exec 9>&-
checkpatch=("$cache/scripts/checkpatch.pl" --no-tree --terse --show-types -f)
# Run outside the git tree: in one, checkpatch leaves a .checkpatch-camelcase.git.* cache there.
cd "$cache"
status=0
"${checkpatch[@]}" --strict "$src"/driver/*.c "$src"/driver/*.h \
  "$src"/include/dxpu/dxpu_kapi.h "$src"/driver/dxgpu/*.c "$src"/include/dxgpu/dxgpu_ioctl.h \
  >/tmp/checkpatch.$$ 2>&1 || true
"${checkpatch[@]}" --ignore ARRAY_SIZE,PREFER_DEFINED_ATTRIBUTE_MACRO,COMPLEX_MACRO \
  "$src"/lib/core/*.c "$src"/lib/core/*.h "$src"/include/dxpu/{compat,dxfp,mgmt,tlp}.h \
  >>/tmp/checkpatch.$$ 2>&1 || true
if grep -E ': (ERROR|WARNING|CHECK):' /tmp/checkpatch.$$; then
  echo "FAIL: checkpatch (linux-source-$series) found the above"
  status=1
else
  echo "PASS: checkpatch (linux-source-$series) clean on driver/, lib/core and their headers"
fi
rm -f /tmp/checkpatch.$$
exit $status
