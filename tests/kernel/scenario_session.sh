#!/bin/sh
# Guest side: dxpu.ko's sessions are authenticated (docs/kernel-module.md, "Fabric keys"). The
# bridge on the host (MAC 02:00:00:00:b0:01) has `identity`: it takes only a Noise IK HELLO
# from this host's key, bound to this host's node ID. The host's key (/etc/dxpu/host.key) and
# the bridge's public key (/etc/dxpu/bridge.pub) come from `dxpu keygen` on the host; a third
# key (/etc/dxpu/other.pub) stands for a wrong bridge key. Keys are refused in other formats;
# with a host key, a bridge without a known key is refused at connect; with a wrong bridge key
# no session is established; with the right one the session is sealed, stays up on sealed
# keepalives, carries the GPU's configuration reads, and rmmod closes it.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: '$2', expected '$3'"; fi; }
sysd=/sys/devices/dxpu
bridge=02:00:00:00:b0:01
# Waits up to $2 tenths of a second for `bridges` to have a line starting with "$bridge $1".
wait_state() {
  i=0
  while ! grep -q "^$bridge $1" $sysd/bridges && [ $i -lt "$2" ]; do sleep 0.1; i=$((i + 1)); done
  grep -q "^$bridge $1" $sysd/bridges
}
if insmod /lib/dxpu/dxpu.ko ifname=eth0; then ok "insmod dxpu ifname=eth0"; else bad "insmod dxpu ifname=eth0"; exit 0; fi
check "interface" "$(cat $sysd/interface)" eth0
check "no host key at load" "$(cat $sysd/key)" none
for junk in "nonsense" "DXPU-FABRIC-SECRET-KEY-V1 1234" "DXPU-FABRIC-PUBLIC-KEY-V1 $(cut -d' ' -f2 /etc/dxpu/bridge.pub)"; do
  if echo "$junk" > $sysd/key 2>/dev/null; then bad "key accepted '$junk'"; else ok "key refused '$junk'"; fi
done
if cat /etc/dxpu/host.key > $sysd/key; then ok "the host's key written"; else bad "the host's key refused"; fi
check "the public key read back is the .pub file's" "$(cat $sysd/key)" "$(cat /etc/dxpu/host.pub)"
if echo $bridge > $sysd/connect 2>/dev/null; then bad "connect without the bridge's key"; else ok "connect refused: no key for the bridge"; fi
for junk in "$bridge" "$bridge 1234" "not-a-mac $(cat /etc/dxpu/bridge.pub)" "00:00:00:00:00:00 $(cat /etc/dxpu/bridge.pub)"; do
  if echo "$junk" > $sysd/bridge_keys 2>/dev/null; then bad "bridge key accepted '$junk'"; else ok "bridge key refused '$junk'"; fi
done
# A wrong key for the bridge: its HELLO's MAC1 does not match, the bridge refuses it; the
# session never comes up and goes down after link_down_ms (2 s; 10 s in the debug lane).
echo "$bridge $(cat /etc/dxpu/other.pub)" > $sysd/bridge_keys
echo "DXPU-STEP: wrong-key"
if echo $bridge > $sysd/connect; then ok "connect with a wrong bridge key starts"; else bad "connect with a wrong bridge key"; fi
if wait_state established 20; then bad "a session with the wrong bridge key: $(cat $sysd/bridges)"; else ok "no session with the wrong bridge key"; fi
if wait_state down 150; then ok "that session went down"; else bad "not down: $(cat $sysd/bridges)"; fi
if echo "$bridge $(cat /etc/dxpu/bridge.pub)" > $sysd/bridge_keys; then ok "the bridge's key written"; else bad "the bridge's key refused"; fi
check "bridge_keys" "$(cat $sysd/bridge_keys)" "$bridge $(cut -d' ' -f2 /etc/dxpu/bridge.pub)"
if echo $bridge > $sysd/connect; then ok "connect $bridge"; else bad "connect $bridge"; fi
if wait_state established 100; then ok "session with the bridge established"; else bad "no session: $(cat $sysd/bridges)"; fi
cat $sysd/bridges
if grep -q "^$bridge established .* sealed 1 bad_tag 0 replayed 0 unsealed 0$" $sysd/bridges; then ok "the session is sealed, nothing refused"; else bad "not sealed: $(cat $sysd/bridges)"; fi
sleep 2.5
if wait_state established 1; then ok "still established 2.5 s later (sealed keepalives; link_down_ms 2 s)"; else bad "session lost: $(cat $sysd/bridges)"; fi
# The GPU the host lent to this node, hot-plugged over the sealed session.
if echo "dxpu0 $bridge 01:00.0" > $sysd/bind && echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "GPU powered on"; else bad "GPU power on"; fi
dom=$(ls /sys/class/pci_bus | grep -E '^1[0-9a-f]{4}:00$' | head -n 1 | cut -d: -f1)
check "vendor read over the sealed session" "$(cat /sys/bus/pci/devices/$dom:00:00.0/vendor 2>/dev/null)" 0x4450
check "device" "$(cat /sys/bus/pci/devices/$dom:00:00.0/device 2>/dev/null)" 0x0001
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "GPU powered off"; else bad "GPU power off"; fi
# Rotation: a new key applies to the next session; this one keeps its own.
echo none > $sysd/key
check "the host key forgotten" "$(cat $sysd/key)" none
if wait_state established 1; then ok "the session in place keeps its keys"; else bad "session lost after the key changed: $(cat $sysd/bridges)"; fi
if echo "$bridge none" > $sysd/bridge_keys; then ok "the bridge's key forgotten"; else bad "bridge key removal"; fi
check "bridge_keys empty" "$(cat $sysd/bridge_keys)" ""
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
