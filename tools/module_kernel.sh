#!/usr/bin/env bash
# module_kernel.sh KO: which kernel a built module is for (its vermagic), and a warning when
# that is not the kernel this machine runs (insmod would refuse it: "Invalid module format").
# `make module` runs it after the build. The running kernel is `uname -r`, or
# $DXPU_RUNNING_KERNEL (for tests). Exit status: 0 when they match, 3 when they differ,
# 1 when the module cannot be read.
set -euo pipefail
ko=${1:?usage: module_kernel.sh MODULE.ko}
built=$(modinfo -F vermagic "$ko" 2>/dev/null | awk '{print $1}') || true
if [ -z "$built" ]; then
  echo "module_kernel: $ko: no vermagic (not a kernel module, or missing)" >&2
  exit 1
fi
running=${DXPU_RUNNING_KERNEL:-$(uname -r)}
echo "$(basename "$ko") is built for kernel $built"
if [ "$built" != "$running" ]; then
  echo "WARNING: this machine runs kernel $running, not $built: insmod here will refuse" \
    "$(basename "$ko"). Install linux-headers-$running and build again with" \
    "DXPU_KDIR=/usr/src/linux-headers-$running (or /lib/modules/$running/build), or load it on" \
    "a host that runs $built." >&2
  exit 3
fi
