#!/bin/sh
# Guest side: dxgpu.ko loaded first, the GPU attached through slot dxpu0 is bound to it by its
# id_table when it appears and gets /dev/dxgpu0; chardev_check drives it (registers through
# dxpu's transparent MMIO, a pinned buffer, MSI-X, refusals, bad arguments); the bridge's
# counters show the refused DMA; power off with the file open makes it lost (ENODEV, POLLHUP),
# and rmmod of both modules works after. dxgpu's locks never meet mmap_lock (lock_order_check);
# dxpu loaded again with a 16 MiB IOVA space, dxgpu's buffers reuse it (dma_reuse_check).
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
counter() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" /sys/devices/dxpu/bridges; }
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
drv=$(basename "$(readlink "$dev/driver")")
if [ "$drv" = dxgpu ]; then ok "bound to dxgpu by its id_table"; else bad "bound to '$drv', not dxgpu"; fi
if [ -c /dev/dxgpu0 ]; then ok "/dev/dxgpu0 exists"; else bad "/dev/dxgpu0 missing"; exit 0; fi
reads_before=$(counter dma_refused_reads)
writes_before=$(counter dma_refused_writes)
/bin/chardev_check /dev/dxgpu0 $((64 << 20))
cat /sys/devices/dxpu/bridges
reads_after=$(counter dma_refused_reads)
writes_after=$(counter dma_refused_writes)
if [ "$reads_after" -gt "$reads_before" ]; then ok "the refused DMA read is counted ($reads_before -> $reads_after)"; else bad "refused DMA read not counted ($reads_before -> $reads_after)"; fi
if dmesg | grep -q "DMA read of .* at 0x3f00000000 by 01:00.0 refused"; then ok "the refused DMA read is logged"; else bad "the refused DMA read is not logged"; fi
# The release into a freed buffer's IOVA: refused by the bridge, not written anywhere.
if [ "$writes_after" -gt "$writes_before" ]; then ok "the DMA write to a freed buffer's IOVA is refused ($writes_before -> $writes_after)"; else bad "the DMA write to a freed buffer's IOVA not refused ($writes_before -> $writes_after)"; fi
/bin/lock_order_check /dev/dxgpu0
# Power off under an open file: the file stays, every call on it says the device is lost.
/bin/chardev_lost /dev/dxgpu0 /sys/bus/pci/slots/dxpu0/power
if [ -e /dev/dxgpu0 ]; then bad "/dev/dxgpu0 left after power off"; else ok "/dev/dxgpu0 gone after power off"; fi
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
# A small IOVA space for the DMA API, dxgpu's buffers allocated and freed through it many times.
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 dma_mib=16; then ok "insmod dxpu dma_mib=16"; else bad "insmod dxpu dma_mib=16"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu again"; else bad "insmod dxgpu again"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0 again"; else bad "power on dxpu0 again"; exit 0; fi
if [ -c /dev/dxgpu0 ]; then ok "/dev/dxgpu0 again"; else bad "/dev/dxgpu0 missing after power on"; exit 0; fi
/bin/dma_reuse_check /dev/dxgpu0 16
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "power off dxpu0"; else bad "power off dxpu0"; fi
if rmmod dxgpu; then ok "rmmod dxgpu again"; else bad "rmmod dxgpu again"; fi
if rmmod dxpu; then ok "rmmod dxpu again"; else bad "rmmod dxpu again"; fi
