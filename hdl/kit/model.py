"""Reference model of a bloomlanes filter, written from docs/FORMAT.md (sections 2 and 3):
XXH64 of the key bytes, block = ((h >> 32) * z) >> 32, lane bit i = ((lo32(h) * SALT[i]) mod 2^32)
>> (32 - log2 W). Independent of the Rust crate: the scoreboard of the cocotb bench, and the
XXH64 and salts of python/tests/reference.py (which loads this file). Standalone, as it ships in
the exported kit."""

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


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _merge(acc, val):
    acc ^= _round(0, val)
    return (acc * P1 + P4) & M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 (the xxHash 64-bit algorithm) of data."""
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed & M64, (seed - P1) & M64]
        while i + 32 <= n:
            for j in range(4):
                v[j] = _round(v[j], int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for j in range(4):
            h = _merge(h, v[j])
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        k = _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h ^ k, 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * P1 & M64), 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * P5 & M64), 11) * P1) & M64
        i += 1
    h = ((h ^ (h >> 33)) * P2) & M64
    h = ((h ^ (h >> 29)) * P3) & M64
    return h ^ (h >> 32)


assert xxh64(b"", 0) == 0xEF46DB3751D8E999, "XXH64 self-check (docs/FORMAT.md section 2)"


class Filter:
    """Split-block Bloom filter: lanes x word_bits per block, blocks z, bank view per lane."""

    def __init__(self, lanes: int, word_bits: int, blocks: int, seed: int):
        self.lanes, self.w, self.z, self.seed = lanes, word_bits, blocks, seed
        self.shift = 32 - (word_bits.bit_length() - 1)
        self.clear()

    def clear(self):
        # banks[i][block * W + bit]: lane i's bank, exactly the hardware's memory.
        self.banks = [bytearray(self.z * self.w) for _ in range(self.lanes)]

    def positions(self, h: int):
        block = ((h >> 32) * self.z) >> 32
        lo = h & 0xFFFFFFFF
        return [block * self.w + (((lo * SALTS[i]) & 0xFFFFFFFF) >> self.shift) for i in range(self.lanes)]

    def insert_hash(self, h: int):
        for i, a in enumerate(self.positions(h)):
            self.banks[i][a] = 1

    def contains_hash(self, h: int) -> bool:
        return all(self.banks[i][a] for i, a in enumerate(self.positions(h)))

    def hash_key(self, key: bytes) -> int:
        return xxh64(key, self.seed)

    def entry(self, addr: int) -> int:
        """Bit i = lane i's bank at entry addr (the AXI4-Lite BANK_DATA word)."""
        return sum(self.banks[i][addr] << i for i in range(self.lanes))

    def load_bank_files(self, paths):
        """Reads $readmemh bank files (one 0/1 digit per line, // comments)."""
        for i, p in enumerate(paths):
            bits = [int(line.split("//")[0].strip(), 16) for line in open(p)
                    if line.split("//")[0].strip()]
            if len(bits) != self.z * self.w:
                raise ValueError(f"{p}: {len(bits)} entries, expected {self.z * self.w}")
            self.banks[i][:] = bytes(bits)
