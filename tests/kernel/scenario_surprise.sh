#!/bin/sh
# Guest side of surprise removal: the GPU attached and bound by dxgpu.ko (its id_table), a
# program reading its registers through /dev/dxgpu0 while the host kills the bridge (SIGKILL:
# no CLOSE, the session goes down by its link-down time). The device is removed by the PCI core
# without a hang and dxgpu's remove runs (/dev/dxgpu0 and its irqs gone); the binding stays,
# powering on again without a bridge fails cleanly; rmmod of both modules works.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
# link_down_ms comes from the test (DXPU_GUEST_DXPU_PARAMS: 1 s, or the debug lane's 10 s, which
# its slower kernel needs to keep a live session up).
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu $(cat /sys/module/dxpu/parameters/link_down_ms) ms link-down"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
[ "$(basename "$(readlink "$dev/driver")")" = dxgpu ] && ok "dxgpu bound the GPU" || bad "dxgpu not bound: $(readlink "$dev/driver")"
[ -c /dev/dxgpu0 ] && ok "/dev/dxgpu0" || { bad "/dev/dxgpu0 missing"; exit 0; }
grep -q " dxgpu0" /proc/interrupts && ok "dxgpu0's vectors in /proc/interrupts" || bad "no dxgpu0 irqs"
echo "mmio: $(cat /sys/devices/dxpu/mmio)"
p=/sys/module/dxpu/parameters
/bin/surprise_check /dev/dxgpu0 40 "$(cat $p/link_down_ms)" "$(cat $p/request_timeout_ms)"
i=0
while [ -e "$dev" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e "$dev" ]; then bad "device still present after the session went down"; else ok "device removed by surprise removal"; fi
if [ "$(cat /sys/bus/pci/slots/dxpu0/power)" = 0 ]; then ok "slot dxpu0 powered off"; else bad "slot dxpu0 still on"; fi
# dxgpu's remove ran: its character device and its vectors went with the device.
if [ -e /dev/dxgpu0 ]; then bad "/dev/dxgpu0 left"; else ok "/dev/dxgpu0 gone: dxgpu's remove ran"; fi
grep -q " dxgpu0" /proc/interrupts && bad "dxgpu0's irqs left after the removal" || ok "dxgpu0's irqs freed"
echo "mmio: $(cat /sys/devices/dxpu/mmio)"
grep -q "^dxpu0 $bridge 01:00.0 off" /sys/devices/dxpu/slots && ok "binding kept" || bad "binding lost: $(cat /sys/devices/dxpu/slots)"
cat /sys/devices/dxpu/bridges
if echo 1 > /sys/bus/pci/slots/dxpu0/power 2>/dev/null; then bad "powered on without a bridge"; else ok "power on without a bridge fails cleanly"; fi
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
