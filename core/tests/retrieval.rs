//! Retrieval tables: every key of the build set gets its value back, absent keys are refused at
//! the rate the check bits promise, repeats are refused or merged, a key's cells lie in distinct
//! banks, and files round-trip and reject every crafted metadata field.
#![cfg(feature = "alloc")]

use bloomlanes_core::format::{FormatError, HEADER_LEN};
use bloomlanes_core::kind_meta::META_LEN;
use bloomlanes_core::retrieval::{RetrievalError, RetrievalSpec, RetrievalTable, Shape};
use bloomlanes_core::{xxh64, AnyFilter, FilterKind, KeyType, Layout, Params};
use proptest::prelude::*;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn base() -> Params {
    Params::new(Layout::L8x32, 1)
}

/// `n` distinct random hashes and random values of `v` bits.
fn pairs(n: usize, v: u8, seed: u64) -> (Vec<u64>, Vec<u32>) {
    let mut s = seed;
    let hashes: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    let mask = ((1u64 << v) - 1) as u32;
    let values = (0..n).map(|_| splitmix(&mut s) as u32 & mask).collect();
    (hashes, values)
}

fn build(spec: RetrievalSpec, hashes: &[u64], values: &[u32]) -> RetrievalTable {
    RetrievalTable::build(base(), spec, hashes, values).unwrap()
}

#[test]
fn every_key_gets_its_value_for_every_width_and_arity() {
    for arity in [3, 4] {
        for (v, f) in [
            (1, 0),
            (8, 0),
            (8, 8),
            (16, 0),
            (13, 7),
            (32, 0),
            (32, 32),
            (1, 32),
        ] {
            let spec = RetrievalSpec::new(v, f).with_arity(arity);
            let (hashes, values) = pairs(20_000, v, u64::from(v) * 100 + u64::from(f));
            let t = build(spec, &hashes, &values);
            assert_eq!(t.key_count(), 20_000);
            for (i, (&h, &val)) in hashes.iter().zip(&values).enumerate() {
                assert_eq!(t.get_hash(h), Some(val), "{spec:?}: key {i}");
            }
            let bits = t.bits_per_key().unwrap() / f64::from(v + f);
            assert!(
                bits < if arity == 4 { 1.2 } else { 1.25 },
                "{spec:?}: ×{bits}"
            );
        }
    }
}

#[test]
fn space_is_close_to_v_plus_f_bits_per_key() {
    // 4-wise sizing approaches ×1.075 as n grows; at 10^6 keys it is within ×1.08.
    let (hashes, values) = pairs(1_000_000, 8, 9);
    let t = build(RetrievalSpec::new(8, 8), &hashes, &values);
    let ratio = t.bits_per_key().unwrap() / 16.0;
    assert!(ratio < 1.08, "×{ratio}");
    assert_eq!(t.words().len() as u64, t.shape().words());
}

#[test]
fn small_sets_of_every_size_build() {
    for n in 0..300 {
        for arity in [3, 4] {
            let (hashes, values) = pairs(n, 5, n as u64);
            let t = build(RetrievalSpec::new(5, 3).with_arity(arity), &hashes, &values);
            for (&h, &val) in hashes.iter().zip(&values) {
                assert_eq!(t.get_hash(h), Some(val), "n = {n}, arity {arity}");
            }
        }
    }
}

/// Asserts that `hits` out of `n` trials is within 4σ of rate `p`.
fn within_4_sigma(what: &str, hits: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt().max(1.0);
    let z = (hits as f64 - mean) / sigma;
    eprintln!("{what}: {hits}/{n}, expected {p:.6}, z = {z:.2}");
    assert!(z.abs() <= 4.0, "{what}: {hits} of {n}, z = {z:.2}");
}

#[test]
fn absent_keys_are_refused_at_the_rate_of_the_check_bits() {
    let probes = 1_000_000u64;
    for f in [1u8, 2, 4, 8, 12] {
        let (hashes, values) = pairs(100_000, 8, 77 + u64::from(f));
        let t = build(RetrievalSpec::new(8, f), &hashes, &values);
        let mut s = 0xfeed_u64 + u64::from(f);
        let absent = (0..probes)
            .filter(|_| t.get_hash(splitmix(&mut s)).is_none())
            .count() as u64;
        within_4_sigma(
            &format!("f = {f}"),
            absent,
            probes,
            1.0 - (-f64::from(f)).exp2(),
        );
    }
    // Without check bits every key gets a value.
    let (hashes, values) = pairs(1000, 8, 5);
    let t = build(RetrievalSpec::new(8, 0), &hashes, &values);
    let mut s = 3;
    assert!((0..10_000).all(|_| t.get_hash(splitmix(&mut s)).is_some()));
}

#[test]
fn an_empty_table_answers_absent_or_zero() {
    let t = build(RetrievalSpec::new(8, 16), &[], &[]);
    assert_eq!(t.key_count(), 0);
    let mut s = 1;
    let some = (0..10_000)
        .filter(|_| t.get_hash(splitmix(&mut s)).is_some())
        .count();
    assert!(some < 5, "{some}");
    let t = build(RetrievalSpec::new(8, 0), &[], &[]);
    assert_eq!(t.get_hash(42), Some(0));
}

#[test]
fn a_key_repeated_with_two_values_is_refused_by_index() {
    let (mut hashes, mut values) = pairs(5000, 8, 1);
    hashes[3000] = hashes[10];
    values[3000] = values[10] ^ 1;
    hashes[4000] = hashes[20];
    values[4000] = values[20] ^ 1;
    let err = RetrievalTable::build(base(), RetrievalSpec::new(8, 4), &hashes, &values);
    assert_eq!(
        err.unwrap_err(),
        RetrievalError::ConflictingValues {
            index: 3000,
            first: 10
        }
    );
}

#[test]
fn a_key_repeated_with_one_value_is_stored_once() {
    let (mut hashes, mut values) = pairs(5000, 8, 2);
    for i in 0..50 {
        hashes.push(hashes[i * 7]);
        values.push(values[i * 7]);
    }
    hashes.push(hashes[0]);
    values.push(values[0]);
    let t = build(RetrievalSpec::new(8, 4), &hashes, &values);
    assert_eq!(t.key_count(), 5000);
    for (&h, &v) in hashes.iter().zip(&values) {
        assert_eq!(t.get_hash(h), Some(v));
    }
    // The same table as from the distinct keys alone.
    let d = build(RetrievalSpec::new(8, 4), &hashes[..5000], &values[..5000]);
    assert_eq!(t.to_file_bytes(), d.to_file_bytes());
}

#[test]
fn bad_inputs_are_named() {
    let spec = RetrievalSpec::new(4, 0);
    assert_eq!(
        RetrievalTable::build(base(), spec, &[1, 2, 3], &[1, 16, 2]).unwrap_err(),
        RetrievalError::ValueTooWide {
            index: 1,
            value: 16,
            value_bits: 4
        }
    );
    assert_eq!(
        RetrievalTable::build(base(), spec, &[1, 2], &[1]).unwrap_err(),
        RetrievalError::LengthMismatch {
            hashes: 2,
            values: 1
        }
    );
    for bad in [
        RetrievalSpec::new(0, 0),
        RetrievalSpec::new(33, 0),
        RetrievalSpec::new(8, 33),
        RetrievalSpec::new(8, 0).with_arity(2),
        RetrievalSpec::new(8, 0).with_arity(5),
    ] {
        let err = RetrievalTable::build(base(), bad, &[1], &[0]).unwrap_err();
        assert_eq!(err, RetrievalError::BadSpec(bad));
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn a_keys_cells_lie_in_distinct_banks_of_consecutive_segments() {
    for arity in [3u8, 4] {
        let (hashes, values) = pairs(50_000, 8, 11);
        let t = build(RetrievalSpec::new(8, 0).with_arity(arity), &hashes, &values);
        let shape = *t.shape();
        let bank_len = shape
            .cells()
            .div_ceil(u64::from(arity) * shape.segment_len())
            * shape.segment_len();
        for &h in &hashes {
            let c = shape.cells_of(shape.mixed(h));
            let first = c[0] >> shape.segment_bits;
            let mut banks = 0u32;
            for (j, &cell) in c[..arity as usize].iter().enumerate() {
                assert!(u64::from(cell) < shape.cells());
                assert_eq!(cell >> shape.segment_bits, first + j as u32);
                banks |= 1 << shape.bank(cell);
                assert!(shape.bank_address(cell) < bank_len);
            }
            assert_eq!(banks, (1 << arity) - 1);
        }
    }
}

#[test]
fn typed_keys_hash_with_the_tables_seed_and_record_their_type() {
    let keys: Vec<u64> = (0..1000).collect();
    let values: Vec<u32> = keys.iter().map(|k| (k % 200) as u32).collect();
    let t = RetrievalTable::build_keys(
        base().with_seed(9),
        RetrievalSpec::new(8, 8),
        &keys,
        &values,
    )
    .unwrap();
    assert_eq!(t.params().key_type, KeyType::U64);
    assert_eq!(t.params().seed, 9);
    assert!(keys.iter().zip(&values).all(|(k, &v)| t.get(k) == Some(v)));
}

#[test]
fn the_same_input_builds_the_same_bytes() {
    let (hashes, values) = pairs(10_000, 12, 4);
    let a = build(RetrievalSpec::new(12, 4), &hashes, &values);
    let b = build(RetrievalSpec::new(12, 4), &hashes, &values);
    assert_eq!(a.to_file_bytes(), b.to_file_bytes());
}

#[test]
fn files_round_trip_as_a_table_and_as_any_filter() {
    for (v, f, arity) in [(8, 8, 4), (3, 0, 3), (32, 32, 4), (7, 5, 4)] {
        let (hashes, values) = pairs(3000, v, 8);
        let t = build(RetrievalSpec::new(v, f).with_arity(arity), &hashes, &values);
        let file = t.to_file_bytes();
        assert_eq!(file.len() % 64, 0);
        let back = RetrievalTable::from_file_bytes(&file).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.to_file_bytes(), file);
        let any = AnyFilter::from_file_bytes(&file).unwrap();
        assert_eq!(
            any.params().kind,
            FilterKind::Retrieval {
                value_bits: v,
                check_bits: f
            }
        );
        assert!(hashes.iter().all(|&h| any.contains_hash(h)));
        let stats = any.stats();
        assert_eq!(stats.keys, Some(3000));
        assert!((stats.expected_fpr - (-f64::from(f)).exp2()).abs() < 1e-12);
        assert_eq!(any.to_file_bytes(), file);
    }
}

/// Recomputes the payload and header checksums of a file whose bytes were changed.
fn reseal(file: &mut [u8]) {
    let payload = xxh64(&file[HEADER_LEN..], 0);
    file[48..56].copy_from_slice(&payload.to_le_bytes());
    let header = xxh64(&file[..56], 0);
    file[56..64].copy_from_slice(&header.to_le_bytes());
}

fn sample_file(n: usize, v: u8, f: u8) -> Vec<u8> {
    let (hashes, values) = pairs(n, v, 6);
    build(RetrievalSpec::new(v, f), &hashes, &values).to_file_bytes()
}

fn rejected(file: &[u8]) -> FormatError {
    let a = RetrievalTable::from_file_bytes(file).unwrap_err();
    let b = AnyFilter::from_file_bytes(file).unwrap_err();
    assert_eq!(a, b);
    a
}

#[test]
fn crafted_metadata_is_rejected() {
    // A table whose array fills whole lines, and a tiny one with padding and spare bits.
    crafted_files_are_rejected(&sample_file(2000, 10, 6), false);
    crafted_files_are_rejected(&sample_file(3, 3, 2), true);
}

fn crafted_files_are_rejected(good: &[u8], tiny: bool) {
    let m = HEADER_LEN; // the metadata starts the payload
    let shape = *RetrievalTable::from_file_bytes(good).unwrap().shape();
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut file = good.to_vec();
        f(&mut file);
        reseal(&mut file);
        cases.push((what, file));
    };
    edit("value bits 0", &|b| b[m] = 0);
    edit("value bits 33", &|b| b[m] = 33);
    edit("check bits 33", &|b| b[m + 1] = 33);
    edit("arity 2", &|b| b[m + 2] = 2);
    edit("arity 5", &|b| b[m + 2] = 5);
    edit("arity 3 for a 4-wise table", &|b| b[m + 2] = 3);
    edit("segment bits 19", &|b| b[m + 3] = 19);
    edit("segment bits off by one", &|b| b[m + 3] += 1);
    edit("segment count 0", &|b| {
        b[m + 4..m + 8].copy_from_slice(&[0; 4])
    });
    edit("segment count huge", &|b| {
        b[m + 4..m + 8].copy_from_slice(&u32::MAX.to_le_bytes())
    });
    edit("segment count + 1", &|b| {
        let s = shape.segment_count + 1;
        b[m + 4..m + 8].copy_from_slice(&s.to_le_bytes());
    });
    edit("cell count off", &|b| b[m + 16] ^= 1);
    edit("unused metadata byte", &|b| b[m + 40] = 1);
    edit("block count", &|b| b[12] ^= 1);
    edit("layout", &|b| b[11] = 32);
    edit("key count above the cells", &|b| {
        b[32..40].copy_from_slice(&(shape.cells() + 1).to_le_bytes())
    });
    edit("no key count", &|b| {
        b[25] = 0;
        b[32..40].copy_from_slice(&[0; 8]);
    });
    edit("kind 5", &|b| b[26] = 5);
    let array_end = HEADER_LEN + META_LEN + shape.array_bytes() as usize;
    let used_bits = shape.cells() * u64::from(shape.cell_bits());
    assert_eq!(tiny, array_end < good.len() && !used_bits.is_multiple_of(8));
    if tiny {
        edit("padding after the array", &|b| b[array_end] = 1);
        edit("bits past the last cell", &|b| b[array_end - 1] |= 0x80);
    }
    edit("payload cut short", &|b| {
        b.truncate(b.len() - 64);
        let len = (b.len() - HEADER_LEN) as u64;
        b[40..48].copy_from_slice(&len.to_le_bytes());
    });
    assert!(cases.len() >= 18);
    for (what, file) in &cases {
        let err = rejected(file);
        assert!(!err.to_string().is_empty(), "{what}");
        eprintln!("{what}: {err}");
    }
    // Truncation and a flipped cell bit without a new checksum.
    assert!(matches!(
        rejected(&good[..good.len() - 1]),
        FormatError::Truncated { .. }
    ));
    let mut flipped = good.to_vec();
    flipped[HEADER_LEN + META_LEN + 3] ^= 4;
    assert_eq!(rejected(&flipped), FormatError::PayloadChecksum);
}

#[test]
fn a_huge_segment_count_in_a_small_file_allocates_nothing() {
    // A file claiming 2^32 - 1 cells of 64 bits in 4 KiB: refused by the length checks.
    let mut file = sample_file(2000, 10, 6);
    let m = HEADER_LEN;
    let shape = Shape {
        value_bits: 32,
        check_bits: 32,
        arity: 4,
        segment_bits: 18,
        segment_count: 16380,
        seed: 1,
    };
    file[m..m + META_LEN].copy_from_slice(&shape.encode());
    file[26] = 6;
    reseal(&mut file);
    assert!(RetrievalTable::from_file_bytes(&file).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn built_tables_answer_every_key_and_round_trip(
        n in 0usize..3000,
        v in 1u8..=32,
        f in 0u8..=32,
        arity in 3u8..=4,
        seed: u64,
    ) {
        let (hashes, values) = pairs(n, v, seed);
        let t = build(RetrievalSpec::new(v, f).with_arity(arity), &hashes, &values);
        for (&h, &val) in hashes.iter().zip(&values) {
            prop_assert_eq!(t.get_hash(h), Some(val));
        }
        let back = RetrievalTable::from_file_bytes(&t.to_file_bytes()).unwrap();
        prop_assert_eq!(back, t);
    }
}
