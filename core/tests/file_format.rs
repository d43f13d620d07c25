//! The file format: round trips, and every truncation, bit flip, foreign and future file rejected.
#![cfg(feature = "alloc")]
use bloomlanes_core::format::{self, FormatError, FORMAT_VERSION, HEADER_LEN};
use bloomlanes_core::parquet::ParquetError;
use bloomlanes_core::Params;
use bloomlanes_core::{xxh64, Filter, HashId, Layout};
use proptest::prelude::*;

fn sample(layout: Layout, blocks: u32) -> Filter {
    let mut f = Filter::new(Params::new(layout, blocks).with_seed(99));
    (0..u64::from(blocks) * 7).for_each(|k| f.insert(&k));
    f
}

#[test]
fn round_trip_every_layout() {
    for layout in Layout::ALL {
        for blocks in [1, 3, 64] {
            let f = sample(layout, blocks);
            let bytes = f.to_file_bytes();
            assert_eq!(bytes.len(), HEADER_LEN + f.byte_len());
            let g = Filter::from_file_bytes(&bytes).unwrap();
            assert_eq!(f, g);
            assert_eq!(g.key_count(), Some(u64::from(blocks) * 7));
            assert_eq!(g.seed(), 99);
        }
    }
}

#[test]
fn every_truncation_is_rejected() {
    let bytes = sample(Layout::L8x64, 5).to_file_bytes();
    for len in 0..bytes.len() {
        let err = Filter::from_file_bytes(&bytes[..len]).unwrap_err();
        assert!(
            matches!(err, FormatError::Truncated { .. }),
            "length {len}: {err:?}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        Filter::from_file_bytes(&longer).unwrap_err(),
        FormatError::TrailingBytes(1)
    );
}

#[test]
fn every_single_bit_flip_is_rejected() {
    let bytes = sample(Layout::L8x32, 4).to_file_bytes();
    for bit in 0..bytes.len() * 8 {
        let mut bad = bytes.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        assert!(
            Filter::from_file_bytes(&bad).is_err(),
            "flip of bit {bit} accepted"
        );
    }
}

#[test]
fn foreign_and_future_files_are_named() {
    assert_eq!(
        Filter::from_file_bytes(
            b"PAR1 this is a parquet file, not a filter at all, padding padding"
        )
        .unwrap_err(),
        FormatError::BadMagic
    );
    // A future version with a valid checksum.
    let mut bytes = sample(Layout::L8x32, 2).to_file_bytes();
    bytes[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let check = xxh64(&bytes[..56], 0);
    bytes[56..64].copy_from_slice(&check.to_le_bytes());
    assert_eq!(
        Filter::from_file_bytes(&bytes).unwrap_err(),
        FormatError::UnsupportedVersion {
            found: FORMAT_VERSION + 1
        }
    );
    // An unsupported layout with a valid checksum.
    let mut bytes = sample(Layout::L8x32, 2).to_file_bytes();
    bytes[11] = 48;
    let check = xxh64(&bytes[..56], 0);
    bytes[56..64].copy_from_slice(&check.to_le_bytes());
    assert_eq!(
        Filter::from_file_bytes(&bytes).unwrap_err(),
        FormatError::BadLayout {
            lanes: 8,
            word_bits: 48
        }
    );
}

#[test]
fn payload_is_aligned_and_described() {
    let f = sample(Layout::L16x32, 3);
    let bytes = f.to_file_bytes();
    let (header, payload) = format::parse(&bytes).unwrap();
    assert_eq!(header.params.layout, Layout::L16x32);
    assert_eq!(header.params.blocks, 3);
    assert_eq!(header.params.hash, HashId::Xxh64);
    assert_eq!(payload, &f.to_image()[..]);
    assert_eq!(HEADER_LEN % 64, 0);
    assert_eq!(
        f.words().as_ptr() as usize % 64,
        0,
        "storage is cache-line aligned"
    );
}

#[test]
fn parquet_form_only_for_8x32_seed_0() {
    assert_eq!(
        Filter::new(Params::new(Layout::L8x64, 2))
            .to_parquet()
            .unwrap_err(),
        ParquetError::NotParquetLayout
    );
    assert_eq!(
        Filter::new(Params::new(Layout::L8x32, 2).with_seed(1))
            .to_parquet()
            .unwrap_err(),
        ParquetError::NotParquetLayout
    );
}

#[test]
fn parquet_header_faults_are_named() {
    let good = Filter::new(Params::new(Layout::L8x32, 2))
        .to_parquet()
        .unwrap();
    let header_len = good.len() - 64;
    for len in 0..header_len {
        assert!(Filter::from_parquet(&good[..len]).is_err());
    }
    assert!(matches!(
        Filter::from_parquet(&good[..good.len() - 1]),
        Err(ParquetError::ShortBitset {
            expected: 64,
            found: 63
        })
    ));
    // Hash member 2 (not XXHASH).
    let mut other_hash = good.clone();
    // 0x15, numBytes 64 as a 2-byte zigzag varint, the algorithm union, the field-3 header.
    let pos = 1 + 2 + 4 + 1;
    assert_eq!(other_hash[pos], 0x1c);
    other_hash[pos] = 0x2c;
    assert_eq!(
        Filter::from_parquet(&other_hash).unwrap_err(),
        ParquetError::Unsupported {
            field: "hash",
            member: 2
        }
    );
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Filter::from_file_bytes(&bytes);
        let _ = Filter::from_parquet(&bytes);
    }

    #[test]
    fn random_flips_are_rejected(flips in prop::collection::vec((0usize..4096, 0u8..8), 1..8)) {
        let bytes = sample(Layout::L16x64, 3).to_file_bytes();
        let mut bad = bytes.clone();
        for (at, bit) in flips {
            bad[at % bytes.len()] ^= 1 << bit;
        }
        prop_assume!(bad != bytes);
        prop_assert!(Filter::from_file_bytes(&bad).is_err());
    }
}
