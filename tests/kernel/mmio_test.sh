#!/usr/bin/env bash
# Transparent MMIO against a real dxpu-bridge: in the guest, dxpu_mmio_check.ko maps the model
# GPU's BARs with pci_iomap and drives them with every accessor, under spin_lock_irqsave, and
# from two CPUs at once on one page (scenario_mmio.sh, driver/mmio_check.c); then the same on a
# guest with one vCPU, where a load with interrupts off can only complete by this CPU polling.
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
# One guest after the other in $work/guest (the bridge sends to the QEMU socket there); each
# console kept as console-<N>cpu.log.
for cpus in 2 1; do
  bash "$here/guest.sh" --name "mmio-${cpus}cpu" --script "$here/scenario_mmio.sh" \
    --nic "$work/bridge.sock" --smp "$cpus" --ko "$ko_dir/dxpu.ko" \
    --ko "$ko_dir/dxpu_mmio_check.ko" --file "$resource_mmap_check:/bin/resource_mmap_check" \
    --out "$work/guest" --timeout 240 --expect "dxpu_mmio_check: 0 failures" || status=1
  cp "$work/guest/console.log" "$work/guest/console-${cpus}cpu.log"
  grep "dxpu_mmio_check: median" "$work/guest/console-${cpus}cpu.log" || true
done
grep -q "DXPU-TEST: PASS two CPUs" "$work/guest/console-2cpu.log" ||
  { echo "FAIL the two-CPU guest ran no two-CPU test"; status=1; }
grep -q "one CPU online: no two-CPU test" "$work/guest/console-1cpu.log" ||
  { echo "FAIL the one-CPU guest had more than one CPU"; status=1; }
stop_bridge
exit $status
