"""The pure-Python model of the filter the tests check the extension against, written from
docs/FORMAT.md (sections 1-4): XXH64 and the probe constants come from the HDL kit's scoreboard
model (hdl/kit/model.py, one Python model of the format for both benches); this file adds the byte
image. The tests check it against the Rust golden vectors (core/golden/vectors.txt) and then check
the extension against it for every key type."""

import importlib.util
import os
from typing import Iterable, List


def _load_kit_model():
    """hdl/kit/model.py, loaded by path: it ships inside the generated cocotb kit, so it stays a
    standalone file rather than a package module."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "hdl", "kit", "model.py")
    spec = importlib.util.spec_from_file_location("bloomlanes_kit_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_model = _load_kit_model()
SALTS = _model.SALTS
xxh64 = _model.xxh64

LAYOUTS = {"8x32": (8, 32), "8x64": (8, 64), "16x32": (16, 32), "16x64": (16, 64)}


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
