"""What tests/e2e/test_html.py reads of headless Chromium's output: the DOM it dumped (--dump-dom) and the PNG of
a screenshot (--screenshot), decoded with zlib alone (no imaging library on a CI machine)."""
import struct
import zlib
from html.parser import HTMLParser


class Dom(HTMLParser):
    """Every element of the DOM Chromium dumped: (tag, attributes, classes), and the text."""

    def __init__(self, text):
        super().__init__()
        self.elements, self.text = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a, set((a.get("class") or "").split())))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, *classes):
        return [a for _, a, c in self.elements if set(classes) <= c]


def png_pixels(path, check):
    """(width, height, rows of RGB tuples) of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour not in (2, 6) or interlace:
        check(False, f"{path}: PNG depth {depth} colour type {colour} interlace {interlace}: not decoded here")
        return w, h, []
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the row filter (PNG spec, section 9)
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows
