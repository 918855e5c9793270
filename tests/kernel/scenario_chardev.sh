#!/bin/sh
# Guest side: the GPU attached through slot dxpu0 is bound to dxpu's PCI driver and gets
# /dev/dxpu0; chardev_check drives it (registers, a DMA buffer, MSI-X, refusals, bad
# arguments); the bridge's counters show the refused DMA; power off with the file open makes
# it lost (ENODEV, POLLHUP), and rmmod works after. The device's lock never meets mmap_lock
# (lock_order_check); loaded again with a 16 MiB IOVA space, DMA buffers reuse it
# (dma_reuse_check).
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
if [ "$(basename "$(readlink "$dev/driver")")" = dxpu ]; then ok "bound to the dxpu driver"; else bad "not bound to dxpu"; fi
if [ -c /dev/dxpu0 ]; then ok "/dev/dxpu0 exists"; else bad "/dev/dxpu0 missing"; exit 0; fi
refused_before=$(sed -n 's/.* dma_refused_reads \([0-9]*\).*/\1/p' /sys/devices/dxpu/bridges)
/bin/chardev_check /dev/dxpu0 $((64 << 20))
cat /sys/devices/dxpu/bridges
refused_after=$(sed -n 's/.* dma_refused_reads \([0-9]*\).*/\1/p' /sys/devices/dxpu/bridges)
if [ "$refused_after" -gt "$refused_before" ]; then ok "the refused DMA read is counted ($refused_before -> $refused_after)"; else bad "refused DMA not counted"; fi
if dmesg | grep -q "DMA read of .* at 0x3f00000000 by 01:00.0 refused"; then ok "the refused DMA read is logged"; else bad "the refused DMA read is not logged"; fi
/bin/lock_order_check /dev/dxpu0
# Power off under an open file: the file stays, every call on it says the device is lost.
/bin/chardev_lost /dev/dxpu0 /sys/bus/pci/slots/dxpu0/power
if [ -e /dev/dxpu0 ]; then bad "/dev/dxpu0 left after power off"; else ok "/dev/dxpu0 gone after power off"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
# A small IOVA space for DMA buffers, allocated and freed through many times over.
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 dma_mib=16; then ok "insmod dxpu dma_mib=16"; else bad "insmod dxpu dma_mib=16"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0 again"; else bad "power on dxpu0 again"; exit 0; fi
/bin/dma_reuse_check /dev/dxpu0 16
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "power off dxpu0"; else bad "power off dxpu0"; fi
if rmmod dxpu; then ok "rmmod dxpu again"; else bad "rmmod dxpu again"; fi
