#!/usr/bin/env bash
# dxgpu.ko, the model GPU's ordinary PCI driver, on a GPU dxpu.ko attached from a real
# dxpu-bridge: its character device driven by tests/kernel/dxgpu_check.c (registers, DMA
# buffers, the GPU's copies, interrupts, refusals), then the slot powered off under an open
# file, then the bridge killed while the driver is busy (scenario_dxgpu.sh).
#   dxgpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: dxgpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: dxgpu_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-dxgpu.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
dxgpu_check=$(guest_program dxgpu_check "$work")
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
rm -f "$work/guest/console.log" # the marker below must come from this run's guest
bash "$here/guest.sh" --name dxgpu --script "$here/scenario_dxgpu.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" --file "$dxgpu_check:/bin/dxgpu_check" \
  --out "$work/guest" --timeout 240 --expect "dxgpu_check: 0 failures" \
  --expect "the dead bridge's GPU removed" >"$work/guest.out" 2>&1 &
guest_pid=$!
killed=0
on_console "$work/guest/console.log" "$guest_pid" "DXGPU-KILL: now" kill -KILL "$bridge_pid" &&
  killed=1
status=0
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $killed -eq 1 ] || { echo "FAIL the guest never asked for the bridge to be killed"; status=1; }
echo "bridge log: $work/bridge.log"
exit $status
