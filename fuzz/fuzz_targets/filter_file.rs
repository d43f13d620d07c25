//! The filter-file reader: any bytes are either rejected with an error or read as a filter whose
//! re-encoding reads back the same; a static filter answers the same through the scalar reference
//! and the SIMD path; statistics never hang.
#![no_main]

use bloomlanes_core::format::{self, Verify};
use bloomlanes_core::{AnyFilter, Keys};
use bloomlanes_simd::Probe;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let full = format::parse(data);
    let header_only = format::parse_with(data, Verify::HeaderOnly);
    // Skipping the payload checksum never rejects a file the full check accepts.
    if full.is_ok() {
        assert!(header_only.is_ok());
    }
    let Ok(filter) = AnyFilter::from_file_bytes(data) else {
        return;
    };
    let again = AnyFilter::from_file_bytes(&filter.to_file_bytes()).expect("re-encoding reads");
    assert_eq!(again, filter);
    let _ = filter.stats();
    if let AnyFilter::Static(f) = &filter {
        // Probe keys derived from the input: scalar reference against the SIMD path.
        let keys: Vec<u64> = data
            .chunks(8)
            .map(|c| c.iter().fold(0, |a, &b| a << 8 | u64::from(b)))
            .take(256)
            .collect();
        let mut got = vec![0u8; keys.len()];
        Probe::active().contains(f.as_view(), Keys::U64(&keys), &mut got);
        for (k, g) in keys.iter().zip(&got) {
            assert_eq!(*g == 1, f.contains(k));
        }
    }
});
