#!/bin/sh
# Guest side: the interface dxpu.ko runs on goes away (its driver unloaded) while a session
# is open: the module lets it go at once (no "waiting for eth0 to become free"), closes the
# session, and unloads cleanly afterwards.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
if insmod /lib/dxpu/dxpu.ko ifname=eth0; then ok "insmod dxpu ifname=eth0"; else bad "insmod dxpu ifname=eth0"; fi
if echo 02:00:00:00:b0:01 > /sys/devices/dxpu/connect; then ok "connect"; else bad "connect"; fi
grep -q "^02:00:00:00:b0:01 " /sys/devices/dxpu/bridges && ok "session listed" || bad "session not listed"
( rmmod virtio_net; echo "DXPU-GUEST: rmmod virtio_net returned $?" ) &
i=0
while [ -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e /sys/class/net/eth0 ]; then bad "eth0 still there 10 s after rmmod virtio_net"; else ok "eth0 gone"; fi
if [ -z "$(cat /sys/devices/dxpu/interface)" ]; then ok "interface empty"; else bad "interface still '$(cat /sys/devices/dxpu/interface)'"; fi
if [ -z "$(cat /sys/devices/dxpu/bridges)" ]; then ok "sessions closed"; else bad "sessions left: $(cat /sys/devices/dxpu/bridges)"; fi
if echo 02:00:00:00:b0:01 > /sys/devices/dxpu/connect 2>/dev/null; then bad "connect without an interface accepted"; else ok "connect without an interface refused"; fi
# The interface back (its driver loaded again), DxFP started on it through sysfs.
for ko in /lib/nic/*virtio_net*.ko; do insmod "$ko"; done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip link set eth0 up
if echo nosuch0 > /sys/devices/dxpu/interface 2>/dev/null; then bad "an interface that does not exist accepted"; else ok "an interface that does not exist refused"; fi
if echo "eth0 eth1" > /sys/devices/dxpu/interface 2>/dev/null; then bad "two names accepted"; else ok "two names refused"; fi
if echo eth0 > /sys/devices/dxpu/interface; then ok "DxFP started on eth0 through sysfs"; else bad "interface eth0 through sysfs"; fi
if [ "$(cat /sys/devices/dxpu/interface)" = eth0 ]; then ok "interface eth0"; else bad "interface '$(cat /sys/devices/dxpu/interface)'"; fi
if echo eth0 > /sys/devices/dxpu/interface 2>/dev/null; then bad "a second interface accepted while one runs"; else ok "a second interface refused while one runs"; fi
if echo 02:00:00:00:b0:01 > /sys/devices/dxpu/connect; then ok "connect on the new interface"; else bad "connect on the new interface"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
