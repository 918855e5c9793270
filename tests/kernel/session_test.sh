#!/usr/bin/env bash
# dxpu.ko in a guest establishes a DxFP session with a real dxpu-bridge on the host: the
# guest's NIC reaches the bridge's AF_UNIX link through QEMU's datagram backend.
#   session_test.sh DXPU_BRIDGE [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: session_test.sh DXPU_BRIDGE [WORKDIR]}
work=${2:-$(mktemp -d /tmp/dxpu-kernel-session.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
status=0
bash "$here/guest.sh" --name session --script "$here/scenario_session.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --out "$work/guest" --expect "dxpu: session to 02:00:00:00:b0:01 established" ||
  status=1
stop_bridge
# The bridge's side of it: the session opened from the guest's MAC, and closed by rmmod.
if grep -q "session 0x[0-9a-f]* from 52:54:00:12:34:56" "$work/bridge.log"; then
  echo "PASS the bridge accepted the guest's session"
else
  echo "FAIL the bridge logged no session from the guest"; status=1
fi
if grep -q "down (peer-closed)" "$work/bridge.log"; then
  echo "PASS the bridge saw the session closed by rmmod"
else
  echo "FAIL the bridge did not see the session closed"; status=1
fi
exit $status
