#!/bin/sh
# Guest side of kernel.pool (pool_test.sh): this guest is a host of the pool. dxpu.ko is loaded
# on the fabric NIC, and a dxpu-agent daemon in kernel mode registers with the dxpu-manager on
# the host (10.0.2.2, over the user-networking NIC); the manager calls the agent back through
# QEMU's port forward. Everything else is the manager's doing, driven by `dxpu pool` on the
# host: this side only watches dxpu.ko's slots and checks what appears there.
#   1. the first allocation: dxpu0 bound to the bridge's device at 01:00.0 and powered on; the
#      GPU is in the dxpu domain (vendor, device, lspci);
#   2. the agent killed and started again (a new boot ID) with the GPU attached: the manager
#      attaches it again through the new agent (its /v1/devices lists the GPU), which finds the
#      same slot; nothing else is bound;
#   3. the release: dxpu0 powered off and unbound, the device gone;
#   4. a second allocation and release: the same again, on a GPU the bridge scrubbed;
#   5. the host's last audit (it asks this agent), then box-a removed from the pool: the end.
# Each step's end is a "DXPU-POOL: ..." line the host waits for before its own checks; where
# the guest must wait for the host's checks (before it kills its agent, before it stops it),
# it waits until the host's small HTTP server serves a word (wait_host).
ok() { echo "DXPU-TEST: PASS $1"; }
bad() { echo "DXPU-TEST: FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: '$2', expected '$3'"; fi; }
. /etc/dxpu-net
. /etc/dxpu-pool # MANAGER, AGENT_PORT, ADVERTISE, HOST_SAYS (written by pool_test.sh)
bridge=02:00:00:00:b0:01
attached="dxpu0 $bridge 01:00.0 on"
if [ -z "$FABRIC_IF" ] || [ -z "$USER_IF" ]; then bad "two NICs: '$FABRIC_IF' '$USER_IF'"; exit 0; fi
if insmod /lib/dxpu/dxpu.ko ifname="$FABRIC_IF" slots=4; then ok "insmod dxpu slots=4"; else bad "insmod dxpu"; exit 0; fi
# This host's fabric key: the agent registers its public half, the manager provisions the rest.
if cat /etc/dxpu/host.key > /sys/devices/dxpu/key; then ok "the host's fabric key written"; else bad "the host's key refused"; fi
check "dxpu.ko's public key" "$(cat /sys/devices/dxpu/key)" "$(cat /etc/dxpu/host.pub)"
dom=
for bus in /sys/class/pci_bus/1????:00; do [ -n "$dom" ] || [ ! -e "$bus" ] || dom=$(basename "$bus" :00); done
dev=/sys/bus/pci/devices/$dom:00:00.0

# start_agent N: the agent daemon, its log in /tmp/agent.N.log; sets agent_pid.
start_agent() {
  dxpu-agent --host guest --node-id 0x525400123456 --manager "$MANAGER" --listen 0.0.0.0 \
    --insecure-plaintext --port "$AGENT_PORT" --advertise "$ADVERTISE" --mode kernel --heartbeat 1s \
    >"/tmp/agent.$1.log" 2>&1 &
  agent_pid=$!
}
# wait_slot LINE SECONDS: until dxpu0's line in /sys/devices/dxpu/slots is LINE; 1 if not.
wait_slot() {
  i=0
  while [ "$(grep '^dxpu0 ' /sys/devices/dxpu/slots)" != "$1" ]; do
    [ $i -lt $(($2 * 10)) ] || return 1
    sleep 0.1
    i=$((i + 1))
  done
}
# wait_host WORD: until the host says WORD (a file its HTTP server at HOST_SAYS serves).
wait_host() {
  i=0
  until wget -q -O /dev/null "$HOST_SAYS/$1" 2>/dev/null; do
    [ $i -lt 1200 ] || { bad "the host never said '$1'"; return 1; }
    sleep 0.1
    i=$((i + 1))
  done
}
bound_slots() { grep -vc ' unbound$' /sys/devices/dxpu/slots; }
show_agent() { echo "--- agent log $1"; cat "/tmp/agent.$1.log"; echo "---"; }

# attached_checks N: dxpu0 is the GPU, and it is the only slot bound.
attached_checks() {
  if wait_slot "$attached" 240; then ok "allocation $1: dxpu0 bound and on"; else
    bad "allocation $1: dxpu0 is '$(grep '^dxpu0 ' /sys/devices/dxpu/slots)'"
    show_agent "$agent_n"
    return 1
  fi
  check "allocation $1: one slot bound" "$(bound_slots)" 1
  check "allocation $1: vendor" "$(cat "$dev/vendor" 2>/dev/null)" 0x4450
  check "allocation $1: device" "$(cat "$dev/device" 2>/dev/null)" 0x0001
  lspci -D -nn -d 4450:0001 >/tmp/lspci.txt 2>&1
  cat /tmp/lspci.txt
  check "allocation $1: lspci lists the GPU in the dxpu domain" \
    "$(grep -c "^$dom:00:00.0 .*\[4450:0001\]" /tmp/lspci.txt)" 1
  # The agent gave dxpu.ko the bridge's key, and the session is sealed.
  check "allocation $1: the bridge's key" "$(cut -d' ' -f1 /sys/devices/dxpu/bridge_keys)" "$bridge"
  if grep -q "^$bridge established .* sealed 1 " /sys/devices/dxpu/bridges; then ok "allocation $1: the session is sealed"; else
    bad "allocation $1: not sealed: $(cat /sys/devices/dxpu/bridges)"
  fi
}
# released_checks N: dxpu0 off and unbound, the device gone.
released_checks() {
  if wait_slot "dxpu0 unbound" 240; then ok "release $1: dxpu0 unbound"; else
    bad "release $1: dxpu0 is '$(grep '^dxpu0 ' /sys/devices/dxpu/slots)'"
    show_agent "$agent_n"
    return 1
  fi
  check "release $1: slot power" "$(cat /sys/bus/pci/slots/dxpu0/power)" 0
  check "release $1: no slot bound" "$(bound_slots)" 0
  if [ -e "$dev" ]; then bad "release $1: the device is still there"; else ok "release $1: the device is gone"; fi
}

agent_n=1
start_agent 1
echo "DXPU-POOL: agent started"
attached_checks 1 || exit 0
echo "DXPU-POOL: attached 1"
wait_host audited-1 || exit 0

# The agent dies with the GPU attached and comes back with a new boot ID: the manager attaches
# the GPU again, which the kernel backend finds done (the same slot); the host checks the rest.
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null
show_agent 1
agent_n=2
start_agent 2
echo "DXPU-POOL: agent restarted"
# The new agent knows the GPU once the manager has attached it again through it.
i=0
until wget -q -O - "http://127.0.0.1:$AGENT_PORT/v1/devices" 2>/dev/null | grep -q '"box-a/0"'; do
  [ $i -lt 600 ] || break
  sleep 0.1
  i=$((i + 1))
done
wget -q -O - "http://127.0.0.1:$AGENT_PORT/v1/devices"
echo
if [ $i -lt 600 ]; then ok "the restarted agent has box-a/0 again"; else
  bad "the restarted agent never got box-a/0"
  show_agent 2
fi
check "after the agent's restart: dxpu0" "$(grep '^dxpu0 ' /sys/devices/dxpu/slots)" "$attached"
check "after the agent's restart: one slot bound" "$(bound_slots)" 1
echo "DXPU-POOL: attached again"

released_checks 1 || exit 0
echo "DXPU-POOL: detached 1"
attached_checks 2 || exit 0
echo "DXPU-POOL: attached 2"
released_checks 2 || exit 0
echo "DXPU-POOL: detached 2"
# The host audits (which asks this agent) and removes box-a: the end of its checks.
wait_host done || exit 0
check "the pool's boxes at the end" "$(wget -q -O - "$MANAGER/v1/boxes")" "[]"

kill -TERM "$agent_pid"
wait "$agent_pid" 2>/dev/null
show_agent 2
if rmmod dxpu; then ok "rmmod dxpu"; else bad "rmmod dxpu"; fi
echo "DXPU-POOL: every step ran"
