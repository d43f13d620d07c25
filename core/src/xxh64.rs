//! XXH64, written once here so that every backend (CUDA source, Verilog) takes its constants
//! from the same place. Verified against `xxhash-rust` and the XXH64 spec fixtures in tests.

/// XXH64 prime 1.
pub const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
/// XXH64 prime 2.
pub const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
/// XXH64 prime 3.
pub const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
/// XXH64 prime 4.
pub const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
/// XXH64 prime 5.
pub const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// Left rotation of one accumulator round.
pub const ROUND_ROTATE: u32 = 31;
/// Left rotations of the four accumulators when they are folded into one (inputs of 32 bytes or
/// more).
pub const MERGE_ROTATES: [u32; 4] = [1, 7, 12, 18];
/// Left rotation after mixing in an 8-byte word of the tail.
pub const TAIL8_ROTATE: u32 = 27;
/// Left rotation after mixing in a 4-byte word of the tail.
pub const TAIL4_ROTATE: u32 = 23;
/// Left rotation after mixing in one byte of the tail.
pub const TAIL1_ROTATE: u32 = 11;
/// Right shifts of the avalanche: `h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32`.
pub const AVALANCHE_SHIFTS: [u32; 3] = [33, 29, 32];

/// The four accumulators' initial values for `seed` (inputs of 32 bytes or more):
/// `seed + P1 + P2`, `seed + P2`, `seed`, `seed − P1`.
#[inline(always)]
pub const fn lane_init(seed: u64) -> [u64; 4] {
    [
        seed.wrapping_add(PRIME64_1).wrapping_add(PRIME64_2),
        seed.wrapping_add(PRIME64_2),
        seed,
        seed.wrapping_sub(PRIME64_1),
    ]
}

/// The initial value for inputs shorter than 32 bytes: `seed + P5`.
#[inline(always)]
pub const fn short_init(seed: u64) -> u64 {
    seed.wrapping_add(PRIME64_5)
}

/// One XXH64 accumulator round.
#[inline(always)]
pub const fn round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(PRIME64_2))
        .rotate_left(ROUND_ROTATE)
        .wrapping_mul(PRIME64_1)
}

#[inline(always)]
const fn merge_round(acc: u64, val: u64) -> u64 {
    (acc ^ round(0, val))
        .wrapping_mul(PRIME64_1)
        .wrapping_add(PRIME64_4)
}

/// The XXH64 final mix.
#[inline(always)]
pub const fn avalanche(mut h: u64) -> u64 {
    h ^= h >> AVALANCHE_SHIFTS[0];
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> AVALANCHE_SHIFTS[1];
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> AVALANCHE_SHIFTS[2])
}

#[inline(always)]
fn read_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[inline(always)]
fn read_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// Mixes the tail (fewer than 32 bytes) into `h`, then avalanches.
#[inline(always)]
fn finalize(mut h: u64, mut rest: &[u8]) -> u64 {
    while rest.len() >= 8 {
        h ^= round(0, read_u64(rest));
        h = h
            .rotate_left(TAIL8_ROTATE)
            .wrapping_mul(PRIME64_1)
            .wrapping_add(PRIME64_4);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        h ^= u64::from(read_u32(rest)).wrapping_mul(PRIME64_1);
        h = h
            .rotate_left(TAIL4_ROTATE)
            .wrapping_mul(PRIME64_2)
            .wrapping_add(PRIME64_3);
        rest = &rest[4..];
    }
    for &byte in rest {
        h ^= u64::from(byte).wrapping_mul(PRIME64_5);
        h = h.rotate_left(TAIL1_ROTATE).wrapping_mul(PRIME64_1);
    }
    avalanche(h)
}

/// One 32-byte stripe into the four accumulators.
#[inline(always)]
fn stripe(acc: &mut [u64; 4], s: &[u8]) {
    acc[0] = round(acc[0], read_u64(s));
    acc[1] = round(acc[1], read_u64(&s[8..]));
    acc[2] = round(acc[2], read_u64(&s[16..]));
    acc[3] = round(acc[3], read_u64(&s[24..]));
}

/// The four accumulators folded into one (inputs of 32 bytes or more).
#[inline(always)]
fn merge(acc: &[u64; 4]) -> u64 {
    let [r1, r2, r3, r4] = MERGE_ROTATES;
    let h = acc[0]
        .rotate_left(r1)
        .wrapping_add(acc[1].rotate_left(r2))
        .wrapping_add(acc[2].rotate_left(r3))
        .wrapping_add(acc[3].rotate_left(r4));
    acc.iter().fold(h, |h, &v| merge_round(h, v))
}

/// XXH64 of `input` with `seed`.
pub fn xxh64(input: &[u8], seed: u64) -> u64 {
    let len = input.len() as u64;
    let mut rest = input;
    let h = if input.len() >= 32 {
        let mut acc = lane_init(seed);
        while rest.len() >= 32 {
            stripe(&mut acc, rest);
            rest = &rest[32..];
        }
        merge(&acc)
    } else {
        short_init(seed)
    };
    finalize(h.wrapping_add(len), rest)
}

/// XXH64 computed over input given in pieces: [`Xxh64::update`] with each piece in order, then
/// [`Xxh64::digest`] gives `xxh64(all pieces joined, seed)`. Lets a writer checksum a payload of
/// any size with 80 bytes of state (see `format::write_file`).
#[derive(Clone, Debug)]
pub struct Xxh64 {
    seed: u64,
    acc: [u64; 4],
    buf: [u8; 32],
    buffered: usize,
    total: u64,
}

impl Xxh64 {
    /// An empty hash state for `seed`.
    pub const fn new(seed: u64) -> Xxh64 {
        Xxh64 {
            seed,
            acc: lane_init(seed),
            buf: [0; 32],
            buffered: 0,
            total: 0,
        }
    }

    /// Adds the next piece of input.
    pub fn update(&mut self, mut input: &[u8]) {
        self.total = self.total.wrapping_add(input.len() as u64);
        if self.buffered > 0 {
            let take = (32 - self.buffered).min(input.len());
            self.buf[self.buffered..self.buffered + take].copy_from_slice(&input[..take]);
            self.buffered += take;
            input = &input[take..];
            if self.buffered < 32 {
                return;
            }
            stripe(&mut self.acc, &self.buf);
            self.buffered = 0;
        }
        while input.len() >= 32 {
            stripe(&mut self.acc, input);
            input = &input[32..];
        }
        self.buf[..input.len()].copy_from_slice(input);
        self.buffered = input.len();
    }

    /// The hash of everything added so far (the state is not consumed).
    pub fn digest(&self) -> u64 {
        let h = if self.total >= 32 {
            merge(&self.acc)
        } else {
            short_init(self.seed)
        };
        finalize(h.wrapping_add(self.total), &self.buf[..self.buffered])
    }
}

/// XXH64 of the 8 little-endian bytes of `key`: the same value as `xxh64(&key.to_le_bytes(), seed)`,
/// written out so that vector backends can copy it lane by lane.
#[inline(always)]
pub const fn xxh64_u64(key: u64, seed: u64) -> u64 {
    let mut h = short_init(seed).wrapping_add(8);
    h ^= round(0, key);
    h = h
        .rotate_left(TAIL8_ROTATE)
        .wrapping_mul(PRIME64_1)
        .wrapping_add(PRIME64_4);
    avalanche(h)
}
