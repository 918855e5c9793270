#!/usr/bin/env bash
# The Wireshark dissector (tools/wireshark/dxfp.lua) against a capture that
# lib/core's frame writer produced: every field below must come out as the
# writer put it in (tests/tools/dxfp_pcap_writer.cc lists the frames).
# Usage: wireshark_test.sh PCAP_WRITER DISSECTOR
set -euo pipefail
writer=${1:?usage: wireshark_test.sh PCAP_WRITER DISSECTOR}
lua=${2:?usage: wireshark_test.sh PCAP_WRITER DISSECTOR}
command -v tshark >/dev/null || { echo "FAIL: tshark not installed (tools/bootstrap)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$writer" "$tmp/dxfp.pcap"
# Wireshark warns on stderr when run as root; the fields are on stdout.
tshark -X "lua_script:$lua" -r "$tmp/dxfp.pcap" -T fields -E separator='|' \
  -e frame.number -e dxfp.type -e dxfp.seq -e dxfp.ack -e dxfp.tlp.seq -e dxfp.tlp.kind \
  -e dxfp.crc.ok -e dxfp.tlp.addr -e dxfp.tlp.tag -e dxfp.tlp.byte_count \
  -e dxfp.hello.node_id -e dxfp.hello.max_frame -e dxfp.credit.hdr -e dxfp.credit.data \
  2>"$tmp/err" >"$tmp/got" || { cat "$tmp/err" >&2; exit 1; }

# frame|type|seq|ack|tlp seqs|kinds|crc ok|addresses|tags|byte count|node|max frame|hdr credits|data credits
cat >"$tmp/want" <<'WANT'
1|3|100|7|100,101,102|MRd,CplD,MWr|1|0x0000000400000010,0x00000000f0000040|0x0007,0x0007,0x0000|4||||
2|1|0|0|||1||||0x1122334455667788|1472|64,32,64|1024,0,1024
3|3|5|7|5,6,7|MRd,CplD,MWr|0|0x0000000400000010,0x00000000f0000040|0x0007,0x0007,0x0000|4||||
WANT
if ! diff -u "$tmp/want" "$tmp/got"; then
  echo "FAIL: dissector output differs (want above, got below)" >&2
  exit 1
fi
if grep -qi 'lua.*error\|attempt to' "$tmp/err"; then
  cat "$tmp/err" >&2
  echo "FAIL: Lua errors" >&2
  exit 1
fi
echo "PASS: dxfp.lua dissects Ethernet and UDP DxFP frames, TLP records and the CRC check"
