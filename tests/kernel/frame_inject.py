#!/usr/bin/env python3
"""Forged Ethernet frames for the guest, through frame_switch.py's inject socket: DxFP's
EtherType (0x88B5) from a bridge's MAC with payloads of every kind of wrong (empty, short,
random bytes of many lengths, a DxFP-looking header with a bad CRC), and from a MAC no session
is open to. Prints how many of each it sent.
  frame_inject.py INJECT_SOCK GUEST_MAC BRIDGE_MAC [--seed N]"""
import argparse
import random
import socket

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("sock")
ap.add_argument("guest_mac")
ap.add_argument("bridge_mac")
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()
rng = random.Random(a.seed)
mac = lambda m: bytes.fromhex(m.replace(":", ""))
ETHERTYPE = bytes.fromhex("88b5")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
from_bridge = [b"", b"\x00", b"DXF", bytes(40), b"\xff" * 64]
from_bridge += [bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 7, 24, 100, 600, 1400])))
                for _ in range(40)]
# Something shaped like a DxFP frame (a version byte, a type, lengths) with garbage after it.
from_bridge += [bytes([0x01, t]) + bytes(rng.getrandbits(8) for _ in range(62)) for t in range(5)]
for p in from_bridge:
    s.sendto(mac(a.guest_mac) + mac(a.bridge_mac) + ETHERTYPE + p, a.sock)
stranger = mac("02:00:00:00:99:99")
for i in range(10):
    s.sendto(mac(a.guest_mac) + stranger + ETHERTYPE + bytes(rng.getrandbits(8) for _ in range(64)),
             a.sock)
print(f"injected {len(from_bridge)} from the bridge's MAC, 10 from an unknown MAC")
