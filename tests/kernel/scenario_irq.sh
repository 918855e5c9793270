#!/bin/sh
# Guest side of irq_test.sh: the GPU in slot dxpu0 (no driver: dxpu.ko binds none), given to
# dxpu_irq_check.ko (driver_override), whose probe runs the checks of driver/irq_check.c; then
# /proc/interrupts and dxpu's MSI counters against what the driver saw, and teardown twice: the
# driver unbound, and the slot powered off under a bound driver.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
bdf=$(basename "$dev")
[ -e "$dev/driver" ] && bad "a driver bound the GPU: $(readlink "$dev/driver")" || ok "no driver bound"
echo dxpu_irq_check > "$dev/driver_override"
msi() { sed -n "s/.* $1 \([0-9]*\).*/\1/p; s/^$1 \([0-9]*\).*/\1/p" /sys/devices/dxpu/msi; }
received0=$(msi received)
if insmod /lib/dxpu/dxpu_irq_check.ko; then ok "insmod dxpu_irq_check"; else bad "insmod dxpu_irq_check"; fi
[ "$(basename "$(readlink "$dev/driver")")" = dxpu_irq_check ] && ok "dxpu_irq_check bound" ||
  bad "dxpu_irq_check not bound"
echo "msi counters: $(cat /sys/devices/dxpu/msi)"
grep dxpu_irq_check /proc/interrupts
# Each vector's line in /proc/interrupts: the sum of its CPU columns is what its handler counted.
dmesg | sed -n 's/.*dxpu_irq_check: vector \([0-9]*\) irq \([0-9]*\) handled \([0-9]*\).*/\1 \2 \3/p' |
  while read -r v irq n; do
    seen=$(awk -v irq="$irq:" '$1 == irq { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
    if [ "$seen" = "$n" ]; then ok "/proc/interrupts counts vector $v (irq $irq): $n"
    else bad "/proc/interrupts counts ${seen:-nothing} for vector $v (irq $irq), its handler $n"; fi
  done
sent=$(dmesg | sed -n 's/.*dxpu_irq_check: messages sent \([0-9]*\).*/\1/p' | tail -n 1)
received=$(( $(msi received) - received0 ))
if [ -n "$sent" ] && [ "$received" -eq "$sent" ]; then ok "dxpu received the $sent messages the GPU sent"
else bad "dxpu received $received messages, the GPU sent ${sent:-?}"; fi
[ "$(msi unknown)" = 0 ] && ok "no message from an unknown requester" || bad "unknown messages: $(cat /sys/devices/dxpu/msi)"
# Teardown: unbinding frees the vectors (devres) and their irqs.
echo "$bdf" > /sys/bus/pci/drivers/dxpu_irq_check/unbind
grep -q dxpu_irq_check /proc/interrupts && bad "irqs left after unbind" || ok "unbind frees the irqs"
# Bound again (fewer messages), then the slot powered off under it: remove runs, irqs freed.
rmmod dxpu_irq_check
insmod /lib/dxpu/dxpu_irq_check.ko messages=5 || bad "insmod dxpu_irq_check again"
grep -q dxpu_irq_check /proc/interrupts && ok "bound again, irqs requested" || bad "no irqs after rebinding"
if echo 0 > /sys/bus/pci/slots/dxpu0/power; then ok "power off dxpu0 under the driver"; else bad "power off dxpu0"; fi
grep -q dxpu_irq_check /proc/interrupts && bad "irqs left after power-off" || ok "power-off frees the irqs"
[ "$(dmesg | grep -c 'dxpu_irq_check: remove')" -ge 1 ] && ok "the driver's remove ran" || bad "remove did not run"
rmmod dxpu_irq_check
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
