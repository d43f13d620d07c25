//! Regression tests for hostile inputs found by fuzzing and review (issue #11): each reproducer
//! must be rejected quickly with an error naming the fault, never hang, panic or allocate without
//! bound.
#![cfg(feature = "alloc")]

mod common;

use std::time::{Duration, Instant};

use bloomlanes_core::format::{self, FormatError, Verify, HEADER_LEN};
use bloomlanes_core::parquet::{self, ParquetError};
use bloomlanes_core::{math, Filter, Layout, Params, Stats};
use common::with;

/// Runs `f` and fails if it takes longer than `limit` (a loop bounded by the input finishes in
/// microseconds; the defects took forever).
fn quickly<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    assert!(t.elapsed() < limit, "took {:?}", t.elapsed());
    r
}

/// Defect 2: `skip()` of a Thrift map of bool → bool consumed 0 bytes per entry with a count up
/// to 2^64 − 1: an endless loop on these 12 bytes.
#[test]
fn parquet_map_of_bools_with_a_huge_count_is_rejected() {
    parquet_rejected_quickly(include_bytes!("data/parquet_map_bool_hang.bin"));
}

/// Asserts that the Parquet form `bytes` is rejected as malformed or truncated within a second.
fn parquet_rejected_quickly(bytes: &[u8]) {
    let err = quickly(Duration::from_secs(1), || parquet::parse(bytes)).unwrap_err();
    assert!(
        matches!(
            err,
            ParquetError::Malformed { .. } | ParquetError::Truncated { .. }
        ),
        "{err:?}"
    );
}

/// Every collection whose count exceeds the bytes left is refused before its loop runs.
#[test]
fn parquet_collections_with_lying_counts_are_rejected() {
    // field 5 (unknown), list (type 9) of i32 with a varint count of 2^63.
    let list = [
        0x59, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x02,
    ];
    // field 5, set (type 10) of bools, count 15 (escape) + varint 1_000_000.
    let set = [0x5a, 0xf1, 0xc0, 0x84, 0x3d, 0x01];
    parquet_rejected_quickly(&list);
    parquet_rejected_quickly(&set);
}

/// A map whose bool entries are one byte each is skipped correctly (not an error).
#[test]
fn parquet_map_of_bools_is_skipped_byte_by_byte() {
    let filter = Filter::new(Params::new(Layout::L8x32, 1));
    let good = filter.to_parquet().unwrap();
    // Prepend an unknown field 7: a map of 2 bool → bool entries (4 one-byte values).
    let mut bytes = vec![0x7b, 0x02, 0x11, 0x01, 0x02, 0x01, 0x02];
    // The rest of the header follows; its first field id is absolute (1) so use the long form.
    bytes.push(0x05); // field header: delta 0, type i32 (5); id follows as zigzag varint
    bytes.push(0x02); // id 1
    bytes.extend_from_slice(&good[1..]);
    let (bitset, used) = parquet::parse(&bytes).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(bitset.len(), 32);
}

/// Defect 4: `stats` looped ~24·√(keys/blocks) times: a valid file with key count 2^64 − 1 and
/// one block never returned.
#[test]
fn false_positive_rate_of_a_huge_key_count_returns_at_once() {
    for layout in Layout::ALL {
        let r = quickly(Duration::from_millis(200), || {
            math::false_positive_rate(layout, 1, u64::MAX)
        });
        assert_eq!(r, 1.0);
        let s = quickly(Duration::from_millis(200), || {
            Stats::new(Params::new(layout, 1), Some(u64::MAX), 0)
        });
        // No bit is set: whatever the recorded count, nothing is a false positive.
        assert_eq!(
            (s.recorded_keys, s.keys, s.expected_fpr),
            (Some(u64::MAX), Some(0), 0.0)
        );
        let s = quickly(Duration::from_millis(200), || {
            Stats::new(
                Params::new(layout, 1),
                Some(u64::MAX),
                layout.block_bits() as u64,
            )
        });
        assert_eq!(s.expected_fpr, 1.0);
    }
    // Just below the cut-off the formula still runs and is already 1 (up to the rounding of its
    // own Poisson sum), so the cut-off changes no answer.
    let lambda = (math::SATURATION_LOAD - 1.0) as u64;
    for layout in Layout::ALL {
        let r = math::false_positive_rate(layout, 1, lambda);
        assert!((1.0 - r).abs() < 1e-9, "{layout}: {r}");
    }
}

/// Defect 10: a non-zero key-count field with its flag clear was accepted, against FORMAT.md.
#[test]
fn stray_key_count_is_rejected() {
    let mut f = Filter::new(Params::new(Layout::L8x32, 2));
    f.set_key_count(None);
    let bytes = with(&f.to_file_bytes(), 32, &[7]);
    assert_eq!(
        format::parse(&bytes).unwrap_err(),
        FormatError::StrayKeyCount(7)
    );
}

/// The 96-byte file of defect 4: key count 2^64 − 1, one block, checksums right. It is valid and
/// its statistics come back at once.
#[test]
fn huge_key_count_file_is_valid_and_fast() {
    let mut f = Filter::new(Params::new(Layout::L8x32, 1));
    f.set_key_count(Some(u64::MAX));
    let bytes = f.to_file_bytes();
    assert_eq!(bytes.len(), 96);
    let g = Filter::from_file_bytes(&bytes).unwrap();
    let s = quickly(Duration::from_millis(200), || g.stats());
    // The rate is that of its bits (none set), not of the recorded count.
    assert_eq!((s.recorded_keys, s.expected_fpr), (Some(u64::MAX), 0.0));
}

/// Skipping the payload checksum (for huge memory-mapped filters) still checks everything else.
#[test]
fn header_only_verification_skips_just_the_payload_checksum() {
    let mut f = Filter::new(Params::new(Layout::L16x64, 3));
    f.insert("x");
    let mut bytes = f.to_file_bytes();
    bytes[HEADER_LEN + 5] ^= 0x10;
    assert_eq!(
        format::parse(&bytes).unwrap_err(),
        FormatError::PayloadChecksum
    );
    assert!(format::parse_with(&bytes, Verify::HeaderOnly).is_ok());
    bytes.pop();
    assert!(matches!(
        format::parse_with(&bytes, Verify::HeaderOnly).unwrap_err(),
        FormatError::Truncated { .. }
    ));
}
