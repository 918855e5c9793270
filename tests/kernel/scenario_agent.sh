#!/bin/sh
# Guest side: dxpu-agent's kernel backend (manager/sysfs_backend.cc) against dxpu.ko. The
# bridge on the host (02:00:00:00:b0:01) assigned its GPU to this host at 01:00.0.
# `dxpu-agent attach` binds a free slot to it and powers the slot on: the GPU appears; the same
# attach again is done (the same slot); `detach` powers the slot off and unbinds it, and again
# is done; an attach of a device the bridge did not assign, or behind a bridge that is not
# there, fails, says why and leaves no slot bound.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: '$2', expected '$3'"; fi; }
bridge=02:00:00:00:b0:01
slots=/sys/bus/pci/slots
# dxpu-agent ACTION [ARGS]: one-shot, mode kernel, device 0 of the bridge (or of $fabric when
# set); sets out, err and rc.
agent() {
  action=$1
  shift
  out=$(dxpu-agent "$action" --mode kernel --fabric "${fabric:-$bridge}" --device 0 "$@" 2>/tmp/agent.err)
  rc=$?
  err=$(cat /tmp/agent.err)
  echo "dxpu-agent $action --fabric ${fabric:-$bridge} $*: rc $rc, stdout '$out'"
  [ -z "$err" ] || echo "$err"
}
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=4; then ok "insmod dxpu slots=4"; else bad "insmod dxpu"; exit 0; fi
# dxpu's PCI domain: the one above 0xffff whose root bus is 00.
dom=
for bus in /sys/class/pci_bus/1????:00; do [ -n "$dom" ] || [ ! -e "$bus" ] || dom=$(basename "$bus" :00); done
dev=/sys/bus/pci/devices/$dom:00:00.0
if dxpu-agent --help > /tmp/help.txt 2>&1 && grep -q 'attach' /tmp/help.txt; then
  ok "dxpu-agent runs in the guest"
else
  bad "dxpu-agent --help: $(cat /tmp/help.txt)"
fi

agent attach --host-bdf 01:00.0
check "attach exit status" "$rc" 0
check "attach says the slot" "$out" "$bridge/0 (slot dxpu0)"
cat /sys/devices/dxpu/slots
check "dxpu0 bound and on" "$(grep '^dxpu0 ' /sys/devices/dxpu/slots)" "dxpu0 $bridge 01:00.0 on"
check "slot power" "$(cat $slots/dxpu0/power)" 1
check "vendor" "$(cat "$dev/vendor" 2>/dev/null)" 0x4450
check "device" "$(cat "$dev/device" 2>/dev/null)" 0x0001
if [ -x /bin/lspci ]; then
  lspci -D -nn -d 4450:0001 > /tmp/lspci.txt 2>&1
  cat /tmp/lspci.txt
  check "lspci lists the GPU in the dxpu domain" "$(grep -c "^$dom:00:00.0 .*\[4450:0001\]" /tmp/lspci.txt)" 1
fi

# Idempotent: attaching what is attached is done, in the same slot, and touches nothing.
agent attach --host-bdf 01:00.0 --gpu box-a/0
check "attach again exit status" "$rc" 0
check "attach again says the same slot" "$out" "box-a/0 (slot dxpu0)"
check "still one slot bound" "$(grep -vc ' unbound$' /sys/devices/dxpu/slots)" 1
check "dxpu0 still on" "$(grep '^dxpu0 ' /sys/devices/dxpu/slots)" "dxpu0 $bridge 01:00.0 on"
# The MAC in capitals, or as mac:..., is the same bridge.
fabric=mac:02:00:00:00:B0:01; agent attach --host-bdf 01:00.0; fabric=
check "attach by mac:CAPITALS exit status" "$rc" 0
check "attach by mac:CAPITALS finds the same slot" "${out##* }" "dxpu0)"
check "still one slot bound after mac:" "$(grep -vc ' unbound$' /sys/devices/dxpu/slots)" 1

agent detach --host-bdf 01:00.0
check "detach exit status" "$rc" 0
check "detach says so" "$out" "$bridge/0: detached"
cat /sys/devices/dxpu/slots
check "dxpu0 unbound after detach" "$(grep '^dxpu0 ' /sys/devices/dxpu/slots)" "dxpu0 unbound"
check "slot power after detach" "$(cat $slots/dxpu0/power)" 0
if [ -e "$dev" ]; then bad "device still there after detach"; else ok "device gone after detach"; fi
agent detach --host-bdf 01:00.0
check "detach again exit status (nothing to do)" "$rc" 0
check "no slot bound after detach again" "$(grep -vc ' unbound$' /sys/devices/dxpu/slots)" 0

# A device the bridge did not assign to this host: the slot bound for it is unbound again.
agent attach --host-bdf 05:00.0
check "attach of an unassigned device exit status" "$rc" 1
case "$err" in
  "dxpu-agent: not-assigned: "*05:00.0*) ok "attach of an unassigned device says why: $err" ;;
  *) bad "attach of an unassigned device: stderr '$err'" ;;
esac
cat /sys/devices/dxpu/slots
check "no slot bound after the failed attach" "$(grep -vc ' unbound$' /sys/devices/dxpu/slots)" 0
# A bridge that is not there: no session within 5 s, the slot unbound again.
fabric=02:00:00:00:b0:09; agent attach --host-bdf 01:00.0; fabric=
check "attach behind a missing bridge exit status" "$rc" 1
case "$err" in
  "dxpu-agent: no-session: "*) ok "attach behind a missing bridge says why: $err" ;;
  *) bad "attach behind a missing bridge: stderr '$err'" ;;
esac
check "no slot bound after it" "$(grep -vc ' unbound$' /sys/devices/dxpu/slots)" 0
# A fabric address dxpu.ko cannot use.
fabric=udp:10.0.0.1:9480; agent attach --host-bdf 01:00.0; fabric=
check "attach to a udp: fabric in kernel mode exit status" "$rc" 1
case "$err" in
  "dxpu-agent: bad-fabric: "*) ok "attach to a udp: fabric says why: $err" ;;
  *) bad "attach to a udp: fabric: stderr '$err'" ;;
esac

# Attached again after all that, then detached: the slot works as before.
agent attach --host-bdf 01:00.0
check "attach after a failed attach" "$out" "$bridge/0 (slot dxpu0)"
if [ -e "$dev" ]; then ok "device back"; else bad "device not back"; fi
agent detach --host-bdf 01:00.0
check "detach at the end" "$rc" 0
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
# Without the module: a clear error, not a crash.
agent attach --host-bdf 01:00.0
check "attach without dxpu.ko exit status" "$rc" 1
case "$err" in
  "dxpu-agent: no-module: "*) ok "attach without dxpu.ko says why: $err" ;;
  *) bad "attach without dxpu.ko: stderr '$err'" ;;
esac
echo "DXPU-AGENT: every step ran"
