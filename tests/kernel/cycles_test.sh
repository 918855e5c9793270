#!/usr/bin/env bash
# No leaks in dxpu.ko or in dxgpu.ko (the GPU's driver, bound on dxpu's bus), by the kernel's
# own allocation tracking: the guest boots with slub_debug=U and attaches, drives
# (chardev_check through /dev/dxgpu0) and detaches the GPU of a real dxpu-bridge several times,
# then unloads both modules, comparing what is alive (scenario_cycles.sh).
#   cycles_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: cycles_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: cycles_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-cycles.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
chardev_check=$(guest_program chardev_check "$work")
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
status=0
bash "$here/guest.sh" --name cycles --script "$here/scenario_cycles.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" --file "$chardev_check:/bin/chardev_check" \
  --file "$here/slab_traces.sh:/bin/slab_traces.sh" --append slub_debug=U --out "$work/guest" \
  --timeout 500 --expect "leak check: 6 cycles done" || status=1
stop_bridge
exit $status
