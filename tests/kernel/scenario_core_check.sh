#!/bin/sh
# Guest side: lib/core's self-test module loads, says its self-test passed, and unloads.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
if insmod /lib/dxpu/dxpu_core_check.ko; then ok "insmod dxpu_core_check"; else bad "insmod dxpu_core_check"; fi
if dmesg | grep -q "dxpu_core_check: lib/core self-test passed"; then
  ok "lib/core self-test in the kernel"
else
  bad "lib/core self-test in the kernel"
fi
if grep -q '^dxpu_core_check ' /proc/modules; then ok "listed in /proc/modules"; else bad "listed in /proc/modules"; fi
if rmmod dxpu_core_check; then ok "rmmod dxpu_core_check"; else bad "rmmod dxpu_core_check"; fi
if grep -q '^dxpu_core_check ' /proc/modules; then bad "gone after rmmod"; else ok "gone after rmmod"; fi
