#!/usr/bin/env bash
# dxpu's MSI irq domain against a real dxpu-bridge: in the guest, dxpu_irq_check.ko (an ordinary
# PCI driver: pci_alloc_irq_vectors, request_irq) binds the model GPU on dxpu's bus, makes it
# send MSI-X messages and checks their handlers, masking, affinity and teardown
# (scenario_irq.sh, driver/irq_check.c); on two vCPUs, then on one, where a handler's readl
# completes only by the CPU polling the NIC.
#   irq_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: irq_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: irq_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-irq.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
status=0
for cpus in 2 1; do
  bash "$here/guest.sh" --name "irq-${cpus}cpu" --script "$here/scenario_irq.sh" \
    --nic "$work/bridge.sock" --smp "$cpus" --ko "$ko_dir/dxpu.ko" \
    --ko "$ko_dir/dxpu_irq_check.ko" --out "$work/guest" --timeout 240 \
    --expect "dxpu_irq_check: 0 failures" || status=1
  cp "$work/guest/console.log" "$work/guest/console-${cpus}cpu.log"
done
grep -q "DXPU-TEST: PASS affinity CPU 1" "$work/guest/console-2cpu.log" ||
  { echo "FAIL the two-CPU guest ran no affinity test"; status=1; }
stop_bridge
exit $status
