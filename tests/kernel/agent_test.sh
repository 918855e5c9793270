#!/usr/bin/env bash
# dxpu-agent's kernel backend (manager/sysfs_backend.cc) against dxpu.ko and a real dxpu-bridge
# on the host: the bridge assigns its GPU to the guest's node (its MAC) at 01:00.0 over the
# management socket; in the guest, `dxpu-agent attach` and `detach` (one-shot, mode kernel)
# bind, power on, power off and unbind a hot-plug slot through sysfs (scenario_agent.sh).
# The guest runs the host's dynamically linked dxpu-agent and pciutils' lspci, with their
# shared libraries.
#   agent_test.sh DXPU_BRIDGE DXPU DXPU_AGENT [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: agent_test.sh DXPU_BRIDGE DXPU DXPU_AGENT [WORKDIR]"
bridge_bin=${1:?$usage}
dxpu_bin=${2:?$usage}
agent_bin=${3:?$usage}
work=${4:-$(mktemp -d /tmp/dxpu-kernel-agent.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
# The guest's node ID is its MAC (QEMU's default 52:54:00:12:34:56).
"$dxpu_bin" bridge assign --bridge "unix:$work/mgmt.sock" --device 0 --node-id 0x525400123456 --host-bdf 01:00.0
status=0
bash "$here/guest.sh" --name agent --script "$here/scenario_agent.sh" --nic "$work/bridge.sock" \
  --ko "$ko_dir/dxpu.ko" --bin "$agent_bin:/bin/dxpu-agent" \
  --bin /usr/bin/lspci:/bin/lspci --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids \
  --out "$work/guest" --timeout 300 --expect "DXPU-AGENT: every step ran" || status=1
stop_bridge
exit $status
