//! The committed golden file is what the core renders, and its contents agree with
//! implementations we did not write (xxhash-rust for hashes, parquet's Sbbf for 8x32 images).
#![cfg(feature = "alloc")]
use bloomlanes_core::golden::{self, unhex};
use bloomlanes_core::Layout;
use parquet::bloom_filter::Sbbf;

#[test]
fn committed_file_is_current() {
    assert!(
        golden::VECTORS == golden::render(),
        "core/golden/vectors.txt is stale: regenerate with \
         `cargo run -p bloomlanes-core --example render_golden > core/golden/vectors.txt`"
    );
}

#[test]
fn hash_lines_agree_with_xxhash_rust() {
    let mut n = 0;
    for line in golden::VECTORS.lines().filter(|l| l.starts_with("hash ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let seed: u64 = f[1].parse().unwrap();
        let key = unhex(f[2]).unwrap();
        let hash = u64::from_str_radix(f[3].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(hash, xxhash_rust::xxh64::xxh64(&key, seed), "{line}");
        n += 1;
    }
    assert!(n >= 80);
}

#[test]
fn parquet_layout_images_agree_with_parquet() {
    let vectors = golden::filter_vectors();
    assert_eq!(vectors.len(), 4 * golden::BLOCK_COUNTS.len() * 2);
    for v in vectors
        .iter()
        .filter(|v| v.layout == Layout::L8x32 && v.seed == 0)
    {
        let mut sbbf = Sbbf::new(&vec![0u8; v.blocks as usize * 32]);
        (0..v.keys as i64).for_each(|k| sbbf.insert(&k));
        let mut bits = Vec::new();
        sbbf.write_bitset(&mut bits).unwrap();
        assert_eq!(bits, v.image, "8x32 with {} blocks", v.blocks);
    }
}

/// Cell `i` of `c`-bit cells read bit by bit from the byte string, as `docs/FORMAT.md` §9 says:
/// cell `i` is bits `i·c .. (i+1)·c`, bit `p` is bit `p mod 8` of byte `p / 8`.
fn cell_from_bytes(array: &[u8], c: u64, i: u64) -> u64 {
    (0..c).fold(0, |x, b| {
        let p = i * c + b;
        x | u64::from(array[(p / 8) as usize] >> (p % 8) & 1) << b
    })
}

/// The cells of hash `h`, written again from `docs/FORMAT.md` §9.
fn cells_from_spec(h: u64, seed: u64, a: u64, sigma: u64, segments: u64) -> Vec<u64> {
    let fmix = |mut x: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
        x ^ (x >> 33)
    };
    let m = fmix(h.wrapping_add(seed));
    let p = u128::from(m) * 0xc4ceb9fe1a85ec53u128;
    let r = (p >> 64) as u64 ^ p as u64;
    let len = 1u64 << sigma;
    let start = ((u128::from(m) * u128::from(segments * len)) >> 64) as u64;
    (0..a)
        .map(|j| {
            if j == 0 {
                start
            } else {
                (start + j * len) ^ ((r >> ((j - 1) * sigma)) & (len - 1))
            }
        })
        .collect()
}

#[test]
fn retrieval_lines_answer_every_key_by_the_written_definition() {
    let vectors = golden::retrieval_vectors();
    assert_eq!(vectors.len(), golden::RETRIEVAL_CASES.len());
    for v in vectors {
        let s = v.shape;
        assert_eq!(v.array.len() as u64, s.array_bytes());
        let c = u64::from(s.value_bits) + u64::from(s.check_bits);
        for k in 0..v.keys {
            let h = xxhash_rust::xxh64::xxh64(&k.to_le_bytes(), 0);
            let cells = cells_from_spec(
                h,
                s.seed,
                u64::from(s.arity),
                u64::from(s.segment_bits),
                u64::from(s.segment_count),
            );
            let x = cells
                .iter()
                .fold(0, |x, &i| x ^ cell_from_bytes(&v.array, c, i));
            let m = s.mixed(h);
            let check = if s.check_bits == 0 {
                0
            } else {
                m & ((1u64 << s.check_bits) - 1)
            };
            assert_eq!(x >> s.value_bits, check, "{s:?} key {k}: check bits");
            let value = x & ((1u64 << s.value_bits) - 1);
            assert_eq!(
                value as u32,
                golden::retrieval_value(k, s.value_bits),
                "{s:?} key {k}"
            );
        }
    }
}
