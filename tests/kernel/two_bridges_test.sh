#!/usr/bin/env bash
# Two dxpu-bridges at once: the guest's NIC reaches both through a switch on the host
# (frame_switch.py); bridge 1 lends its GPU (64 MiB) at 01:00.0, bridge 2 its GPU (32 MiB) at
# 02:00.0; forged frames go on the wire, then bridge 2 is killed, when the guest says so
# (scenario_two_bridges.sh).
#   two_bridges_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: two_bridges_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: two_bridges_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-two.XXXXXX)}
# The GPUs' DMA reads of the guest's memory wait up to 5 s for their completions (1 s by
# default): the demo's workloads on both GPUs at once keep the emulated guest that busy.
export DXPU_BRIDGE_COMPLETION_TIMEOUT=${DXPU_BRIDGE_COMPLETION_TIMEOUT:-5s}
source "$here/bridge_env.sh"
mkdir -p "$work/guest"
kernel_modules "$work"
dxgpu_check=$(guest_program dxgpu_check "$work")
# The switch first: each bridge's unix link connects to its peer when it starts.
start_two_bridge_switch "$work"
start_bridge_at "$bridge_bin" "$work/b1" 02:00:00:00:b0:01 "$work/switch.sock" 0x0000000000b0b001
b1_pid=$started_pid
start_bridge_at "$bridge_bin" "$work/b2" 02:00:00:00:b0:02 "$work/switch.sock" 0x0000000000b0b002 \
  32MiB
b2_pid=$started_pid
trap 'kill $b1_pid $b2_pid $switch_pid 2>/dev/null || true' EXIT
# The host's 64-bit BAR range too: peer to peer into the GPU behind the other bridge.
for b in 1 2; do
  lend_gpu "$dxpu_bin" "unix:$work/b$b/mgmt.sock" 0$b:00.0 0x4000000000:0x10000000000
done
rm -f "$work/guest/console.log" # the marker below must come from this run's guest
# The guest runs the host's builds: dxpu (lspci, the runtime's workloads over /dev/dxgpuN) and
# pciutils' lspci, with their shared libraries. DXPU_GUEST_DXPU=0 leaves them out.
bins=()
if [ "${DXPU_GUEST_DXPU:-1}" = 1 ]; then
  bins=(--bin "$dxpu_bin:/bin/dxpu" --bin /usr/bin/lspci:/bin/lspci
        --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids)
fi
bash "$here/guest.sh" --name two-bridges --script "$here/scenario_two_bridges.sh" \
  --nic "$work/switch.sock" --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxgpu/dxgpu.ko" \
  --file "$dxgpu_check:/bin/dxgpu_check" "${bins[@]}" \
  --out "$work/guest" --timeout 400 --expect "GPU 0 works after bridge 2 died" \
  >"$work/guest.out" 2>&1 &
guest_pid=$!
# The guest's markers: inject forged frames, then kill bridge 2.
killed=0
on_console "$work/guest/console.log" "$guest_pid" "DXPU-INJECT: now" \
  python3 "$here/frame_inject.py" "$work/switch.sock.inject" 52:54:00:12:34:56 02:00:00:00:b0:01 || true
on_console "$work/guest/console.log" "$guest_pid" "DXPU-KILL: bridge 2" kill -KILL "$b2_pid" && killed=1
status=0
wait "$guest_pid" || status=1
cat "$work/guest.out"
[ $killed -eq 1 ] || { echo "FAIL the guest never asked for bridge 2 to be killed"; status=1; }
kill -TERM "$switch_pid" "$b1_pid" 2>/dev/null || true
wait "$switch_pid" "$b1_pid" 2>/dev/null || true
echo "switch: $(cat "$work/switch.log")"
exit $status
