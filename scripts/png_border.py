#!/usr/bin/env python3
"""png_border.py IMAGE.png [MARGIN]: exit 0 when nothing touches the image's border.

The outermost MARGIN (default 2) rows and columns must all be the colour of the
background (the top-left pixel), and the image must not be blank (a figure cut at an
edge has text or lines in its last row or column; an empty screenshot has nothing).
Decodes the PNG itself (zlib + the five scanline filters; 8-bit greyscale, RGB,
grey+alpha or RGBA, not interlaced: what Chromium's screenshots are), so it needs
nothing but Python's standard library.
"""
import struct
import sys
import zlib

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def decode(data):
    """(width, height, rows of pixel tuples)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, b"", None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(idat)
    if len(raw) != height * (stride + 1):
        raise ValueError(f"{len(raw)} bytes of image data for {width}x{height}")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
            elif f != 0:
                raise ValueError(f"row {y}: unknown filter {f}")
        rows.append([tuple(line[x * bpp:(x + 1) * bpp]) for x in range(width)])
        prev = line
    return width, height, rows


def main():
    path = sys.argv[1]
    margin = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    width, height, rows = decode(open(path, "rb").read())
    bg = rows[0][0]
    touching = []
    for y in range(height):
        for x in range(width):
            edge = min(x, y, width - 1 - x, height - 1 - y) < margin
            if edge and rows[y][x] != bg:
                touching.append((x, y))
    drawn = sum(1 for row in rows for px in row if px != bg)
    print(f"{path}: {width}x{height}, {drawn} pixels drawn, {len(touching)} on the border")
    if touching:
        sides = sorted({("left" if x < margin else "right" if x >= width - margin else "")
                        or ("top" if y < margin else "bottom") for x, y in touching})
        sys.exit(f"FAIL: {path}: the figure touches the {', '.join(sides)} edge "
                 f"(first at {touching[0]}): it is cut; render it whole")
    if drawn < width * height // 100:
        sys.exit(f"FAIL: {path}: almost blank ({drawn} pixels drawn)")


if __name__ == "__main__":
    main()
