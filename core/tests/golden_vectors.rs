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

/// Cell `k` of little-endian packed `bits`-bit cells (`docs/FORMAT.md` §9), read from the bytes
/// without the core's helpers.
fn packed(bytes: &[u8], bits: u32, k: u64) -> u32 {
    let bit = k * u64::from(bits);
    let word = u32::from_le_bytes(bytes[(bit / 32 * 4) as usize..][..4].try_into().unwrap());
    (word >> (bit % 32)) & ((1u64 << bits) - 1) as u32
}

/// The smallest of the `L` cells of `key` (§3 positions, §9 packing).
fn min_cell(layout: Layout, blocks: u32, seed: u64, cells: &[u8], bits: u32, key: u64) -> u32 {
    let h = bloomlanes_core::xxh64_u64(key, seed);
    let block = u64::from(bloomlanes_core::block_index(h, blocks));
    (0..layout.lanes())
        .map(|lane| {
            let k = (block * layout.lanes() as u64 + lane as u64) * u64::from(layout.word_bits())
                + u64::from(bloomlanes_core::lane_bit(layout, h, lane));
            packed(cells, bits, k)
        })
        .min()
        .unwrap()
}

fn numbers(list: &str) -> Vec<u32> {
    list.split(',').map(|x| x.parse().unwrap()).collect()
}

/// The spatial lines' answers are the smallest of each key's cells, and their image is the
/// projection of their cells.
#[test]
fn spatial_answers_follow_from_the_cells() {
    let mut n = 0;
    for f in golden::lines("spatial") {
        let (layout, blocks) = (Layout::from_name(f[1]).unwrap(), f[2].parse().unwrap());
        let (seed, bits): (u64, u32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let (classes, keys): (u32, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
        let (image, cells) = (unhex(f[7]).unwrap(), unhex(f[8]).unwrap());
        let answers = numbers(f[9]);
        assert_eq!(answers.len() as u64, keys + 8);
        for (key, &class) in answers.iter().enumerate() {
            assert_eq!(
                min_cell(layout, blocks, seed, &cells, bits, key as u64),
                class
            );
            if (key as u64) < keys {
                assert!(class > key as u32 % classes, "a key below its class");
            }
        }
        for k in 0..image.len() as u64 * 8 {
            let bit = image[(k / 8) as usize] >> (k % 8) & 1;
            assert_eq!(
                u32::from(bit),
                u32::from(packed(&cells, bits, k) > 0),
                "image bit {k}"
            );
        }
        n += 1;
    }
    assert_eq!(n, 8);
}

/// The count lines are the smallest counter of each key in the counting line of the same
/// fields.
#[test]
fn counts_follow_from_the_counters() {
    let mut n = 0;
    for c in golden::lines("count") {
        let counting = golden::lines("counting")
            .find(|f| f[1..7] == c[1..7])
            .expect("a counting line for every count line");
        let (layout, blocks) = (Layout::from_name(c[1]).unwrap(), c[2].parse().unwrap());
        let (seed, bits): (u64, u32) = (c[3].parse().unwrap(), c[4].parse().unwrap());
        let counters = unhex(counting[8]).unwrap();
        for (key, &count) in numbers(c[7]).iter().enumerate() {
            assert_eq!(
                min_cell(layout, blocks, seed, &counters, bits, key as u64),
                count
            );
        }
        n += 1;
    }
    assert_eq!(n, 8);
}

/// Every `file` line is a valid file of its kind that reads back and writes the same bytes.
#[test]
fn file_lines_read_and_write_back() {
    let mut names = Vec::new();
    for f in golden::lines("file") {
        let bytes = unhex(f[2]).unwrap();
        let filter = bloomlanes_core::AnyFilter::from_file_bytes(&bytes).unwrap();
        assert!(filter.to_file_bytes() == bytes, "{}", f[1]);
        assert!(f[1].starts_with(filter.params().kind.name()), "{}", f[1]);
        names.push(f[1]);
    }
    assert_eq!(
        names,
        [
            "static",
            "counting",
            "stable",
            "window-keys",
            "window-time",
            "scalable",
            "spatial",
            "retrieval"
        ]
    );
}
