//! The decompression path: any bytes that start like a gzip, zstd or xz stream (the first byte
//! picks which magic is put in front) are decompressed or rejected (a damaged or cut-short
//! stream names the input), never a panic, hang or unbounded allocation; and data compressed by
//! each codec reads back as the same keys as the plain data.
#![no_main]

use std::io::Write;
use std::path::Path;

use bloomlanes_input::{read_reader, Compression, InputFormat, InputOptions, PipelineConfig};
use libfuzzer_sys::fuzz_target;

fn read(bytes: Vec<u8>) -> bloomlanes_input::Result<bloomlanes_input::KeySet> {
    let opts = InputOptions {
        format: InputFormat::Lines,
        pipeline: PipelineConfig::with_threads(1).chunk_bytes(61),
        ..InputOptions::default()
    };
    read_reader(
        Path::new("fuzz.gz"),
        Box::new(std::io::Cursor::new(bytes)),
        &opts,
    )
    .map(|r| r.0)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    // Hostile compressed streams.
    let magic: &[u8] = match pick % 4 {
        0 => &[0x1f, 0x8b],
        1 => &[0x28, 0xb5, 0x2f, 0xfd],
        2 => b"\xfd7zXZ\x00",
        _ => &[],
    };
    let mut hostile = magic.to_vec();
    hostile.extend_from_slice(rest);
    if let Err(e) = read(hostile) {
        assert!(e.to_string().contains("fuzz.gz"), "{e}");
    }
    // Honest ones: compressed, then read back, equal to the plain reading.
    if rest.contains(&0) {
        return; // plain binary data is refused as text
    }
    if Compression::detect(rest) != Compression::None {
        return; // compressed twice over is refused by design; plain, it is decompressed once
    }
    let plain = read(rest.to_vec());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(rest).unwrap();
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 0);
    xz.write_all(rest).unwrap();
    for packed in [
        gz.finish().unwrap(),
        zstd::encode_all(rest, 1).unwrap(),
        xz.finish().unwrap(),
    ] {
        let back = read(packed);
        match (&plain, &back) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.len(), b.len());
                for i in 0..a.len() {
                    assert_eq!(a.key_bytes(i), b.key_bytes(i));
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!(
                "plain {:?}, compressed {:?}",
                plain.as_ref().err(),
                back.as_ref().err()
            ),
        }
    }
});
