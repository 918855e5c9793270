#!/bin/sh
# Guest side: dxpu.ko opens DxFP on eth0 and establishes a session with the dxpu-bridge on
# the host (MAC 02:00:00:00:b0:01); sysfs refuses a second session to it and a bad address;
# rmmod closes the session.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0; then ok "insmod dxpu ifname=eth0"; else bad "insmod dxpu ifname=eth0"; fi
if [ "$(cat /sys/devices/dxpu/interface)" = eth0 ]; then ok "interface eth0"; else bad "interface is '$(cat /sys/devices/dxpu/interface)'"; fi
if echo $bridge > /sys/devices/dxpu/connect; then ok "connect $bridge"; else bad "connect $bridge"; fi
i=0
while ! grep -q "^$bridge established" /sys/devices/dxpu/bridges && [ $i -lt 100 ]; do
  sleep 0.1; i=$((i + 1))
done
cat /sys/devices/dxpu/bridges
if grep -q "^$bridge established" /sys/devices/dxpu/bridges; then
  ok "session with the bridge established"
else
  bad "no session with the bridge: $(cat /sys/devices/dxpu/bridges)"
fi
if echo $bridge > /sys/devices/dxpu/connect 2>/dev/null; then bad "a second session to $bridge accepted"; else ok "a second session to $bridge refused"; fi
if echo 'not a mac' > /sys/devices/dxpu/connect 2>/dev/null; then bad "a bad address accepted"; else ok "a bad address refused"; fi
sleep 1
if grep -q "^$bridge established" /sys/devices/dxpu/bridges; then ok "still established a second later (keepalives)"; else bad "session lost: $(cat /sys/devices/dxpu/bridges)"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
