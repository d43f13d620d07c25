//! The bare Parquet bloom filter reader (Thrift compact header + bitset): any bytes are rejected
//! with an error or read; a read filter re-encodes to a form that reads back the same bits.
#![no_main]

use bloomlanes_core::parquet;
use bloomlanes_core::Filter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((bitset, used)) = parquet::parse(data) else {
        return;
    };
    assert!(used <= data.len() && bitset.len() <= used);
    let (f, _) = Filter::from_parquet(data).expect("parse accepted it");
    let (g, n) = Filter::from_parquet(&f.to_parquet().expect("8x32 seed 0")).expect("re-reads");
    assert_eq!(f.words(), g.words());
    assert!(n > 0);
});
