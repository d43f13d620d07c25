//! Writes seed corpora made by the library itself (what the CLI writes): filters of every kind,
//! layout and key type (also the stream reader's seeds), and Parquet forms. `make_seeds DIR`
//! fills `DIR/<target>/`.
use std::path::Path;

use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, Filter, FilterKind, KeyType, Layout, Params,
    ScalableFilter, WindowFilter, WindowUnit,
};

fn main() {
    let dir = std::env::args().nth(1).expect("usage: make_seeds DIR");
    let dir = Path::new(&dir);
    let files = dir.join("filter_file");
    let parquet = dir.join("parquet_form");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::create_dir_all(&parquet).unwrap();
    let mut n = 0;
    let mut put = |d: &Path, bytes: Vec<u8>| {
        std::fs::write(d.join(format!("seed{n:03}")), bytes).unwrap();
        n += 1;
    };
    for layout in Layout::ALL {
        for blocks in [1u32, 3] {
            let p = Params::new(layout, blocks)
                .with_seed(7)
                .with_key_type(KeyType::U64);
            let mut f = Filter::new(p);
            (0..20u64).for_each(|k| f.insert(&k));
            put(&files, f.to_file_bytes());
            let mut c = CountingFilter::counting(p, CounterBits::Four);
            (0..20u64).for_each(|k| c.insert(&k));
            put(&files, c.to_file_bytes());
            let s = CountingFilter::stable(p, CounterBits::Eight, 2);
            put(&files, AnyFilter::Counting(s).to_file_bytes());
            let kind = FilterKind::Window {
                generations: 2,
                unit: WindowUnit::Keys,
                span: 4,
            };
            let mut w = WindowFilter::new(p.with_kind(kind)).unwrap();
            (0..11u64).for_each(|k| w.insert(&k));
            put(&files, w.to_file_bytes());
        }
    }
    let mut s = ScalableFilter::new(Params::new(Layout::L8x32, 1), 4, 0.1, 2, 0.5).unwrap();
    (0..30u64).for_each(|k| s.insert(&k).unwrap());
    put(&files, s.to_file_bytes());
    let mut f = Filter::new(Params::new(Layout::L8x32, 2));
    f.insert("a");
    put(&parquet, f.to_parquet().unwrap());
    // The stream reader reads the same files (plus whatever follows them).
    let stream = dir.join("filter_stream");
    std::fs::create_dir_all(&stream).unwrap();
    for seed in std::fs::read_dir(&files).unwrap() {
        let seed = seed.unwrap();
        std::fs::copy(seed.path(), stream.join(seed.file_name())).unwrap();
    }
    println!("{n} seeds in {}", dir.display());
}
