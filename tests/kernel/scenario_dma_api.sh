#!/bin/sh
# Guest side of dma_api_test.sh: the GPU in slot dxpu0, then dxpu_dma_api_check.ko runs its
# checks at load and leaves one mapping; powering the slot off removes it with the device.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
echo "dxpu_dma before: $(cat "$dev/dxpu_dma")"
if insmod /lib/dxpu/dxpu_dma_api_check.ko; then ok "insmod dxpu_dma_api_check"; else bad "insmod dxpu_dma_api_check"; fi
rmmod dxpu_dma_api_check
after=$(cat "$dev/dxpu_dma")
echo "dxpu_dma after: $after"
echo "bridges: $(cat /sys/devices/dxpu/bridges)"
case "$after" in
  "windows 1 "*) ok "the one mapping left is still a window ($after)" ;;
  *) bad "one window expected: $after" ;;
esac
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "power off dxpu0"; else bad "power off dxpu0"; fi
if dmesg | grep -q "1 DMA mappings left at removal"; then
  ok "the mapping left was removed with the device"
else
  bad "no word of the mapping left at removal"
fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
