-- dxfp.lua: Wireshark/tshark dissector for DxFP (DxPU Fabric Protocol) and the PCIe TLPs it carries.
-- Layout: docs/protocol.md, section 4 (frames) and sections 5-9 (TLPs).
--   wireshark -X lua_script:tools/wireshark/dxfp.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/dxfp.lua -r capture.pcap -V
-- Registers on EtherType 0x88B5 and the UDP ports of the preference dxfp.udp_ports (17480 by
-- default; `tshark -o dxfp.udp_ports:36767`, or a range such as 17480,36000-36999), and as a
-- heuristic on any other UDP port (preference dxfp.heuristic). Checks the CRC32C trailer; a
-- sealed frame (docs/protocol.md 4.12) shows its counter, encrypted records and tag instead.
-- Loaded twice (a copy in a Lua plugin directory and -X lua_script:... too), the second load
-- does nothing: the first one's protocol dissects (docs/protocol.md, 4.10).

local created, dxfp = pcall(Proto, "dxfp", "DxPU Fabric Protocol")
if not created then
  -- Proto refuses a second protocol named dxfp. Where dxfp is registered already, by an earlier
  -- load of this file, that is the one in use: stop here, without an error. Anything else is one.
  for _, name in ipairs(Dissector.list()) do
    if name == "dxfp" then return end
  end
  error(dxfp, 0)
end

local frame_types = { [1] = "HELLO", [2] = "WELCOME", [3] = "DATA", [4] = "CLOSE", [5] = "COOKIE" }
local record_types = {
  [1] = "TLP", [2] = "CREDIT", [3] = "HELLO", [4] = "CLOSE", [5] = "NOISE", [6] = "MAC1",
  [7] = "MAC2", [8] = "COOKIE",
}
local close_reasons = {
  [1] = "shutdown", [2] = "unknown-session", [3] = "unsupported-version",
  [4] = "protocol-error", [5] = "released", [6] = "link-timeout",
}
local cpl_status = { [0] = "SC", [1] = "UR", [2] = "CRS", [4] = "CA" }
local routing = {
  [0] = "to-rc", [1] = "by-address", [2] = "by-id", [3] = "broadcast", [4] = "local", [5] = "gather",
}
local classes = { "posted", "non-posted", "completion" }

local f = dxfp.fields
f.version = ProtoField.uint8("dxfp.version", "Version")
f.type = ProtoField.uint8("dxfp.type", "Type", base.DEC, frame_types)
f.flags = ProtoField.uint8("dxfp.flags", "Flags", base.HEX)
f.ack_req = ProtoField.bool("dxfp.flags.ack_req", "ACK_REQ", 8, nil, 0x01)
f.nak = ProtoField.bool("dxfp.flags.nak", "NAK", 8, nil, 0x02)
f.sealed = ProtoField.bool("dxfp.flags.sealed", "SEALED", 8, nil, 0x04)
-- Authenticated sessions (docs/protocol.md 4.12): the handshake's records, and sealed frames.
f.noise_e = ProtoField.bytes("dxfp.noise.ephemeral", "Ephemeral key (e)")
f.noise_s = ProtoField.bytes("dxfp.noise.static", "Encrypted static key (s) and tag")
f.noise_ts = ProtoField.bytes("dxfp.noise.timestamp", "Encrypted timestamp and tag")
f.noise_tag = ProtoField.bytes("dxfp.noise.tag", "Empty payload's tag")
f.mac1 = ProtoField.bytes("dxfp.mac1", "MAC1")
f.mac2 = ProtoField.bytes("dxfp.mac2", "MAC2 (zeros: no cookie)")
f.cookie_nonce = ProtoField.bytes("dxfp.cookie.nonce", "Cookie nonce")
f.cookie_sealed = ProtoField.bytes("dxfp.cookie.sealed", "Sealed cookie and tag")
f.seal_counter = ProtoField.uint64("dxfp.sealed.counter", "Counter (nonce)")
f.seal_records = ProtoField.bytes("dxfp.sealed.records", "Encrypted records")
f.seal_tag = ProtoField.bytes("dxfp.sealed.tag", "Tag (Poly1305)")
f.length = ProtoField.uint16("dxfp.length", "Length")
f.nrec = ProtoField.uint16("dxfp.nrec", "Record count")
f.dst_session = ProtoField.uint32("dxfp.dst_session", "Destination session", base.HEX)
f.src_session = ProtoField.uint32("dxfp.src_session", "Source session", base.HEX)
f.dst_epoch = ProtoField.uint32("dxfp.dst_epoch", "Destination epoch", base.HEX)
f.src_epoch = ProtoField.uint32("dxfp.src_epoch", "Source epoch", base.HEX)
f.seq = ProtoField.uint32("dxfp.seq", "Sequence")
f.ack = ProtoField.uint32("dxfp.ack", "Acknowledgement")
f.crc = ProtoField.uint32("dxfp.crc", "CRC32C", base.HEX)
f.crc_ok = ProtoField.bool("dxfp.crc.ok", "CRC32C correct")
f.rec_type = ProtoField.uint8("dxfp.rec.type", "Record type", base.DEC, record_types)
f.rec_len = ProtoField.uint16("dxfp.rec.len", "Body length")
f.credit_hdr = ProtoField.uint32("dxfp.credit.hdr", "Header credit limit")
f.credit_data = ProtoField.uint32("dxfp.credit.data", "Data credit limit (16 B)")
f.hello_vmin = ProtoField.uint8("dxfp.hello.version_min", "Lowest version")
f.hello_vmax = ProtoField.uint8("dxfp.hello.version_max", "Highest version")
f.hello_caps = ProtoField.uint16("dxfp.hello.caps", "Capabilities", base.HEX)
f.hello_max_frame = ProtoField.uint16("dxfp.hello.max_frame", "Max frame")
f.hello_node = ProtoField.uint64("dxfp.hello.node_id", "Node ID", base.HEX)
f.hello_window = ProtoField.uint32("dxfp.hello.replay_window", "Replay window (TLPs)")
f.close_reason = ProtoField.uint16("dxfp.close.reason", "Reason", base.DEC, close_reasons)
f.tlp_seq = ProtoField.uint32("dxfp.tlp.seq", "TLP sequence")
f.tlp_kind = ProtoField.string("dxfp.tlp.kind", "Kind")
f.tlp_fmt = ProtoField.uint8("dxfp.tlp.fmt", "Fmt", base.HEX)
f.tlp_type = ProtoField.uint8("dxfp.tlp.type", "Type", base.HEX)
f.tlp_tc = ProtoField.uint8("dxfp.tlp.tc", "TC")
f.tlp_attr = ProtoField.uint8("dxfp.tlp.attr", "Attr", base.HEX)
f.tlp_len = ProtoField.uint16("dxfp.tlp.length", "Length (DW)")
f.tlp_req = ProtoField.string("dxfp.tlp.requester", "Requester ID")
f.tlp_tag = ProtoField.uint16("dxfp.tlp.tag", "Tag", base.HEX)
f.tlp_fbe = ProtoField.uint8("dxfp.tlp.first_be", "First DW BE", base.HEX)
f.tlp_lbe = ProtoField.uint8("dxfp.tlp.last_be", "Last DW BE", base.HEX)
f.tlp_addr = ProtoField.uint64("dxfp.tlp.addr", "Address", base.HEX)
f.tlp_target = ProtoField.string("dxfp.tlp.target", "Target ID")
f.tlp_reg = ProtoField.uint16("dxfp.tlp.reg", "Register", base.HEX)
f.tlp_cpl = ProtoField.string("dxfp.tlp.completer", "Completer ID")
f.tlp_status = ProtoField.uint8("dxfp.tlp.status", "Status", base.DEC, cpl_status)
f.tlp_bc = ProtoField.uint16("dxfp.tlp.byte_count", "Byte Count")
f.tlp_la = ProtoField.uint8("dxfp.tlp.lower_addr", "Lower Address", base.HEX)
f.tlp_code = ProtoField.uint8("dxfp.tlp.msg_code", "Message code", base.HEX)
f.tlp_routing = ProtoField.uint8("dxfp.tlp.routing", "Routing", base.DEC, routing)
f.tlp_payload = ProtoField.bytes("dxfp.tlp.payload", "Payload")

-- CRC32C (Castagnoli, reflected 0x82F63B78), table-driven.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) ~= 0 then
      c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78)
    else
      c = bit32.rshift(c, 1)
    end
  end
  crc_table[i] = c
end

local function crc32c(tvb, offset, len)
  local crc = 0xFFFFFFFF
  for i = offset, offset + len - 1 do
    local idx = bit32.band(bit32.bxor(crc, tvb(i, 1):uint()), 0xFF)
    crc = bit32.bxor(crc_table[idx], bit32.rshift(crc, 8))
  end
  return bit32.bnot(crc)
end

local function bdf(id)
  return string.format("%02x:%02x.%x", bit32.rshift(id, 8), bit32.band(bit32.rshift(id, 3), 0x1F),
    bit32.band(id, 7))
end

local function tlp_kind(fmt, typ)
  local data = bit32.band(fmt, 2) ~= 0
  if typ == 0x00 and fmt <= 3 then return data and "MWr" or "MRd" end
  if typ == 0x04 and fmt % 2 == 0 then return data and "CfgWr0" or "CfgRd0" end
  if typ == 0x05 and fmt % 2 == 0 then return data and "CfgWr1" or "CfgRd1" end
  if typ == 0x0A and fmt % 2 == 0 then return data and "CplD" or "Cpl" end
  if bit32.band(typ, 0x18) == 0x10 and fmt % 2 == 1 and fmt <= 3 then
    return data and "MsgD" or "Msg"
  end
  return nil
end

local function dissect_tlp(tvb, tree, seq)
  local t = tree:add(tvb, "TLP")
  t:add(f.tlp_seq, seq):set_generated()
  if tvb:len() < 4 then
    t:add_expert_info(PI_MALFORMED, PI_ERROR, "TLP shorter than DW0")
    return
  end
  local b0, b1, b2 = tvb(0, 1):uint(), tvb(1, 1):uint(), tvb(2, 1):uint()
  local fmt, typ = bit32.rshift(b0, 5), bit32.band(b0, 0x1F)
  local kind = tlp_kind(fmt, typ)
  t:add(f.tlp_kind, kind or "not carried"):set_generated()
  t:add(f.tlp_fmt, tvb(0, 1), fmt)
  t:add(f.tlp_type, tvb(0, 1), typ)
  t:add(f.tlp_tc, tvb(1, 1), bit32.band(bit32.rshift(b1, 4), 7))
  local attr = bit32.bor(bit32.band(bit32.rshift(b2, 4), 3), bit32.band(b1, 4))
  t:add(f.tlp_attr, tvb(1, 2), attr)
  local len = bit32.bor(bit32.lshift(bit32.band(b2, 3), 8), tvb(3, 1):uint())
  if len == 0 then len = 1024 end
  t:add(f.tlp_len, tvb(2, 2), len)
  local hdr = bit32.band(fmt, 1) ~= 0 and 16 or 12
  if kind == nil or tvb:len() < hdr then
    t:set_text("TLP (" .. (kind or "not carried") .. ")")
    return
  end
  local tag_hi = (bit32.band(b1, 0x80) ~= 0 and 0x200 or 0) + (bit32.band(b1, 0x08) ~= 0 and 0x100 or 0)
  local summary = kind
  if kind == "Cpl" or kind == "CplD" then
    local cid, req = tvb(4, 2):uint(), tvb(8, 2):uint()
    t:add(f.tlp_cpl, tvb(4, 2), bdf(cid))
    t:add(f.tlp_status, tvb(6, 1), bit32.rshift(tvb(6, 1):uint(), 5))
    local bc = bit32.bor(bit32.lshift(bit32.band(tvb(6, 1):uint(), 0x0F), 8), tvb(7, 1):uint())
    if bc == 0 then bc = 4096 end
    t:add(f.tlp_bc, tvb(6, 2), bc)
    t:add(f.tlp_req, tvb(8, 2), bdf(req))
    t:add(f.tlp_tag, tvb(10, 1), tag_hi + tvb(10, 1):uint())
    t:add(f.tlp_la, tvb(11, 1), bit32.band(tvb(11, 1):uint(), 0x7F))
    summary = string.format("%s tag=0x%03x bc=%d", kind, tag_hi + tvb(10, 1):uint(), bc)
  else
    t:add(f.tlp_req, tvb(4, 2), bdf(tvb(4, 2):uint()))
    t:add(f.tlp_tag, tvb(6, 1), tag_hi + tvb(6, 1):uint())
    if kind == "Msg" or kind == "MsgD" then
      t:add(f.tlp_code, tvb(7, 1))
      t:add(f.tlp_routing, tvb(0, 1), bit32.band(typ, 7))
      summary = string.format("%s code=0x%02x", kind, tvb(7, 1):uint())
    else
      t:add(f.tlp_fbe, tvb(7, 1), bit32.band(tvb(7, 1):uint(), 0x0F))
      t:add(f.tlp_lbe, tvb(7, 1), bit32.rshift(tvb(7, 1):uint(), 4))
      if kind == "MRd" or kind == "MWr" then
        local addr
        if hdr == 16 then
          addr = UInt64.new(bit32.band(tvb(12, 4):uint(), 0xFFFFFFFC), tvb(8, 4):uint())
          t:add(f.tlp_addr, tvb(8, 8), addr)
        else
          addr = UInt64.new(bit32.band(tvb(8, 4):uint(), 0xFFFFFFFC), 0)
          t:add(f.tlp_addr, tvb(8, 4), addr)
        end
        summary = string.format("%s addr=0x%s len=%d", kind, addr:tohex(), len)
      else
        t:add(f.tlp_target, tvb(8, 2), bdf(tvb(8, 2):uint()))
        local reg = bit32.bor(bit32.lshift(bit32.band(tvb(10, 1):uint(), 0x0F), 8),
          bit32.band(tvb(11, 1):uint(), 0xFC))
        t:add(f.tlp_reg, tvb(10, 2), reg)
        summary = string.format("%s target=%s reg=0x%03x", kind, bdf(tvb(8, 2):uint()), reg)
      end
    end
  end
  if bit32.band(fmt, 2) ~= 0 and tvb:len() > hdr then
    t:add(f.tlp_payload, tvb(hdr, math.min(len * 4, tvb:len() - hdr)))
  end
  t:set_text(string.format("TLP seq %d: %s", seq, summary))
  return summary
end

local function dissect_record(tvb, tree, frame_seq, tlp_index)
  local rtype, blen = tvb(0, 1):uint(), tvb(2, 2):uint()
  local padded = bit32.band(blen + 3, 0xFFFC)
  local r = tree:add(tvb(0, math.min(4 + padded, tvb:len())),
    "Record: " .. (record_types[rtype] or ("unknown " .. rtype)))
  r:add(f.rec_type, tvb(0, 1))
  r:add(f.rec_len, tvb(2, 2))
  if 4 + blen > tvb:len() then
    r:add_expert_info(PI_MALFORMED, PI_ERROR, "record runs past the frame")
    return nil, 0
  end
  local body = tvb(4, blen):tvb()
  local summary
  if rtype == 1 then
    summary = dissect_tlp(body, r, (frame_seq + tlp_index) % 4294967296)
  elseif rtype == 2 and blen == 24 then
    for i = 0, 2 do
      local c = r:add(body(8 * i, 8), classes[i + 1])
      c:add(f.credit_hdr, body(8 * i, 4))
      c:add(f.credit_data, body(8 * i + 4, 4))
    end
  elseif rtype == 3 and blen == 24 then
    r:add(f.hello_vmin, body(0, 1))
    r:add(f.hello_vmax, body(1, 1))
    r:add(f.hello_caps, body(2, 2))
    r:add(f.hello_max_frame, body(4, 2))
    r:add(f.hello_node, body(8, 8))
    r:add(f.hello_window, body(16, 4))
  elseif rtype == 4 and blen == 8 then
    r:add(f.close_reason, body(0, 2))
  elseif rtype == 5 and blen == 104 then  -- HELLO: e, s (32 + 16), timestamp (8 + 16)
    r:add(f.noise_e, body(0, 32))
    r:add(f.noise_s, body(32, 48))
    r:add(f.noise_ts, body(80, 24))
  elseif rtype == 5 and blen == 48 then  -- WELCOME: e, the empty payload's tag
    r:add(f.noise_e, body(0, 32))
    r:add(f.noise_tag, body(32, 16))
  elseif rtype == 6 and blen == 16 then
    r:add(f.mac1, body(0, 16))
  elseif rtype == 7 and blen == 16 then
    r:add(f.mac2, body(0, 16))
  elseif rtype == 8 and blen == 48 then
    r:add(f.cookie_nonce, body(0, 16))
    r:add(f.cookie_sealed, body(16, 32))
  end
  return summary, 4 + padded
end

function dxfp.dissector(tvb, pinfo, tree)
  if tvb:len() < 36 then return 0 end
  pinfo.cols.protocol = "DxFP"
  local flen = tvb(4, 2):uint()
  local t = tree:add(dxfp, tvb(0, math.min(flen, tvb:len())))
  t:add(f.version, tvb(0, 1))
  t:add(f.type, tvb(1, 1))
  local fl = t:add(f.flags, tvb(2, 1))
  fl:add(f.ack_req, tvb(2, 1))
  fl:add(f.nak, tvb(2, 1))
  fl:add(f.sealed, tvb(2, 1))
  t:add(f.length, tvb(4, 2))
  t:add(f.nrec, tvb(6, 2))
  t:add(f.dst_session, tvb(8, 4))
  t:add(f.src_session, tvb(12, 4))
  t:add(f.dst_epoch, tvb(16, 4))
  t:add(f.src_epoch, tvb(20, 4))
  t:add(f.seq, tvb(24, 4))
  t:add(f.ack, tvb(28, 4))
  if flen < 36 or flen > tvb:len() then
    t:add_expert_info(PI_MALFORMED, PI_ERROR, "Length outside the frame")
    return tvb:len()
  end
  if bit32.band(tvb(2, 1):uint(), 4) ~= 0 then
    -- Sealed: the counter in the clear, the records encrypted, the tag instead of the CRC.
    if flen < 56 then
      t:add_expert_info(PI_MALFORMED, PI_ERROR, "sealed frame shorter than its counter and tag")
      return flen
    end
    t:add(f.seal_counter, tvb(32, 8))
    t:add(f.seal_records, tvb(40, flen - 56))
    t:add(f.seal_tag, tvb(flen - 16, 16))
    pinfo.cols.info = string.format("%s sealed counter=%s seq=%d ack=%d (%d bytes encrypted)",
      frame_types[tvb(1, 1):uint()] or "?", tostring(tvb(32, 8):uint64()), tvb(24, 4):uint(),
      tvb(28, 4):uint(), flen - 56)
    return flen
  end
  local crc = tvb(flen - 4, 4):uint()
  t:add(f.crc, tvb(flen - 4, 4))
  local ok = crc32c(tvb, 0, flen - 4) == crc
  t:add(f.crc_ok, ok):set_generated()
  if not ok then t:add_expert_info(PI_CHECKSUM, PI_ERROR, "bad CRC32C") end

  local ftype = tvb(1, 1):uint()
  local seq = tvb(24, 4):uint()
  local info = string.format("%s seq=%d ack=%d", frame_types[ftype] or "?", seq, tvb(28, 4):uint())
  local off, tlps, nrec = 32, 0, tvb(6, 2):uint()
  local kinds = {}
  for _ = 1, nrec do
    if off + 4 > flen - 4 then break end
    local summary, used = dissect_record(tvb(off, flen - 4 - off):tvb(), t, seq, tlps)
    if used == 0 then break end
    if tvb(off, 1):uint() == 1 then
      tlps = tlps + 1
      if summary then kinds[#kinds + 1] = summary end
    end
    off = off + used
  end
  if #kinds > 0 then info = info .. " [" .. table.concat(kinds, ", ") .. "]" end
  pinfo.cols.info = info
  return flen
end

DissectorTable.get("ethertype"):add(0x88B5, dxfp)

-- The UDP ports: a preference (Edit > Preferences > Protocols > DxFP, or -o dxfp.udp_ports:...),
-- registered in udp.port again whenever it changes. DxFP can also be picked in Decode As.
dxfp.prefs.udp_ports = Pref.range("UDP ports", "17480",
  "UDP ports decoded as DxFP: a port, a range or a list (17480,36000-36999)", 65535)
local udp_port = DissectorTable.get("udp.port")
udp_port:add_for_decode_as(dxfp)
local udp_registered = ""

local function register_udp_ports()
  local ports = tostring(dxfp.prefs.udp_ports or "")
  if ports == udp_registered then return end
  if udp_registered ~= "" then udp_port:remove(udp_registered, dxfp) end
  if ports ~= "" then udp_port:add(ports, dxfp) end
  udp_registered = ports
end

-- Any other UDP port: a datagram that starts with a DxFP header (version 1, a frame type, a
-- length that fits) and ends its frame with the right CRC32C is DxFP. The demo's bridges listen
-- on ports the kernel picks; this finds them without knowing. Off with the preference
-- dxfp.heuristic:FALSE, or --disable-heuristic dxfp_udp.
dxfp.prefs.heuristic = Pref.bool("Find DxFP on any UDP port", true,
  "Decode a UDP datagram on a port not in UDP ports as DxFP when its header and CRC32C match")

local function heuristic_udp(tvb, pinfo, tree)
  if not dxfp.prefs.heuristic or tvb:len() < 36 then return false end
  local ftype, flen = tvb(1, 1):uint(), tvb(4, 2):uint()
  if tvb(0, 1):uint() ~= 1 or ftype < 1 or ftype > 5 or flen < 36 or flen > tvb:len() then
    return false
  end
  local sealed = bit32.band(tvb(2, 1):uint(), 4) ~= 0
  if sealed then
    -- No CRC to check: the header must describe the datagram exactly (a sealed DATA or CLOSE,
    -- a whole number of dwords, the reserved byte zero).
    if flen ~= tvb:len() or flen < 56 or flen % 4 ~= 0 or ftype < 3 or tvb(3, 1):uint() ~= 0 then
      return false
    end
  elseif crc32c(tvb, 0, flen - 4) ~= tvb(flen - 4, 4):uint() then
    return false
  end
  dxfp.dissector(tvb, pinfo, tree)
  return true
end
dxfp:register_heuristic("udp", heuristic_udp)

function dxfp.prefs_changed()
  register_udp_ports()
end

register_udp_ports()
