#!/usr/bin/env python3
"""A two-port-and-more Ethernet switch for the kernel tests, over AF_UNIX datagram sockets (one
Ethernet frame per datagram, as QEMU's -netdev dgram and dxpu-bridge's unix links carry them).
Binds PATH; the guest's QEMU sends to it, and so does every bridge (their links' "peer").
A frame from the guest (from GUEST_SOCK) goes to the bridge whose MAC is its destination (every
bridge for a broadcast or an unknown MAC); a frame from a bridge goes to the guest. Runs until
killed; on SIGTERM prints how many frames it forwarded each way. A datagram sent to PATH.inject
goes to the guest as it is, from PATH: how a test puts forged frames on the wire. A datagram
"MS" sent to PATH.hold holds every frame from the bridges to the guest for MS milliseconds, then
delivers them in order: a fabric slow in one direction (completions arrive late). A datagram
"N" sent to PATH.forge forges the next N completions from the bridges: each one's Tag is
flipped (bit 7) and the frame's CRC32C made right again, so the guest's session accepts a
completion for a tag that is not in flight, with a valid sequence number, and the request it
answered never hears back (docs/protocol.md 4.2, 4.3, 5.4, 12).
The guest controls the switch in band: a frame of EtherType 0x88B6 from the guest is a command
(ASCII text), answered by a frame of the same EtherType (dst the guest, src 02:00:00:00:fe:fe),
in order with the guest's DxFP frames, so what the guest sends after a command's answer is
handled under it. "freeze MAC": from now on the non-posted header credit limit in the CREDIT
records of bridge MAC's frames stays at the last one forwarded (the CRC redone), so the guest's
session runs out of non-posted credit while posted writes and completions go on; answered
"frozen N", N the non-posted TLPs the guest may still send (that limit less the non-posted TLPs
it sent this session). "thaw MAC": the real limits again ("thawed"). "trace MAC": the TLPs the
guest sent that bridge since the last freeze, first transmissions only, one letter each
(W CfgWr0, C CfgRd0, M MWr, R MRd, c a completion, ? other), answered "trace LETTERS"
(docs/protocol.md 4.2, 4.6).
  frame_switch.py PATH GUEST_SOCK MAC=BRIDGE_SOCK [MAC=BRIDGE_SOCK ...]"""
import os
import select
import signal
import socket
import sys
import time

if len(sys.argv) < 4:
    sys.exit(__doc__)
path, guest = sys.argv[1], sys.argv[2]
bridges = {}
for arg in sys.argv[3:]:
    mac, sock = arg.split("=", 1)
    bridges[bytes.fromhex(mac.replace(":", ""))] = sock
counts = {"to_bridges": 0, "to_guest": 0, "injected": 0, "dropped": 0, "held": 0, "forged": 0,
          "commands": 0}


def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


class Forger:
    """Forges completions from the bridges: the next `pending` completions the guest has not
    seen yet (a TLP sequence number past every one forwarded), and every retransmission of
    them, get their Tag flipped and their frame's CRC redone; the guest never sees the real
    ones. Sequence numbers as docs/protocol.md 4.2 says: the n-th TLP record of a DATA
    frame has Sequence + n), per bridge MAC and session ID."""

    def __init__(self):
        self.pending = 0
        self.next_seq = {}  # MAC + session -> the sequence number after the last TLP forwarded
        self.forged = set()  # (MAC + session, sequence number) of the forged completions

    def process(self, frame):
        p = bytearray(frame[14:])
        if frame[12:14] != b"\x88\xb5" or len(p) < 36 or p[0] != 1 or p[1] != 3:
            return frame
        length, nrec = int.from_bytes(p[4:6], "big"), int.from_bytes(p[6:8], "big")
        if length > len(p):
            return frame
        mac, seq = frame[6:12] + bytes(p[12:16]), int.from_bytes(p[24:28], "big")
        nxt = self.next_seq.get(mac)
        off, changed = 32, False
        for _ in range(nrec):
            if off + 4 > length - 4:
                return frame
            rtype, blen = p[off], int.from_bytes(p[off + 2:off + 4], "big")
            body = off + 4
            off = body + (blen + 3) // 4 * 4
            if rtype != 1:
                continue
            new = nxt is None or (seq - nxt) % 2**32 < 2**31  # not forwarded before
            # A TLP record whose TLP is a Cpl or CplD (Fmt 000b/010b, Type 01010b).
            cpl = blen >= 12 and p[body] in (0x0A, 0x4A)
            if cpl and ((mac, seq) in self.forged or (new and self.pending)):
                if (mac, seq) not in self.forged:
                    self.forged.add((mac, seq))
                    self.pending -= 1
                    counts["forged"] += 1
                p[body + 10] ^= 0x80
                changed = True
            if new:
                nxt = (seq + 1) % 2**32
            seq = (seq + 1) % 2**32
        if nxt is not None:
            self.next_seq[mac] = nxt
        if not changed:
            return frame
        p[length - 4:length] = crc32c(p[:length - 4]).to_bytes(4, "big")
        return frame[:14] + bytes(p)


forger = Forger()

ETH_P_CONTROL = b"\x88\xb6"
SWITCH_MAC = bytes.fromhex("02000000fefe")


def tlp_letter(first):
    """The trace letter of a TLP by its first byte (Fmt and Type)."""
    kind = first & 0x1F
    if kind in (0x0A, 0x0B):
        return "c"
    if first == 0x44:
        return "W"
    if first == 0x04:
        return "C"
    if kind == 0 and first & 0x40:
        return "M"
    if kind == 0:
        return "R"
    return "?"


def non_posted(first):
    kind = first & 0x1F
    if kind in (0x0A, 0x0B) or kind & 0x18 == 0x10:  # completions, messages
        return False
    return not (kind == 0 and first & 0x40)  # a memory write is posted


class Credit:
    """Counts the non-posted TLPs the guest sends each bridge (this session: since its HELLO),
    records a trace of its TLPs, remembers the non-posted header limit each bridge's frames
    carry, and on "freeze" keeps that limit where it was (docs/protocol.md 4.6)."""

    def __init__(self):
        self.np_sent = {}  # bridge MAC -> non-posted TLPs the guest sent it this session
        self.next_seq = {}  # bridge MAC -> the guest's next new sequence number
        self.np_limit = {}  # bridge MAC -> the last non-posted header limit forwarded
        self.frozen = {}  # bridge MAC -> the limit held
        self.trace = {}  # bridge MAC -> letters since the last freeze

    def from_guest(self, frame):
        mac, p = frame[0:6], frame[14:]
        if frame[12:14] != b"\x88\xb5" or len(p) < 36 or p[0] != 1:
            return
        seq = int.from_bytes(p[24:28], "big")
        if p[1] == 1:  # HELLO: a new session, its first TLP the initial sequence number
            self.np_sent[mac], self.next_seq[mac] = 0, seq
            return
        length, nrec = int.from_bytes(p[4:6], "big"), int.from_bytes(p[6:8], "big")
        if p[1] != 3 or mac not in self.next_seq or length > len(p):
            return
        off = 32
        for _ in range(nrec):
            if off + 4 > length - 4:
                return
            rtype, blen = p[off], int.from_bytes(p[off + 2:off + 4], "big")
            body = off + 4
            off = body + (blen + 3) // 4 * 4
            if rtype != 1:
                continue
            if blen >= 12 and (seq - self.next_seq[mac]) % 2**32 < 2**31:  # first time
                self.next_seq[mac] = (seq + 1) % 2**32
                self.np_sent[mac] += non_posted(p[body])
                self.trace.setdefault(mac, []).append(tlp_letter(p[body]))
            seq = (seq + 1) % 2**32

    def to_guest(self, frame):
        """The frame as the guest gets it: the non-posted header limit held while frozen."""
        mac, p = frame[6:12], bytearray(frame[14:])
        if frame[12:14] != b"\x88\xb5" or len(p) < 36 or p[0] != 1 or p[1] not in (2, 3):
            return frame
        length, nrec = int.from_bytes(p[4:6], "big"), int.from_bytes(p[6:8], "big")
        if length > len(p):
            return frame
        off, changed = 32, False
        for _ in range(nrec):
            if off + 4 > length - 4:
                break
            rtype, blen = p[off], int.from_bytes(p[off + 2:off + 4], "big")
            body = off + 4
            off = body + (blen + 3) // 4 * 4
            if rtype != 2 or blen != 24:
                continue
            limit = int.from_bytes(p[body + 8:body + 12], "big")  # non-posted headers
            if mac in self.frozen:
                if limit != self.frozen[mac]:
                    p[body + 8:body + 12] = self.frozen[mac].to_bytes(4, "big")
                    changed = True
            else:
                self.np_limit[mac] = limit
        if not changed:
            return frame
        p[length - 4:length] = crc32c(p[:length - 4]).to_bytes(4, "big")
        return frame[:14] + bytes(p)

    def command(self, text):
        words = text.split()
        if len(words) != 2 or words[0] not in ("freeze", "thaw", "trace"):
            return f"error: unknown command {text!r}"
        mac = bytes.fromhex(words[1].replace(":", ""))
        if words[0] == "freeze":
            if mac not in self.np_limit or mac not in self.np_sent:
                return "error: no session seen with " + words[1]
            self.frozen[mac] = self.np_limit[mac]
            self.trace[mac] = []
            return f"frozen {(self.frozen[mac] - self.np_sent[mac]) % 2**32}"
        if words[0] == "thaw":
            self.frozen.pop(mac, None)
            return "thawed"
        return "trace " + "".join(self.trace.get(mac, []))


credit = Credit()


def answer(request, text):
    """A control frame back to the guest that sent request."""
    body = text.encode()
    frame = request[6:12] + SWITCH_MAC + ETH_P_CONTROL + body
    s.sendto(frame + bytes(max(0, 60 - len(frame))), guest)


def report(*_):
    print(" ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, report)
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
inject = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(path + ".inject"):
    os.unlink(path + ".inject")
inject.bind(path + ".inject")
hold = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(path + ".hold"):
    os.unlink(path + ".hold")
hold.bind(path + ".hold")
forge = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(path + ".forge"):
    os.unlink(path + ".forge")
forge.bind(path + ".forge")
hold_until = 0.0
held = []


def to_guest(frame, key):
    try:
        s.sendto(frame if key == "injected" else credit.to_guest(frame), guest)
        counts[key] += 1
    except OSError as e:  # the guest not up yet, or gone: lost, as on a wire
        counts["dropped"] += 1
        print(f"dropped a frame to the guest: {e}", file=sys.stderr, flush=True)


while True:
    wait = max(0.0, hold_until - time.monotonic()) if held else None
    ready, _, _ = select.select([s, inject, hold, forge], [], [], wait)
    if held and time.monotonic() >= hold_until:
        for frame in held:
            to_guest(frame, "to_guest")
        held = []
    if hold in ready:
        hold_until = time.monotonic() + int(hold.recv(64)) / 1000.0
    if forge in ready:
        forger.pending += int(forge.recv(64))
    if inject in ready:
        to_guest(inject.recv(65536), "injected")
    if s not in ready:
        continue
    frame, sender = s.recvfrom(65536)
    if len(frame) < 14:
        counts["dropped"] += 1
        continue
    try:
        if sender != guest:
            frame = forger.process(frame)
        if sender == guest and frame[12:14] == ETH_P_CONTROL:
            answer(frame, credit.command(frame[14:].rstrip(b"\0").decode(errors="replace")))
            counts["commands"] += 1
            continue
        if sender == guest:
            credit.from_guest(frame)
            dst = bridges.get(frame[0:6])
            for sock in [dst] if dst else bridges.values():
                s.sendto(frame, sock)
                counts["to_bridges"] += 1
        elif time.monotonic() < hold_until:
            held.append(frame)
            counts["held"] += 1
        else:
            s.sendto(credit.to_guest(frame), guest)
            counts["to_guest"] += 1
    except OSError as e:  # a bridge killed, the guest not up yet: lost, as on a wire
        counts["dropped"] += 1
        print(f"dropped a frame to {frame[0:6].hex(':')}: {e}", file=sys.stderr, flush=True)
