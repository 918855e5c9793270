#!/usr/bin/env python3
"""A delay line between the guest's NIC and one dxpu-bridge for the kernel tests, over AF_UNIX
datagram sockets (one Ethernet frame per datagram, as QEMU's -netdev dgram and dxpu-bridge's
unix links carry them). Binds PATH; the guest's QEMU and the bridge (its link's "peer") both
send to it. A frame from the guest goes to the bridge at once; a frame from the bridge goes to
the guest after the current delay, in order. The delay starts at 0; a datagram "MS" sent to
PATH.delay sets it to MS milliseconds (frames already waiting keep their time): a fabric that is
slow towards the host, where every request still completes, only late. Runs until killed.
  frame_delay.py PATH GUEST_SOCK BRIDGE_SOCK"""
import collections
import os
import select
import socket
import sys
import time

if len(sys.argv) != 4:
    sys.exit(__doc__)
path, guest, bridge = sys.argv[1:]


def bound(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists(p):
        os.unlink(p)
    s.bind(p)
    return s


s = bound(path)
control = bound(path + ".delay")
delay = 0.0
waiting = collections.deque()  # (due, frame) from the bridge, in order

while True:
    now = time.monotonic()
    while waiting and waiting[0][0] <= now:
        try:
            s.sendto(waiting.popleft()[1], guest)
        except OSError:
            pass  # the guest is not up yet, or gone
    timeout = max(0.0, waiting[0][0] - now) if waiting else None
    ready, _, _ = select.select([s, control], [], [], timeout)
    if control in ready:
        delay = int(control.recv(64)) / 1000.0
    if s in ready:
        frame, sender = s.recvfrom(65536)
        if sender == bridge:
            waiting.append((time.monotonic() + delay, frame))
        else:
            try:
                s.sendto(frame, bridge)
            except OSError:
                pass
