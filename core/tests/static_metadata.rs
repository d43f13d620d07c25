//! A static filter whose header gives a kind metadata length: the error names that field, its
//! value, its bytes and what a static filter allows, not a payload length that agrees with itself.
#![cfg(feature = "alloc")]

mod common;
use bloomlanes_core::format::{self, FormatError};
use bloomlanes_core::{Filter, Layout, Params};
use common::with;

#[test]
fn a_static_filter_with_metadata_is_named_as_such() {
    let mut f = Filter::new(Params::new(Layout::L8x32, 1));
    f.insert(&7u64);
    let file = f.to_file_bytes();
    // One 64-byte unit of metadata (bytes 30..32), nothing else changed.
    let bad = with(&file, 30, &1u16.to_le_bytes());
    let err = format::parse(&bad).unwrap_err();
    assert_eq!(err, FormatError::StaticMetadata { units: 1 });
    let text = err.to_string();
    for part in [
        "metadata length field",
        "bytes 30..32",
        "is 1 (64 bytes)",
        "static",
        "must be 0",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    assert!(!text.contains("payload length"), "{text}");
    assert_eq!(Filter::from_file_bytes(&bad).unwrap_err(), err);
}
