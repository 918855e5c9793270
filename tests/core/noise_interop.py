#!/usr/bin/python3
"""The other end of lib/core's Noise IK handshake, written by others: dissononce (Debian's
python3-dissononce, on python3-cryptography's X25519, ChaCha20-Poly1305 and SHA-256).
tests/core/dxfp_noise_test.cc runs it as initiator and as responder against lib/core.

  noise_interop.py initiator S_SECRET RS_PUB E_SECRET PROLOGUE PAYLOAD [MSG2]
  noise_interop.py responder S_SECRET E_SECRET PROLOGUE MSG1 PAYLOAD2

Every argument is hex ("-" for empty). Prints key=value lines, values in hex. After the
handshake it encrypts b"from-python" with its sending cipher (nonce 0, no AD) as `ct`.
"""
import sys

from dissononce.cipher.chachapoly import ChaChaPolyCipher
from dissononce.dh.x25519.x25519 import X25519DH
from dissononce.hash.sha256 import SHA256Hash
from dissononce.processing.handshakepatterns.interactive.IK import IKHandshakePattern
from dissononce.processing.impl.cipherstate import CipherState
from dissononce.processing.impl.handshakestate import HandshakeState
from dissononce.processing.impl.symmetricstate import SymmetricState


def unhex(s):
    return b"" if s == "-" else bytes.fromhex(s)


class FixedEphemeralDH(X25519DH):
    """X25519 whose "generate a key pair" gives the ephemeral key the test chose, so that a
    run can be repeated to the same bytes (the test runs the initiator twice)."""

    def __init__(self, e_secret):
        super().__init__()
        self._e_secret = e_secret

    def generate_keypair(self, privatekey=None):
        return super().generate_keypair(privatekey or private_from(self._e_secret))


def new_state(e_secret):
    return HandshakeState(SymmetricState(CipherState(ChaChaPolyCipher()), SHA256Hash()),
                          FixedEphemeralDH(e_secret))


def finish(hs, cs_send):
    print("hash=" + bytes(hs.symmetricstate.get_handshake_hash()).hex())
    print("ct=" + bytes(cs_send.encrypt_with_ad(b"", b"from-python")).hex())


def initiator(args):
    s = X25519DH().generate_keypair(private_from(args[0]))
    rs = X25519DH().create_public(unhex(args[1]))
    hs = new_state(args[2])
    hs.initialize(IKHandshakePattern(), True, unhex(args[3]), s=s, rs=rs)
    msg1 = bytearray()
    hs.write_message(unhex(args[4]), msg1)
    print("msg1=" + bytes(msg1).hex())
    if len(args) > 5:
        payload = bytearray()
        cs1, _cs2 = hs.read_message(unhex(args[5]), payload)
        print("payload2=" + bytes(payload).hex())
        finish(hs, cs1)


def responder(args):
    s = X25519DH().generate_keypair(private_from(args[0]))
    hs = new_state(args[1])
    hs.initialize(IKHandshakePattern(), False, unhex(args[2]), s=s)
    payload = bytearray()
    hs.read_message(unhex(args[3]), payload)
    print("payload1=" + bytes(payload).hex())
    print("rs=" + bytes(hs.rs.data).hex())
    msg2 = bytearray()
    _cs1, cs2 = hs.write_message(unhex(args[4]), msg2)
    print("msg2=" + bytes(msg2).hex())
    finish(hs, cs2)


def private_from(hexkey):
    from dissononce.dh.x25519.private import PrivateKey
    return PrivateKey(unhex(hexkey))


if __name__ == "__main__":
    role, rest = sys.argv[1], sys.argv[2:]
    try:
        initiator(rest) if role == "initiator" else responder(rest)
    except Exception as exc:  # a refused message: say so, exit non-zero
        print("error=" + type(exc).__name__ + ": " + str(exc))
        sys.exit(1)
