#!/usr/bin/env python3
"""A two-port-and-more Ethernet switch for the kernel tests, over AF_UNIX datagram sockets (one
Ethernet frame per datagram, as QEMU's -netdev dgram and dxpu-bridge's unix links carry them).
Binds PATH; the guest's QEMU sends to it, and so does every bridge (their links' "peer").
A frame from the guest (from GUEST_SOCK) goes to the bridge whose MAC is its destination (every
bridge for a broadcast or an unknown MAC); a frame from a bridge goes to the guest. Runs until
killed; on SIGTERM prints how many frames it forwarded each way. A datagram sent to PATH.inject
goes to the guest as it is, from PATH: how a test puts forged frames on the wire. A datagram
"MS" sent to PATH.hold holds every frame from the bridges to the guest for MS milliseconds, then
delivers them in order: a fabric slow in one direction (completions arrive late).
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
counts = {"to_bridges": 0, "to_guest": 0, "injected": 0, "dropped": 0, "held": 0}


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
hold_until = 0.0
held = []


def to_guest(frame, key):
    try:
        s.sendto(frame, guest)
        counts[key] += 1
    except OSError as e:  # the guest not up yet, or gone: lost, as on a wire
        counts["dropped"] += 1
        print(f"dropped a frame to the guest: {e}", file=sys.stderr, flush=True)


while True:
    wait = max(0.0, hold_until - time.monotonic()) if held else None
    ready, _, _ = select.select([s, inject, hold], [], [], wait)
    if held and time.monotonic() >= hold_until:
        for frame in held:
            to_guest(frame, "to_guest")
        held = []
    if hold in ready:
        hold_until = time.monotonic() + int(hold.recv(64)) / 1000.0
    if inject in ready:
        to_guest(inject.recv(65536), "injected")
    if s not in ready:
        continue
    frame, sender = s.recvfrom(65536)
    if len(frame) < 14:
        counts["dropped"] += 1
        continue
    try:
        if sender == guest:
            dst = bridges.get(frame[0:6])
            for sock in [dst] if dst else bridges.values():
                s.sendto(frame, sock)
                counts["to_bridges"] += 1
        elif time.monotonic() < hold_until:
            held.append(frame)
            counts["held"] += 1
        else:
            s.sendto(frame, guest)
            counts["to_guest"] += 1
    except OSError as e:  # a bridge killed, the guest not up yet: lost, as on a wire
        counts["dropped"] += 1
        print(f"dropped a frame to {frame[0:6].hex(':')}: {e}", file=sys.stderr, flush=True)
