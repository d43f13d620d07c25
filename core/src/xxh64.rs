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

/// XXH64 of `input` with `seed`.
pub fn xxh64(input: &[u8], seed: u64) -> u64 {
    let len = input.len() as u64;
    let mut rest = input;
    let mut h = if input.len() >= 32 {
        let [mut v1, mut v2, mut v3, mut v4] = lane_init(seed);
        while rest.len() >= 32 {
            v1 = round(v1, read_u64(rest));
            v2 = round(v2, read_u64(&rest[8..]));
            v3 = round(v3, read_u64(&rest[16..]));
            v4 = round(v4, read_u64(&rest[24..]));
            rest = &rest[32..];
        }
        let [r1, r2, r3, r4] = MERGE_ROTATES;
        let mut h = v1
            .rotate_left(r1)
            .wrapping_add(v2.rotate_left(r2))
            .wrapping_add(v3.rotate_left(r3))
            .wrapping_add(v4.rotate_left(r4));
        h = merge_round(h, v1);
        h = merge_round(h, v2);
        h = merge_round(h, v3);
        merge_round(h, v4)
    } else {
        short_init(seed)
    };
    h = h.wrapping_add(len);
    finalize(h, rest)
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
