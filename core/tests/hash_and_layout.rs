//! XXH64 and the layout formulas against an implementation we did not write and the spec fixtures.
use bloomlanes_core::xxh64::Xxh64;
use bloomlanes_core::{block_index, lane_bit, lane_bits, xxh64, xxh64_u64, Layout, SALTS};
use proptest::prelude::*;

#[test]
fn xxh64_spec_fixtures() {
    // XXH64 of the empty input with seed 0 (the xxHash reference value).
    assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
    // Parquet's spec fixture list uses the same function; also a seeded value.
    assert_eq!(xxh64(b"", 0), xxhash_rust::xxh64::xxh64(b"", 0));
    assert_eq!(xxh64(b"abc", 1), xxhash_rust::xxh64::xxh64(b"abc", 1));
}

#[test]
fn parquet_salts_are_the_first_eight() {
    // From the Parquet BloomFilter.md specification.
    let spec = [
        0x47b6137bu32,
        0x44974d91,
        0x8824ad5b,
        0xa2b7289d,
        0x705495c7,
        0x2df1424b,
        0x9efc4947,
        0x5c6bfb31,
    ];
    assert_eq!(SALTS[..8], spec);
    assert!(SALTS.iter().all(|s| s & 1 == 1), "every salt must be odd");
}

proptest! {
    #[test]
    fn xxh64_matches_xxhash_rust(bytes in proptest::collection::vec(any::<u8>(), 0..200), seed: u64) {
        prop_assert_eq!(xxh64(&bytes, seed), xxhash_rust::xxh64::xxh64(&bytes, seed));
    }

    /// The streaming state gives the one-shot hash for input cut anywhere, in any pieces.
    #[test]
    fn streamed_xxh64_is_the_one_shot_hash(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        seed: u64,
    ) {
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.sort_unstable();
        let mut state = Xxh64::new(seed);
        let mut from = 0;
        for &to in at.iter().chain([bytes.len()].iter()) {
            state.update(&bytes[from..to]);
            from = to;
        }
        prop_assert_eq!(state.digest(), xxhash_rust::xxh64::xxh64(&bytes, seed));
    }

    #[test]
    fn xxh64_u64_is_xxh64_of_le_bytes(key: u64, seed: u64) {
        prop_assert_eq!(xxh64_u64(key, seed), xxh64(&key.to_le_bytes(), seed));
    }

    #[test]
    fn block_index_in_range(hash: u64, blocks in 1u32..) {
        prop_assert!(block_index(hash, blocks) < blocks);
    }

    #[test]
    fn lane_bits_in_range(hash: u64) {
        for layout in Layout::ALL {
            let bits = lane_bits(layout, hash);
            for (lane, &bit) in bits.iter().enumerate().take(layout.lanes()) {
                prop_assert!(u32::from(bit) < layout.word_bits());
                prop_assert_eq!(u32::from(bit), lane_bit(layout, hash, lane));
            }
        }
    }
}
