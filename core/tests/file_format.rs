//! The file format: round trips, and every truncation, bit flip, foreign and future file rejected.
#![cfg(feature = "alloc")]

mod common;
use bloomlanes_core::format::{self, FormatError, FORMAT_VERSION, HEADER_LEN};
use bloomlanes_core::parquet::ParquetError;
use bloomlanes_core::Params;
use bloomlanes_core::{xxh64, Filter, HashId, Layout};
use common::{flips_rejected, rechecksum, with};
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
    flips_rejected(&bytes, 1, |b| Filter::from_file_bytes(b).is_err());
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

/// The key type travels through the file (format 2), every named type and fixed widths.
#[test]
fn key_type_round_trips() {
    use bloomlanes_core::KeyType;
    for kt in KeyType::NAMED
        .into_iter()
        .chain([KeyType::FixedBytes(1), KeyType::FixedBytes(u16::MAX)])
    {
        let mut f = Filter::new(Params::new(Layout::L8x32, 2).with_key_type(kt));
        f.insert("k");
        let g = Filter::from_file_bytes(&f.to_file_bytes()).unwrap();
        assert_eq!(g.params().key_type, kt);
        assert_eq!(f, g);
        assert_eq!(kt.to_string().parse::<KeyType>().unwrap(), kt, "{kt}");
    }
}

/// Files of format version 1 (no key type, no kind; bytes 26..32 reserved) stay readable, and are
/// read as key type "any" with the same bits, seed and key count.
#[test]
fn version_1_files_stay_readable() {
    let f = sample(Layout::L16x32, 3);
    let mut v1 = f.to_file_bytes();
    v1[8..10].copy_from_slice(&1u16.to_le_bytes());
    v1[26..32].fill(0);
    rechecksum(&mut v1);
    let g = Filter::from_file_bytes(&v1).unwrap();
    assert_eq!(g.words(), f.words());
    assert_eq!(g.seed(), 99);
    assert_eq!(g.key_count(), f.key_count());
    assert_eq!(g.params().key_type, bloomlanes_core::KeyType::Any);
    // In version 1 bytes 26..32 are reserved: a key type there is corruption.
    v1[27] = 2;
    rechecksum(&mut v1);
    assert_eq!(
        Filter::from_file_bytes(&v1).unwrap_err(),
        FormatError::ReservedBits
    );
}

/// Unknown kinds, key type codes and widths that do not fit their type are named.
#[test]
fn unknown_kind_and_key_type_are_named() {
    let good = sample(Layout::L8x32, 2).to_file_bytes();
    assert_eq!(
        Filter::from_file_bytes(&with(&good, 26, &[200])).unwrap_err(),
        FormatError::UnknownKind(200)
    );
    for (code, width) in [(99u8, 0u16), (2, 8), (12, 0)] {
        let mut bad = good.clone();
        bad[27] = code;
        bad[28..30].copy_from_slice(&width.to_le_bytes());
        rechecksum(&mut bad);
        assert_eq!(
            Filter::from_file_bytes(&bad).unwrap_err(),
            FormatError::UnknownKeyType { code, width }
        );
    }
}

/// A short file with a foreign magic is "not a bloomlanes filter", not "truncated" (the order
/// FORMAT.md gives: magic first once 8 bytes are there).
#[test]
fn short_foreign_files_are_named_by_their_magic() {
    assert_eq!(
        Filter::from_file_bytes(b"PAR1\0\0\0\0\0\0").unwrap_err(),
        FormatError::BadMagic
    );
    assert!(matches!(
        Filter::from_file_bytes(b"BLM").unwrap_err(),
        FormatError::Truncated { .. }
    ));
}
