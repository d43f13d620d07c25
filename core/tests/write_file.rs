//! Streamed files: every kind written through a sink in bounded chunks is byte for byte the file
//! `to_file_bytes` returns, and a failing sink stops the writing.
#![cfg(feature = "alloc")]

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::write_file::WRITE_CHUNK;
use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, Filter, FilterKind, Layout, Params, ScalableFilter,
    SpatialFilter, WindowFilter, WindowUnit, WriteFile,
};

/// One filter of every kind, some larger than a chunk, with keys in them.
fn every_kind() -> Vec<(&'static str, AnyFilter)> {
    let big = Params::new(Layout::L16x64, 3000).with_seed(5);
    let small = Params::new(Layout::L8x32, 3).with_seed(5);
    let mut fixed = Filter::new(big);
    let mut odd = Filter::new(small);
    let mut counting = CountingFilter::counting(big, CounterBits::Four);
    let mut stable = CountingFilter::stable(small, CounterBits::Eight, 3);
    let [mut by_keys, mut by_time] =
        [(WindowUnit::Keys, 500), (WindowUnit::Nanos, 7)].map(|(unit, span)| {
            let generations = 3;
            let kind = FilterKind::Window {
                generations,
                unit,
                span,
            };
            WindowFilter::new(big.with_kind(kind)).unwrap()
        });
    let mut scalable = ScalableFilter::new(small, 100, 0.01, 2, 0.5).unwrap();
    let mut spatial = SpatialFilter::new(big, 16, &["low", "mid", "high"]).unwrap();
    for k in 0..2000u64 {
        fixed.insert(&k);
        odd.insert(&k);
        counting.insert(&k);
        stable.insert(&k);
        by_keys.insert(&k);
        by_time.insert_at(&k, k * 3);
        scalable.insert(&k).unwrap();
        spatial.insert(&k, (k % 3 + 1) as u32).unwrap();
    }
    assert!(scalable.stages().len() > 3);
    let keys: Vec<u64> = (0..40_000).collect();
    let values: Vec<u32> = keys.iter().map(|k| (k % 4093) as u32).collect();
    let spec = RetrievalSpec::new(12, 5);
    let retrieval = RetrievalTable::build_keys(small, spec, &keys, &values).unwrap();
    vec![
        ("static", AnyFilter::Static(fixed)),
        ("static, 3 blocks", AnyFilter::Static(odd)),
        ("counting", AnyFilter::Counting(counting)),
        ("stable", AnyFilter::Counting(stable)),
        ("window of keys", AnyFilter::Window(by_keys)),
        ("window of time", AnyFilter::Window(by_time)),
        ("scalable", AnyFilter::Scalable(scalable)),
        ("spatial", AnyFilter::Spatial(spatial)),
        ("retrieval", AnyFilter::Retrieval(retrieval)),
    ]
}

#[test]
fn streamed_files_are_the_files_in_bounded_chunks() {
    for (what, f) in every_kind() {
        let whole = f.to_file_bytes();
        let mut streamed = Vec::new();
        let mut chunks = 0;
        f.write_file(&mut |bytes: &[u8]| {
            assert!(
                bytes.len() <= WRITE_CHUNK,
                "{what}: a chunk of {}",
                bytes.len()
            );
            streamed.extend_from_slice(bytes);
            chunks += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(streamed == whole, "{what}: streamed bytes differ");
        assert_eq!(f.file_len(), whole.len() as u64, "{what}");
        assert_eq!(AnyFilter::from_file_bytes(&streamed).unwrap(), f, "{what}");
        if whole.len() > 2 * WRITE_CHUNK {
            assert!(
                chunks > whole.len() / WRITE_CHUNK,
                "{what}: {chunks} chunks"
            );
        }
    }
}

#[test]
fn each_kind_writes_itself_as_any_filter_does() {
    for (what, f) in every_kind() {
        let mut direct = Vec::new();
        let mut sink = |b: &[u8]| {
            direct.extend_from_slice(b);
            Ok::<(), ()>(())
        };
        match &f {
            AnyFilter::Static(g) => g.write_file(&mut sink),
            AnyFilter::Counting(g) => g.write_file(&mut sink),
            AnyFilter::Window(g) => g.write_file(&mut sink),
            AnyFilter::Scalable(g) => g.write_file(&mut sink),
            AnyFilter::Spatial(g) => g.write_file(&mut sink),
            AnyFilter::Retrieval(g) => g.write_file(&mut sink),
        }
        .unwrap();
        assert!(direct == f.to_file_bytes(), "{what}");
    }
}

#[test]
fn a_failing_sink_stops_the_writing_with_its_error() {
    let (_, f) = every_kind().swap_remove(2);
    let total = f.file_len() as usize;
    for fail_after in [0, 64, total / 2] {
        let mut written = 0usize;
        let mut calls_after_error = 0;
        let err = f.write_file(&mut |bytes: &[u8]| {
            if written >= fail_after {
                calls_after_error += 1;
                return Err(written);
            }
            written += bytes.len();
            Ok(())
        });
        assert!(err.is_err());
        assert_eq!(calls_after_error, 1, "no write after the first error");
        assert!(written < total);
    }
}
