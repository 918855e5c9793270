#!/usr/bin/env bash
# Builds driver/ (dxpu.ko, and dxpu_core_check.ko carrying lib/core) with
# Kbuild against the installed Debian kernel headers (the kernel's own flags,
# -Werror, W=1, sparse), from a copy of the tree under $1 so no objects land in
# the sources. Also checks that driver/Kbuild and lib/core/CMakeLists.txt list
# the same core sources.
set -euo pipefail
out=${1:?usage: kbuild_check.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)

kdir=${DXPU_KDIR:-}
if [ -z "$kdir" ]; then
  kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [ -z "$kdir" ] || [ ! -f "$kdir/Makefile" ]; then
  echo "FAIL: no kernel headers (run tools/bootstrap, or set DXPU_KDIR)" >&2
  exit 1
fi

cmake_srcs=$(grep -oE '^\s+[a-z0-9_]+\.c' "$src/lib/core/CMakeLists.txt" | tr -d ' \t' | sed 's/\.c$//' | sort)
kbuild_srcs=$(sed -n 's/^DXPU_CORE_OBJS := //p' "$src/driver/Kbuild" | tr ' ' '\n' | sed 's/\.o$//' | sort)
if [ "$cmake_srcs" != "$kbuild_srcs" ]; then
  echo "FAIL: lib/core sources differ between CMake and driver/Kbuild:" >&2
  diff <(echo "$cmake_srcs") <(echo "$kbuild_srcs") >&2 || true
  exit 1
fi

# dxgpu.ko is an ordinary PCI driver: it may not reach into dxpu.ko (no dxpu header).
if grep -n '#include.*dxpu' "$src"/driver/dxgpu/*.c "$src"/include/dxgpu/*.h >&2; then
  echo "FAIL: driver/dxgpu includes a dxpu header (above): it must use the kernel's APIs only" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out/lib"
cp -r "$src/include" "$out/include"
cp -r "$src/lib/core" "$out/lib/core"
cp -r "$src/driver" "$out/driver"
echo "kbuild: $kdir"
# W=1: the kernel's extra warnings; C=2: sparse on every file. Any warning fails the check.
command -v sparse >/dev/null || { echo "FAIL: sparse missing (run tools/bootstrap)" >&2; exit 1; }
make -s -C "$kdir" M="$out/driver" W=1 C=2 modules >"$out/build.log" 2>&1 ||
  { cat "$out/build.log" >&2; echo "FAIL: the modules do not build" >&2; exit 1; }
if grep -E 'warning:|error:' "$out/build.log" >&2; then
  echo "FAIL: W=1 or sparse warnings (above)" >&2
  exit 1
fi
for ko in "$out/driver/dxpu_core_check.ko" "$out/driver/dxpu.ko" "$out/driver/dxgpu/dxgpu.ko"; do
  test -f "$ko"
  modinfo "$ko" | grep -E '^(description|vermagic):'
done
echo "PASS: lib/core, dxpu.ko and dxgpu.ko build as kernel modules, clean under W=1 and sparse ($(basename "$kdir"))"
