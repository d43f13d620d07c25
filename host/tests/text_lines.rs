//! Text lines hashed a batch at a time (the input crate's line splitter and span batches, the
//! SIMD crate's `xxh64_spans` that the CLI plugs in): every line's hash is the core's XXH64 of
//! the line as a byte-by-byte split finds it, in input order, at every chunk size, and a built
//! filter and its query answers are the same with the SIMD hasher and without it.

use std::path::{Path, PathBuf};

use bloomlanes_core::xxh64;
use bloomlanes_host::input::{
    stream_keys, HashStage, InputOptions, PipelineConfig, SpanHasher, StreamProgress,
};
use bloomlanes_host::{Error, InputFormat};

/// Lines of every length from 0 to 40 (the lanes take up to 16 bytes), of bytes that include
/// `\r` and the bytes next to `\n`, with `\r\n` endings, empty lines and lines of one `\r`.
fn text(seed: u64, lines: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = [b'a', b'Z', b'0', b'\r', 0x0b, 0x09, 0x00, 0xff, b'-'];
    let mut out = Vec::new();
    for _ in 0..lines {
        let len = (next() % 41) as usize;
        out.extend((0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]));
        if next().is_multiple_of(4) {
            out.push(b'\r');
        }
        out.push(b'\n');
    }
    out
}

/// The keys as a byte-by-byte split reads them: one `\r` before a line's end dropped, empty
/// lines skipped, an unterminated last line kept.
fn expected(bytes: &[u8], seed: u64) -> Vec<u64> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if bytes.last() == Some(&b'\n') || bytes.is_empty() {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(|l| xxh64(l, seed))
        .collect()
}

fn hashes(path: &Path, seed: u64, chunk: Option<usize>, hasher: Option<SpanHasher>) -> Vec<u64> {
    let mut pipeline = PipelineConfig::with_threads(2);
    if let Some(c) = chunk {
        pipeline = pipeline.chunk_bytes(c);
    }
    let opts = InputOptions {
        format: InputFormat::Lines,
        pipeline,
        span_hasher: hasher,
        ..InputOptions::default()
    };
    let mut got = Vec::new();
    stream_keys(
        &[path.to_path_buf()],
        &opts,
        seed,
        &HashStage::<Error>::new(seed),
        &mut |h| {
            got.extend(h);
            Ok(())
        },
        &mut |_: StreamProgress| {},
    )
    .unwrap();
    got
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn lines_hash_as_the_core_in_every_chunking_with_and_without_lanes() {
    let d = tempfile::tempdir().unwrap();
    let mut body = text(7, 20_000);
    let mut files = vec![write(d.path(), "lines.txt", &body)];
    // Unterminated last lines: one that ends on a 64-byte boundary, one that does not, one
    // that ends in a `\r`.
    body.truncate(body.len() / 64 * 64);
    while body.last() == Some(&b'\n') {
        body.truncate(body.len() - 64);
    }
    files.push(write(d.path(), "open64.txt", &body));
    body.extend_from_slice(b"tail");
    files.push(write(d.path(), "open.txt", &body));
    body.push(b'\r');
    files.push(write(d.path(), "open-cr.txt", &body));
    files.push(write(d.path(), "one.txt", b"k"));
    let lanes: SpanHasher = bloomlanes_simd::xxh64_spans;
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        for seed in [0u64, 0x5eed] {
            let want = expected(&bytes, seed);
            assert!(!want.is_empty());
            for chunk in [None, Some(1), Some(63), Some(4096)] {
                for hasher in [None, Some(lanes)] {
                    assert!(
                        hashes(path, seed, chunk, hasher) == want,
                        "{path:?}, seed {seed}, chunks {chunk:?}, lanes {}",
                        hasher.is_some()
                    );
                }
            }
        }
    }
}
