#!/usr/bin/env python3
"""png_check.py - checks a PNG the bridge wrote of a virtio-gpu scanout against the image
tests/kernel/drm_draw.c draws: the same size, every pixel the same RGB.

  png_check.py FILE.png WIDTH HEIGHT

Decodes the PNG with the standard library only (8-bit RGB or RGBA, not interlaced, any of the
five row filters). Prints PASS or FAIL lines (the first few differing pixels) and exits 0 or 1.
"""
import struct
import sys
import zlib


def pattern(x, y, w, h):
    """drm_draw.c's drm_pattern(), as (r, g, b)."""
    r = x * 255 // (w - 1)
    g = y * 255 // (h - 1)
    b = (0xC0 if ((x // 16) + (y // 16)) & 1 else 0x00) ^ ((x ^ y) & 0x3F)
    return r, g, b


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"chunk {kind!r}: bad CRC")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise ValueError("no IHDR")
    w, h, depth, color, _, _, interlace = ihdr
    if depth != 8 or color not in (2, 6) or interlace != 0:
        raise ValueError(f"unsupported: depth {depth} colour type {color} interlace {interlace}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError(f"{len(raw)} bytes of image data for {w}x{h}")
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth(a, b, c))[f]) & 0xFF
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        w, h, bpp, rows = decode(open(path, "rb").read())
    except (OSError, ValueError, zlib.error) as e:
        print(f"FAIL {path}: {e}")
        return 1
    if (w, h) != (want_w, want_h):
        print(f"FAIL {path}: {w}x{h}, drawn {want_w}x{want_h}")
        return 1
    bad = 0
    for y in range(h):
        row = rows[y]
        for x in range(w):
            got = tuple(row[x * bpp:x * bpp + 3])
            want = pattern(x, y, w, h)
            if got != want:
                if bad < 5:
                    print(f"FAIL pixel ({x}, {y}): {got}, drawn {want}")
                bad += 1
    if bad:
        print(f"FAIL {bad} of {w * h} pixels differ")
        return 1
    print(f"PASS {path}: all {w * h} pixels of {w}x{h} as drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
