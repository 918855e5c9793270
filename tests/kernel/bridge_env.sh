# bridge_env.sh - sourced by the kernel tests that need a real dxpu-bridge on the host for the
# guest's dxpu.ko: finds the modules (kernel_env.sh: sets ko_dir) and starts the bridge on an AF_UNIX link whose peer is
# QEMU's end of the guest's NIC ($work/guest/qemu.sock), MAC 02:00:00:00:b0:01, management on
# $work/mgmt.sock, one "dxgpu" GPU (64 MiB) at box 01:00.0. Sets bridge_pid; stop_bridge stops
# it. start_bridge_at starts one more anywhere (two-bridge tests put a switch in between).
#   start_bridge DXPU_BRIDGE WORKDIR
source "$here/kernel_env.sh"

start_bridge() {
  work=$2
  mkdir -p "$work/guest"
  kernel_modules "$work"
  start_bridge_at "$1" "$work/bridge" 02:00:00:00:b0:01 "$work/guest/qemu.sock" 0x0000000000b0b001
  bridge_pid=$started_pid
  trap 'kill $bridge_pid 2>/dev/null || true' EXIT
  ln -sf bridge/link.sock "$work/bridge.sock"
  ln -sf bridge/mgmt.sock "$work/mgmt.sock"
  ln -sf bridge/bridge.log "$work/bridge.log"
}

# One bridge in DIR (link.sock, mgmt.sock, bridge.log, bridge.json) with MAC, sending to PEER;
# waits for its sockets; sets started_pid. Its sessions go down after $bridge_link_down (2s)
# without progress; with $bridge_identity (a JSON object) it has that `identity`
# (docs/bridge-config.md); with $bridge_devices (a JSON array) those `devices` instead of one
# dxgpu of MEMORY at 01:00.0. DXPU_BRIDGE_COMPLETION_TIMEOUT, when set (the debug lane, debug_lane.sh),
# is its limits.completion_timeout, which also raises its devices' DMA timeout (1 s).
#   start_bridge_at DXPU_BRIDGE DIR MAC PEER NODE_ID [MEMORY (64MiB)]
start_bridge_at() {
  local bin=$1 dir=$2 mac=$3 peer=$4 node=$5 memory=${6:-64MiB}
  mkdir -p "$dir"
  rm -f "$dir/link.sock" "$dir/mgmt.sock" # a bridge killed in an earlier run leaves them
  local limits_extra= identity=
  [ -z "${DXPU_BRIDGE_COMPLETION_TIMEOUT:-}" ] ||
    limits_extra=", \"completion_timeout\": \"$DXPU_BRIDGE_COMPLETION_TIMEOUT\""
  [ -z "${bridge_identity:-}" ] || identity="\"identity\": $bridge_identity,"
  local devices="[{\"profile\": \"dxgpu\", \"box_bdf\": \"01:00.0\", \"memory\": \"$memory\"}]"
  [ -z "${bridge_devices:-}" ] || devices=$bridge_devices
  cat >"$dir/bridge.json" <<JSON
{
  "node_id": "$node",
  "links": [{"type": "unix", "path": "$dir/link.sock", "peer": "$peer",
             "mac": "$mac", "mtu": 1500}],
  "management": {"unix": "$dir/mgmt.sock", "insecure_unsigned": true},
  "devices": $devices,$identity
  "limits": {"link_down": "${bridge_link_down:-2s}"$limits_extra},
  "log": {"level": "info", "format": "text"}
}
JSON
  "$bin" --config "$dir/bridge.json" >"$dir/bridge.log" 2>&1 &
  started_pid=$!
  for _ in $(seq 50); do [ -S "$dir/link.sock" ] && [ -S "$dir/mgmt.sock" ] && break; sleep 0.1; done
}

# The bridge's GPU lent to the guest's node (its MAC, QEMU's default 52:54:00:12:34:56) at
# HOST_BDF, with DMA to the host's DMA range and its MSI window (as a controller grants them:
# lib/host/proxy_port.h HostDmaGrants); more "BASE:SIZE" windows may follow.
#   lend_gpu DXPU MGMT HOST_BDF [BASE:SIZE]...
lend_gpu() {
  local dxpu=$1 mgmt=$2 bdf=$3 w
  shift 3
  "$dxpu" bridge assign --bridge "$mgmt" --device 0 --node-id 0x525400123456 --host-bdf "$bdf"
  for w in 0x100000000:0x3f00000000 0xfee00000:0x100000 "$@"; do
    "$dxpu" bridge grant --bridge "$mgmt" --device 0 --device-base "${w%%:*}" --size "${w##*:}"
  done
}

stop_bridge() {
  kill -TERM "$bridge_pid" 2>/dev/null || true
  wait "$bridge_pid" 2>/dev/null || true
  echo "bridge log: $work/bridge.log"
}

# Waits until the running guest (GUEST_PID, console CONSOLE) prints MARKER, then runs CMD;
# 1 when the guest ended first. What a test does to the host side at a point the guest picks.
#   on_console CONSOLE GUEST_PID MARKER CMD...
on_console() {
  local console=$1 pid=$2 marker=$3
  shift 3
  while ! grep -q "$marker" "$console" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  "$@"
}

# The switch two bridges share on the host (frame_switch.py): the guest's NIC at
# WORK/guest/qemu.sock, bridge 1 (02:00:00:00:b0:01) at WORK/b1/link.sock, bridge 2 at
# WORK/b2/link.sock; started before the bridges (each one's unix link connects to its peer when
# it starts); sets switch_pid, and a trap that stops it.
#   start_two_bridge_switch WORK
start_two_bridge_switch() {
  local w=$1
  python3 "$here/frame_switch.py" "$w/switch.sock" "$w/guest/qemu.sock" \
    "02:00:00:00:b0:01=$w/b1/link.sock" "02:00:00:00:b0:02=$w/b2/link.sock" \
    >"$w/switch.log" 2>&1 &
  switch_pid=$!
  trap 'kill $switch_pid 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [ -S "$w/switch.sock" ] && break; sleep 0.1; done
}
