#!/bin/sh
# Guest side of mmio_test.sh: the GPU in slot dxpu0, then dxpu_mmio_check.ko runs its checks at
# load; /sys/devices/dxpu/mmio counts what it did.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
before=$(cat /sys/devices/dxpu/mmio)
if insmod /lib/dxpu/dxpu_mmio_check.ko; then ok "insmod dxpu_mmio_check"; else bad "insmod dxpu_mmio_check"; fi
rmmod dxpu_mmio_check
after=$(cat /sys/devices/dxpu/mmio)
echo "mmio counters before: $before"
echo "mmio counters after: $after"
echo "fabric counters: $(cat /sys/devices/dxpu/counters)"
reads=$(echo "$after" | sed -n 's/^reads \([0-9]*\) .*/\1/p')
if [ "${reads:-0}" -gt 250 ]; then ok "the faults were dxpu's ($after)"; else bad "too few reads counted: $after"; fi
# A userspace mapping of a BAR is refused, with a clear error.
/bin/resource_mmap_check "$(ls -d /sys/bus/pci/devices/1*:00:00.0)/resource0"
/bin/resource_mmap_check "$(ls -d /sys/bus/pci/devices/1*:00:00.0)/resource2_wc"
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "power off dxpu0"; else bad "power off dxpu0"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
