#!/usr/bin/env bash
# Completions for tags not in flight, inside a live session: the guest's NIC reaches a
# dxpu-bridge through a switch on the host (frame_switch.py). When the guest says so, the switch
# holds every frame from the bridge for 3 s, past dxpu.ko's request timeout (2 s), so a read's
# completion arrives after dxpu.ko ended the read; then it forges one completion (Tag flipped,
# CRC redone), which matches no request; and, on the guest's in-band word, it freezes the bridge's
# non-posted credit so that configuration writes wait for it while a posted write passes them
# (credit_order_check.c; scenario_late_cpl.sh checks the rest). The GPU is bound by dxgpu.ko
# and driven through /dev/dxgpu0; dxgpu_check then shows the session still carries everything.
#   late_cpl_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: late_cpl_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: late_cpl_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-late.XXXXXX)}
source "$here/bridge_env.sh"
mkdir -p "$work/guest"
kernel_modules "$work"
late_cpl_check=$(guest_program late_cpl_check "$work")
dxgpu_check=$(guest_program dxgpu_check "$work")
credit_order_check=$(guest_program credit_order_check "$work")
python3 "$here/frame_switch.py" "$work/switch.sock" "$work/guest/qemu.sock" \
  "02:00:00:00:b0:01=$work/b1/link.sock" >"$work/switch.log" 2>&1 &
switch_pid=$!
trap 'kill $switch_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$work/switch.sock.hold" ] && break; sleep 0.1; done
# shellcheck disable=SC2034 # start_bridge_at reads it
bridge_link_down=10s # the hold is a slow link, not a dead one: both ends wait it out
start_bridge_at "$bridge_bin" "$work/b1" 02:00:00:00:b0:01 "$work/switch.sock" 0x0000000000b0b001
b1_pid=$started_pid
trap 'kill $b1_pid $switch_pid 2>/dev/null || true' EXIT
lend_gpu "$dxpu_bin" "unix:$work/b1/mgmt.sock" 01:00.0
rm -f "$work/guest/console.log" # the marker below must come from this run's guest
bash "$here/guest.sh" --name late-cpl --script "$here/scenario_late_cpl.sh" \
  --nic "$work/switch.sock" --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" \
  --file "$late_cpl_check:/bin/late_cpl_check" --file "$dxgpu_check:/bin/dxgpu_check" \
  --file "$credit_order_check:/bin/credit_order_check" \
  --out "$work/guest" --timeout 300 --expect "credit_order_check: 0 failures" \
  --expect "dxgpu_check: 0 failures" >"$work/guest.out" 2>&1 &
guest_pid=$!
# tell_switch WHAT VALUE: a datagram to the switch's PATH.WHAT socket.
tell_switch() {
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.argv[2].encode(), sys.argv[1])' \
    "$work/switch.sock.$1" "$2"
}
held=0 forged=0
on_console "$work/guest/console.log" "$guest_pid" "DXPU-HOLD: reading" tell_switch hold 3000 && held=1
on_console "$work/guest/console.log" "$guest_pid" "DXPU-FORGE: reading" tell_switch forge 1 && forged=1
status=0
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $held -eq 1 ] || { echo "FAIL the guest never asked for the hold"; status=1; }
[ $forged -eq 1 ] || { echo "FAIL the guest never asked for a forged completion"; status=1; }
kill -TERM "$switch_pid" "$b1_pid" 2>/dev/null || true
wait "$switch_pid" "$b1_pid" 2>/dev/null || true
echo "switch: $(cat "$work/switch.log")"
exit $status
