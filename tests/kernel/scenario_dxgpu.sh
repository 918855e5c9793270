#!/bin/sh
# Guest side of dxgpu_test.sh: dxgpu.ko, the model GPU's ordinary PCI driver, loaded before the
# slot powers on: the PCI core binds it to the GPU through its id_table (dxpu.ko binds nothing);
# dxgpu_check drives /dev/dxgpu0 as a runtime would; then the slot powered off under an open
# file; then, powered on again (dxgpu binds it again by itself), the bridge killed (by the host,
# on the guest's word) while the driver has copies in flight, a process reads registers and
# another waits for an interrupt; rmmod of both modules.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
[ "$(basename "$(readlink "$dev/driver")")" = dxgpu ] && ok "dxgpu bound the GPU (id_table)" || bad "dxgpu not bound"
[ "$(cat "$dev/driver_override")" = "(null)" ] && ok "no driver_override" || bad "driver_override $(cat "$dev/driver_override")"
[ -c /dev/dxgpu0 ] && ok "/dev/dxgpu0" || { bad "/dev/dxgpu0 missing"; exit 0; }
grep dxgpu /proc/interrupts | head -3
/bin/dxgpu_check /dev/dxgpu0 $((64 << 20))
echo "msi: $(cat /sys/devices/dxpu/msi)"
grep -q " dxgpu0" /proc/interrupts && ok "dxgpu0's vectors in /proc/interrupts" || bad "no dxgpu0 irqs"
/bin/dxgpu_check --lost /dev/dxgpu0 /sys/bus/pci/slots/dxpu0/power
[ -e /dev/dxgpu0 ] && bad "/dev/dxgpu0 left after power off" || ok "/dev/dxgpu0 gone after power off"
grep -q " dxgpu0" /proc/interrupts && bad "irqs left after power off" || ok "power-off freed the irqs"
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0 again"; else bad "power on again"; exit 0; fi
# The number is the lowest free one: 0 again, the first device's files being closed.
[ -c /dev/dxgpu0 ] && ok "dxgpu bound it again: /dev/dxgpu0" || bad "no /dev/dxgpu0 after power on"
/bin/dxgpu_check --kill /dev/dxgpu0
i=0
while [ -e /dev/dxgpu0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /dev/dxgpu0 ] && bad "/dev/dxgpu0 left after the bridge died" || ok "the dead bridge's GPU removed: dxgpu's remove ran"
grep -q " dxgpu0" /proc/interrupts && bad "irqs left after the bridge died" || ok "its irqs freed"
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
