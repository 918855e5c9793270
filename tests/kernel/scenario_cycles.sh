#!/bin/sh
# Guest side (booted with slub_debug=U): no leaks in dxpu.ko or in dxgpu.ko, the GPU's driver
# it carries. A first attach cycle (power on, dxgpu binds the GPU by its id_table,
# chardev_check's registers, pinned buffers, MSI-X and refusals through /dev/dxgpu0, power
# off: dxgpu's remove) warms the kernel's caches and opens the session; then, by the kernel's
# own allocation tracking:
#  - N more cycles leave no slab allocation site N or more objects up (a leak of one object
#    per cycle), and no more vmalloc areas of dxpu's or dxgpu's, nor ioremap areas (BAR
#    mappings: dxgpu's pcim_iomap, dxpu's own), than after the first;
#  - after rmmod of both (and the NIC's driver unbound, so its rings give back dxpu's frames)
#    nothing allocated from either module's code is left, slab or vmalloc (an unloaded
#    module's frames show as bare addresses). Not seen: whole pages (dxgpu's buffers are
#    alloc_pages_exact), which the slab does not track.
# Not counted: skbuff_head_cache (the network stack recycles sk_buff heads through per-CPU
# caches, whoever allocated them), vmap_area (freed lazily, in batches; vmallocinfo is the
# exact view of vmalloc), and the PCI core's bus-number resource per domain number, which it
# keeps for good (get_pci_domain_busn_res), and the page cache of this script's own files in
# /tmp (shmem: its stack is shmem_add_to_page_cache on Debian's kernel, shmem_get_folio on the
# debug lane's). Between cycles only, not after rmmod: skb data (kmalloc_reserve) of frames the
# NIC still holds in its transmit ring until it reclaims them (virtio-net does that lazily: 25
# of dxpu's frames were in the ring after 6 cycles on the debug lane's kernel); after rmmod the
# NIC is unbound first, so a frame dxpu leaked still shows there. Nor what a new process
# allocates (copy_process in the stack: its creds, from every command this script forks): a
# task's creds are freed two RCU grace periods after it is reaped, which settle() cannot wait
# for (freeing a few objects frees no slab page, so the slab's size holds still meanwhile):
# cred_jar grew by 12 in one run on a machine at load 11; dxpu and dxgpu fork nothing.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
cycles=${DXPU_CYCLES:-6}
noise='^[0-9]+ (skbuff_head_cache|vmap_area) |pci_bus_insert_busn_res|shmem_add_to_page_cache|shmem_get_folio|copy_process'
in_ring='kmalloc_reserve'
mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -r /sys/kernel/debug/slab/kmalloc-64/alloc_traces ]; then bad "no allocation tracking (slub_debug=U, debugfs)"; exit 0; fi
# settle: drop the caches, round after round, until the slab's size stops changing (RCU
# callbacks free what was dropped, and a freed dentry lets its parent go the next round):
# three rounds at least, then on until two in a row leave it the same, 20 at most.
slab_kb() { awk '/^Slab:/ {print $2}' /proc/meminfo; }
settle() {
  sync
  rounds=0
  last=
  while [ $rounds -lt 20 ]; do
    echo 3 > /proc/sys/vm/drop_caches
    sleep 0.2
    now=$(slab_kb)
    rounds=$((rounds + 1))
    [ $rounds -ge 3 ] && [ "$now" = "$last" ] && break
    last=$now
  done
}
# snapshot NAME: slab traces and vmallocinfo into /tmp/NAME.{slab,vmalloc}, meminfo to the console
snapshot() {
  settle
  sh /bin/slab_traces.sh snapshot > "/tmp/$1.slab"
  cp /proc/vmallocinfo "/tmp/$1.vmalloc"
  echo "memory $1: $(awk '/^(SUnreclaim|VmallocUsed):/ {printf "%s %s kB ", $1, $2}' /proc/meminfo)"
}
cycle() {
  echo 1 > /sys/bus/pci/slots/dxpu0/power || { bad "cycle $1: power on"; return; }
  [ -c /dev/dxgpu0 ] || bad "cycle $1: no /dev/dxgpu0 (dxgpu did not bind)"
  /bin/chardev_check /dev/dxgpu0 $((64 << 20)) > /tmp/check.txt 2>&1
  grep -q "chardev_check: 0 failures" /tmp/check.txt || { cat /tmp/check.txt; bad "cycle $1: chardev_check"; }
  echo 0 > /sys/bus/pci/slots/dxpu0/power || bad "cycle $1: power off"
  [ -e /dev/dxgpu0 ] && bad "cycle $1: /dev/dxgpu0 left after power off"
}
# vmalloc areas of the two modules' code; ioremap areas (whoever's)
modules_vmalloc() { grep -cE "\[(dxpu|dxgpu)\]" "$1"; }
ioremaps() { grep -c "ioremap" "$1"; }
snapshot before
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
if insmod /lib/dxpu/dxgpu.ko; then ok "insmod dxgpu"; else bad "insmod dxgpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind || bad "bind dxpu0"
cycle 1
snapshot first
i=2
while [ $i -le $((cycles + 1)) ]; do
  cycle $i
  i=$((i + 1))
done
snapshot last
# On a KASAN kernel (the debug lane's) freed objects wait in its quarantine, any process's
# (names_cache, signal_cache, pid IDR nodes were seen there): only sites with dxpu's or dxgpu's
# own code in their stack count. On Debian's kernel every site does.
ours=.
grep -q ' kasan_' /proc/kallsyms && ours='dxpu|dxgpu'
sh /bin/slab_traces.sh grown /tmp/first.slab /tmp/last.slab "$cycles" | grep -Ev "$noise|$in_ring" |
  grep -E "$ours" > /tmp/grown
if [ -s /tmp/grown ]; then
  cut -c1-600 /tmp/grown
  bad "$cycles attach cycles: $(wc -l < /tmp/grown) allocation sites grew by $cycles or more (above)"
else
  ok "$cycles attach cycles: no slab allocation site grew by $cycles or more"
fi
first=$(modules_vmalloc /tmp/first.vmalloc)
last=$(modules_vmalloc /tmp/last.vmalloc)
if [ "$last" -le "$first" ]; then ok "$cycles attach cycles: dxpu's and dxgpu's vmalloc areas $first -> $last"; else grep -E "\[(dxpu|dxgpu)\]" /tmp/last.vmalloc; bad "dxpu's and dxgpu's vmalloc areas $first -> $last"; fi
first=$(ioremaps /tmp/first.vmalloc)
last=$(ioremaps /tmp/last.vmalloc)
if [ "$last" -le "$first" ]; then ok "$cycles attach cycles: ioremap areas $first -> $last"; else grep ioremap /tmp/last.vmalloc; bad "ioremap areas $first -> $last"; fi
echo "dxpu0" > /sys/devices/dxpu/unbind || bad "unbind dxpu0"
if rmmod dxgpu; then ok "rmmod dxgpu"; else bad "rmmod dxgpu"; fi
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
for nic in /sys/bus/virtio/drivers/virtio_net/virtio*; do
  [ -e "$nic" ] && echo "${nic##*/}" > /sys/bus/virtio/drivers/virtio_net/unbind
done
# The VFS keeps the dentries of sysfs files this script used until a lookup finds them stale
# (and they pin their kernfs nodes until then): look them up, as anyone would.
for n in 0 1; do cat /sys/bus/pci/slots/dxpu$n/power 2>/dev/null && bad "slot dxpu$n left after rmmod"; done
snapshot after
# What dxpu's or dxgpu's code allocated shows unloaded module addresses (0xffffffffc...) in its
# stack.
sh /bin/slab_traces.sh grown /tmp/before.slab /tmp/after.slab 1 | grep -Ev "$noise" |
  grep " 0xffffffff" > /tmp/left
if [ -s /tmp/left ]; then
  cut -c1-600 /tmp/left
  bad "rmmod left $(wc -l < /tmp/left) allocation sites of dxpu's or dxgpu's code alive (above)"
else
  ok "rmmod: no slab object allocated from dxpu's or dxgpu's code is left"
fi
before=$(awk '$3 ~ /^0x/' /tmp/before.vmalloc | wc -l)
left=$(awk '$3 ~ /^0x/' /tmp/after.vmalloc | wc -l)
if [ "$left" -le "$before" ]; then
  ok "rmmod: no vmalloc area allocated from dxpu's or dxgpu's code is left"
else
  awk '$3 ~ /^0x/' /tmp/after.vmalloc
  bad "rmmod left $((left - before)) vmalloc areas of unloaded code"
fi
echo "leak check: $cycles cycles done"
