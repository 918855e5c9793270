#!/usr/bin/env bash
# dxpu.ko as the transport of an ordinary PCI driver's character device, against a real
# dxpu-bridge: the bridge assigns its GPU to the guest's node at 01:00.0 and grants it DMA to
# the host's DMA and MSI ranges (as a controller does: lib/host/proxy_port.h HostDmaGrants); in
# the guest, dxgpu.ko binds it and statically linked programs drive /dev/dxgpu0
# (scenario_chardev.sh). The guest boots with slub_debug=P: memory the kernel frees is
# poisoned, so a read of a freed object (after removal) shows.
#   chardev_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: chardev_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: chardev_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-chardev.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
chardev_check=$(guest_program chardev_check "$work")
chardev_lost=$(guest_program chardev_lost "$work")
lock_order_check=$(guest_program lock_order_check "$work")
dma_reuse_check=$(guest_program dma_reuse_check "$work")
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
status=0
bash "$here/guest.sh" --name chardev --script "$here/scenario_chardev.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" --file "$chardev_check:/bin/chardev_check" \
  --file "$chardev_lost:/bin/chardev_lost" --file "$lock_order_check:/bin/lock_order_check" \
  --file "$dma_reuse_check:/bin/dma_reuse_check" --out "$work/guest" --append slub_debug=P \
  --timeout 240 --expect "chardev_check: 0 failures" --expect "lock_order_check: 0 failures" \
  --expect "chardev_lost: 0 failures" --expect "dma_reuse_check: 0 failures" \
  --expect "rmmod dxpu again" || status=1
stop_bridge
exit $status
