//! Crafted files of every kind: the fuzzer mutates valid files (seeds of every kind from
//! `make_seeds`) and this target recomputes both checksums before reading, so every mutation of
//! the header and the kind metadata gets past the checksums to the range checks
//! (`docs/FORMAT.md` §9, "Ranges"). What opens must be usable: it re-encodes to the same bytes
//! (streamed too), its statistics return, and lookups and inserts through the core and the SIMD
//! path agree, in time and memory bounded by the file.
#![no_main]

use bloomlanes_core::format::{self, Verify, HEADER_LEN};
use bloomlanes_core::{xxh64, AnyFilter, Filter, Keys, WriteFile};
use bloomlanes_simd::Probe;
use libfuzzer_sys::fuzz_target;

/// Keys derived from the input: up to 16 u64 values.
fn keys_of(data: &[u8]) -> Vec<u64> {
    data.chunks(8)
        .rev()
        .take(16)
        .map(|c| c.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER_LEN {
        return;
    }
    let mut file = data.to_vec();
    let payload = xxh64(&file[HEADER_LEN..], 0);
    file[48..56].copy_from_slice(&payload.to_le_bytes());
    let header = xxh64(&file[..56], 0);
    file[56..64].copy_from_slice(&header.to_le_bytes());
    let full = format::parse(&file);
    assert_eq!(
        full.is_ok(),
        format::parse_with(&file, Verify::HeaderOnly).is_ok()
    );
    let Ok(filter) = AnyFilter::from_file_bytes(&file) else {
        return;
    };
    assert!(full.is_ok(), "a reader accepted what the parser rejects");
    // Version 2 files are canonical: an accepted file is exactly what its filter writes.
    if file[8] == 2 {
        assert!(filter.to_file_bytes() == file, "re-encoding differs");
    }
    let mut streamed = Vec::new();
    filter
        .write_file(&mut |b: &[u8]| {
            streamed.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert!(streamed == filter.to_file_bytes(), "streamed file differs");
    let _ = filter.stats();
    let keys = keys_of(data);
    for k in &keys {
        let _ = filter.contains(k);
    }
    use_kind(filter, &keys);
});

/// Inserts `keys` through the core, key by key, and through the SIMD path in bulk, and checks
/// that both leave the same filter; reads what each kind reads.
fn use_kind(filter: AnyFilter, keys: &[u64]) {
    let probe = Probe::active();
    let bulk = Keys::U64(keys);
    match filter {
        AnyFilter::Static(mut f) => {
            let mut simd: Filter = f.clone();
            probe.insert(simd.as_view_mut(), bulk);
            keys.iter().for_each(|k| f.insert(k));
            assert_eq!(simd.words(), f.words());
        }
        AnyFilter::Counting(mut f) => {
            let mut simd = f.clone();
            probe.insert_counting_filter(&mut simd, bulk);
            keys.iter().for_each(|k| f.insert(k));
            assert!(simd == f, "SIMD and core counting inserts differ");
            for k in keys {
                assert!(f.count(k) > 0 && f.contains(k));
                let _ = f.remove(k);
            }
        }
        AnyFilter::Window(mut f) => {
            let mut simd = f.clone();
            let times: Vec<u64> = keys.iter().map(|k| k >> 8).collect();
            probe.insert_window_filter_at(&mut simd, bulk, &times);
            keys.iter()
                .zip(&times)
                .for_each(|(k, &t)| f.insert_at(k, t));
            assert!(simd == f, "SIMD and core window inserts differ");
        }
        AnyFilter::Scalable(mut f) => {
            let mut simd = f.clone();
            let bulk_result = probe.insert_scalable(&mut simd, bulk);
            let core_result = keys.iter().try_for_each(|k| f.insert(k));
            assert_eq!(bulk_result.is_ok(), core_result.is_ok());
            assert!(simd == f, "SIMD and core scalable inserts differ");
            let _ = f.stats();
        }
        AnyFilter::Spatial(mut f) => {
            let classes = u64::from(f.classes());
            for k in keys {
                let class = (k % classes) as u32 + 1;
                f.insert(k, class).unwrap();
                assert!(f.class_of(k) >= class);
            }
            let _ = f.class_stats();
        }
        AnyFilter::Retrieval(f) => {
            let mut values = vec![0u32; keys.len()];
            let mut found = vec![0u64; keys.len().div_ceil(64)];
            probe.get_retrieval(&f, bulk, &mut values, &mut found);
            for (i, k) in keys.iter().enumerate() {
                let simd = (found[i / 64] >> (i % 64) & 1 == 1).then_some(values[i]);
                assert_eq!(simd, f.get(k), "SIMD and core retrieval lookups differ");
            }
        }
    }
}
