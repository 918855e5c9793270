#!/bin/sh
# Guest side: dxpu.ko creates its virtual PCI domain (>= 0x10000) with a root bus, and
# rmmod removes it.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
before=$(ls /sys/class/pci_bus)
if insmod /lib/dxpu/dxpu.ko; then ok "insmod dxpu"; else bad "insmod dxpu"; fi
bus=$(ls /sys/class/pci_bus | grep -E '^1[0-9a-f]{4}:00$' | head -n 1)
if [ -n "$bus" ]; then ok "root bus $bus in a domain >= 0x10000"; else bad "no root bus in a domain >= 0x10000"; fi
if [ -d /sys/devices/dxpu ]; then ok "/sys/devices/dxpu"; else bad "/sys/devices/dxpu missing"; fi
if dmesg | grep -q "dxpu: PCI domain"; then ok "domain announced"; else bad "domain not announced"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
after=$(ls /sys/class/pci_bus)
if [ "$before" = "$after" ]; then ok "buses as before insmod"; else bad "buses left behind: $after"; fi
if [ -d /sys/devices/dxpu ]; then bad "/sys/devices/dxpu left behind"; else ok "/sys/devices/dxpu gone"; fi
