#!/usr/bin/env bash
# Surprise removal: the dxpu-bridge behind the guest's attached GPU, bound by dxgpu.ko, is killed
# (SIGKILL) while a guest program reads the GPU's registers through /dev/dxgpu0
# (scenario_surprise.sh); the host waits for the program's marker on the guest's console before
# it kills the bridge.
#   surprise_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: surprise_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: surprise_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-surprise.XXXXXX)}
source "$here/bridge_env.sh"
# The guest's session goes down 1 s after the bridge dies; the debug lane (debug_lane.sh) sets
# its own parameters, a 10 s link-down among them, and they are kept.
export DXPU_GUEST_DXPU_PARAMS=${DXPU_GUEST_DXPU_PARAMS:-link_down_ms=1000}
start_bridge "$bridge_bin" "$work"
surprise_check=$(guest_program surprise_check "$work")
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0
rm -f "$work/guest/console.log"
bash "$here/guest.sh" --name surprise --script "$here/scenario_surprise.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" \
  --file "$surprise_check:/bin/surprise_check" \
  --out "$work/guest" --expect "surprise_check: 0 failures" \
  --expect "surprise removal" --expect "dxgpu's remove ran" >"$work/guest.out" 2>&1 &
guest_pid=$!
killed=0
on_console "$work/guest/console.log" "$guest_pid" "DXPU-SURPRISE: reading" kill -KILL "$bridge_pid" &&
  { killed=1; echo "killed the bridge (SIGKILL) while the guest reads"; }
status=0
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $killed -eq 1 ] || { echo "FAIL the guest never reached the point to kill the bridge"; status=1; }
stop_bridge
exit $status
