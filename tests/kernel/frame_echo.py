#!/usr/bin/env python3
"""Host side of a guest's NIC (QEMU -netdev dgram over AF_UNIX): bind PATH, and send every
Ethernet frame that arrives back to its sender, addressed to the frame's source MAC from
52:54:00:00:00:01. Exits after --seconds, printing how many frames it echoed."""
import argparse
import os
import socket
import time

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("path")
ap.add_argument("--seconds", type=float, default=120)
HOST_MAC = bytes.fromhex("525400000001")
a = ap.parse_args()
if os.path.exists(a.path):
    os.unlink(a.path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(a.path)
s.settimeout(0.5)
end = time.monotonic() + a.seconds
echoed = 0
while time.monotonic() < end:
    try:
        frame, sender = s.recvfrom(65536)
    except socket.timeout:
        continue
    if len(frame) < 14 or not sender:
        continue
    s.sendto(frame[6:12] + HOST_MAC + frame[12:], sender)
    echoed += 1
print(f"echoed {echoed} frames")
