#!/usr/bin/env bash
# The stock kernel's virtio_blk driver, unmodified, on a virtio-blk device lent from a real
# dxpu-bridge (issue 33): hot-plugged through sysfs, bound by virtio_pci through its id table,
# mkfs.ext4, 64 MiB of files of known content written, synced, unmounted, mounted again and
# checked; the box's backing file checked from here with debugfs (the files' contents read out
# of the ext4 image); then the slot powered off with the disk open (scenario_virtio_blk.sh).
#   virtio_blk_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: virtio_blk_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: virtio_blk_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-virtio-blk.XXXXXX)}
for tool in debugfs sha256sum; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool missing (run tools/bootstrap)"; exit 1; }
done
source "$here/bridge_env.sh"
disk=$work/disk.img
rm -f "$disk"
bridge_devices="[{\"kind\": \"virtio-blk\", \"box_bdf\": \"01:00.0\", \"backing\": \"$disk\",
                  \"size\": \"192MiB\", \"queues\": 2}]"
start_bridge "$bridge_bin" "$work"
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
rm -f "$work/guest/console.log" # the markers below must come from this run's guest
bash "$here/guest.sh" --name virtio-blk --script "$here/scenario_virtio_blk.sh" \
  --nic "$work/bridge.sock" --ko "$ko_dir/dxpu.ko" \
  --kmod virtio_pci --kmod virtio_blk --kmod ext4 \
  --bin /usr/sbin/mke2fs:/sbin/mkfs.ext4 --bin /usr/bin/lspci:/bin/lspci \
  --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids --file /etc/mke2fs.conf:/etc/mke2fs.conf \
  --out "$work/guest" --timeout 600 --expect "VIRTIO-BLK: checksums ok" \
  --expect "the removed disk's read got nothing" >"$work/guest.out" 2>&1 &
guest_pid=$!
status=0
# The files' checksums as the guest wrote them, checked against the backing file while the
# guest waits (the filesystem is unmounted then): debugfs reads each file out of the image.
checked=0
if on_console "$work/guest/console.log" "$guest_pid" "VIRTIO-BLK: unmounted" true; then
  sed -n 's/^VIRTIO-BLK-SUM: //p' "$work/guest/console.log" | tr -d '\r' >"$work/sums"
  n=0
  while read -r sum file; do
    got=$(debugfs -R "cat /$file" "$disk" 2>/dev/null | sha256sum | cut -d' ' -f1)
    if [ "$got" = "$sum" ]; then n=$((n + 1)); else
      echo "FAIL the backing file's /$file: sha256 $got, the guest wrote $sum"; status=1
    fi
  done <"$work/sums"
  [ "$n" -ge 16 ] && echo "PASS the backing file holds the guest's $n files" ||
    { echo "FAIL only $n files checked in the backing file"; status=1; }
  checked=1
fi
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $checked -eq 1 ] || { echo "FAIL the guest never unmounted the filesystem"; status=1; }
# The image is consistent: e2fsck -n finds nothing to repair.
if e2fsck -fn "$disk" >"$work/fsck.log" 2>&1; then echo "PASS e2fsck -n of the backing file"; else
  echo "FAIL e2fsck of the backing file ($work/fsck.log)"; status=1
fi
stop_bridge
exit $status
