//! Every metadata field of every kind is range-checked on open (`docs/FORMAT.md` §9, "Ranges"):
//! each test crafts a file with one field out of its range, recomputes both checksums (so that
//! the range check, not a checksum, is what must reject it) and expects an error naming the
//! metadata; the values at the edge of each range are accepted and usable.
#![cfg(feature = "alloc")]

mod common;

use bloomlanes_core::format::{FormatError, Header, HEADER_LEN};
use bloomlanes_core::kind_meta::{self, MAX_DECREMENTS};
use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, FilterKind, Layout, Params, ScalableFilter,
    SpatialFilter, WindowFilter, WindowUnit,
};
use common::{rechecksum, with};

/// Asserts that the crafted file is rejected for its metadata (by every reader of its kind).
fn rejected(what: &str, file: &[u8]) {
    let err = AnyFilter::from_file_bytes(file).expect_err(what);
    assert!(
        matches!(
            err,
            FormatError::Metadata { .. } | FormatError::CellValue { .. }
        ),
        "{what}: {err:?}"
    );
}

fn accepted(what: &str, file: &[u8]) -> AnyFilter {
    AnyFilter::from_file_bytes(file).unwrap_or_else(|e| panic!("{what}: {e}"))
}

// File offsets of the kind metadata: the payload, and the metadata, start at byte 64.
const META: usize = HEADER_LEN;

/// The file: a stable filter with P = ff ff ff ff was accepted, and its first insert
/// asked for 34 GB (SIMD) or 8 s per key (scalar).
#[test]
fn stable_decrements_past_the_cells_or_2_pow_20_are_rejected() {
    let small = CountingFilter::stable(Params::new(Layout::L8x32, 1), CounterBits::Four, 3);
    let file = small.to_file_bytes();
    rejected(
        "P = 2^32 - 1",
        &with(&file, META + 4, &u32::MAX.to_le_bytes()),
    );
    rejected(
        "P = 0x7fffffff",
        &with(&file, META + 4, &0x7fff_ffffu32.to_le_bytes()),
    );
    // One block of 8x32: 256 cells.
    rejected(
        "P = cells + 1",
        &with(&file, META + 4, &257u32.to_le_bytes()),
    );
    let AnyFilter::Counting(mut edge) =
        accepted("P = cells", &with(&file, META + 4, &256u32.to_le_bytes()))
    else {
        panic!()
    };
    edge.insert("x");
    assert!(edge.contains("x"));
    // A filter with more than 2^20 cells is capped at 2^20.
    let big = CountingFilter::stable(Params::new(Layout::L8x32, 4100), CounterBits::Four, 3);
    let file = big.to_file_bytes();
    accepted(
        "P = 2^20",
        &with(&file, META + 4, &MAX_DECREMENTS.to_le_bytes()),
    );
    rejected(
        "P = 2^20 + 1",
        &with(&file, META + 4, &(MAX_DECREMENTS + 1).to_le_bytes()),
    );
}

/// Constructors and sizing stay inside the range a file may hold.
#[test]
fn stable_constructors_and_sizing_stay_in_range() {
    let p = Params::new(Layout::L8x32, 1);
    let f = CountingFilter::stable(p, CounterBits::Four, u32::MAX);
    assert!(matches!(
        f.params().kind,
        FilterKind::Stable {
            decrements: 256,
            ..
        }
    ));
    assert!(CountingFilter::from_file_bytes(&f.to_file_bytes()).is_ok());
    let p = bloomlanes_core::math::stable_decrements_for_rate(Layout::L8x32, 1, 15, 1e-300);
    assert_eq!(p, kind_meta::max_decrements(&Params::new(Layout::L8x32, 1)));
}

fn window(unit: WindowUnit, keys: u64) -> Vec<u8> {
    let kind = FilterKind::Window {
        generations: 3,
        unit,
        span: 10,
    };
    let mut w = WindowFilter::new(Params::new(Layout::L8x32, 4).with_kind(kind)).unwrap();
    for k in 0..keys {
        w.insert_at(&k, 1_000 + k);
    }
    w.to_file_bytes()
}

#[test]
fn window_state_out_of_range_is_rejected() {
    let file = window(WindowUnit::Keys, 25); // 5 keys in the current generation
    accepted("5 of 10", &file);
    accepted("10 of 10", &with(&file, META + 24, &10u64.to_le_bytes()));
    rejected(
        "11 of a span of 10",
        &with(&file, META + 24, &11u64.to_le_bytes()),
    );
    rejected("keys window started", &with(&file, META + 18, &[1]));
    rejected(
        "keys window with a start time",
        &with(&file, META + 32, &5u64.to_le_bytes()),
    );
    let time = window(WindowUnit::Nanos, 25);
    let fill = with(&time, META + 24, &26u64.to_le_bytes());
    rejected("more keys in the generation than in the filter", &fill);
    // Without a recorded key count the fill is still bounded (a bulk add never overflows it).
    let mut unknown = time.clone();
    unknown[25] = 0;
    unknown[32..40].fill(0);
    rechecksum(&mut unknown);
    accepted("time window, no key count", &unknown);
    rejected(
        "fill of 2^63",
        &with(&unknown, META + 24, &(1u64 << 63).to_le_bytes()),
    );
    accepted(
        "fill of 2^63 - 1",
        &with(&unknown, META + 24, &((1u64 << 63) - 1).to_le_bytes()),
    );
}

fn scalable() -> ScalableFilter {
    let mut s = ScalableFilter::new(Params::new(Layout::L8x32, 1), 10, 0.05, 2, 0.5).unwrap();
    for k in 0..50u64 {
        s.insert(&k).unwrap();
    }
    assert_eq!(s.stages().len(), 3); // 10 + 20 + 20 of 40
    s
}

/// File offset of stage `i`'s key count.
fn stage_keys(i: usize) -> usize {
    META + 64 + 16 * i + 8
}

#[test]
fn scalable_stage_fill_and_key_total_are_checked() {
    let file = scalable().to_file_bytes();
    let keys = |n: u64| n.to_le_bytes();
    // Stage 2 holds 20 of 40; the header 50.
    let mut more = with(&file, stage_keys(2), &keys(41));
    more[32..40].copy_from_slice(&keys(71));
    rechecksum(&mut more);
    rejected("a stage past its capacity", &more);
    let mut hole = with(&file, stage_keys(1), &keys(19));
    hole[32..40].copy_from_slice(&keys(49));
    rechecksum(&mut hole);
    rejected("an earlier stage not full", &hole);
    rejected("header keys off by one", &with(&file, 32, &keys(51)));
    let mut unknown = file.clone();
    unknown[25] = 0;
    unknown[32..40].fill(0);
    rechecksum(&mut unknown);
    rejected("no key count", &unknown);
    let mut last_full = with(&file, stage_keys(2), &keys(40));
    last_full[32..40].copy_from_slice(&keys(70));
    rechecksum(&mut last_full);
    let AnyFilter::Scalable(mut s) = accepted("a full last stage", &last_full) else {
        panic!()
    };
    s.insert("next").unwrap();
    assert_eq!(s.stages().len(), 4);
}

#[test]
fn scalable_rates_must_be_finite_in_the_open_unit_interval() {
    let file = scalable().to_file_bytes();
    for rate in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY, 1.5] {
        rejected(
            &format!("rate {rate}"),
            &with(&file, META + 8, &rate.to_bits().to_le_bytes()),
        );
    }
}

/// A scalable file written from its parts: stage 0 of `n0` keys growing by 2, `stages` stages
/// of one block each holding `keys(i)` keys, and the header's count their sum.
fn scalable_file(n0: u64, stages: u32, keys: impl Fn(u32) -> u64) -> Vec<u8> {
    let kind = FilterKind::Scalable {
        growth: 2,
        tightening: 128,
    };
    let params = Params::new(Layout::L8x32, 1).with_kind(kind);
    let meta_len = (64 + 16 * stages as usize).div_ceil(64) * 64;
    let mut payload = vec![0u8; meta_len + 64 * stages as usize];
    let fixed = kind_meta::ScalableMeta {
        growth: 2,
        tightening: 128,
        rate: 0.01,
        initial_capacity: n0,
    };
    let table: Vec<(u32, u64)> = (0..stages).map(|i| (1, keys(i))).collect();
    kind_meta::scalable_meta(&fixed, &table, &mut payload[..meta_len]);
    let total = table.iter().fold(0u64, |a, &(_, k)| a.wrapping_add(k));
    let header = Header {
        params,
        keys: Some(total),
        meta_len: meta_len as u64,
    };
    [header.encode(&payload).to_vec(), payload].concat()
}

#[test]
fn scalable_stage_counts_and_key_sums_cannot_overflow() {
    accepted("3 stages", &scalable_file(1, 3, |i| 1 << i));
    // 66 stages of one key capacity each doubling: only 65 can ever exist.
    rejected(
        "66 stages",
        &scalable_file(1, 66, |i| 1u64.checked_shl(i).unwrap_or(u64::MAX)),
    );
    // Two full stages of 2^63 keys: 2^64 in all, which no key count holds.
    rejected("keys past 2^64", &scalable_file(1 << 63, 2, |_| 1 << 63));
}

fn spatial() -> Vec<u8> {
    let mut f = SpatialFilter::new(Params::new(Layout::L8x32, 8), 8, &["deny", "allow"]).unwrap();
    for k in 0..30u64 {
        f.insert(&k, (k % 2 + 1) as u32).unwrap();
    }
    f.to_file_bytes()
}

#[test]
fn spatial_key_totals_and_cells_are_checked() {
    let file = spatial();
    accepted("as written", &file);
    rejected(
        "class keys off the header's",
        &with(&file, META + 64, &16u64.to_le_bytes()),
    );
    let mut overflow = with(&file, META + 64, &u64::MAX.to_le_bytes());
    overflow[32..40].copy_from_slice(&(u64::MAX).to_le_bytes());
    rechecksum(&mut overflow);
    rejected("class keys that overflow", &overflow);
    // The cells (one byte each) start after the metadata (128 bytes) and the image (256 bytes):
    // a class 3 in a cell that holds a class.
    let cells = META + 128 + 256;
    let first = (cells..file.len()).find(|&i| file[i] != 0).unwrap();
    let bad = with(&file, first, &[3]);
    assert_eq!(
        SpatialFilter::from_file_bytes(&bad).unwrap_err(),
        FormatError::CellValue {
            cell: (first - cells) as u64,
            value: 3
        }
    );
}

/// Found by fuzzing (`filter_fields`): an image that was not the projection of its cells was
/// accepted, and the SIMD and scalar stable inserts then left different filters.
#[test]
fn the_image_is_the_projection_of_the_cells() {
    let p = Params::new(Layout::L8x64, 2);
    let mut counting = CountingFilter::counting(p, CounterBits::Four);
    let mut stable = CountingFilter::stable(p, CounterBits::Eight, 2);
    for k in 0..40u64 {
        counting.insert(&k);
        stable.insert(&k);
    }
    let image_at = META + 64;
    for (what, file) in [
        ("counting", counting.to_file_bytes()),
        ("stable", stable.to_file_bytes()),
        ("spatial", spatial()),
    ] {
        let image_at = if what == "spatial" {
            META + 128
        } else {
            image_at
        };
        accepted(what, &file);
        for bit in [0usize, 77, 255] {
            let mut bad = file.clone();
            bad[image_at + bit / 8] ^= 1 << (bit % 8);
            rechecksum(&mut bad);
            assert_eq!(
                AnyFilter::from_file_bytes(&bad).unwrap_err(),
                FormatError::Projection { bit: bit as u64 },
                "{what}"
            );
        }
    }
}

/// A payload length near 2^64 overflowed the file length it implies (a panic in a debug build).
#[test]
fn a_payload_length_near_2_pow_64_is_an_error() {
    let file =
        CountingFilter::counting(Params::new(Layout::L8x32, 1), CounterBits::Four).to_file_bytes();
    for len in [u64::MAX, u64::MAX - 63, u64::MAX - 64] {
        let err = AnyFilter::from_file_bytes(&with(&file, 40, &len.to_le_bytes())).unwrap_err();
        assert!(
            matches!(err, FormatError::Truncated { .. }),
            "{len}: {err:?}"
        );
    }
}

/// Found by fuzzing (`filter_fields`): bytes after a spatial filter's class table, or a scalable
/// filter's stage table, up to the end of the metadata were not checked to be zero.
#[test]
fn padding_after_a_table_is_zero() {
    // Spatial: 64 + 16 bytes of class keys + 11 of names (4 "deny", 5 "allow"); metadata 128.
    let file = spatial();
    accepted("as written", &file);
    let pad = META + 64 + 16 + 11;
    for at in [pad, META + 127] {
        let err = AnyFilter::from_file_bytes(&with(&file, at, &[2])).unwrap_err();
        assert_eq!(
            err,
            FormatError::Padding {
                offset: (at - META) as u64
            },
            "byte {at}"
        );
    }
    // Scalable: 64 + 3 stages of 16 bytes; the metadata is 128.
    let file = scalable().to_file_bytes();
    let err = AnyFilter::from_file_bytes(&with(&file, META + 64 + 48, &[1])).unwrap_err();
    assert_eq!(err, FormatError::Padding { offset: 112 });
}
