#!/bin/sh
# Guest side of surprise removal: the GPU attached, a program reading its registers while the
# host kills the bridge (SIGKILL: no CLOSE, the session goes down by its link-down time). The
# device is removed by the PCI core without a hang; the binding stays, powering on again
# without a bridge fails cleanly; rmmod works.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 link_down_ms=1000; then ok "insmod dxpu link_down_ms=1000"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
/bin/surprise_check /dev/dxpu0 40
i=0
while [ -e "$dev" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e "$dev" ]; then bad "device still present after the session went down"; else ok "device removed by surprise removal"; fi
if [ "$(cat /sys/bus/pci/slots/dxpu0/power)" = 0 ]; then ok "slot dxpu0 powered off"; else bad "slot dxpu0 still on"; fi
if [ -e /dev/dxpu0 ]; then bad "/dev/dxpu0 left"; else ok "/dev/dxpu0 gone"; fi
grep -q "^dxpu0 $bridge 01:00.0 off" /sys/devices/dxpu/slots && ok "binding kept" || bad "binding lost: $(cat /sys/devices/dxpu/slots)"
cat /sys/devices/dxpu/bridges
if echo 1 > /sys/bus/pci/slots/dxpu0/power 2>/dev/null; then bad "powered on without a bridge"; else ok "power on without a bridge fails cleanly"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
