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
