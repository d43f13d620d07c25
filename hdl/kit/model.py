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


def hex_cells(path):
    """The cells of a $readmemh bank file: one hex cell per line, // comments, blank lines."""
    with open(path) as f:
        return [int(line.split("//")[0].strip(), 16) for line in f if line.split("//")[0].strip()]


class Filter:
    """A filter of lanes x word_bits per block and z blocks, as banks: lane i's bank holds the
    cells of lane i, entry block * W + bit (docs/FORMAT.md section 9). kind "static": 1-bit
    cells set by an insert; "counting": cell_bits-bit counters, insert + 1 and delete - 1 (a
    counter at the maximum is saturated and never changes again; a delete is refused unless every
    counter of the key is positive); "spatial": cell_bits-bit classes, insert max(cell, value),
    lookup the smallest cell."""

    def __init__(self, lanes: int, word_bits: int, blocks: int, seed: int, cell_bits: int = 1,
                 kind: str = "static"):
        if kind not in ("static", "counting", "spatial"):
            raise ValueError(f"no model of a {kind} filter")
        self.lanes, self.w, self.z, self.seed = lanes, word_bits, blocks, seed
        self.bits, self.kind, self.max = cell_bits, kind, (1 << cell_bits) - 1
        self.shift = 32 - (word_bits.bit_length() - 1)
        self.clear()

    def clear(self):
        # banks[i][block * W + bit]: lane i's bank, exactly the hardware's memory.
        self.banks = [[0] * (self.z * self.w) for _ in range(self.lanes)]

    def positions(self, h: int):
        block = ((h >> 32) * self.z) >> 32
        lo = h & 0xFFFFFFFF
        return [block * self.w + (((lo * SALTS[i]) & 0xFFFFFFFF) >> self.shift) for i in range(self.lanes)]

    def cells(self, h: int):
        return [self.banks[i][a] for i, a in enumerate(self.positions(h))]

    def insert_hash(self, h: int, value: int = 1):
        for i, a in enumerate(self.positions(h)):
            c = self.banks[i][a]
            if self.kind == "static":
                c = 1
            elif self.kind == "counting":
                c = c + 1 if c < self.max else c
            else:
                c = max(c, value)
            self.banks[i][a] = c

    def delete_hash(self, h: int) -> int:
        """A counting filter's delete: 1 when done, 0 when refused (nothing changed)."""
        if not all(self.cells(h)):
            return 0
        for i, a in enumerate(self.positions(h)):
            if self.banks[i][a] != self.max:
                self.banks[i][a] -= 1
        return 1

    def contains_hash(self, h: int) -> bool:
        return all(self.cells(h))

    def lookup_hash(self, h: int) -> int:
        """A lookup's answer: 1 or 0 (membership), or the smallest cell (spatial)."""
        return min(self.cells(h)) if self.kind == "spatial" else int(self.contains_hash(h))

    def apply(self, op: int, h: int, value: int = 1) -> int:
        """Applies operation code op (0 lookup, 1 insert, 2 clear / delete / nothing, 3 no-op)
        and returns the hardware's answer."""
        if op == 0:
            return self.lookup_hash(h)
        if op == 1:
            self.insert_hash(h, value)
            return 1 if self.kind == "counting" else 0
        if op == 2 and self.kind == "static":
            self.clear()
        elif op == 2 and self.kind == "counting":
            return self.delete_hash(h)
        return 0

    def hash_key(self, key: bytes) -> int:
        return xxh64(key, self.seed)

    def entry(self, addr: int) -> int:
        """Bits cell_bits*i.. = lane i's cell at entry addr (the AXI4-Lite BANK_DATA word)."""
        return sum(self.banks[i][addr] << (self.bits * i) for i in range(self.lanes))

    def set_entry(self, addr: int, value: int):
        """Writes entry addr of every bank from a BANK_DATA word (the inverse of entry)."""
        for i in range(self.lanes):
            self.banks[i][addr] = (value >> (self.bits * i)) & self.max

    def load_bank_files(self, paths, classes=None):
        """Reads $readmemh bank files (one hex cell per line, // comments); classes[e] is the
        cell a bank entry e stands for where the banks hold a code of it (config.json's
        bank_classes: 4-bit spatial classes behind registered banks are held in a Gray code)."""
        for i, p in enumerate(paths):
            cells = hex_cells(p)
            if classes:
                cells = [classes[c] for c in cells]
            if len(cells) != self.z * self.w:
                raise ValueError(f"{p}: {len(cells)} entries, expected {self.z * self.w}")
            self.banks[i][:] = cells


MIX_MUL1 = 0xFF51AFD7ED558CCD
MIX_MUL2 = 0xC4CEB9FE1A85EC53


def mix(x: int) -> int:
    """MurmurHash3's 64-bit finaliser (docs/FORMAT.md section 9)."""
    x ^= x >> 33
    x = (x * MIX_MUL1) & M64
    x ^= x >> 33
    x = (x * MIX_MUL2) & M64
    return x ^ (x >> 33)


def spread(m: int) -> int:
    """The high and low halves of the 128-bit product m * MIX_MUL2, XORed."""
    p = m * MIX_MUL2
    return ((p >> 64) ^ p) & M64


class Retrieval:
    """A retrieval table (docs/FORMAT.md section 9) as the hardware's banks: arity a banks of
    v + f-bit cells; bank b entry row * L + i holds cell ((row * a + b) * L + i). A lookup XORs
    the key's a cells (one in each bank); the key is found when the bits above the value equal
    its check bits (m mod 2^f), and the answer is {found, value} (0 when absent). Operations 1 to
    3 change nothing (the table is static). insert_hash is the bench's own way to make a key
    present: it sets one of the key's cells that no earlier key fixed so that the XOR holds."""

    def __init__(self, seed: int, arity: int, segment_bits: int, segment_count: int,
                 rseed: int, value_bits: int, check_bits: int):
        self.seed, self.a, self.sb, self.segs = seed, arity, segment_bits, segment_count
        self.rseed, self.v, self.f = rseed, value_bits, check_bits
        self.L = 1 << segment_bits
        self.depth = -(-(segment_count + arity - 1) // arity) * self.L
        self.lanes, self.bits = arity, value_bits + check_bits
        self.max = (1 << self.bits) - 1
        self.clear()

    def clear(self):
        self.banks = [[0] * self.depth for _ in range(self.a)]
        self.fixed = set()

    def mixed(self, h: int) -> int:
        return mix((h + self.rseed) & M64)

    def positions(self, h: int):
        """Bank b's address of the key with hash h, for b = 0 .. a - 1."""
        m = self.mixed(h)
        start = (m * (self.segs << self.sb)) >> 64
        r = spread(m)
        addrs = [0] * self.a
        for j in range(self.a):
            cell = start if j == 0 else (start + j * self.L) ^ ((r >> ((j - 1) * self.sb)) & (self.L - 1))
            seg = cell >> self.sb
            addrs[seg % self.a] = (seg // self.a) * self.L + (cell & (self.L - 1))
        return addrs

    def cells(self, h: int):
        return [self.banks[b][x] for b, x in enumerate(self.positions(h))]

    def check_of(self, h: int) -> int:
        return self.mixed(h) & ((1 << self.f) - 1)

    def lookup_hash(self, h: int) -> int:
        x = 0
        for c in self.cells(h):
            x ^= c
        if x >> self.v != self.check_of(h):
            return 0
        return (1 << self.v) | (x & ((1 << self.v) - 1))

    def contains_hash(self, h: int) -> bool:
        return self.lookup_hash(h) != 0

    def insert_hash(self, h: int, value: int = 0) -> bool:
        """Makes the key with hash h answer value (False when every cell of it is fixed)."""
        addrs = self.positions(h)
        free = [b for b in range(self.a) if (b, addrs[b]) not in self.fixed]
        if not free:
            return False
        want = (self.check_of(h) << self.v) | (value & ((1 << self.v) - 1))
        x = 0
        for b in range(self.a):
            if b != free[0]:
                x ^= self.banks[b][addrs[b]]
        self.banks[free[0]][addrs[free[0]]] = want ^ x
        self.fixed.update((b, addrs[b]) for b in range(self.a))
        return True

    def apply(self, op: int, h: int, value: int = 0) -> int:
        return self.lookup_hash(h) if op == 0 else 0

    def hash_key(self, key: bytes) -> int:
        return xxh64(key, self.seed)

    entry = Filter.entry
    set_entry = Filter.set_entry

    def load_bank_files(self, paths, classes=None):
        if classes:
            raise ValueError("a retrieval table's banks hold its cells as they are")
        for i, p in enumerate(paths):
            cells = hex_cells(p)
            if len(cells) != self.depth:
                raise ValueError(f"{p}: {len(cells)} entries, expected {self.depth}")
            self.banks[i][:] = cells
