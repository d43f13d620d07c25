//! The retrieval-table reader: any bytes are either rejected with an error or read as a table
//! that re-encodes to the same file and answers the same through the core and the SIMD path
//! (one thread and every core); statistics never hang.
#![no_main]

use bloomlanes_core::retrieval::RetrievalTable;
use bloomlanes_core::Keys;
use bloomlanes_simd::Probe;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(table) = RetrievalTable::from_file_bytes(data) else {
        return;
    };
    let file = table.to_file_bytes();
    assert_eq!(file, data, "an accepted file re-encodes to itself");
    let _ = table.stats();
    // Hashes derived from the input: the core against the SIMD lookups.
    let hashes: Vec<u64> = data
        .chunks(8)
        .map(|c| c.iter().fold(0, |a, &b| a << 8 | u64::from(b)))
        .take(300)
        .collect();
    let probe = Probe::active();
    let mut values = vec![0u32; hashes.len()];
    let mut found = vec![0u64; hashes.len().div_ceil(64)];
    probe.get_retrieval(&table, Keys::Hashes(&hashes), &mut values, &mut found);
    for (i, &h) in hashes.iter().enumerate() {
        let want = table.get_hash(h);
        assert_eq!(found[i / 64] >> (i % 64) & 1 == 1, want.is_some());
        assert_eq!(values[i], want.unwrap_or(0));
    }
    let mut again = vec![0u32; hashes.len()];
    probe.par_get_retrieval(&table, Keys::Hashes(&hashes), &mut again, &mut found);
    assert_eq!(again, values);
});
