#!/usr/bin/env bash
# dxpu.ko in a guest establishes an authenticated DxFP session with a real dxpu-bridge that has
# `identity` (docs/protocol.md 4.12): keys made by `dxpu keygen` here, the host's written into
# dxpu.ko through sysfs in the guest. The guest's NIC reaches the bridge's AF_UNIX link through
# QEMU's datagram backend.
#   session_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: session_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu=${2:?usage: session_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-session.XXXXXX)}
mkdir -p "$work/keys"
for k in bridge host other; do
  rm -f "$work/keys/$k.key" "$work/keys/$k.pub"
  "$dxpu" keygen --out "$work/keys/$k" >/dev/null
done
# The guest's node ID is its MAC (QEMU's default 52:54:00:12:34:56).
bridge_identity="{\"key\": \"$work/keys/bridge.key\", \"hosts\": [{\"node\": \"0x525400123456\", \"key\": \"$(cat "$work/keys/host.pub")\"}]}"
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
lend_gpu "$dxpu" "unix:$work/mgmt.sock" 01:00.0 >/dev/null
status=0
bash "$here/guest.sh" --name session --script "$here/scenario_session.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --out "$work/guest" \
  --file "$work/keys/host.key:/etc/dxpu/host.key" --file "$work/keys/host.pub:/etc/dxpu/host.pub" \
  --file "$work/keys/bridge.pub:/etc/dxpu/bridge.pub" --file "$work/keys/other.pub:/etc/dxpu/other.pub" \
  --expect "dxpu: session to 02:00:00:00:b0:01 established" || status=1
stop_bridge
check_log() {
  if grep -q "$2" "$work/bridge.log"; then echo "PASS $1"; else echo "FAIL $1"; status=1; fi
}
check_log "the bridge refused the HELLO made for another bridge key (MAC1)" "HELLO from .* refused: bad-mac1"
check_log "the bridge accepted the guest's authenticated session" "session 0x[0-9a-f]* from 52:54:00:12:34:56 (slot [0-9]*, authenticated)"
check_log "the bridge saw the session closed by rmmod" "down (peer-closed)"
exit $status
