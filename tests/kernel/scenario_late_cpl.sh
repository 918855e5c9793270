#!/bin/sh
# Guest side: completions for tags not in flight, inside a live session, the GPU bound by
# dxgpu.ko and driven through /dev/dxgpu0. First the host's switch holds every frame from the
# bridge for 3 s (late_cpl_check asks for it): a register read (dxgpu's readl) in that time ends
# all-ones at its timeout (2 s), and its completion, delivered later, finds its tag free. Then
# the switch forges one completion (its Tag flipped, the frame's CRC made right): it matches
# nothing, and the read it answered times out. The kernel drops and counts both
# (unexpected_cpl); the session and the device carry on. Then PCIe's ordering over the same
# session: with the bridge's non-posted credit frozen by the switch, configuration writes wait
# for credit in dxpu.ko and a posted MMIO write passes them (credit_order_check). Then
# dxgpu_check drives the GPU as a runtime would over the same session.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
counter() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" /sys/devices/dxpu/bridges; }
# The hold (3 s) outlasts the request timeout (2 s, set here so that it holds on the debug
# lane too, which gives every other test 20 s) and stays inside the session's grace time: the
# link is slow, not down.
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2 link_down_ms=10000 request_timeout_ms=2000; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power && [ -c /dev/dxgpu0 ]; then ok "power on dxpu0, dxgpu bound it"; else bad "power on dxpu0"; exit 0; fi
cat /sys/devices/dxpu/bridges
# phase NAME MARKER: late_cpl_check while the host does NAME on MARKER; a completion for a tag
# not in flight must be dropped and counted, the read it belonged to time out, the link live on.
phase() {
  unexpected0=$(counter unexpected_cpl)
  timeouts0=$(counter timeouts)
  /bin/late_cpl_check /dev/dxgpu0 30 "$2"
  # The completion came before the answer that ended the check's wait; give the count a moment.
  for _ in $(seq 50); do [ "$(counter unexpected_cpl)" -gt "$unexpected0" ] && break; sleep 0.1; done
  cat /sys/devices/dxpu/bridges
  unexpected1=$(counter unexpected_cpl)
  timeouts1=$(counter timeouts)
  if [ "$unexpected1" -gt "$unexpected0" ]; then ok "$1: the completion is dropped and counted (unexpected_cpl $unexpected0 -> $unexpected1)"; else bad "$1: unexpected_cpl $unexpected0 -> $unexpected1"; fi
  if [ "$timeouts1" -gt "$timeouts0" ]; then ok "$1: the read it answered is counted as a timeout ($timeouts0 -> $timeouts1)"; else bad "$1: timeouts $timeouts0 -> $timeouts1"; fi
  if grep -q "$bridge established" /sys/devices/dxpu/bridges; then ok "$1: the session stayed established"; else bad "$1: the session did not stay up"; fi
  if grep -q "dxpu0 .* on" /sys/devices/dxpu/slots; then ok "$1: slot dxpu0 still on"; else bad "$1: slot dxpu0 lost its device"; fi
}
# A late completion: the switch holds the bridge's frames for 3 s.
phase "late completion" DXPU-HOLD
# A forged one: the switch flips the Tag of one completion (valid sequence number and CRC).
phase "forged completion" DXPU-FORGE
# A posted write passes requests waiting for credit: the switch freezes the bridge's
# non-posted credit, configuration writes past it wait, dxgpu's writel goes first.
addr=$(cat /sys/bus/pci/slots/dxpu0/address)
/bin/credit_order_check /dev/dxgpu0 "/sys/bus/pci/devices/$addr.0/config" eth0 $bridge
cat /sys/devices/dxpu/bridges
echo "mmio: $(cat /sys/devices/dxpu/mmio)"
# Everything still works over the same session: registers, DMA, MSI-X, refusals.
/bin/dxgpu_check /dev/dxgpu0 $((64 << 20))
echo 0 > /sys/bus/pci/slots/dxpu0/power && ok "power off dxpu0" || bad "power off dxpu0"
[ -e /dev/dxgpu0 ] && bad "/dev/dxgpu0 left after power off" || ok "/dev/dxgpu0 gone after power off"
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
