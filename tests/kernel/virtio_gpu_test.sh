#!/usr/bin/env bash
# The stock kernel's virtio-gpu DRM driver, unmodified, on a virtio-gpu device lent from one
# dxpu-bridge, beside the model GPU's own driver (dxgpu.ko) on a GPU lent from another (issue
# 33, items 5 and 6). The guest's NIC reaches both bridges through a switch on the host
# (frame_switch.py). In the guest (scenario_virtio_gpu.sh): both slots hot-plugged through sysfs,
# virtio_pci and dxgpu bind by their id tables, /dev/dri/card0 appears, drm_draw.c draws a known
# image with a dumb buffer and a KMS modeset while dxgpu_check drives the GPU; here: `dxpu bridge
# screenshot` writes the bridge's scanout as a PNG, which png_check.py compares with the drawn
# image pixel for pixel.
#   virtio_gpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: virtio_gpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: virtio_gpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-virtio-gpu.XXXXXX)}
source "$here/bridge_env.sh"
mkdir -p "$work/guest"
kernel_modules "$work"
dxgpu_check=$(guest_program dxgpu_check "$work")
drm_draw=$(guest_program drm_draw "$work")
start_two_bridge_switch "$work"
start_bridge_at "$bridge_bin" "$work/b1" 02:00:00:00:b0:01 "$work/switch.sock" 0x0000000000b0b001
b1_pid=$started_pid
bridge_devices='[{"kind": "virtio-gpu", "box_bdf": "01:00.0", "display": "800x600"}]' \
  start_bridge_at "$bridge_bin" "$work/b2" 02:00:00:00:b0:02 "$work/switch.sock" 0x0000000000b0b002
b2_pid=$started_pid
trap 'kill $b1_pid $b2_pid $switch_pid 2>/dev/null || true' EXIT
lend_gpu "$dxpu_bin" "unix:$work/b1/mgmt.sock" 01:00.0
lend_gpu "$dxpu_bin" "unix:$work/b2/mgmt.sock" 02:00.0
rm -f "$work/guest/console.log" # the markers below must come from this run's guest
bash "$here/guest.sh" --name virtio-gpu --script "$here/scenario_virtio_gpu.sh" \
  --nic "$work/switch.sock" --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" \
  --kmod virtio_pci --kmod virtio-gpu \
  --file "$dxgpu_check:/bin/dxgpu_check" --file "$drm_draw:/bin/drm_draw" \
  --bin /usr/bin/lspci:/bin/lspci --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids \
  --out "$work/guest" --timeout 600 --expect "dxgpu_check: 0 failures" \
  --expect "DRM-DRAW: drawn 800x600" >"$work/guest.out" 2>&1 &
guest_pid=$!
status=0
shot=0
if on_console "$work/guest/console.log" "$guest_pid" "DRM-DRAW: drawn" true; then
  # The driver's transfer and flush follow the modeset at once; a moment for them to arrive.
  sleep 2
  if "$dxpu_bin" bridge screenshot --bridge "unix:$work/b2/mgmt.sock" --device 0 \
       --out "$work/screenshot.png" >"$work/screenshot.out" 2>&1; then
    cat "$work/screenshot.out"
    python3 "$here/png_check.py" "$work/screenshot.png" 800 600 || status=1
    shot=1
  else
    cat "$work/screenshot.out"
    echo "FAIL dxpu bridge screenshot"
    status=1
  fi
fi
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $shot -eq 1 ] || { echo "FAIL no screenshot taken"; status=1; }
kill -TERM "$switch_pid" "$b1_pid" "$b2_pid" 2>/dev/null || true
wait "$switch_pid" "$b1_pid" "$b2_pid" 2>/dev/null || true
echo "bridge logs: $work/b1/bridge.log $work/b2/bridge.log"
exit $status
