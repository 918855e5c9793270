# bridge_env.sh - sourced by the kernel tests that need a real dxpu-bridge on the host for the
# guest's dxpu.ko: builds the modules and starts the bridge on an AF_UNIX link whose peer is
# QEMU's end of the guest's NIC ($work/guest/qemu.sock), MAC 02:00:00:00:b0:01, management on
# $work/mgmt.sock, one "dxgpu" GPU at box 01:00.0. Sets bridge_pid; stop_bridge stops it.
#   start_bridge DXPU_BRIDGE WORKDIR
start_bridge() {
  local bin=$1
  work=$2
  mkdir -p "$work/guest"
  bash "$here/../kbuild_check.sh" "$work/kbuild" >/dev/null
  cat >"$work/bridge.json" <<JSON
{
  "node_id": "0x0000000000b0b001",
  "links": [{"type": "unix", "path": "$work/bridge.sock", "peer": "$work/guest/qemu.sock",
             "mac": "02:00:00:00:b0:01", "mtu": 1500}],
  "management": {"unix": "$work/mgmt.sock"},
  "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "64MiB"}],
  "limits": {"link_down": "2s"},
  "log": {"level": "info", "format": "text"}
}
JSON
  "$bin" --config "$work/bridge.json" >"$work/bridge.log" 2>&1 &
  bridge_pid=$!
  trap 'kill $bridge_pid 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [ -S "$work/bridge.sock" ] && [ -S "$work/mgmt.sock" ] && break; sleep 0.1; done
}

stop_bridge() {
  kill -TERM "$bridge_pid" 2>/dev/null || true
  wait "$bridge_pid" 2>/dev/null || true
  echo "bridge log: $work/bridge.log"
}
