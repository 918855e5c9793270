#!/usr/bin/env bash
# cli_test.sh - end-to-end checks of the dxpu CLI. Usage: cli_test.sh PATH/TO/dxpu [--sanitizers]
# Exercises decode of a hand-derived vector, encode->decode round trips, error handling
# (bad hex, truncated TLPs, codec rule violations, usage errors), crc32c, the demo, `run`,
# `lspci`, `pool` without a manager, `pki`, `flash` (push and status without a bridge), `model` (a
# shipped trace, plain and gzipped, summary counts, bad input, the timeline) and --help of every
# command.
# Prints each failure and exits 1 if there was any.
# --sanitizers (the ASan/UBSan build): the demo runs once, over AF_UNIX datagrams with its
# threads and sockets, not also in full (UDP and the simulator), in memory and with the RTL data
# path, which that build leaves out (docs/development.md, "The two lanes").
set -uo pipefail

DXPU=${1:?usage: cli_test.sh PATH/TO/dxpu [--sanitizers]}
full_demo=1
[ "${2:-}" = --sanitizers ] && full_demo=0
failures=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME EXPECTED_RC CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err.
run() {
  local name=$1 want=$2
  shift 2
  checks=$((checks + 1))
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, want $want"
    sed 's/^/  stdout: /' "$tmp/out" >&2
    sed 's/^/  stderr: /' "$tmp/err" >&2
    return 1
  fi
  return 0
}

# json_check NAME PYTHON_EXPR: evaluates EXPR with d = the JSON on stdout of the last run.
json_check() {
  local name=$1 expr=$2
  checks=$((checks + 1))
  if ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" \
      "$tmp/out"; then
    fail "$name: JSON check failed: $expr"
    sed 's/^/  stdout: /' "$tmp/out" >&2
  fi
}

# grep_check NAME FILE PATTERN: FILE (out or err) of the last run matches PATTERN.
grep_check() {
  local name=$1 file=$2 pattern=$3
  checks=$((checks + 1))
  if ! grep -q -- "$pattern" "$tmp/$file"; then
    fail "$name: $file does not match '$pattern'"
    sed "s/^/  $file: /" "$tmp/$file" >&2
  fi
}

# --- decode of a hand-derived vector --------------------------------------------------
# DW0 00 00 00 01: Fmt 000b (3DW, no data), Type 00000b (MRd), Length 1.
# DW1 01 00 07 0f: Requester 01:00.0, Tag 7, Last BE 0000b, First BE 1111b.
# DW2 f0 00 00 10: Address 0xf0000010.
MRD="00 00 00 01 01 00 07 0f f0 00 00 10"
if run "decode mrd json" 0 "$DXPU" tlp decode --json $MRD; then
  json_check "decode mrd json" \
    'd["kind"] == "MRd" and d["fmt"] == 0 and d["type"] == 0 and d["header_len"] == 12 and
     d["length_dw"] == 1 and d["requester_id"] == "01:00.0" and d["tag"] == 7 and
     d["first_be"] == 0xf and d["last_be"] == 0 and d["addr"] == 0xf0000010 and
     d["class"] == "non-posted" and d["payload_len"] == 0'
fi
if run "decode mrd text" 0 "$DXPU" tlp decode "00:00:00:01" "0x0100070f" "f0000010"; then
  grep_check "decode mrd text" out "requester *01:00.0"
  grep_check "decode mrd text" out "address *0xf0000010"
fi
if run "decode stdin" 0 sh -c "echo '$MRD' | '$DXPU' tlp decode --json -"; then
  json_check "decode stdin" 'd["tag"] == 7'
fi

# --- encode -> decode round trips -------------------------------------------------------
if run "encode mrd" 0 "$DXPU" tlp encode mrd --addr 0xf0000010 --req 01:00.0 --tag 7; then
  grep_check "encode mrd" out "^00000001 0100070f f0000010$"
fi
roundtrip() {
  local name=$1 expr=$2
  shift 2
  run "encode $name" 0 "$DXPU" tlp encode "$@" || return
  local hex
  hex=$(cat "$tmp/out")
  run "decode $name" 0 "$DXPU" tlp decode --json $hex || return
  json_check "round trip $name" "$expr"
}
roundtrip mrd4 'd["kind"] == "MRd" and d["addr"] == 0x1000 and d["length_dw"] == 4 and
  d["first_be"] == 0xf and d["last_be"] == 0xf and d["requester_id"] == "01:00.0" and d["tag"] == 7' \
  mrd --addr 0x1000 --len 4 --req 01:00.0 --tag 7
roundtrip mwr64 'd["kind"] == "MWr" and d["header_len"] == 16 and d["addr"] == 0x400000010 and
  d["payload_hex"] == "7856341211223344" and d["last_be"] == 0xf' \
  mwr --addr 0x4_0000_0010 --data "78563412 11223344"
roundtrip mwr-th 'd["kind"] == "MWr" and "TH" in d["flags"] and d["st"] == 0x42 and d["ph"] == 1' \
  mwr --addr 0x2000 --th --st 0x42 --ph 1 --data 00112233
roundtrip cfgrd0 'd["kind"] == "CfgRd0" and d["cfg_target"] == "01:00.0" and d["cfg_reg"] == 0x10' \
  cfgrd0 --target 01:00.0 --reg 0x10
roundtrip cpld 'd["kind"] == "CplD" and d["completer_id"] == "01:00.0" and
  d["requester_id"] == "00:00.0" and d["tag"] == 7 and d["byte_count"] == 4 and
  d["lower_addr"] == 0x10 and d["cpl_status_name"] == "SC" and d["payload_hex"] == "78563412"' \
  cpld --completer 01:00.0 --req 00:00.0 --tag 7 --byte-count 4 --lower-addr 0x10 --data 78563412
roundtrip cpl-ur 'd["kind"] == "Cpl" and d["cpl_status_name"] == "UR"' \
  cpl --completer 01:00.0 --status ur
roundtrip msg 'd["kind"] == "Msg" and d["msg_code"] == 0x20 and d["msg_routing"] == 4 and
  d["msg_code_name"] == "Assert_INTA"' msg --code 0x20 --routing 4
if run "encode json" 0 "$DXPU" tlp encode mrd --addr 0x1000 --json; then
  json_check "encode json" 'd["length"] == 12 and d["hex"] == "00000001 0000000f 00001000"'
fi

# --- errors -----------------------------------------------------------------------------
if run "bad hex" 1 "$DXPU" tlp decode 00 0g; then
  grep_check "bad hex" err "bad-hex"
fi
if run "odd hex" 1 "$DXPU" tlp decode 000; then
  grep_check "odd hex" err "odd"
fi
if run "truncated" 1 "$DXPU" tlp decode --json 00 00 00 01 01 00 07 0f f0 00; then
  json_check "truncated" 'd["error"] == "short-header" and "header" in d["message"]'
fi
if run "truncated text" 1 "$DXPU" tlp decode 00 00 00; then
  grep_check "truncated text" err "short-header"
fi
if run "short payload" 1 "$DXPU" tlp decode --json 40 00 00 01 00 00 00 0f 00 00 10 00; then
  json_check "short payload" 'd["error"] == "short-payload"'
fi
if run "encode crosses 4k" 1 "$DXPU" tlp encode mrd --addr 0xffc --len 2; then
  grep_check "encode crosses 4k" err "crosses-4k"
fi
if run "encode field range" 1 "$DXPU" tlp encode mrd --tag 2000 --json; then
  json_check "encode field range" 'd["error"] == "field-range" and d["message"] == "--tag 2000: a tag is 10 bits, 0..1023"'
fi
# A field-range refusal names the option, its value and the rule (lib/core says only that some
# field is out of range).
if run "encode unaligned address" 1 "$DXPU" tlp encode mrd --addr 0xffe; then
  grep_check "encode unaligned address" err "^dxpu tlp encode: field-range: --addr 0xffe: a memory request's address is DW-aligned, a multiple of 4 (0xffc or 0x1000)"
fi
encode_names() {
  local option=$1 rule=$2
  shift 2
  if run "encode names $option ($*)" 1 "$DXPU" tlp encode "$@"; then
    grep_check "encode names $option ($*)" err "field-range: $option.*$rule"
    checks=$((checks + 1))
    ! grep -q "a field is out of range" "$tmp/err" || fail "encode names $option ($*): generic message"
  fi
}
encode_names "--tc 9" "0..7" mrd --tc 9
encode_names "--len 2000" "1..1024 DW" mrd --len 2000
encode_names "--data" "mrd carries no payload" mrd --data 00000000
encode_names "--data" "cpld is the kind with data" cpl --data 00000000
encode_names "--addr 0x10" "only memory requests" cfgrd0 --addr 0x10
encode_names "--reg 0x1001" "multiple of 4, 0..0xffc" cfgrd0 --reg 0x1001
encode_names "--tag 5" "only Tag\[9:8\]" mwr --th --tag 5
encode_names "--ph 2" "needs --th" mrd --ph 2
encode_names "--byte-count 5000" "1..4096" cpld --byte-count 5000 --data 00000000
encode_names "--status ur" "only completions" mrd --status ur
encode_names "--first-be 1" "no byte enables" msg --first-be 1
encode_names "--code 0x20" "only messages" mrd --code 0x20
encode_names "--digest 5" "only with --td" mrd --digest 5
run "encode bad kind" 2 "$DXPU" tlp encode frobnicate
run "encode bad number" 2 "$DXPU" tlp encode mrd --addr 12zz
run "decode no args" 2 "$DXPU" tlp decode
# Whatever the bytes, decode answers 0 or 1 and never crashes.
for v in "" "ff" "ffffffff" "20000000 00000000 00000000 00000000" "7f" "e0000000" \
    "0a000000 00000000 00000000" "3000ffff 00000000 00000000 00000000"; do
  checks=$((checks + 1))
  echo "$v" | "$DXPU" tlp decode - >/dev/null 2>&1
  rc=$?
  [ "$rc" -le 1 ] || fail "decode '$v': exit $rc"
done

# --- crc32c -----------------------------------------------------------------------------
if run "crc32c stdin" 0 sh -c "printf 123456789 | '$DXPU' crc32c"; then
  grep_check "crc32c stdin" out "^0xe3069283$"
fi
if run "crc32c hex" 0 "$DXPU" crc32c --hex 313233343536373839 --json; then
  json_check "crc32c hex" 'd["crc32c"] == "0xe3069283" and d["length"] == 9'
fi
printf 123456789 >"$tmp/check.bin"
if run "crc32c file" 0 "$DXPU" crc32c "$tmp/check.bin"; then
  grep_check "crc32c file" out "^0xe3069283$"
fi
run "crc32c missing file" 1 "$DXPU" crc32c "$tmp/does-not-exist"

# --- demo -------------------------------------------------------------------------------
# The main job in its quick mode: a bridge in the process, 2 GPUs borrowed over UDP, every
# workload natively and through DxPU (results checked against the CPU), and simulated.
if [ $full_demo = 1 ] && run "demo quick json" 0 "$DXPU" demo --quick --json --out "$tmp/demo"; then
  json_check "demo json" 'd["ok"] and d["link"] == "udp" and d["box_gpus"] == 4 and
    len(d["dxpu_devices"]) == 2 and len(d["native_devices"]) == 2 and
    {w["name"] for w in d["workloads"]} >= {"mlp-train", "decode-loop", "data-loading"} and
    all(w["native"]["ok"] and w["dxpu"]["ok"] and w["native"]["elapsed_ns"] > 0 and
        w["dxpu"]["elapsed_ns"] > 0 and len(w["simulated"]) == 2 and
        all(s["native"]["ok"] and s["dxpu"]["ok"] and s["dxpu"]["elapsed_ns"] >= s["native"]["elapsed_ns"]
            for s in w["simulated"])
        for w in d["workloads"])'
  if [ -s "$tmp/demo/demo.json" ] && grep -q "<svg" "$tmp/demo/demo.svg"; then :; else
    fail "demo: demo.json or demo.svg not written"
  fi
fi
if [ $full_demo = 1 ] && run "demo quick text over mem" 0 "$DXPU" demo --quick --link mem --no-sim --out ""; then
  grep_check "demo text" out "Every result matched the CPU reference"
fi
if run "demo quick over unix" 0 "$DXPU" demo --quick --link unix --no-sim --json --out ""; then
  json_check "demo unix" 'd["ok"] and d["link"] == "unix" and all(w["simulated"] == [] for w in d["workloads"])'
fi
# The same workloads with the bridge's data plane in RTL (rtl-sim/, Verilated): every TLP is
# translated and checked by the simulated hardware, and every result must still match the CPU.
if [ $full_demo = 1 ] && run "demo quick rtl datapath" 0 "$DXPU" demo --quick --link mem --no-sim \
    --datapath rtl --json --out ""; then
  json_check "demo rtl" 'd["ok"] and d["datapath"] == "rtl" and len(d["workloads"]) >= 3 and
    all(w["dxpu"]["ok"] and w["dxpu"]["elapsed_ns"] > 0 for w in d["workloads"])'
fi
run "demo bad datapath" 2 "$DXPU" demo --datapath fpga
run "demo bad link" 2 "$DXPU" demo --link tcp
run "demo attach more than the box" 2 "$DXPU" demo --box-gpus 1 --attach 2
# --sim-latency: durations; a bare number is microseconds, the option's unit before units.
if [ $full_demo = 1 ] && run "demo sim latency" 0 "$DXPU" demo --quick --link mem --json --out "" --sim-latency 500ns,3; then
  json_check "demo sim latency" 'all([s["added_latency_ns"] for s in w["simulated"]] == [500, 3000] for w in d["workloads"])'
fi
if run "demo sim latency too long" 2 "$DXPU" demo --sim-latency 2s; then
  grep_check "demo sim latency too long" err "^--sim-latency: 2s is outside 0s..1s"
fi

# --- bench gpu ------------------------------------------------------------------------------
if run "bench gpu" 0 "$DXPU" bench gpu --json --size 4096 --size 1048576 --min-bytes 4194304 \
    --mmio-reads 50 --doorbells 500; then
  json_check "bench gpu json" 'd["link"] == "mem" and len(d["results"]) == 6 and
    all("error" not in r and r["direct"] > 0 and r["dxpu"] > 0 and r["ratio"] > 0 for r in d["results"])'
  # The MMIO read against the bare link's ping-pong, on both links, each path measured.
  json_check "bench gpu round trips" 'd["busy_poll"] is False and
    [(r["link"], r["path"]) for r in d["round_trips"]] == [(l, p) for l in ("mem", "udp")
      for p in ("ping-pong", "mmio-read", "mmio-read-worker")] and
    all("error" not in r and r["median_ns"] > 0 and r["cpu"] > 0 and r["vs_ping_pong"] > 0
        for r in d["round_trips"]) and d["round_trip_frames"] == {"request": 80, "completion": 84}'
fi
if run "bench gpu busy poll" 0 "$DXPU" bench gpu --json --busy-poll --direction h2d --size 4096 \
    --min-bytes 8192 --mmio-reads 20 --doorbells 10; then
  json_check "bench gpu busy poll" 'd["busy_poll"] is True and len(d["round_trips"]) == 6 and
    all("error" not in r for r in d["results"] + d["round_trips"])'
fi
if run "bench gpu one direction" 0 "$DXPU" bench gpu --json --direction d2h --size 65536 \
    --min-bytes 1048576 --mmio-reads 10 --doorbells 10; then
  json_check "bench gpu d2h only" '[r["what"] for r in d["results"]] == ["mmio-read", "doorbell", "d2h"]'
fi
run "bench gpu bad direction" 2 "$DXPU" bench gpu --direction sideways

# --- bench virtio ---------------------------------------------------------------------------
# Every workload measured on both sides (each disk's write-and-read-back check passed first,
# or the command exits 1); the figures are rates, whatever their size.
if run "bench virtio" 0 "$DXPU" bench virtio --json --duration 20ms --disk-mib 8 --display 64x48; then
  json_check "bench virtio json" 'd["link"] == "mem" and [r["workload"] for r in d["results"]] == [
      "4k-rand-read-qd1", "4k-rand-read-qd32", "4k-rand-write-qd32", "128k-seq-read-qd8",
      "128k-seq-write-qd8", "frame-64x48", "update-64x48"] and
    all("error" not in r and r["direct_ops_per_s"] > 0 and r["dxpu_ops_per_s"] > 0 and
        r["ratio"] > 0 and r["dxpu_bytes_per_s"] == r["dxpu_ops_per_s"] * r["bytes"]
        for r in d["results"])'
fi
if run "bench virtio text over udp" 0 "$DXPU" bench virtio --link udp --duration 10ms --disk-mib 8 \
    --display 128x128; then
  grep_check "bench virtio text" out "^virtio-blk  4k-rand-read-qd1 .* IOPS .*%$"
  grep_check "bench virtio text" out "^virtio-gpu  frame-128x128 .* us/frame .*%$"
fi
run "bench virtio bad display" 2 "$DXPU" bench virtio --display 10x4096

# --- bench pool -----------------------------------------------------------------------------
# A pool of 8 boxes and 16 hosts through every phase; the bench checks the pool's invariants
# itself at the end (no GPU leased twice, each lease assigned and attached, none lost: exit 1).
if run "bench pool" 0 "$DXPU" bench pool --gpus 64 --hosts 16 --json; then
  json_check "bench pool json" 'd["store"] == "sqlite" and d["in_process"] is True and
    len(d["runs"]) == 1 and d["runs"][0]["gpus"] == 64 and d["runs"][0]["boxes"] == 8 and
    d["runs"][0]["hosts"] == 16 and [r["what"] for r in d["runs"][0]["results"]] == [
      "allocate", "attach", "release", "release-to-free", "churn-allocate", "churn-attach",
      "probe", "store-apply"]'
  json_check "bench pool figures" 'all(r["count"] > 0 and r["per_s"] > 0 and
    0 < r["p50_us"] <= r["p99_us"] <= r["max_us"] and r["time_vs_smallest"] == 1
    for r in d["runs"][0]["results"]) and
    d["runs"][0]["results"][0]["count"] == d["runs"][0]["results"][1]["count"] and
    [s["gpus"] for s in d["runs"][0]["attach_by_size"]] == [1, 2, 4, 8]'
  json_check "bench pool no GPU lost" 'd["runs"][0]["end"]["checked"] and
    d["runs"][0]["end"]["leased"] + d["runs"][0]["end"]["free"] == d["runs"][0]["end"]["gpus"] == 64 and
    d["runs"][0]["end"]["leased"] == d["runs"][0]["memory_with_history"]["leases"] and
    d["runs"][0]["memory"]["bytes_per_gpu"] > 0 and
    d["runs"][0]["memory_with_history"]["allocations"] > d["runs"][0]["memory"]["allocations"]'
fi
if run "bench pool growth" 0 "$DXPU" bench pool --gpus 64 --hosts 16 --sizes 16,64 --churn 5; then
  grep_check "bench pool in process" out "run in this process.*no network latency"
  grep_check "bench pool growth" out "^how time grows with the pool"
  grep_check "bench pool growth smallest" out "^ *16 *2 *4  *1.00  *1.00 "
  grep_check "bench pool growth progress" err "^\[2/2\] 64 GPUs in 8 boxes, 16 hosts \.\.\.$"
fi
if run "bench pool gpus not a multiple of 8" 2 "$DXPU" bench pool --gpus 60; then
  grep_check "bench pool gpus not a multiple of 8" err "60 is not a multiple of 8"
fi
run "bench pool unknown store" 2 "$DXPU" bench pool --store nosuch
if run "bench pool etcd without --etcd" 2 "$DXPU" bench pool --store etcd --gpus 64; then
  grep_check "bench pool etcd without --etcd" err "store etcd needs --etcd"
fi
run "bench pool growth and sizes" 2 "$DXPU" bench pool --growth --sizes 16,32

# --- run ------------------------------------------------------------------------------------
if run "run direct" 0 "$DXPU" run --port direct --workload all --scale test --json; then
  json_check "run direct json" 'd["ok"] and d["port"] == "direct" and len(d["devices"]) == 1 and
    [w["name"] for w in d["workloads"]] == ["mlp-train", "decode-loop", "data-loading"] and
    all(w["ok"] and w["iterations"] > 0 and w["elapsed_ns"] > 0 and w["summary"] and
        "error" not in w for w in d["workloads"])'
fi
if run "run direct text, two GPUs" 0 "$DXPU" run --port direct --profile dxgpu --profile dxgpu \
    --workload mlp-train --scale test; then
  grep_check "run direct text" out "^mlp-train *ok "
  grep_check "run direct text" out "1 workload on 2 GPUs (scale test, seed 1): 1 passed, 0 failed"
fi
# 16 rows and 2 layers do not split over 3 GPUs: two workloads fail, the run exits 1.
if run "run a failing workload" 1 "$DXPU" run --port direct --profile dxgpu --profile dxgpu \
    --profile dxgpu --scale test --json; then
  json_check "run a failing workload" 'not d["ok"] and
    [w["ok"] for w in d["workloads"]] == [False, False, True] and
    "does not split over 3 devices" in d["workloads"][0]["error"]'
fi
if run "run no kernel device" 1 "$DXPU" run --device "$tmp/no-such-dxgpu" --json; then
  json_check "run no kernel device" 'd["error"] == "unavailable" and "no-such-dxgpu" in d["message"]'
fi
if run "run not a dxgpu device" 1 "$DXPU" run --device /dev/null; then
  grep_check "run not a dxgpu device" err "/dev/null is not a dxgpu device"
fi
run "run bad workload" 2 "$DXPU" run --port direct --workload nope
run "run bad scale" 2 "$DXPU" run --port direct --scale huge
run "run device with direct" 2 "$DXPU" run --port direct --device /dev/dxgpu0
run "run profile with kernel" 2 "$DXPU" run --profile dxgpu

# --- lspci ----------------------------------------------------------------------------------
# Without dxpu.ko (this machine's own PCI devices are never listed). Skipped where it is loaded.
if [ ! -d /sys/devices/dxpu ]; then
  if run "lspci without dxpu.ko" 0 "$DXPU" lspci; then
    grep_check "lspci without dxpu.ko" out "^no DxPU devices (is dxpu.ko loaded?)$"
  fi
  if run "lspci json without dxpu.ko" 0 "$DXPU" lspci --json; then
    json_check "lspci json without dxpu.ko" 'd == []'
  fi
  # The module's slots and bridges files read from --sysfs: bound slots with no device shown.
  mkdir -p "$tmp/sys/devices/dxpu"
  printf 'dxpu0 02:00:00:00:b0:01 01:00.0 off\ndxpu1 unbound\ndxpu2 02:00:00:00:b0:02 03:00.0 on\n' \
    >"$tmp/sys/devices/dxpu/slots"
  echo "02:00:00:00:b0:01 established rx 63 tx 64 tx_errors 0" >"$tmp/sys/devices/dxpu/bridges"
  if run "lspci bound slots" 0 "$DXPU" lspci --sysfs "$tmp/sys"; then
    grep_check "lspci module loaded" out "^no DxPU devices (dxpu.ko is loaded: bind a slot and power it on)$"
    grep_check "lspci slot 0" out \
      "^dxpu0: bound to bridge 02:00:00:00:b0:01 (established), remote 01:00.0, power off, no device$"
    grep_check "lspci slot 2" out \
      "^dxpu2: bound to bridge 02:00:00:00:b0:02 (no session), remote 03:00.0, power on, no device$"
    checks=$((checks + 1))
    if grep -q "dxpu1" "$tmp/out"; then fail "lspci: an unbound slot is listed"; fi
  fi
fi
run "lspci bad option" 2 "$DXPU" lspci --all

# --- sim fabric ---------------------------------------------------------------------------
if run "sim fabric" 0 "$DXPU" sim fabric --seeds 5 --faults 'loss=0.05,reorder=0.05,latency=5us'; then
  grep_check "sim fabric summary" out "^5 passed, 0 failed$"
fi
if run "sim fabric json" 0 "$DXPU" sim fabric --seed 9 --seeds 2 --json --faults 'partition=2ms+30ms'; then
  # The JSON document, then the summary line.
  head -n -1 "$tmp/out" >"$tmp/json" && mv "$tmp/json" "$tmp/out"
  json_check "sim fabric json" "d['passed'] == 2 and d['results'][0]['seed'] == 9 and all(r['link_downs'] >= 2 and r['sessions'] >= 2 for r in d['results'])"
fi
# Deterministic: the same seeds and faults give byte-identical results.
spec='loss=0.1,dup=0.05,reorder=0.1,corrupt=0.02,latency=5us,partition=3ms+25ms'
if run "sim fabric determinism 1" 0 "$DXPU" sim fabric --seed 77 --seeds 3 --json --faults "$spec"; then
  cp "$tmp/out" "$tmp/first"
  if run "sim fabric determinism 2" 0 "$DXPU" sim fabric --seed 77 --seeds 3 --json --faults "$spec"; then
    checks=$((checks + 1))
    cmp -s "$tmp/first" "$tmp/out" || fail "sim fabric: two runs of the same seeds differ"
  fi
fi
if run "sim fabric bad spec" 2 "$DXPU" sim fabric --faults 'loss=2'; then
  grep_check "sim fabric bad spec" err "loss"
fi
run "sim fabric unknown key" 2 "$DXPU" sim fabric --faults 'lose=0.1'
if run "sim fabric unknown node" 2 "$DXPU" sim fabric --seeds 1 --faults 'crash=gpu@1ms'; then
  grep_check "sim fabric unknown node" err "unknown node 'gpu'"
fi
run "sim fabric one-way cut" 0 "$DXPU" sim fabric --seeds 3 --faults 'cut=host>bridge@2ms+30ms'
run "sim fabric zero seeds" 2 "$DXPU" sim fabric --seeds 0
run "sim without subcommand" 2 "$DXPU" sim

# --- bench fabric ------------------------------------------------------------------------
if run "bench fabric" 0 "$DXPU" bench fabric --link memory --size 256 --duration 50ms --rounds 2 --json; then
  json_check "bench fabric json" "len(d) == 3 and d[0]['session_payload_bytes_per_s'] > 0 and d[0]['raw_payload_bytes_per_s'] > 0 and d[1]['loss'] == 0.01 and d[2]['sealed'] and not d[0]['sealed'] and d[2]['session_payload_bytes_per_s'] > 0"
  json_check "bench fabric rounds" "all(r['rounds'] == 2 and 0 < r['vs_raw_link']['min'] <= r['vs_raw_link']['median'] <= r['vs_raw_link']['max'] for r in d)"
  # Each column has one baseline: the raw link on every row, the loss-free session on lossy
  # rows, the plaintext session on the sealed row.
  json_check "bench fabric baselines" "d[0]['vs_lossless'] is None and 0 < d[1]['vs_lossless']['min'] <= d[1]['vs_lossless']['median'] <= d[1]['vs_lossless']['max'] and d[1]['raw_payload_bytes_per_s'] == d[0]['raw_payload_bytes_per_s'] and d[0]['vs_plaintext'] is None and 0 < d[2]['vs_plaintext']['min'] <= d[2]['vs_plaintext']['median'] <= d[2]['vs_plaintext']['max']"
  # A line on stderr as each run starts: 2 rounds x (raw link, session, lossy, sealed session).
  checks=$((checks + 1))
  [ "$(grep -c '^\[[1-8]/8\] in-memory link, 256-byte TLPs, round [12]/2: ' "$tmp/err")" = 8 ] ||
    fail "bench fabric progress: want lines [1/8]..[8/8] on stderr, got: $(cat "$tmp/err")"
  grep_check "bench fabric progress lossy" err '^\[7/8\] .*round 2/2: session, 1% loss (50ms) \.\.\.$'
  grep_check "bench fabric progress sealed" err '^\[8/8\] .*round 2/2: sealed session, no loss (50ms) \.\.\.$'
fi
if run "bench fabric without the sealed session" 0 "$DXPU" bench fabric --link mem --size 64 --duration 20ms --rounds 1 --no-sealed --json; then
  json_check "bench fabric --no-sealed" "len(d) == 2 and not any(r['sealed'] for r in d)"
fi
if run "bench fabric text" 0 "$DXPU" bench fabric --link mem --size 64 --duration 20ms --rounds 1 --loss 0.02; then
  grep_check "bench fabric columns" out "vs raw link .*vs lossless .*vs plaintext"
  grep_check "bench fabric lossless row" out '^memory  *64B   0.0%  *no .*% ([0-9.]*-[0-9.]*)  *-  *- '
  grep_check "bench fabric lossy row" out '^memory  *64B   2.0%  *no .*% ([0-9.]*-[0-9.]*)  *[0-9.]*% ([0-9.]*-[0-9.]*)  *- '
  grep_check "bench fabric sealed row" out '^memory  *64B   0.0%  *yes .*% ([0-9.]*-[0-9.]*)  *-  *[0-9.]*% ([0-9.]*-[0-9.]*) '
fi
run "bench fabric odd size" 2 "$DXPU" bench fabric --size 6
run "bench fabric bad link" 2 "$DXPU" bench fabric --link tcp
run "bench fabric no rounds" 2 "$DXPU" bench fabric --rounds 0
# Durations take a unit; the old spellings (a bare number in their unit) still work, hidden.
if run "bench fabric duration without unit" 2 "$DXPU" bench fabric --duration 50; then
  grep_check "bench fabric duration without unit" err "'50' has no unit"
fi
if run "bench fabric duration too short" 2 "$DXPU" bench fabric --duration 5ms; then
  grep_check "bench fabric duration too short" err "^--duration: 5ms is outside 10ms..60s"
fi
if run "bench fabric min-rto too long" 2 "$DXPU" bench fabric --min-rto 2s; then
  grep_check "bench fabric min-rto too long" err "^--min-rto: 2s is outside 10us..1s"
fi
if run "bench fabric legacy names" 0 "$DXPU" bench fabric --link memory --size 64 --duration-ms 20 --min-rto-us 500 --rounds 1 --loss 0; then
  grep_check "bench fabric legacy names" out "medians of 1 rounds of 20ms per run"
fi
run "bench fabric legacy out of range" 2 "$DXPU" bench fabric --duration-ms 5
run "bench fabric both spellings" 2 "$DXPU" bench fabric --duration 20ms --duration-ms 20
if run "bench fabric help" 0 "$DXPU" bench fabric --help; then
  grep_check "bench fabric help duration" out "--duration DURATION=500ms"
  grep_check "bench fabric help min-rto" out "--min-rto DURATION=300us"
  checks=$((checks + 1))
  ! grep -q -- "--duration-ms\|--min-rto-us" "$tmp/out" || fail "bench fabric help: lists an old spelling"
fi

# --- bridge -----------------------------------------------------------------------------------
# dxpu bridge where nothing answers (each error names the address, what happened and what to
# check), then against a real dxpu-bridge (the one next to dxpu in the build tree).
br="$tmp/bridge"
mkdir -p "$br"
free_udp_port() {
  python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
if run "bridge status no socket" 1 "$DXPU" bridge status --bridge "unix:$br/none.sock"; then
  grep_check "bridge status no socket" err "^dxpu bridge status: no-socket: no socket file at unix:$br/none.sock"
  grep_check "bridge status no socket" err "Is dxpu-bridge running, with its management socket at unix:$br/none.sock"
fi
if run "bridge status refused" 1 "$DXPU" bridge status --bridge 127.0.0.1:9 --json; then
  json_check "bridge status refused" 'd["error"] == "refused" and "nothing listens at 127.0.0.1:9" in d["message"] and "--bridge ADDR" in d["message"]'
fi
# A UDP socket that never answers: silence until the timeout.
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$br/silent.port" &
silent=$!
for _ in $(seq 100); do [ -s "$br/silent.port" ] && break; sleep 0.05; done
sport=$(cat "$br/silent.port")
if run "bridge status no answer" 1 "$DXPU" bridge status --bridge "127.0.0.1:$sport" --timeout 100ms --attempts 2; then
  grep_check "bridge status no answer" err "^dxpu bridge status: timeout: no answer from 127.0.0.1:$sport: nothing answered 2 requests there, 100 ms each. Is dxpu-bridge running"
fi
kill "$silent" 2>/dev/null
wait "$silent" 2>/dev/null
# Without --bridge: the default address, said to be one (unless a bridge happens to serve it).
checks=$((checks + 1))
if ! "$DXPU" bridge status --timeout 100ms --attempts 1 >"$tmp/out" 2>"$tmp/err"; then
  grep -q "127.0.0.1:17481 is the default address; --bridge ADDR names another" "$tmp/err" ||
    fail "bridge status default address: $(cat "$tmp/err")"
fi

bridge_bin="$(dirname "$DXPU")/../bridge-fw/dxpu-bridge"
if [ -x "$bridge_bin" ]; then
  # The operator's management key (docs/protocol.md 15.8): the bridge trusts its public half,
  # dxpu bridge signs with it through $DXPU_MANAGEMENT_KEY (or --key).
  "$DXPU" flash keygen --out "$br/operator" >/dev/null || fail "flash keygen for the bridge"
  printf '{"node_id": "0xb0b2", "links": [{"type": "udp", "listen": "127.0.0.1:%s"}], "management": {"unix": "%s", "trusted_keys": ["%s"]}, "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"}, {"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "16MiB"}], "log": {"level": "warn"}}\n' \
    "$(free_udp_port)" "$br/mgmt.sock" "$(cat "$br/operator.pub")" >"$br/bridge.json"
  # dxpu-bridge's --health-delay is a duration; --health-delay-ms, its old spelling, is still taken.
  run "dxpu-bridge health delay" 0 "$bridge_bin" --config "$br/bridge.json" --check --health-delay 1500ms
  run "dxpu-bridge health delay old spelling" 0 "$bridge_bin" --config "$br/bridge.json" --check --health-delay-ms 1500
  run "dxpu-bridge health delay without unit" 2 "$bridge_bin" --config "$br/bridge.json" --check --health-delay 1500
  "$bridge_bin" --config "$br/bridge.json" >"$br/bridge.log" 2>&1 &
  bridge_pid=$!
  for _ in $(seq 200); do [ -S "$br/mgmt.sock" ] && break; sleep 0.05; done
  mg="unix:$br/mgmt.sock"
  # Unsigned, or signed by a key the bridge does not trust: refused, saying why.
  if run "bridge assign unsigned" 1 "$DXPU" bridge assign --bridge "$mg" --device 0 --node-id 0xa1 --json; then
    json_check "bridge assign unsigned" 'd["error"] == "unauthenticated" and "management.trusted_keys" in d["message"]'
  fi
  "$DXPU" flash keygen --out "$br/stranger" >/dev/null || fail "flash keygen stranger"
  if run "bridge assign unknown key" 1 "$DXPU" bridge assign --bridge "$mg" --device 0 --node-id 0xa1 --key "$br/stranger.key"; then
    grep_check "bridge assign unknown key" err "^dxpu bridge assign: unauthenticated: "
  fi
  export DXPU_MANAGEMENT_KEY="$br/operator.key"
  run "bridge assign" 0 "$DXPU" bridge assign --bridge "$mg" --device 0 --node-id 0xa1 --host-bdf 01:00.0
  # Another host's device: the refusal names the node that holds it.
  if run "bridge assign busy" 1 "$DXPU" bridge assign --bridge "$mg" --device 0 --node-id 0xa2 --json; then
    json_check "bridge assign busy" 'd["error"] == "device-busy" and "node 0xa1" in d["message"] and "release" in d["message"]'
  fi
  if run "bridge assign busy text" 1 "$DXPU" bridge assign --bridge "$mg" --device 0 --node-id 0xa2; then
    grep_check "bridge assign busy text" err "^dxpu bridge assign: device-busy: device 0 is assigned to another host, node 0xa1; release it first"
  fi
  # The old spellings (--to, --node, --timeout-ms) are still taken, unlisted in --help.
  run "bridge old spellings" 0 "$DXPU" bridge assign --to "$mg" --device 1 --node 0xa2 --host-bdf 02:00.0 --timeout-ms 500
  if run "bridge assign help" 0 "$DXPU" bridge assign --help; then
    for opt in --bridge --node-id --timeout --attempts --device --host-bdf; do
      grep_check "bridge assign help" out "$opt"
    done
    checks=$((checks + 1))
    ! grep -q -- "--to \|--timeout-ms\|--node " "$tmp/out" || fail "bridge assign help: lists an old spelling: $(cat "$tmp/out")"
  fi
  if run "bridge status after assign" 0 "$DXPU" bridge status --bridge "$mg" --json; then
    json_check "bridge status after assign" '[dv["owner"] for dv in d["devices"]] == ["0xa1", "0xa2"]'
    json_check "bridge status no grants" 'd["dma_windows_reported"] and [dv["dma_windows"] for dv in d["devices"]] == [[], []]'
  fi
  # DMA grants: status lists each assigned device's windows (asked with DMA_LIST), revoke empties them.
  run "bridge grant" 0 "$DXPU" bridge grant --bridge "$mg" --device 0 --device-base 0x100000000 --host-base 0x80000000 --size 1GiB
  run "bridge grant second" 0 "$DXPU" bridge grant --bridge "$mg" --device 0 --device-base 0x1000 --size 4096
  if run "bridge status grants" 0 "$DXPU" bridge status --bridge "$mg"; then
    grep_check "bridge status grants row" out '^     0   01:00.0   assigned   01:00.0            2  0xa1$'
    grep_check "bridge status grants window" out '^ *DMA window: host base 0x80000000, size 1 GiB, device base 0x100000000$'
    grep_check "bridge status grants window 2" out '^ *DMA window: host base 0x1000, size 4096 B, device base 0x1000$'
    grep_check "bridge status grants other" out '^     1   02:00.0   assigned   02:00.0            0  0xa2$'
  fi
  if run "bridge status grants json" 0 "$DXPU" bridge status --bridge "$mg" --json; then
    json_check "bridge status grants json" 'd["dma_windows_reported"] and d["devices"][0]["owner"] == "0xa1" and d["devices"][0]["dma_windows"] == [{"host_base": "0x80000000", "size": 1073741824, "device_base": "0x100000000"}, {"host_base": "0x1000", "size": 4096, "device_base": "0x1000"}] and d["devices"][1]["dma_windows"] == []'
  fi
  run "bridge revoke" 0 "$DXPU" bridge revoke --bridge "$mg" --device 0
  if run "bridge status after revoke" 0 "$DXPU" bridge status --bridge "$mg" --json; then
    json_check "bridge status after revoke" '[dv["dma_windows"] for dv in d["devices"]] == [[], []]'
  fi
  kill "$bridge_pid" 2>/dev/null
  wait "$bridge_pid" 2>/dev/null
  unset DXPU_MANAGEMENT_KEY
  # A bridge older than DMA_LIST answers it unknown-type: status still lists the devices and
  # says the grants are not reported (a stand-in: STATUS answered, every other type unknown).
  python3 -c 'import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); s.settimeout(30)
print(s.getsockname()[1], flush=True)
while True:
    try:
        data, peer = s.recvfrom(65535)
    except socket.timeout:
        break
    magic, _, typ, _, rid, _, _ = struct.unpack(">IBBHIHH", data[:16])
    body, status = b"", 3
    if typ == 5:
        body, status = struct.pack(">HHIHHHBBQ", 1, 0, 0, 0, 0x0100, 0x0100, 1, 0, 0xa1), 0
    s.sendto(struct.pack(">IBBHIHH", magic, 1, typ, 1, rid, len(body), status) + body, peer)' >"$br/old.port" &
  old_bridge=$!
  for _ in $(seq 100); do [ -s "$br/old.port" ] && break; sleep 0.05; done
  old="127.0.0.1:$(cat "$br/old.port")"
  if run "bridge status older bridge" 0 "$DXPU" bridge status --bridge "$old"; then
    grep_check "bridge status older bridge row" out '^     0   01:00.0   assigned   01:00.0            ?  0xa1$'
    grep_check "bridge status older bridge" out '^DMA grants: not reported by this bridge (older firmware)$'
  fi
  if run "bridge status older bridge json" 0 "$DXPU" bridge status --bridge "$old" --json; then
    json_check "bridge status older bridge json" 'd["dma_windows_reported"] is False and d["devices"][0]["owner"] == "0xa1" and d["devices"][0]["dma_windows"] is None'
  fi
  kill "$old_bridge" 2>/dev/null
  wait "$old_bridge" 2>/dev/null
else
  fail "bridge: no dxpu-bridge at $bridge_bin (build the dxpu-bridge target)"
fi

# --- flash ------------------------------------------------------------------------------------
fw=$tmp/fw
mkdir -p "$fw"
printf '{"node_id": "0xb0b1", "links": [{"type": "udp", "listen": "127.0.0.1:17480"}], "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0"}]}\n' >"$fw/bridge.json"
exe=$(type -P true)  # an ELF executable, small
if run "flash keygen" 0 "$DXPU" flash keygen --out "$fw/rel" --json; then
  json_check "flash keygen" 'len(d["key_id"]) == 16 and d["secret_key"].endswith("rel.key")'
  checks=$((checks + 1))
  [ "$(stat -c %a "$fw/rel.key")" = 600 ] || fail "flash keygen: rel.key is mode $(stat -c %a "$fw/rel.key")"
fi
if run "flash keygen twice" 1 "$DXPU" flash keygen --out "$fw/rel"; then
  grep_check "flash keygen twice" err "exists (a key is never replaced)"
fi
run "flash keygen other" 0 "$DXPU" flash keygen --out "$fw/other"
# sign_with KEY BRIDGE CONFIG VERSION OUT [ARGS...]
sign_with() {
  "$DXPU" flash sign --key "$1" --program "$2" --config "$3" --version "$4" --out "$5" --hw-rev 3 "${@:6}"
}
if run "flash sign" 0 sign_with "$fw/rel.key" "$exe" "$fw/bridge.json" 1.2.3 "$fw/a.dxfw" --build-id ci-1 --build-time 1796000000 --json; then
  json_check "flash sign" 'd["version"] == "1.2.3" and d["hw_revision"] == 3 and d["build_id"] == "ci-1" and d["build_time"] == "2026-11-30T00:53:20Z"'
fi
if run "flash inspect verified" 0 "$DXPU" flash inspect "$fw/a.dxfw" --pub "$fw/other.pub" --pub "$fw/rel.pub" --json; then
  json_check "flash inspect verified" 'd["verified"] and [s["type"] for s in d["sections"]] == ["executable", "config"] and d["sections"][0]["name"] == "dxpu-bridge"'
fi
# A file check: the words are about the --pub files and --hw-rev given, not a bridge.
if run "flash inspect untrusted key" 1 "$DXPU" flash inspect "$fw/a.dxfw" --pub "$fw/other.pub"; then
  grep_check "flash inspect untrusted key" err "unknown-key: $fw/a.dxfw is not signed by the key in $fw/other.pub (it is signed with key"
  checks=$((checks + 1))
  ! grep -q "bridge" "$tmp/err" || fail "flash inspect untrusted key: speaks of a bridge: $(cat "$tmp/err")"
fi
if run "flash inspect wrong hardware" 1 "$DXPU" flash inspect "$fw/a.dxfw" --pub "$fw/rel.pub" --hw-rev 4; then
  grep_check "flash inspect wrong hardware" err "wrong-hardware: $fw/a.dxfw is built for hardware revision 3, not the --hw-rev 4 given"
fi
python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[400]^=1; open(sys.argv[2],'wb').write(b)" "$fw/a.dxfw" "$fw/edited.dxfw"
if run "flash inspect edited payload" 1 "$DXPU" flash inspect "$fw/edited.dxfw" --pub "$fw/rel.pub"; then
  grep_check "flash inspect edited payload" err "bad-hash"
fi
head -c 100 "$fw/a.dxfw" >"$fw/short.dxfw"
if run "flash inspect truncated" 1 "$DXPU" flash inspect "$fw/short.dxfw" --json; then
  json_check "flash inspect truncated" 'd["error"] == "truncated"'
fi
# flash sign --bridge, the old name of --program, is still taken.
if run "flash sign old --bridge" 0 "$DXPU" flash sign --key "$fw/rel.key" --bridge "$exe" --config "$fw/bridge.json" --version 1.2.3 --hw-rev 3 --out "$fw/old.dxfw" --json; then
  json_check "flash sign old --bridge" 'd["version"] == "1.2.3"'
fi
if run "flash sign with the public key" 1 sign_with "$fw/rel.pub" "$exe" "$fw/bridge.json" 1.0.0 "$fw/x"; then
  grep_check "flash sign with the public key" err "holds the other half of the pair"
fi
if run "flash sign not an executable" 1 sign_with "$fw/rel.key" "$fw/bridge.json" "$fw/bridge.json" 1.0.0 "$fw/x"; then
  grep_check "flash sign not an executable" err "not-executable"
fi
printf '{"links": 3}' >"$fw/bad.json"
if run "flash sign bad config" 1 sign_with "$fw/rel.key" "$exe" "$fw/bad.json" 1.0.0 "$fw/x"; then
  grep_check "flash sign bad config" err "bad-config"
fi
if run "flash sign bad version" 1 sign_with "$fw/rel.key" "$exe" "$fw/bridge.json" 1.2 "$fw/x"; then
  grep_check "flash sign bad version" err "bad-version"
fi
checks=$((checks + 1))
[ ! -e "$fw/x" ] || fail "flash sign: a refused image was written"
# The root key signs the list of trusted image keys (docs/firmware.md, "The trusted keys").
run "flash keygen root" 0 "$DXPU" flash keygen --out "$fw/root"
if run "flash sign-keys" 0 "$DXPU" flash sign-keys --root "$fw/root.key" --pub "$fw/rel.pub" --out "$fw/keys-1.dxkl" --json; then
  json_check "flash sign-keys" 'd["sequence"] == 1 and d["keys"] == 1 and len(d["root_key_id"]) == 16'
fi
run "flash sign-keys two" 0 "$DXPU" flash sign-keys --root "$fw/root.key" --pub "$fw/rel.pub" --pub "$fw/other.pub" --sequence 2 --out "$fw/keys-2.dxkl"
run "flash sign-keys by another key" 0 "$DXPU" flash sign-keys --root "$fw/other.key" --pub "$fw/other.pub" --sequence 3 --out "$fw/forged.dxkl"
if run "flash sign-keys twice the same key" 1 "$DXPU" flash sign-keys --root "$fw/root.key" --pub "$fw/rel.pub" --pub "$fw/rel.pub" --out "$fw/x"; then
  grep_check "flash sign-keys twice the same key" err "bad-key-list: key .* is listed twice"
fi
bid=00112233445566778899aabbccddeeff
if run "flash init" 0 "$DXPU" flash init --flash "$fw/bridge.flash" --hw-rev 3 --root-pub "$fw/root.pub" --keys "$fw/keys-1.dxkl" --bridge-id "$bid" --image "$fw/a.dxfw" --blocks-per-slot 16 --erase-block 4096 --granule 256 --json; then
  json_check "flash init" 'd["slot_a"] == "1.2.3" and d["bytes"] == 37 * 4096 and d["slot_bytes"] == 16 * 4096 and d["bridge_id"] == "'"$bid"'" and d["trusted_keys"] == 1'
fi
if run "flash init twice" 1 "$DXPU" flash init --flash "$fw/bridge.flash" --hw-rev 3 --root-pub "$fw/root.pub" --keys "$fw/keys-1.dxkl"; then
  grep_check "flash init twice" err "exists"
fi
if run "flash init wrong hardware" 1 "$DXPU" flash init --flash "$fw/b2.flash" --hw-rev 9 --root-pub "$fw/root.pub" --keys "$fw/keys-1.dxkl" --image "$fw/a.dxfw" --blocks-per-slot 16 --erase-block 4096; then
  grep_check "flash init wrong hardware" err "wrong-hardware"
fi
[ ! -e "$fw/b2.flash" ] || fail "flash init: a refused flash was left behind"
if run "flash init key list of another root" 1 "$DXPU" flash init --flash "$fw/b4.flash" --hw-rev 3 --root-pub "$fw/root.pub" --keys "$fw/forged.dxkl"; then
  grep_check "flash init key list of another root" err "bad-key-list: its signature does not verify with the root key"
fi
if run "flash init bad bridge id" 1 "$DXPU" flash init --flash "$fw/b5.flash" --hw-rev 3 --root-pub "$fw/root.pub" --keys "$fw/keys-1.dxkl" --bridge-id 12zz; then
  grep_check "flash init bad bridge id" err "bad-bridge-id"
fi
if run "flash init bad geometry" 1 "$DXPU" flash init --flash "$fw/b3.flash" --hw-rev 3 --root-pub "$fw/root.pub" --keys "$fw/keys-1.dxkl" --erase-block 3000; then
  grep_check "flash init bad geometry" err "bad-geometry"
fi
if run "flash rotate-keys forged" 1 "$DXPU" flash rotate-keys --flash "$fw/bridge.flash" --keys "$fw/forged.dxkl"; then
  grep_check "flash rotate-keys forged" err "bad-key-list"
fi
if run "flash rotate-keys stale" 1 "$DXPU" flash rotate-keys --flash "$fw/bridge.flash" --keys "$fw/keys-1.dxkl"; then
  grep_check "flash rotate-keys stale" err "stale-key-list: key list 1 is not newer than the flash's (1)"
fi
if run "flash rotate-keys" 0 "$DXPU" flash rotate-keys --flash "$fw/bridge.flash" --keys "$fw/keys-2.dxkl" --json; then
  json_check "flash rotate-keys" 'd["sequence"] == 2 and d["keys"] == 2'
fi
# A downgrade authorisation: one bridge, one image.
sign_with "$fw/rel.key" "$exe" "$fw/bridge.json" 1.1.0 "$fw/older.dxfw" --security-version 1 >/dev/null
if run "flash inspect security version" 0 "$DXPU" flash inspect "$fw/older.dxfw" --json; then
  json_check "flash inspect security version" 'd["security_version"] == 1 and len(d["digest"]) == 64'
fi
if run "flash authorize-downgrade" 0 "$DXPU" flash authorize-downgrade --key "$fw/rel.key" --image "$fw/older.dxfw" --bridge-id "$bid" --out "$fw/older.auth" --json; then
  json_check "flash authorize-downgrade" 'd["bridge_id"] == "'"$bid"'" and d["version"] == "1.1.0" and len(d["digest"]) == 64'
fi
if run "flash authorize-downgrade bad bridge id" 1 "$DXPU" flash authorize-downgrade --key "$fw/rel.key" --image "$fw/older.dxfw" --bridge-id 0011 --out "$fw/x"; then
  grep_check "flash authorize-downgrade bad bridge id" err "bad-bridge-id"
fi
if run "flash authorize-downgrade not an image" 1 "$DXPU" flash authorize-downgrade --key "$fw/rel.key" --image "$exe" --bridge-id "$bid" --out "$fw/x"; then
  grep_check "flash authorize-downgrade not an image" err "bad-authorisation: not an image"
fi
run "flash without subcommand" 2 "$DXPU" flash

# flash push and status with no bridge: the image is checked before any bridge is contacted;
# an address nobody serves fails with exit 1 and a line naming the bridge.
nobody="unix:$fw/nobody.sock"
no_contact() {  # the last run's stderr does not mention the bridge: it was never asked
  checks=$((checks + 1))
  ! grep -q "nobody.sock" "$tmp/err" || fail "$1: contacted the bridge"
}
if run "flash push not an image" 1 "$DXPU" flash push "$exe" --bridge "$nobody"; then
  grep_check "flash push not an image" err "^dxpu flash push: bad-magic: $exe: not a DxPU firmware image"
  no_contact "flash push not an image"
fi
if run "flash push truncated" 1 "$DXPU" flash push "$fw/short.dxfw" --bridge "$nobody" --json; then
  json_check "flash push truncated" 'd["error"] == "truncated" and "short.dxfw" in d["message"]'
  no_contact "flash push truncated"
fi
{ cat "$fw/a.dxfw"; printf 'x'; } >"$fw/long.dxfw"
if run "flash push trailing bytes" 1 "$DXPU" flash push "$fw/long.dxfw" --bridge "$nobody"; then
  grep_check "flash push trailing bytes" err "too-large: .*1 bytes after the"
  no_contact "flash push trailing bytes"
fi
if run "flash push authorisation of another image" 1 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --allow-downgrade "$fw/older.auth"; then
  grep_check "flash push authorisation of another image" err "bad-authorisation: $fw/older.auth allows the image 1.1.0 with digest"
  no_contact "flash push authorisation of another image"
fi
if run "flash push authorisation not one" 1 "$DXPU" flash push "$fw/older.dxfw" --bridge "$nobody" --allow-downgrade "$fw/a.dxfw"; then
  grep_check "flash push authorisation not one" err "bad-authorisation: $fw/a.dxfw: "
  no_contact "flash push authorisation not one"
fi
run "flash push allow-downgrade without a file" 2 "$DXPU" flash push "$fw/older.dxfw" --bridge "$nobody" --allow-downgrade
if run "flash push no file" 1 "$DXPU" flash push "$fw/none.dxfw" --bridge "$nobody"; then
  grep_check "flash push no file" err "open-error"
fi
if run "flash push nobody listening" 1 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody"; then
  grep_check "flash push nobody listening" err "^dxpu flash push: $nobody: no-socket: no socket file at $nobody"
  grep_check "flash push nobody listening" err "Is dxpu-bridge running, with its management socket at $nobody"
fi
if run "flash push no answer" 1 "$DXPU" flash push "$fw/a.dxfw" --bridge 127.0.0.1:9 \
    --bridge "$nobody" --timeout 100ms --attempts 1 --json; then
  json_check "flash push no answer" '[r["bridge"] for r in d] == ["127.0.0.1:9", "'"$nobody"'"] and
    not any(r["ok"] for r in d) and d[0]["error"] == "refused" and "127.0.0.1:9" in d[0]["message"] and
    d[1]["error"] == "no-socket" and all(r["version"] == "1.2.3" for r in d)'
  grep_check "flash push no answer" err "^dxpu flash push: 127.0.0.1:9: refused: nothing listens at 127.0.0.1:9"
fi
if run "flash status no answer" 1 "$DXPU" flash status --bridge "$nobody" --bridge 127.0.0.1:9 \
    --timeout 100ms --attempts 1 --json; then
  json_check "flash status no answer" 'len(d) == 2 and not any(r["ok"] for r in d) and
    d[0]["bridge"] == "'"$nobody"'" and d[1]["error"] == "refused"'
  grep_check "flash status no answer" err "^dxpu flash status: $nobody: no-socket: "
fi
if run "flash status nobody listening" 1 "$DXPU" flash status --bridge "$nobody"; then
  grep_check "flash status nobody listening" err "^dxpu flash status: $nobody: no-socket: "
fi
if run "flash push bad address" 2 "$DXPU" flash push "$fw/a.dxfw" --bridge 127.0.0.1; then
  grep_check "flash push bad address" err "bad-address: --bridge '127.0.0.1' is neither IP:PORT nor unix:PATH"
fi
run "flash status bad address" 2 "$DXPU" flash status --bridge unix:
run "flash push without a bridge" 2 "$DXPU" flash push "$fw/a.dxfw"
run "flash status without a bridge" 2 "$DXPU" flash status
run "flash push chunk too small" 2 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --chunk-size 0
run "flash push chunk too large" 2 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --chunk-size 65388
# The old spellings --wait-s (seconds) and --timeout-ms are still taken: this push gets as far as
# the bridge.
if run "flash push old spellings" 1 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --wait-s 5 --timeout-ms 100; then
  grep_check "flash push old spellings" err "no-socket"
fi
# --wait is a duration, at most an hour (its old spelling --wait-s took seconds).
if run "flash push wait bad unit" 2 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --wait 5parsecs; then
  grep_check "flash push wait bad unit" err "unit"
fi
# A bare number on --wait is seconds, as on dxpu pool's --wait (docs/cli.md).
if run "flash push wait bare seconds" 1 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --wait 5; then
  grep_check "flash push wait bare seconds" err "no-socket"
fi
if run "flash push wait too long" 2 "$DXPU" flash push "$fw/a.dxfw" --bridge "$nobody" --wait 61min; then
  grep_check "flash push wait too long" err "at most 60min"
fi
if run "flash push help" 0 "$DXPU" flash push --help; then
  for opt in --bridge --allow-downgrade --no-reboot --reinstall --chunk-size --wait --timeout --attempts --json --key; do
    grep_check "flash push help" out "$opt"
  done
  checks=$((checks + 1))
  ! grep -q -- "--wait-s\|--timeout-ms" "$tmp/out" || fail "flash push help: lists an old spelling"
  grep_check "flash push help" out "Exit status"
fi
if run "flash status help" 0 "$DXPU" flash status --help; then
  for opt in --bridge --timeout --attempts --json; do
    grep_check "flash status help" out "$opt"
  done
fi

# --- pool simulate (no manager) -------------------------------------------------------------
if run "pool simulate make sample" 0 "$DXPU" pool simulate --make-sample "$tmp/trace" \
    --sample-nodes 40 --sample-pods 300; then
  grep_check "pool simulate make sample" out "wrote 40 nodes to .*nodes.csv and 300 pods to"
fi
if run "pool simulate sample" 0 "$DXPU" pool simulate --nodes "$tmp/trace/nodes.csv" \
    --pods "$tmp/trace/pods.csv" --seeds 3 --json; then
  json_check "pool simulate json" 'd["worlds"] == ["fixed", "dxpu"] and d["pods"]["read"] == 300 and
    d["pods"]["skipped"] == {} and
    [(p["policy"], p["world"]) for p in d["policies"]] == [("best-fit", "fixed"),
      ("random-fit", "fixed"), ("dxpu-naive", "dxpu")] and
    all(len(p["runs"]) == 3 and [r["seed"] for r in p["runs"]] == [42, 43, 44] and
        all(r["placed"] + r["refused"] == r["arrivals"] and 0 < r["allocated_milli"] <= r["capacity_milli"]
            and r["arrived_milli"] <= r["capacity_milli"] * 1.3 for r in p["runs"]) and
        0 < p["allocated_percent_at_ratio"]["mean"] <= 100 and len(p["mean_curve"]) > 50
        for p in d["policies"]) and
    d["reference"]["workload"] == "resnet-train" and
    0 < d["reference"]["overhead_pct_in_rack"] <= d["reference"]["overhead_pct_across_racks"] and
    0 <= d["policies"][2]["gpu_pods_in_rack_share"] <= 1 and
    d["reference"]["overhead_pct_in_rack"] <= d["policies"][2]["predicted_overhead_pct"]
      <= d["reference"]["overhead_pct_across_racks"]'
fi
if run "pool simulate text" 0 "$DXPU" pool simulate --nodes "$tmp/trace/nodes.csv" \
    --pods "$tmp/trace/pods.csv" --seeds 2 --policy first-fit --policy dxpu-scarcity \
    --policy k8s-default \
    --row-nodes 8 --ratio 1.1 --svg "$tmp/trace/curves.svg"; then
  grep_check "pool simulate text" out "^first-fit .*%"
  grep_check "pool simulate text" out "^dxpu-scarcity .*%"
  grep_check "pool simulate text" out "^k8s-default .*%"
  grep_check "pool simulate text" out "^predicted overhead of resnet-train through DxPU"
  grep_check "pool simulate text" out "^  dxpu-scarcity: .* in their host's rack"
  checks=$((checks + 1))
  python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot(); n = "{http://www.w3.org/2000/svg}"
sys.exit(0 if len(r.findall(n + "polyline")) == 3 and
  [t.text for t in r.findall(n + "text")][-4:-1] == ["first-fit", "dxpu-scarcity", "k8s-default"]
  else 1)' \
    "$tmp/trace/curves.svg" || fail "pool simulate --svg: not a chart of the two policies"
  grep_check "pool simulate text" out "until their GPU requests reach 110% of the GPUs"
fi
printf 'sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\n' > "$tmp/trace/bad-nodes.csv"
if run "pool simulate bad node list" 1 "$DXPU" pool simulate --nodes "$tmp/trace/bad-nodes.csv" \
    --pods "$tmp/trace/pods.csv" --json; then
  json_check "pool simulate bad node list" 'd["error"] == "bad-trace" and "bad-nodes.csv: line 1" in d["message"]'
fi
run "pool simulate no such file" 1 "$DXPU" pool simulate --nodes "$tmp/trace/none.csv" \
  --pods "$tmp/trace/pods.csv"
run "pool simulate no files" 2 "$DXPU" pool simulate
run "pool simulate bad policy" 2 "$DXPU" pool simulate --policy worst-fit
if run "pool simulate unknown reference" 1 "$DXPU" pool simulate --nodes "$tmp/trace/nodes.csv" \
    --pods "$tmp/trace/pods.csv" --seeds 1 --reference no-such-workload --json; then
  json_check "pool simulate unknown reference" 'd["error"] == "reference" and "no-such-workload" in d["message"]'
fi

# --- pool ---------------------------------------------------------------------------------
# Without a manager: a clear sentence naming the URL, exit 1; bad command lines: exit 2.
if run "pool no manager" 1 "$DXPU" pool status --manager http://127.0.0.1:1 --timeout 2; then
  grep_check "pool no manager" err "^dxpu pool status: unreachable: cannot connect to the manager at http://127.0.0.1:1"
fi
if run "pool no manager json" 1 "$DXPU" pool gpus --free --manager http://127.0.0.1:1 --json; then
  json_check "pool no manager json" 'd["error"] == "unreachable" and "http://127.0.0.1:1" in d["message"]'
fi
if run "pool manager from the environment" 1 env DXPU_MANAGER=127.0.0.1:1 "$DXPU" pool boxes; then
  grep_check "pool manager from the environment" err "manager at 127.0.0.1:1 "
fi
if run "pool audit no manager" 1 "$DXPU" pool audit --manager http://127.0.0.1:1 --json; then
  json_check "pool audit no manager" 'd["error"] == "no-answer" and "http://127.0.0.1:1" in d["message"]'
fi
if run "pool bad url" 2 "$DXPU" pool hosts --manager ftp://example; then
  grep_check "pool bad url" err "bad-url"
fi
run "pool prefer without a box" 2 "$DXPU" pool allocate --host h1 --count 1 --policy prefer \
  --manager http://127.0.0.1:1
run "pool bad policy" 2 "$DXPU" pool allocate --host h1 --count 1 --policy random
run "pool bad count" 2 "$DXPU" pool allocate --host h1 --count two
run "pool release without an ID" 2 "$DXPU" pool release
run "pool without subcommand" 2 "$DXPU" pool

# --- pki ----------------------------------------------------------------------------------
# The pool's CA and certificates (docs/manager.md "TLS and roles"), checked with openssl(1): a
# certificate the CA signed, its CN the identity, its key 0600; nothing overwritten.
pki=$tmp/pki
if run "pki init" 0 "$DXPU" pki init "$pki" --days 2; then
  grep_check "pki init" out "ca.crt"
fi
run "pki init again" 1 "$DXPU" pki init "$pki"
grep_check "pki init again" err "exists"
if run "pki issue host" 0 "$DXPU" pki issue "$pki" --cn host:h1 --san 127.0.0.1 --san h1.pool; then
  run "pki verify host" 0 openssl verify -CAfile "$pki/ca.crt" "$pki/host-h1.crt"
  run "pki subject" 0 openssl x509 -in "$pki/host-h1.crt" -noout -subject -ext subjectAltName
  grep_check "pki subject" out "CN = host:h1"
  grep_check "pki subject" out "IP Address:127.0.0.1, DNS:h1.pool"
  checks=$((checks + 1))
  [ "$(stat -c %a "$pki/host-h1.key")" = 600 ] || fail "pki issue: the key is not 0600"
fi
run "pki issue again" 1 "$DXPU" pki issue "$pki" --cn host:h1
run "pki bad cn" 1 "$DXPU" pki issue "$pki" --cn 'host:a/b'
run "pki bad san" 1 "$DXPU" pki issue "$pki" --cn reader --san 'not a name!'
run "pki no ca" 1 "$DXPU" pki issue "$tmp/no-ca" --cn reader
grep_check "pki no ca" err "no CA in"
run "pki without subcommand" 2 "$DXPU" pki
# A client certificate's files checked before any connection; a manager over TLS without one.
if run "pool bad tls files" 2 "$DXPU" pool status --manager https://127.0.0.1:1 --tls-cert "$tmp/none.crt" \
    --tls-key "$tmp/none.key" --tls-ca "$pki/ca.crt"; then
  grep_check "pool bad tls files" err "bad-tls: cannot read"
fi

# --- model --------------------------------------------------------------------------------
traces="$(cd "$(dirname "$0")/../../tests/perfmodel/data" && pwd)"
if run "model trace" 0 "$DXPU" model "$traces/small_trace.json" --json --svg "$tmp/m.svg" \
    --csv "$tmp/m.csv"; then
  json_check "model trace" 'd["counts"]["kernels"] == 4 and d["dxpu_us"] > d["native_us"]'
  json_check "model no warnings" 'd["warnings"] == []'
  json_check "model sweep" 'len(d["sweep"]) == 6 and all(a["overhead_pct"] < b["overhead_pct"] for a, b in zip(d["sweep"], d["sweep"][1:]))'
  json_check "model breakdown" 'abs(sum(d["breakdown_us"].values()) - (d["dxpu_us"] - d["native_us"])) < 1e-6'
  grep_check "model svg" m.svg "<polyline"
  [ "$(wc -l <"$tmp/m.csv")" = 7 ] || fail "model csv: $(wc -l <"$tmp/m.csv") lines, want 7"
  # Files written are named; with --json on stderr, stdout staying one JSON document.
  grep_check "model json wrote svg" err "^wrote $tmp/m.svg (the sweep's overhead curves, SVG)$"
  grep_check "model json wrote csv" err "^wrote $tmp/m.csv (the sweep, CSV)$"
fi
# A trace with what the model does not time as it ran: each said on stderr and in --json.
cat >"$tmp/nccl.json" <<'TRACE'
{"traceEvents": [
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 3, "dur": 9, "args": {"device": 0, "stream": 3, "correlation": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 4, "dur": 9, "args": {"correlation": 2}}
]}
TRACE
if run "model warnings" 0 "$DXPU" model "$tmp/nccl.json" --json; then
  json_check "model warnings json" 'len(d["warnings"]) == 1 and "NCCL/RCCL" in d["warnings"][0]'
  grep_check "model warnings stderr" err "^dxpu model: warning: 1 NCCL/RCCL kernels: 0 described"
fi
# One rank's trace of an 8-GPU all-reduce, described as PyTorch 2.x does: --placement places the
# whole group; over two boxes the ring's steps cross the fabric.
cat > "$tmp/nccl8.json" <<'TRACE'
{"traceEvents": [
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 3, "dur": 9000, "args": {"device": 0, "stream": 3, "correlation": 1, "Collective name": "allreduce", "In msg nelems": 16777216, "Out msg nelems": 16777216, "Group size": 8, "dtype": "Float"}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 4, "dur": 9000, "args": {"correlation": 2}}
]}
TRACE
if run "model collective" 0 "$DXPU" model "$tmp/nccl8.json" --placement 4,4 --sweep-latency 1us --json; then
  json_check "model collective" 'd["counts"]["collectives"] == 1 and d["breakdown_us"]["peer"] > 0'
fi
if run "model collective one box" 0 "$DXPU" model "$tmp/nccl8.json" --placement 8 --sweep-latency 1us --json; then
  json_check "model collective one box" 'd["breakdown_us"]["peer"] == 0'
fi
if run "model collective placement too small" 2 "$DXPU" model "$tmp/nccl8.json" --placement 2,2; then
  grep_check "model collective placement too small" err "the trace has 8 (its collectives' group; it shows 1)"
fi
if run "model svg text" 0 "$DXPU" model "$traces/small_trace.json" --svg "$tmp/m2.svg"; then
  checks=$((checks + 1))
  [ "$(tail -n 1 "$tmp/out")" = "wrote $tmp/m2.svg (the sweep's overhead curves, SVG)" ] ||
    fail "model svg text: last line $(tail -n 1 "$tmp/out"), want wrote $tmp/m2.svg ..."
  grep_check "model svg written" m2.svg "<polyline"
fi
gzip -c "$traces/small_trace.json" >"$tmp/t.json.gz"
if run "model gzip" 0 "$DXPU" model "$tmp/t.json.gz" --json; then
  json_check "model gzip" 'd["counts"]["kernels"] == 4 and d["counts"]["h2d_bytes"] == 4194304'
fi
if run "model summary" 0 "$DXPU" model --native 1ms --syncs 10 --h2d-copies 2 --h2d-bytes 1048576; then
  grep_check "model summary" out "where the added time goes"
fi
head -c 100 "$traces/small_trace.json" >"$tmp/cut.json"
run "model truncated trace" 1 "$DXPU" model "$tmp/cut.json" && grep_check "model truncated" err "cut.json"
run "model no workload" 2 "$DXPU" model && grep_check "model no workload" err "give a trace file"
printf '{"events": []}' >"$tmp/no-events.json"
if run "model unreadable trace" 1 "$DXPU" model "$tmp/no-events.json"; then
  grep_check "model unreadable trace" err "^dxpu model: .*no-events.json: no traceEvents array"
  checks=$((checks + 1))
  [ "$(grep -o 'no-events.json' "$tmp/err" | wc -l)" = 1 ] || fail "model unreadable trace: the path twice: $(cat "$tmp/err")"
fi
# A trace that cannot be read is exit 1 with the reader's reason (docs/perf-model.md), the file
# named once.
if run "model missing trace" 1 "$DXPU" model "$tmp/no-such-trace.json"; then
  grep_check "model missing trace" err "no-such-trace.json: cannot open: No such file"
  if [ "$(grep -o 'no-such-trace.json' "$tmp/err" | wc -l)" -ne 1 ]; then
    fail "model missing trace: the file is named more than once: $(cat "$tmp/err")"
  fi
fi
run "model bad MPS" 2 "$DXPU" model --native 10us --mps 300 && grep_check "model bad MPS" err "MPS"
# Durations with units; the old spellings (bare numbers in us or ns) still work, hidden.
if run "model durations" 0 "$DXPU" model "$traces/small_trace.json" --latency 2us --pcie-latency 300ns \
    --box-pcie-latency 0.5us --sweep-latency 0s,1.5us,2us --json; then
  json_check "model durations" 'd["params"]["added_latency_ns"] == 2000 and d["params"]["pcie_latency_ns"] == 300 and
    d["params"]["box_pcie_latency_ns"] == 500 and [p["added_latency_us"] for p in d["sweep"]] == [0, 1.5, 2]'
fi
if run "model legacy names" 0 "$DXPU" model "$traces/small_trace.json" --latency-us 2 --pcie-latency-ns 300 \
    --box-pcie-latency-ns 500 --sweep-latency-us 0,1.5,2 --json; then
  json_check "model legacy names" 'd["params"]["added_latency_ns"] == 2000 and d["params"]["pcie_latency_ns"] == 300 and
    d["params"]["box_pcie_latency_ns"] == 500 and [p["added_latency_us"] for p in d["sweep"]] == [0, 1.5, 2]'
fi
if run "model legacy native" 0 "$DXPU" model --native-us 1000 --syncs 10 --json; then
  json_check "model legacy native" 'd["native_us"] == 1000'
fi
if run "model latency without unit" 2 "$DXPU" model "$traces/small_trace.json" --latency 2; then
  grep_check "model latency without unit" err "^--latency: '2' has no unit"
fi
if run "model sweep latency too long" 2 "$DXPU" model "$traces/small_trace.json" --sweep-latency 1us,2s; then
  grep_check "model sweep latency too long" err "^--sweep-latency: 2s is outside 0s..1s"
fi
run "model both spellings" 2 "$DXPU" model "$traces/small_trace.json" --latency 2us --latency-us 2
run "model missing file" 1 "$DXPU" model "$tmp/none.json"
mkdir -p "$tmp/no-ranks"
if run "model directory without traces" 1 "$DXPU" model "$tmp/no-ranks"; then
  grep_check "model directory without traces" err "no trace files"
fi

# --- trace ------------------------------------------------------------------------------
if run "trace list" 0 "$DXPU" trace list; then
  grep_check "trace list" out "llm-decode"
fi
if run "trace record" 0 "$DXPU" trace record decode-loop --out "$tmp/d.json.gz" --json; then
  json_check "trace record" 'd["calls"] > 0 and d["gpu_ops"] > 0'
  if run "model recorded" 0 "$DXPU" model "$tmp/d.json.gz" --replay --sweep-latency 1us --json; then
    json_check "model replay" 'abs(d["replay"][0]["difference_pp"]) < 2 and d["replay"][0]["simulated_overhead_pct"] > 0'
  fi
fi
# GPUs over boxes: mlp-train's peer copies between boxes cost the fabric; a placement that does
# not fit the trace's GPUs is a usage error that says why.
run "trace record placed" 0 "$DXPU" trace record mlp-train --devices 4 --through-dxpu --placement 2,2 --out "$tmp/mlp4-placed.json.gz"
if run "trace record placed natively" 1 "$DXPU" trace record mlp-train --devices 4 --placement 2,2 --out "$tmp/x.json.gz"; then
  grep_check "trace record placed natively" err "a placement over boxes is for a run through DxPU"
fi
if run "trace record mlp4" 0 "$DXPU" trace record mlp-train --devices 4 --out "$tmp/mlp4.json.gz"; then
  if run "model placement" 0 "$DXPU" model "$tmp/mlp4.json.gz" --placement 2,2 --sweep-latency 1us --json; then
    json_check "model placement" 'd["breakdown_us"]["peer"] > 0 and d["counts"]["peer_copies_between_boxes"] > 0 and d["params"]["gpus_per_box"] == [2, 2]'
  fi
  if run "model one box" 0 "$DXPU" model "$tmp/mlp4.json.gz" --sweep-latency 1us --json; then
    json_check "model one box" 'd["breakdown_us"]["peer"] == 0 and d["counts"]["peer_copies_between_boxes"] == 0'
  fi
  if run "model bad placement" 2 "$DXPU" model "$tmp/mlp4.json.gz" --placement 2,1; then
    grep_check "model bad placement" err "the placement 2+1 holds 3 GPUs; the trace has 4"
  fi
fi
# --latency (a duration) and its old spelling --latency-us record the same trace.
if run "trace record latency" 0 "$DXPU" trace record decode-loop --through-dxpu --latency 2us --out "$tmp/l1.json"; then
  if run "trace record latency-us" 0 "$DXPU" trace record decode-loop --through-dxpu --latency-us 2 --out "$tmp/l2.json"; then
    checks=$((checks + 1))
    cmp -s "$tmp/l1.json" "$tmp/l2.json" || fail "trace record: --latency 2us and --latency-us 2 differ"
  fi
  if run "trace record latency 3us" 0 "$DXPU" trace record decode-loop --through-dxpu --latency 3us --out "$tmp/l3.json"; then
    checks=$((checks + 1))
    ! cmp -s "$tmp/l1.json" "$tmp/l3.json" || fail "trace record: --latency 3us records the same as 2us"
  fi
fi
run "trace record unknown" 1 "$DXPU" trace record nothing --out "$tmp/n.json" &&
  grep_check "trace record unknown" err "no workload named nothing"
run "model replay without a trace" 2 "$DXPU" model --native 10us --replay
# --replay's table holds the model with the simulator's parameters (sim-model), which differs
# from the predicted overhead with the parameters given; the output names the two apart.
shipped="$(cd "$(dirname "$0")/../traces" && pwd)"
# The shipped ROCm-format trace: the same workload as its CUDA twin, the same prediction.
if run "model rocm" 0 "$DXPU" model "$shipped/decode-loop-rocm.json.gz" --json; then
  cp "$tmp/out" "$tmp/rocm.json"
  if run "model rocm twin" 0 "$DXPU" model "$shipped/decode-loop.json.gz" --json; then
    python3 - "$tmp/rocm.json" "$tmp/out" <<'PY' || fail "model rocm: a prediction differs from the CUDA twin's"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(0 if a["counts"] == b["counts"] and a["overhead_pct"] == b["overhead_pct"] and
         a["counts"]["launches"] > 100 else 1)
PY
  fi
fi
if run "model replay names" 0 "$DXPU" model "$shipped/data-loading.json.gz" --replay --sweep-latency 1us; then
  grep_check "model replay names: sweep" out "^predicted overhead (%) by added one-way latency"
  grep_check "model replay names: columns" out "latency_us   sim native     sim dxpu  simulated  sim-model     diff"
  grep_check "model replay names: legend" out "sim-model: the model's prediction with the simulator's parameters"
  grep_check "model replay names: the other figure" out "^  the predicted overhead above is for the parameters given (one queue per stream, 24-byte TLP overhead: a real GPU and link), not the simulator's: [0-9.]*% at 1 us$"
fi
if run "model replay json" 0 "$DXPU" model "$shipped/data-loading.json.gz" --replay --sweep-latency 1us --json; then
  json_check "model replay json params" 'd["replay_params"]["serial_streams"] and d["replay_params"]["tlp_overhead_bytes"] == 12 and not d["params"]["serial_streams"] and d["params"]["tlp_overhead_bytes"] == 24'
  json_check "model replay json differ" 'abs(d["sweep"][0]["overhead_pct"] - d["replay"][0]["predicted_overhead_pct"]) > 0.5'
fi
# With the simulator's parameters given, both are one figure and no second line is printed.
if run "model replay same params" 0 "$DXPU" model "$shipped/data-loading.json.gz" --replay --sweep-latency 1us --serial-streams --tlp-overhead 12 --json; then
  json_check "model replay same params" 'abs(d["sweep"][0]["overhead_pct"] - d["replay"][0]["predicted_overhead_pct"]) < 1e-9'
fi
if run "model replay same params text" 0 "$DXPU" model "$shipped/data-loading.json.gz" --replay --sweep-latency 1us --serial-streams --tlp-overhead 12; then
  checks=$((checks + 1))
  ! grep -q "the predicted overhead above is for" "$tmp/out" || fail "model replay same params text: a second figure printed"
fi
if run "model timeline" 0 "$DXPU" model "$traces/small_trace.json" --latency 5us \
    --sweep-latency 5us --timeline "$tmp/timeline.json"; then
  cp "$tmp/timeline.json" "$tmp/out"
  json_check "model timeline" 'len([e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] >= 2000]) == 7 and
    len([e for e in d["traceEvents"] if e["ph"] == "X" and 1000 <= e["pid"] < 2000]) == 7 and
    all(e["args"]["later_us"] > 0 for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] >= 2000)'
fi
run "model timeline without a trace" 2 "$DXPU" model --native 10us --timeline "$tmp/t2.json" &&
  grep_check "model timeline without a trace" err "needs a trace"

# --- help and version -------------------------------------------------------------------
for cmd in "" "tlp" "tlp decode" "tlp encode" "crc32c" "demo" "sim" "sim fabric" "bench" "bench fabric" "bench gpu" "bench virtio" "bench pool" "run" "lspci" "pool" "pool simulate" "pool status" "pool boxes" "pool add-box" \
    "pool remove-box" "pool gpus" "pool hosts" "pool audit" "pool allocations" "pool list" "pool allocate" \
    "pool release" "pool show" "pool remove-host" "pki" "pki init" "pki issue" "flash" "flash keygen" "flash sign" "flash inspect" "flash init" "flash push" "flash status" "model" "trace" "trace record" "trace list" "version" \
    "rtl" "rtl regress" "bridge" "bridge status" "bridge assign" "bridge grant"; do
  # shellcheck disable=SC2086  # $cmd is a command path, split on purpose
  if run "help '$cmd'" 0 "$DXPU" $cmd --help; then
    grep_check "help '$cmd'" out "Usage\|USAGE\|usage"
    # Descriptions wrap (lib/cli's formatter; sim, bench and rtl printed 400-character lines),
    # and no old spelling is taught (docs/cli.md).
    checks=$((checks + 2))
    long=$(awk 'length > 100 && $1 != "dxpu"' "$tmp/out")  # an example command line stays whole
    [ -z "$long" ] || fail "help '$cmd': lines over 100 columns: $long"
    ! grep -qE -- '--(to|management|node|id|timeout-ms|wait-s|heartbeat-ms|latency-us|duration-ms|min-rto-us|native-us|pcie-latency-ns|sweep-latency-us)\b([^-]|$)' "$tmp/out" ||
      fail "help '$cmd': lists an old spelling: $(grep -E -- '--(to|management|node|id|timeout-ms|wait-s)\b' "$tmp/out")"
  fi
done
if run "version" 0 "$DXPU" version; then
  grep_check "version" out "^dxpu [0-9]"
fi

echo "cli_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
