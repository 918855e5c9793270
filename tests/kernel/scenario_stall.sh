#!/bin/sh
# Guest side of a power-off while the network stalls: the GPU attached and bound by dxgpu.ko
# (the session's link-down time a minute, so the stall removes nothing), stall_check has the
# host stop the bridge, powers the slot off under a register batch on /dev/dxgpu0 while
# rescanning the buses, and has the host resume it. dxgpu's remove ran (/dev/dxgpu0 and its
# irqs gone). The session then carries on: the slot powers on again and dxgpu binds the GPU
# again, rmmod of both modules works.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
power=/sys/bus/pci/slots/dxpu0/power
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 link_down_ms=60000; then ok "insmod dxpu link_down_ms=60000"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > $power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
[ -c /dev/dxgpu0 ] && ok "dxgpu bound the GPU: /dev/dxgpu0" || { bad "/dev/dxgpu0 missing"; exit 0; }
grep -q " dxgpu0" /proc/interrupts && ok "dxgpu0's vectors in /proc/interrupts" || bad "no dxgpu0 irqs"
/bin/stall_check /dev/dxgpu0 $power
echo "mmio: $(cat /sys/devices/dxpu/mmio)"
if [ "$(cat $power)" = 0 ]; then ok "slot dxpu0 off"; else bad "slot dxpu0 still on"; fi
grep -q " dxgpu0" /proc/interrupts && bad "dxgpu0's irqs left after the power-off" || ok "dxgpu0's irqs freed: dxgpu's remove ran"
# The bridge resumed: the session carries on (retransmissions), the slot powers on again.
i=0
until echo 1 > $power 2>/dev/null; do
  i=$((i + 1))
  if [ $i -ge 5 ]; then break; fi
  sleep 1
done
if [ "$(cat $power)" = 1 ] && [ -c /dev/dxgpu0 ]; then ok "power on again after the stall: dxgpu bound it, /dev/dxgpu0"; else bad "power on again after the stall"; fi
grep -q "established" /sys/devices/dxpu/bridges && ok "the session lived through the stall" || bad "session: $(cat /sys/devices/dxpu/bridges)"
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
