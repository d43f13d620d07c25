"""An independent pure-Python model of the filter, written from docs/FORMAT.md (sections 1-4):
XXH64, the probe positions and the byte image. The tests check it against the Rust golden
vectors (core/golden/vectors.txt) and then check the extension against it for every key type."""

from typing import Iterable, List

M64 = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5

SALTS = [
    0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31,
    0x6A09E667, 0xBB67AE85, 0x3C6EF373, 0xA54FF53B, 0x510E527F, 0x9B05688D, 0x1F83D9AB, 0x5BE0CD19,
]

LAYOUTS = {"8x32": (8, 32), "8x64": (8, 64), "16x32": (16, 32), "16x64": (16, 64)}


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * P1 + P4) & M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 as specified by the xxHash project."""
    n, i = len(data), 0
    le = lambda a, b: int.from_bytes(data[a:b], "little")  # noqa: E731
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed & M64, (seed - P1) & M64]
        while i + 32 <= n:
            v = [_round(v[j], le(i + 8 * j, i + 8 * j + 8)) for j in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = _merge(h, x)
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= _round(0, le(i, i + 8))
        h = (_rotl(h, 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h ^= (le(i, i + 4) * P1) & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M64
        h = (_rotl(h, 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h


def image(layout: str, blocks: int, hashes: Iterable[int]) -> bytes:
    """The byte image after inserting keys with these hashes (FORMAT.md sections 3 and 4)."""
    lanes, w = LAYOUTS[layout]
    shift = 32 - (w.bit_length() - 1)
    block_bytes = lanes * w // 8
    out = bytearray(blocks * block_bytes)
    for h in hashes:
        b = ((h >> 32) * blocks) >> 32
        lo = h & 0xFFFFFFFF
        for lane in range(lanes):
            bit = ((lo * SALTS[lane]) & 0xFFFFFFFF) >> shift
            byte = b * block_bytes + lane * (w // 8) + bit // 8
            out[byte] |= 1 << (bit % 8)
    return bytes(out)


def contains(layout: str, blocks: int, img: bytes, h: int) -> bool:
    """Whether the key with hash ``h`` may be in the filter of byte image ``img``."""
    one = image(layout, blocks, [h])
    return all((a & b) == b for a, b in zip(img, one))


def golden(path: str) -> List[List[str]]:
    """The lines of the golden file, split into fields (comments dropped)."""
    with open(path) as f:
        return [line.split() for line in f if line.strip() and not line.startswith("#")]
