#!/bin/sh
# Guest side of a power-off while the network stalls: the GPU attached (the session's link-down
# time a minute, so the stall removes nothing), stall_check has the host stop the bridge, powers
# the slot off under an MMIO batch while rescanning the buses, and has the host resume it. The
# session then carries on: the slot powers on again, rmmod works.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
power=/sys/bus/pci/slots/dxpu0/power
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 link_down_ms=60000; then ok "insmod dxpu link_down_ms=60000"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > $power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
/bin/stall_check /dev/dxpu0 $power
if [ "$(cat $power)" = 0 ]; then ok "slot dxpu0 off"; else bad "slot dxpu0 still on"; fi
# The bridge resumed: the session carries on (retransmissions), the slot powers on again.
i=0
until echo 1 > $power 2>/dev/null; do
  i=$((i + 1))
  if [ $i -ge 5 ]; then break; fi
  sleep 1
done
if [ "$(cat $power)" = 1 ] && [ -c /dev/dxpu0 ]; then ok "power on again after the stall"; else bad "power on again after the stall"; fi
grep -q "established" /sys/devices/dxpu/bridges && ok "the session lived through the stall" || bad "session: $(cat /sys/devices/dxpu/bridges)"
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
