#!/bin/sh
# Guest side: dxpu.ko's hot-plug slots. A slot bound to the GPU the bridge on the host
# (02:00:00:00:b0:01) assigned to this host at 01:00.0 is powered on through the PCI hotplug
# core: the GPU appears in the virtual domain with its IDs, class and BAR sizes, read over the
# fabric; powering off removes it. A slot bound to a device the bridge did not assign to us
# refuses to power on; a slot powered twice, unbound while on, or bound to garbage refuses. A
# configuration write the device does not take leaves the shadow as the device is.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: '$2', expected '$3'"; fi; }
bridge=02:00:00:00:b0:01
slots=/sys/bus/pci/slots
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=4; then ok "insmod dxpu slots=4"; else bad "insmod dxpu"; exit 0; fi
check "slots registered" "$(ls $slots | grep -c '^dxpu')" 4
dom=$(ls /sys/class/pci_bus | grep -E '^1[0-9a-f]{4}:00$' | head -n 1 | cut -d: -f1)
check "slot dxpu0 address" "$(cat $slots/dxpu0/address)" "$dom:00:00"
check "power before binding" "$(cat $slots/dxpu0/power)" 0
if echo 1 > $slots/dxpu0/power 2>/dev/null; then bad "an unbound slot powered on"; else ok "an unbound slot refuses power"; fi
for junk in "dxpu0 $bridge" "dxpu0 $bridge 1:2:3" "dxpu0 nonsense 01:00.0" "dxpu9 $bridge 01:00.0" \
            "dxpu0 $bridge 01:20.0" "dxpu0 $bridge 01:00.0 extra"; do
  if echo "$junk" > /sys/devices/dxpu/bind 2>/dev/null; then bad "bind accepted '$junk'"; else ok "bind refused '$junk'"; fi
done
if echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind; then ok "bind dxpu0"; else bad "bind dxpu0"; fi
if echo "dxpu1 $bridge 01:00.0" > /sys/devices/dxpu/bind 2>/dev/null; then bad "a remote device bound twice"; else ok "a remote device cannot be bound to two slots"; fi
check "adapter of a bound slot" "$(cat $slots/dxpu0/adapter)" 1
cat /sys/devices/dxpu/slots
t0=$(date +%s)
if echo 1 > $slots/dxpu0/power; then ok "power on dxpu0 ($(( $(date +%s) - t0 )) s)"; else bad "power on dxpu0"; fi
check "power after" "$(cat $slots/dxpu0/power)" 1
cat /sys/devices/dxpu/slots
cat /sys/devices/dxpu/bridges
dev=/sys/bus/pci/devices/$dom:00:00.0
check "vendor" "$(cat $dev/vendor)" 0x4450
check "device" "$(cat $dev/device)" 0x0001
check "class" "$(cat $dev/class)" 0x030200
check "subsystem" "$(cat $dev/subsystem_vendor):$(cat $dev/subsystem_device)" 0x4450:0x0001
# dxpu.ko is transport only: it binds no device, and marks none for a driver.
check "driver_override" "$(cat $dev/driver_override)" "(null)"
check "driver" "$([ -e $dev/driver ] && basename "$(readlink $dev/driver)" || echo none)" none
# BAR sizes from the resources the PCI core placed (start end flags per line).
i=0
while read -r start end flags; do
  if [ "$start" != 0x0000000000000000 ]; then
    echo "BAR $i: $start-$end flags $flags size $(( end - start + 1 ))"
    eval "bar$i=$(( end - start + 1 ))"
  fi
  i=$((i + 1))
done < $dev/resource
check "BAR0 size" "${bar0:-none}" $((16 << 20))
check "BAR2 size (64-bit prefetchable)" "${bar2:-none}" $((256 << 20))
grep -i dxpu /proc/iomem
if echo 1 > $slots/dxpu0/power 2>/dev/null; then bad "a powered slot powered again"; else ok "a powered slot refuses power on"; fi
if echo dxpu0 > /sys/devices/dxpu/unbind 2>/dev/null; then bad "a powered slot unbound"; else ok "a powered slot refuses unbind"; fi
# A configuration write goes into the shadow at once and to the device: the Interrupt Line
# register (0x3c) reads back 5a now, and again after a power cycle re-reads the device.
# The same for a byte at offset 1 of its DW: PCI Express Device Control's upper byte (Max Read
# Request Size 4096: 0x50).
cfg_at() { hexdump -s "$1" -n 1 -e '1/1 "%02x"' $dev/config; }
cfg_byte() { cfg_at 60; }
printf '\132' | dd of=$dev/config bs=1 seek=60 conv=notrunc 2>/dev/null
check "interrupt line written (shadow)" "$(cfg_byte)" 5a
exp=$((0x$(cfg_at 52)))
while [ "$exp" -ne 0 ] && [ "$(cfg_at $exp)" != 10 ]; do exp=$((0x$(cfg_at $((exp + 1))))); done
check "PCI Express capability found" "$([ "$exp" -ne 0 ] && echo yes)" yes
printf '\120' | dd of=$dev/config bs=1 seek=$((exp + 9)) conv=notrunc 2>/dev/null
check "Device Control upper byte written (shadow)" "$(cfg_at $((exp + 9)))" 50
# A write the device does not take: the bridge keeps the Resizable BAR controls to itself (it
# completes a host's write to them and drops it). The shadow takes the write at once (capability
# bytes take what is written) and then reads the DW back from the device: it reads what the
# device has again within 2 s, not what was written.
cfg_dw() { hexdump -s "$1" -n 4 -e '1/4 "%08x"' $dev/config; }
rebar=256
while [ "$rebar" -ne 0 ] && [ $((0x$(cfg_dw $rebar) & 0xffff)) -ne 21 ]; do rebar=$((0x$(cfg_dw $rebar) >> 20)); done
check "Resizable BAR capability found" "$([ "$rebar" -ne 0 ] && echo yes)" yes
size_at=$((rebar + 9)) # BAR Size (bits 13:8) of its first control register
before=$(cfg_at $size_at)
written=$(printf %02x $((0x$before ^ 1)))
printf "\\$(printf %03o 0x$written)" | dd of=$dev/config bs=1 seek=$size_at conv=notrunc 2>/dev/null
i=0
while [ "$(cfg_at $size_at)" != "$before" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
check "a write the device dropped (Resizable BAR size $written) reads back the device's value" "$(cfg_at $size_at)" "$before"
if echo 1 > $dev/remove; then ok "remove through sysfs"; else bad "remove through sysfs"; fi
echo 1 > /sys/bus/pci/rescan
if [ -e $dev ]; then ok "rescan finds the device again (from its shadow)"; else bad "rescan lost the device"; fi
check "driver_override after a rescan" "$(cat $dev/driver_override)" "(null)"
if echo 0 > $slots/dxpu0/power; then ok "power off dxpu0"; else bad "power off dxpu0"; fi
if [ -e $dev ]; then bad "device still there after power off"; else ok "device gone after power off"; fi
check "power after off" "$(cat $slots/dxpu0/power)" 0
if echo 0 > $slots/dxpu0/power 2>/dev/null; then bad "a powered-off slot powered off again"; else ok "power off twice refused"; fi
# A device the bridge never assigned to this host: no answer, power on refused.
if echo "dxpu1 $bridge 02:00.0" > /sys/devices/dxpu/bind; then ok "bind dxpu1 to an unassigned device"; else bad "bind dxpu1"; fi
if echo 1 > $slots/dxpu1/power 2>/dev/null; then bad "an unassigned device powered on"; else ok "an unassigned device refuses power on"; fi
check "dxpu1 power" "$(cat $slots/dxpu1/power)" 0
# On again, then rmmod with the device attached.
if echo 1 > $slots/dxpu0/power; then ok "power on dxpu0 again"; else bad "power on dxpu0 again"; fi
if [ -e $dev ]; then ok "device back"; else bad "device not back"; fi
check "interrupt line read again from the device" "$(cfg_byte)" 5a
# (the PCI core sets Extended Tag, bit 8, when it enumerates the device again: MRRS alone)
check "Max Read Request Size read again from the device" "$(( 0x$(cfg_at $((exp + 9))) & 0x70 ))" $((0x50))
if rmmod dxpu; then ok "rmmod dxpu with a device attached"; else bad "rmmod dxpu"; fi
if [ -e $dev ]; then bad "device left after rmmod"; else ok "device gone with the module"; fi
if ls $slots | grep -q dxpu; then bad "slots left after rmmod"; else ok "slots gone with the module"; fi
