#!/usr/bin/env bash
# dxpu.ko lets its network interface go when the interface is unregistered under it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-netdev.XXXXXX)}
mkdir -p "$work"
source "$here/kernel_env.sh"
kernel_modules "$work"
python3 "$here/frame_echo.py" "$work/peer.sock" --seconds 150 >"$work/echo.txt" 2>&1 &
echo_pid=$!
trap 'kill $echo_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$work/peer.sock" ] && break; sleep 0.1; done
bash "$here/guest.sh" --name netdev-gone --script "$here/scenario_netdev_gone.sh" \
  --nic "$work/peer.sock" --ko "$ko_dir/dxpu.ko" --out "$work/guest" \
  --expect "dxpu: DxFP on eth0 stopped" --expect "rmmod virtio_net returned 0"
