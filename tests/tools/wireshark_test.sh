#!/usr/bin/env bash
# The Wireshark dissector (tools/wireshark/dxfp.lua) against a capture that
# lib/core's frame writer produced: every field below must come out as the
# writer put it in (tests/tools/dxfp_pcap_writer.cc lists the frames). Then the
# UDP frames on another port: decoded with the preference dxfp.udp_ports (and
# only on the ports it names), with Decode As, and by the heuristic, which
# leaves a datagram whose CRC32C does not match alone.
# All of it twice: with -X lua_script:DISSECTOR alone, then with the dissector also in the
# personal Lua plugin directory (linked there as docs/install.md says), which loads it a second
# time: no Lua error, and every check as before.
# Usage: wireshark_test.sh PCAP_WRITER DISSECTOR
set -euo pipefail
writer=${1:?usage: wireshark_test.sh PCAP_WRITER DISSECTOR}
lua=${2:?usage: wireshark_test.sh PCAP_WRITER DISSECTOR}
command -v tshark >/dev/null || { echo "FAIL: tshark not installed (tools/bootstrap)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A HOME of its own: neither the preferences nor the plugins of whoever runs the test.
export HOME=$tmp/home
unset XDG_CONFIG_HOME
mkdir -p "$HOME"
lua_errors='lua.*error\|attempt to\|Error during loading'

"$writer" "$tmp/dxfp.pcap"
"$writer" "$tmp/other.pcap" 36767
# frame|type|seq|ack|tlp seqs|kinds|crc ok|addresses|tags|byte count|node|max frame|hdr credits|data credits
cat >"$tmp/want" <<'WANT'
1|3|100|7|100,101,102|MRd,CplD,MWr|1|0x0000000400000010,0x00000000f0000040|0x0007,0x0007,0x0000|4||||
2|1|0|0|||1||||0x1122334455667788|1472|64,32,64|1024,0,1024
3|3|5|7|5,6,7|MRd,CplD,MWr|0|0x0000000400000010,0x00000000f0000040|0x0007,0x0007,0x0000|4||||
4|1|0|0|||0||||0x1122334455667788|1472|64,32,64|1024,0,1024
WANT
plugins=$HOME/.local/lib/wireshark/plugins
for mode in "-X alone" "-X and the personal Lua plugin directory"; do
  if [ "$mode" != "-X alone" ]; then
    mkdir -p "$plugins"
    ln -s "$(realpath "$lua")" "$plugins/dxfp.lua"
    # tshark -G folders names the directory; -G plugins shows the dissector is found there.
    folders=$(tshark -G folders 2>/dev/null)
    if ! grep -q "^Personal Lua Plugins:[[:space:]]*$plugins\$" <<<"$folders"; then
      echo "$folders" >&2
      echo "FAIL: tshark's personal Lua plugin directory is not $plugins" >&2
      exit 1
    fi
    grep -q "dxfp\.lua.*lua script.*$plugins/dxfp\.lua" <<<"$(tshark -G plugins 2>/dev/null)" ||
      { echo "FAIL: tshark -G plugins does not list $plugins/dxfp.lua" >&2; exit 1; }
  fi
  echo "--- $mode"

  # Wireshark warns on stderr when run as root; the fields are on stdout.
  tshark -X "lua_script:$lua" -r "$tmp/dxfp.pcap" -T fields -E separator='|' \
    -e frame.number -e dxfp.type -e dxfp.seq -e dxfp.ack -e dxfp.tlp.seq -e dxfp.tlp.kind \
    -e dxfp.crc.ok -e dxfp.tlp.addr -e dxfp.tlp.tag -e dxfp.tlp.byte_count \
    -e dxfp.hello.node_id -e dxfp.hello.max_frame -e dxfp.credit.hdr -e dxfp.credit.data \
    2>"$tmp/err" >"$tmp/got" || { cat "$tmp/err" >&2; exit 1; }

  if grep -qi "$lua_errors" "$tmp/err"; then
    cat "$tmp/err" >&2
    echo "FAIL: Lua errors ($mode)" >&2
    exit 1
  fi
  if ! diff -u "$tmp/want" "$tmp/got"; then
    echo "FAIL: dissector output differs ($mode; want above, got below)" >&2
    exit 1
  fi

  # The UDP frames (2 and 4) as the dissector sees them: port|type|crc ok|node.
  udp_rows() {  # udp_rows PCAP TSHARK_ARGS...: the UDP frames, one line each
    local pcap=$1
    shift
    tshark -X "lua_script:$lua" "$@" -r "$pcap" -Y udp -T fields -E separator='|' \
      -e udp.dstport -e dxfp.type -e dxfp.crc.ok -e dxfp.hello.node_id 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; echo "FAIL: tshark $* -r $pcap" >&2; exit 1; }
    if grep -qi "$lua_errors" "$tmp/err"; then
      cat "$tmp/err" >&2
      echo "FAIL: Lua errors with $* ($mode)" >&2
      exit 1
    fi
  }
  fails=0
  check() {  # check WHAT WANT PCAP TSHARK_ARGS...
    local what=$1 want=$2 got
    shift 2
    got=$(udp_rows "$@" | tr '\n' ' ')
    if [ "$got" != "$want" ]; then
      echo "FAIL: $what ($mode): want '$want', got '$got'" >&2
      fails=$((fails + 1))
    fi
  }
  both='1|1|0x1122334455667788 |1|0|0x1122334455667788 '
  decoded() { echo "$1|$both" | sed "s/ |/ $1|/"; }
  none() { echo "$1||| $1||| "; }
  noheur=(--disable-heuristic dxfp_udp)
  check "another port, no preference" "$(none 36767)" "$tmp/other.pcap" "${noheur[@]}"
  check "-o dxfp.udp_ports:36767" "$(decoded 36767)" "$tmp/other.pcap" "${noheur[@]}" \
    -o dxfp.udp_ports:36767
  check "-o dxfp.udp_ports:36767 leaves 17480" "$(none 17480)" "$tmp/dxfp.pcap" "${noheur[@]}" \
    -o dxfp.udp_ports:36767
  check "-o dxfp.udp_ports:17480,36000-36999 (36767)" "$(decoded 36767)" "$tmp/other.pcap" \
    "${noheur[@]}" -o dxfp.udp_ports:17480,36000-36999
  check "-o dxfp.udp_ports:17480,36000-36999 (17480)" "$(decoded 17480)" "$tmp/dxfp.pcap" \
    "${noheur[@]}" -o dxfp.udp_ports:17480,36000-36999
  check "Decode As -d udp.port==36767,dxfp" "$(decoded 36767)" "$tmp/other.pcap" "${noheur[@]}" \
    -d udp.port==36767,dxfp
  check "the heuristic (a good CRC only)" "36767|1|1|0x1122334455667788 36767||| " \
    "$tmp/other.pcap"
  check "the heuristic off by preference" "$(none 36767)" "$tmp/other.pcap" \
    -o dxfp.heuristic:FALSE
  if [ "$fails" -ne 0 ]; then
    echo "FAIL: $fails of the UDP port checks ($mode)" >&2
    exit 1
  fi
done
# An authenticated session's first frames: the handshake's records in HELLO and WELCOME, then a
# sealed DATA shown as counter, encrypted records and tag (no TLP, no CRC).
# frame|type|sealed|record types|ephemeral key bytes|mac1 bytes|counter|encrypted bytes|tag bytes|
# TLP kind|mac2 bytes|cookie nonce bytes|sealed cookie bytes
"$writer" --auth "$tmp/auth.pcap"
tshark -X "lua_script:$lua" -r "$tmp/auth.pcap" -T fields -E separator='|' \
  -e frame.number -e dxfp.type -e dxfp.flags.sealed -e dxfp.rec.type -e dxfp.noise.ephemeral \
  -e dxfp.mac1 -e dxfp.sealed.counter -e dxfp.sealed.records -e dxfp.sealed.tag -e dxfp.tlp.kind \
  -e dxfp.mac2 -e dxfp.cookie.nonce -e dxfp.cookie.sealed \
  2>"$tmp/err" >"$tmp/auth" || { cat "$tmp/err" >&2; exit 1; }
if grep -qi "$lua_errors" "$tmp/err"; then
  cat "$tmp/err" >&2
  echo "FAIL: Lua errors (the authenticated capture)" >&2
  exit 1
fi
# Hex fields become their lengths in bytes, so the check does not depend on the random keys.
awk -F'|' 'function n(h) { gsub(/:/, "", h); return length(h) / 2 }
  { printf "%s|%s|%s|%s|%d|%d|%s|%d|%d|%s|%d|%d|%d\n", $1, $2, $3, $4, n($5), n($6), $7, n($8),
      n($9), $10, n($11), n($12), n($13) }' \
  "$tmp/auth" >"$tmp/auth-got"
# The sealed DATA: its records (CREDIT 28 bytes, the MWr's record 24) encrypted, 52 bytes.
cat >"$tmp/auth-want" <<'WANT'
1|1|0|3,2,5,6,7|32|16||0|0||16|0|0
2|2|0|3,2,5|32|0||0|0||0|0|0
3|3|1||0|0|0|52|16||0|0|0
4|5|0|8|0|0||0|0||0|16|32
WANT
if ! diff -u "$tmp/auth-want" "$tmp/auth-got"; then
  echo "FAIL: the authenticated capture (want above, got below)" >&2
  exit 1
fi
echo "PASS: dxfp.lua dissects Ethernet and UDP DxFP frames, TLP records and the CRC check;" \
  "UDP on the ports of dxfp.udp_ports, by Decode As and by its heuristic; loaded twice" \
  "(a plugin and -X lua_script), the same without an error; the handshake's records and" \
  "sealed frames, the cookie records and COOKIE frames"
