#!/bin/sh
# Guest side of virtio_blk_test.sh: the kernel's own virtio_pci and virtio_blk (loaded by /init
# from the kernel package, unmodified) drive a virtio-blk device behind dxpu.ko. The slot is
# powered on through sysfs; virtio_pci binds the function through its id table; the disk is
# formatted, filled with 64 MiB of files of known content, synced, unmounted (the host checks the
# backing file then), mounted again read-only and every file checked; then, with the disk open,
# the slot is powered off: the device goes away, a read through the open descriptor gets no
# data, nothing hangs.
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
bridge=02:00:00:00:b0:01
if insmod /lib/dxpu/dxpu.ko ifname=eth0 slots=2; then ok "insmod dxpu"; else bad "insmod dxpu"; exit 0; fi
echo "dxpu0 $bridge 01:00.0" > /sys/devices/dxpu/bind
if echo 1 > /sys/bus/pci/slots/dxpu0/power; then ok "power on dxpu0"; else bad "power on dxpu0"; exit 0; fi
dev=$(ls -d /sys/bus/pci/devices/1*:00:00.0)
echo "VIRTIO-BLK: function $(basename "$dev") $(cat "$dev/vendor"):$(cat "$dev/device")"
[ "$(cat "$dev/vendor"):$(cat "$dev/device")" = "0x1af4:0x1042" ] && ok "a virtio-blk function (1af4:1042)" ||
  bad "vendor:device $(cat "$dev/vendor"):$(cat "$dev/device")"
[ "$(basename "$(readlink "$dev/driver")")" = virtio-pci ] && ok "virtio-pci bound it (id table)" ||
  bad "driver $(readlink "$dev/driver")"
[ "$(cat "$dev/driver_override")" = "(null)" ] && ok "no driver_override" || bad "driver_override set"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -b /dev/vda ] && ok "/dev/vda appeared" || { bad "no /dev/vda"; dmesg | tail -20; exit 0; }
echo "VIRTIO-BLK: size $(cat /sys/block/vda/size) sectors, $(ls /sys/block/vda/mq | wc -l) queues"
[ "$(cat /sys/block/vda/size)" = 393216 ] && ok "192 MiB disk" || bad "size $(cat /sys/block/vda/size)"
[ "$(ls /sys/block/vda/mq | wc -l)" = 2 ] && ok "two request queues (VIRTIO_BLK_F_MQ)" || bad "queues"
grep virtio /proc/interrupts | head -4
if [ -x /bin/lspci ]; then
  lspci -vv -s "$(basename "$dev")" >/tmp/lspci.txt 2>&1
  cat /tmp/lspci.txt
  grep -q "Vendor Specific Information: VirtIO: CommonCfg" /tmp/lspci.txt &&
    grep -q "VirtIO: Notify" /tmp/lspci.txt && grep -q "MSI-X: Enable+" /tmp/lspci.txt &&
    ok "lspci -vv decodes the virtio capabilities and MSI-X" || bad "lspci -vv"
fi

if mkfs.ext4 -q -F /dev/vda; then ok "mkfs.ext4"; else bad "mkfs.ext4"; exit 0; fi
mkdir -p /mnt /data
if mount -t ext4 /dev/vda /mnt; then ok "mount"; else bad "mount"; exit 0; fi
# 16 files of 4 MiB (64 MiB), each of its own pseudo-random content, written from memory.
: >/data/sums
n=0
while [ $n -lt 16 ]; do
  f=f$(printf %02d $n)
  dd if=/dev/urandom of=/data/$f bs=1M count=4 2>/dev/null
  cp /data/$f /mnt/$f || bad "write /mnt/$f"
  echo "$(sha256sum /data/$f | cut -d' ' -f1) $f" >>/data/sums
  rm /data/$f
  n=$((n + 1))
done
sync && ok "64 MiB written and synced"
umount /mnt && ok "umount"
sed 's/^/VIRTIO-BLK-SUM: /' /data/sums
echo "VIRTIO-BLK: unmounted"
# The host reads the backing file now; the guest mounts read-only, so the image stays as synced.
echo 3 >/proc/sys/vm/drop_caches
if mount -t ext4 -o ro /dev/vda /mnt; then ok "mount again (read-only)"; else bad "mount again"; exit 0; fi
bad_sums=0
while read -r sum f; do
  [ "$(sha256sum /mnt/$f | cut -d' ' -f1)" = "$sum" ] || { bad "checksum of $f"; bad_sums=1; }
done </data/sums
[ $bad_sums -eq 0 ] && [ "$(wc -l </data/sums)" = 16 ] && echo "VIRTIO-BLK: checksums ok" &&
  ok "every checksum matches after remount"
umount /mnt

# The slot powered off with the disk open (a hot-unplug through sysfs): the function goes away,
# and a read through the descriptor still open gets nothing. Not the bridge killed:
# Linux's virtio_pci cannot survive a surprise removal. Its remove resets the device and polls
# device_status until it reads 0 (vp_reset), and a device that is gone reads all-ones, so it
# loops there for ever, with or without I/O in flight (docs/virtio.md, "A dead bridge").
exec 3</dev/vda
# In the background with a watchdog: a removal that hangs is shown (its kernel stack), not waited
# for until the test's limit.
(echo 0 > /sys/bus/pci/slots/dxpu0/power) &
off_pid=$!
i=0
while kill -0 $off_pid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $off_pid 2>/dev/null; then
  bad "power off of dxpu0 still running after 30 s; its kernel stack:"
  cat /proc/$off_pid/stack
  echo w > /proc/sysrq-trigger
  exit 0
fi
wait $off_pid && ok "power off dxpu0 with the disk open" || bad "power off"
[ -e "$dev" ] && bad "the function is still there after power off" || ok "the disk's function removed"
[ -b /dev/vda ] && bad "/dev/vda left" || ok "/dev/vda gone"
echo 3 >/proc/sys/vm/drop_caches
# The removed disk has no sectors left (del_gendisk sets its capacity to 0): a read through the
# descriptor opened before ends at once with no data, or fails; never the disk's old bytes.
dd bs=4096 count=16 skip=20000 <&3 >/tmp/after.bin 2>/tmp/dd.err
echo "VIRTIO-BLK: read after removal: status $?, $(wc -c </tmp/after.bin) bytes; $(cat /tmp/dd.err)"
if [ "$(wc -c </tmp/after.bin)" = 0 ]; then
  echo "VIRTIO-BLK: the removed disk's read got nothing"
  ok "a read of the removed disk gets no data"
else
  bad "a read of the removed disk got data"
fi
exec 3<&-
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
