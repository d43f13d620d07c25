//! The `.parquet` file import path: footer (bounded Thrift reader, every offset and length
//! checked against the file) and the bloom filters it points to. Any bytes give an error or
//! filters; a footer that reads re-encodes with new bloom-filter fields and reads back with them.
#![no_main]

use bloomlanes_parquet::footer::{footer_range, Footer};
use bloomlanes_parquet::{import_row_groups, ParquetFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The pure footer reader over the bytes.
    let len = data.len() as u64;
    let tail: [u8; 8] = if data.len() >= 8 {
        data[data.len() - 8..].try_into().unwrap()
    } else {
        [0; 8]
    };
    let Ok(range) = footer_range(len, &tail) else {
        return;
    };
    let meta = data[range.start as usize..range.end as usize].to_vec();
    let Ok(footer) = Footer::parse(meta, range.start, len) else {
        return;
    };
    for g in &footer.row_groups {
        for c in &g.chunks {
            assert!(c.pages.end <= footer.start);
            if let Some(b) = c.bloom {
                assert!(b.offset < footer.start);
                assert!(b.length.is_none_or(|l| b.offset + l <= footer.start));
            }
        }
    }
    // Setting a bloom filter field keeps the footer readable and sets exactly that field.
    if footer.start > 5 && !footer.row_groups.is_empty() && !footer.row_groups[0].chunks.is_empty()
    {
        let new = footer.with_blooms(&[(0, 0, 4, 1)]);
        let again = Footer::parse(new, footer.start, len).expect("a rewritten footer reads back");
        let b = again.row_groups[0].chunks[0]
            .bloom
            .expect("the bloom fields were set");
        assert_eq!((b.offset, b.length), (4, Some(1)));
        assert_eq!(again.columns, footer.columns);
    }
    // The file path: open and import every column's filters (errors are fine, panics are not).
    let dir = std::env::temp_dir().join(format!("bloomlanes-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("f.parquet");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(f) = ParquetFile::open(&path) {
        for c in f.footer().columns.iter().take(8) {
            let _ = import_row_groups(&path, &c.path);
        }
    }
});
