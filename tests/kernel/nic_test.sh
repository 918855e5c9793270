#!/usr/bin/env bash
# The guest's NIC reaches the host: QEMU's datagram backend carries Ethernet frames between
# the guest's virtio-net and an AF_UNIX socket here, where frame_echo.py sends each back; a
# statically linked guest program (raw_echo) sends DxFP-type frames over AF_PACKET and checks
# every echo. The path dxpu.ko's sessions will take to a dxpu-bridge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-nic.XXXXXX)}
mkdir -p "$work"
source "$here/kernel_env.sh"
raw_echo=$(guest_program raw_echo "$work")
python3 "$here/frame_echo.py" "$work/peer.sock" --seconds 150 >"$work/echo.txt" 2>&1 &
echo_pid=$!
trap 'kill $echo_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$work/peer.sock" ] && break; sleep 0.1; done
bash "$here/guest.sh" --name nic --script "$here/scenario_nic.sh" --nic "$work/peer.sock" \
  --file "$raw_echo:/bin/raw_echo" --out "$work/guest"
