#!/usr/bin/env bash
# dxpu.ko's hot-plug slots against a real dxpu-bridge on the host: the bridge assigns its GPU
# to the guest's node (its MAC) at 01:00.0 over the management socket, the guest binds a slot
# to it and powers it on and off through /sys/bus/pci/slots (scenario_hotplug.sh).
#   hotplug_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: hotplug_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: hotplug_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-hotplug.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
# The guest's node ID is its MAC (QEMU's default 52:54:00:12:34:56).
"$dxpu_bin" bridge assign --bridge "unix:$work/mgmt.sock" --device 0 --node-id 0x525400123456 --host-bdf 01:00.0
status=0
bash "$here/guest.sh" --name hotplug --script "$here/scenario_hotplug.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --out "$work/guest" --expect "attached: slot dxpu0" || status=1
stop_bridge
exit $status
