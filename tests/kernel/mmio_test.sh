#!/usr/bin/env bash
# Transparent MMIO against a real dxpu-bridge: in the guest, dxpu_mmio_check.ko maps the model
# GPU's BARs with pci_iomap and drives them with every accessor, under spin_lock_irqsave, and
# from two CPUs at once on one page (scenario_mmio.sh, driver/mmio_check.c).
#   mmio_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: mmio_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: mmio_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-mmio.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
resource_mmap_check=$(guest_program resource_mmap_check "$work")
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
status=0
bash "$here/guest.sh" --name mmio --script "$here/scenario_mmio.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxpu_mmio_check.ko" --out "$work/guest" \
  --file "$resource_mmap_check:/bin/resource_mmap_check" \
  --timeout 300 --expect "dxpu_mmio_check: 0 failures" || status=1
grep "dxpu_mmio_check: median" "$work/guest/console.log" || true
stop_bridge
exit $status
