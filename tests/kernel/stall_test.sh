#!/usr/bin/env bash
# A slot powered off while the network is slow: the guest's NIC reaches the dxpu-bridge through
# a delay line on the host (frame_delay.py). From when the guest's stall_check says so until it
# says to resume, every frame from the bridge reaches the guest 400 ms late, so every request
# takes that long and completes (scenario_stall.sh; the GPU bound by dxgpu.ko, driven through
# /dev/dxgpu0). Both ends keep the session for a minute without progress: slowness, not a link
# down.
#   stall_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: stall_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: stall_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-stall.XXXXXX)}
source "$here/bridge_env.sh"
mkdir -p "$work/guest"
kernel_modules "$work"
stall_check=$(guest_program stall_check "$work")
python3 "$here/frame_delay.py" "$work/delay.sock" "$work/guest/qemu.sock" "$work/b1/link.sock" \
  >"$work/delay.log" 2>&1 &
delay_pid=$!
trap 'kill $delay_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$work/delay.sock.delay" ] && break; sleep 0.1; done
# shellcheck disable=SC2034 # start_bridge_at reads it
bridge_link_down=60s
start_bridge_at "$bridge_bin" "$work/b1" 02:00:00:00:b0:01 "$work/delay.sock" 0x0000000000b0b001
b1_pid=$started_pid
trap 'kill $b1_pid $delay_pid 2>/dev/null || true' EXIT
lend_gpu "$dxpu_bin" "unix:$work/b1/mgmt.sock" 01:00.0
rm -f "$work/guest/console.log" # the markers below must come from this run's guest
bash "$here/guest.sh" --name stall --script "$here/scenario_stall.sh" --nic "$work/delay.sock" \
  --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" --file "$stall_check:/bin/stall_check" \
  --out "$work/guest" --expect "stall_check: 0 failures" --expect "dxgpu's remove ran" \
  >"$work/guest.out" 2>&1 &
guest_pid=$!
# set_delay MS: frames from the bridge reach the guest MS milliseconds late.
set_delay() {
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.argv[2].encode(), sys.argv[1])' \
    "$work/delay.sock.delay" "$1"
}
slowed=0
if on_console "$work/guest/console.log" "$guest_pid" "DXPU-STALL: slow the bridge" set_delay 400; then
  slowed=1
  echo "frames from the bridge 400 ms late"
  on_console "$work/guest/console.log" "$guest_pid" "DXPU-STALL: resume the bridge" true || true
  set_delay 0
  echo "frames from the bridge on time again"
fi
status=0
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $slowed -eq 1 ] || { echo "FAIL the guest never reached the point to slow the bridge"; status=1; }
kill "$b1_pid" "$delay_pid" 2>/dev/null || true
wait "$b1_pid" 2>/dev/null || true
echo "bridge log: $work/b1/bridge.log"
exit $status
