//! The text readers (lines, decimal, text flow keys, a CSV column) and binary u64 keys: any bytes
//! are read or rejected with a line or byte offset, never a panic, hang or unbounded allocation;
//! and records cut at every chunk boundary give the keys of one whole read.
#![no_main]

use std::path::Path;

use bloomlanes_input::{read_reader, InputFormat, InputOptions, PipelineConfig};
use libfuzzer_sys::fuzz_target;

const FORMATS: [InputFormat; 6] = [
    InputFormat::Lines,
    InputFormat::Decimal,
    InputFormat::Flows,
    InputFormat::Csv,
    InputFormat::U64,
    InputFormat::Auto,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(pick) % FORMATS.len()];
    let opts = |chunk: usize| InputOptions {
        format,
        csv_header: pick & 0x40 != 0,
        csv_column: (pick & 0x80 != 0).then(|| "1".to_string()),
        pipeline: PipelineConfig::with_threads(2).chunk_bytes(chunk),
        ..InputOptions::default()
    };
    let read = |chunk: usize| {
        read_reader(
            Path::new("fuzz.txt"),
            Box::new(std::io::Cursor::new(bytes.to_vec())),
            &opts(chunk),
        )
    };
    let whole = read(1 << 20);
    let cut = read(1 + usize::from(pick >> 3) % 13);
    match (&whole, &cut) {
        (Ok((a, _)), Ok((b, _))) => {
            assert_eq!(a.len(), b.len());
            for i in 0..a.len() {
                assert_eq!(a.key_bytes(i), b.key_bytes(i), "key {i}");
            }
        }
        // Which fault is met first may differ (a reader-side fault such as an unterminated quote
        // at the end is found before the chunks are parsed when the input is one chunk).
        (Err(_), Err(_)) => {}
        _ => panic!(
            "whole {:?} but cut {:?}",
            whole.as_ref().err(),
            cut.as_ref().err()
        ),
    }
});
