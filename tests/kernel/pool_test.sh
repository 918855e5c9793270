#!/usr/bin/env bash
# The pool manager end to end in kernel mode: dxpu-manager and a dxpu-bridge (one GPU, box-a)
# on the host; in the guest, dxpu.ko and a dxpu-agent daemon in kernel mode that registers the
# guest as host "guest" (scenario_pool.sh). The guest reaches the manager over QEMU's user
# networking (10.0.2.2) and the manager calls the agent back through a port forward. Here
# `dxpu pool` allocates the GPU to the guest, the guest's agent is killed and restarted while it
# holds it, the GPU is released, allocated again and released again; after each step the
# manager's answer is checked and `dxpu pool audit` checks the manager against the bridge's
# STATUS and the agent's devices. The guest waits for the host's checks where it must through a
# small HTTP server here (host_says WORD serves /WORD).
#   pool_test.sh DXPU_BRIDGE DXPU DXPU_MANAGER DXPU_AGENT [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: pool_test.sh DXPU_BRIDGE DXPU DXPU_MANAGER DXPU_AGENT [WORKDIR]"
bridge_bin=${1:?$usage}
dxpu_bin=${2:?$usage}
manager_bin=${3:?$usage}
agent_bin=${4:?$usage}
work=${5:-$(mktemp -d /tmp/dxpu-kernel-pool.XXXXXX)}
source "$here/bridge_env.sh"
# Fabric keys (docs/security.md, "Provisioned by the pool manager"): the bridge has `identity`
# with no hosts listed; the guest writes its key into dxpu.ko, its agent registers the public
# key, and the manager sets it on the bridge before it assigns the GPU and removes it after the
# release; the agent writes the bridge's key (learned by the manager from INVENTORY) into
# dxpu.ko's bridge_keys before it binds the slot. Every session is sealed.
mkdir -p "$work/keys"
for k in bridge host; do
  rm -f "$work/keys/$k.key" "$work/keys/$k.pub"
  "$dxpu_bin" keygen --out "$work/keys/$k" >/dev/null
done
bridge_identity="{\"key\": \"$work/keys/bridge.key\"}"
start_bridge "$bridge_bin" "$work"

status=0
fail() { echo "FAIL $*"; status=1; }
# The guest's qemu, stopped when a host-side step fails (its waits would run to their ends).
stop_guest() { pkill -f "$work/guest/initramfs.cpio.gz" 2>/dev/null || true; }
manager_pid=
says_pid=
guest_pid=
cleanup() {
  kill "$bridge_pid" $manager_pid $says_pid 2>/dev/null || true
  [ -z "$guest_pid" ] || stop_guest
}
trap cleanup EXIT

rm -f "$work/pool.db"* "$work/manager.log"
"$manager_bin" --db "$work/pool.db" --listen 127.0.0.1 --port 0 --bridge-socket-dir "$work" \
  --attach-timeout 300 \
  --detach-timeout 300 --probe-interval 1 >"$work/manager.log" 2>&1 &
manager_pid=$!
manager=
for _ in $(seq 100); do
  manager=$(sed -n 's|^dxpu-manager: API on \(http://[0-9.:]*\),.*|\1|p' "$work/manager.log")
  [ -z "$manager" ] || break
  sleep 0.1
done
[ -n "$manager" ] || { cat "$work/manager.log"; echo "FAIL dxpu-manager did not start"; exit 1; }
export DXPU_MANAGER=$manager
pool() { "$dxpu_bin" pool "$@"; }
# The port the manager calls the guest's agent at (forwarded to the guest's 17491).
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# What the host says to the guest: files served over HTTP (the guest's wait_host).
rm -rf "$work/says"
mkdir -p "$work/says"
says_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/says" "$says_port" >"$work/says.log" 2>&1 &
says_pid=$!
host_says() { touch "$work/says/$1"; }
cat >"$work/dxpu-pool.env" <<ENV
MANAGER=http://10.0.2.2:${manager##*:}
AGENT_PORT=17491
ADVERTISE=http://127.0.0.1:$agent_port
HOST_SAYS=http://10.0.2.2:$says_port
ENV

pool add-box box-a --bridge "unix:$work/mgmt.sock" --fabric 02:00:00:00:b0:01
# json_field JSON_FILE PYTHON_EXPR: the expression over the file's JSON as j.
json_field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# wait_until SECONDS CMD...: CMD retried every half second until it succeeds; 1 if it never did.
wait_until() {
  local limit=$(($1 * 2)) i=0
  shift
  until "$@"; do
    i=$((i + 1))
    [ $i -lt $limit ] || return 1
    sleep 0.5
  done
}
gpu_free() { pool gpus --free --json >"$work/gpus.json" && [ "$(json_field "$work/gpus.json" 'len(j)')" = 1 ]; }
wait_until 30 gpu_free || { fail "box-a's GPU never listed free"; exit 1; }
echo "box-a probed: $(json_field "$work/gpus.json" 'j[0]["gpu"]') free"

# audit WHAT LEASED: the pool consistent, with LEASED GPUs leased.
audit() {
  if pool audit --json >"$work/audit.json"; then
    local leased
    leased=$(json_field "$work/audit.json" 'j["leased"]')
    if [ "$leased" = "$2" ]; then echo "PASS audit $1: consistent, $leased leased"; else
      fail "audit $1: $leased leased, expected $2"
    fi
  else
    cat "$work/audit.json"
    fail "audit $1: the pool is not consistent"
  fi
}
# allocate N: the GPU to the guest; checks the answer; sets alloc.
allocate() {
  if ! pool allocate --host guest --count 1 --wait 300 --json >"$work/alloc$1.json"; then
    cat "$work/alloc$1.json"
    fail "allocation $1 did not become active"
    return 1
  fi
  alloc=$(json_field "$work/alloc$1.json" 'j["id"]')
  local got
  got=$(json_field "$work/alloc$1.json" 'j["state"], [(g["gpu"], g["host_bdf"], g["step"]) for g in j["gpus"]]')
  if [ "$got" = "active [('box-a/0', '01:00.0', 'attached')]" ]; then echo "PASS $alloc: $got"; else
    fail "$alloc: $got"
  fi
}
# release N: alloc released and the GPU free again.
release() {
  if ! pool release "$alloc" --wait 300 --json >"$work/release$1.json"; then
    cat "$work/release$1.json"
    fail "release of $alloc did not end"
    return 1
  fi
  local state
  state=$(json_field "$work/release$1.json" 'j["state"]')
  if [ "$state" = released ]; then echo "PASS $alloc: released"; else fail "$alloc: $state after release"; fi
  gpu_free || fail "box-a/0 not free after release $1"
}
boot_id() { pool hosts --json >"$work/hosts.json" && json_field "$work/hosts.json" '[h["boot_id"] for h in j if h["id"] == "guest"][0]'; }
guest_registered() { boot_id >/dev/null 2>&1; }
new_boot_id() { local b; b=$(boot_id) && [ "$b" != "$1" ]; }
# step MARKER: waits for the guest's line; 1 (and the guest stopped) when it ended first.
console=$work/guest/console.log
step() {
  on_console "$console" "$guest_pid" "DXPU-POOL: $1" true || { fail "the guest ended before '$1'"; return 1; }
}

rm -f "$console"
bash "$here/guest.sh" --name pool --script "$here/scenario_pool.sh" --nic "$work/bridge.sock" \
  --user-net "$agent_port:17491" --ko "$ko_dir/dxpu.ko" \
  --bin "$agent_bin:/bin/dxpu-agent" --file "$work/dxpu-pool.env:/etc/dxpu-pool" \
  --file "$work/keys/host.key:/etc/dxpu/host.key" --file "$work/keys/host.pub:/etc/dxpu/host.pub" \
  --bin /usr/bin/lspci:/bin/lspci --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids \
  --out "$work/guest" --timeout 500 --expect "DXPU-POOL: every step ran" >"$work/guest.out" 2>&1 &
guest_pid=$!

scene() {
  step "agent started" || return 1
  wait_until 60 guest_registered || { fail "the guest's agent never registered"; return 1; }
  pool hosts
  local boot
  boot=$(boot_id)
  allocate 1 || return 1
  step "attached 1" || return 1
  audit "after allocation 1" 1
  # The manager learned the host's key and set it on the bridge; the session is that key's.
  grep -q "host-key-set node 0x525400123456 key $(cut -d' ' -f2 "$work/keys/host.pub" | cut -c1-16)... -> ok" \
    "$work/bridge.log" && echo "PASS the manager set the guest's key on the bridge" ||
    fail "the bridge's log shows no host-key-set of the guest's key"
  pool hosts --json >"$work/hosts.json"
  [ "$(json_field "$work/hosts.json" 'j[0].get("fabric_key", "")')" = "$(cut -d' ' -f2 "$work/keys/host.pub")" ] &&
    echo "PASS the manager has the guest's fabric key" || fail "the manager's host record: $(cat "$work/hosts.json")"
  grep -q "session 0x[0-9a-f]* from 52:54:00:12:34:56 (slot [0-9]*, authenticated)" "$work/bridge.log" &&
    echo "PASS the guest's session is authenticated" || fail "no authenticated session in the bridge's log"
  host_says audited-1
  step "agent restarted" || return 1
  wait_until 60 new_boot_id "$boot" || { fail "the restarted agent never registered"; return 1; }
  # The manager attaches the GPU again through the new agent (the guest waits for that).
  step "attached again" || return 1
  audit "after the agent's restart" 1
  pool show "$alloc"
  release 1 || return 1
  step "detached 1" || return 1
  audit "after release 1" 0
  allocate 2 || return 1
  step "attached 2" || return 1
  audit "after allocation 2" 1
  release 2 || return 1
  step "detached 2" || return 1
  audit "after release 2" 0
  # The last release removed the host's key from the bridge (HOST_KEY_REMOVE).
  grep -q "host-key-remove node 0x525400123456 -> ok ([0-9]* host keys)" "$work/bridge.log" &&
    echo "PASS the release removed the guest's key from the bridge" ||
    fail "the bridge's log shows no removal of the guest's key"
  pool status
  # The end of the host's checks, which the guest waits for.
  pool remove-box box-a
  host_says done
  step "every step ran"
}
scene || stop_guest
wait "$guest_pid" || fail "the guest's checks (above)"
guest_pid=
cat "$work/guest.out"
kill -TERM "$manager_pid" 2>/dev/null || true
wait "$manager_pid" 2>/dev/null || true
if [ $status -ne 0 ]; then echo "manager log: $work/manager.log"; tail -n 40 "$work/manager.log"; fi
stop_bridge
[ $status -eq 0 ] && echo "PASS kernel.pool"
exit $status
