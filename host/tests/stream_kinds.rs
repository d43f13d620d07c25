//! Streamed queries of the counting, stable, window and scalable filters
//! (`ops::stream::query_stream_kind`, what `bloomlanes query` runs for them): every answer, in
//! input order, equals the core's, for every worker count, chunk size and prober; and the
//! command streams standard input through them.

mod common;

use bloomlanes_host::input::{InputOptions, PipelineConfig};
use bloomlanes_host::ops::stream::{query_stream_kind, BitWriter, Listing, QueryInputs};
use bloomlanes_host::{load_any, BackendChoice};
use common::*;

/// `k{i}` for i in 0..n, one per line.
fn key_lines(n: usize) -> String {
    (0..n).map(|i| format!("k{i}\n")).collect()
}

/// Pipeline chunkings compared: 33-byte chunks on three workers, whole 2 MiB chunks on one.
const CHUNKINGS: [(&str, &str); 2] = [("33", "3"), ("2097152", "1")];

/// `bloomlanes --json CMD FILTER INPUT -o OUT` with the pipeline's chunk bytes and threads.
fn edit_chunked(
    cmd: &str,
    filter: &std::path::Path,
    input: &std::path::Path,
    out: &std::path::Path,
    chunk: &str,
    threads: &str,
) -> serde_json::Value {
    json(&[
        cmd,
        s(filter),
        s(input),
        "-o",
        s(out),
        "--chunk-bytes",
        chunk,
        "--threads",
        threads,
    ])
}

#[test]
fn streamed_kind_queries_answer_as_the_core_in_input_order() {
    let d = tmp();
    let inserted = write(&d, "in.txt", key_lines(3000));
    // The first 3000 probes were inserted (the window keeps the last 1000 of them), the rest
    // are absent.
    let probes_text = key_lines(9000);
    let probes = write(&d, "probes.txt", &probes_text);
    let lines: Vec<&str> = probes_text.lines().collect();
    let kinds: [(&str, &[&str]); 4] = [
        ("counting", &[]),
        ("stable", &[]),
        ("window", &["--window-keys", "1000"]),
        ("scalable", &["--capacity", "300"]),
    ];
    for (kind, extra) in kinds {
        let f = build_kind(&d, &inserted, kind, &[&["--fpp", "0.05"], extra].concat());
        let filter = load_any(&f).unwrap();
        let want: Vec<bool> = lines
            .iter()
            .map(|l| filter.contains(l.as_bytes()))
            .collect();
        let expected_text: String = lines
            .iter()
            .zip(&want)
            .filter(|(_, &w)| w)
            .map(|(l, _)| format!("{l}\n"))
            .collect();
        for choice in [BackendChoice::Simd, BackendChoice::Scalar] {
            for threads in [1, 3] {
                for chunk in [33usize, 4096, 2 << 20] {
                    let opts = InputOptions {
                        pipeline: PipelineConfig::with_threads(threads).chunk_bytes(chunk),
                        ..InputOptions::default()
                    };
                    let listing = Listing {
                        keys: Some(true),
                        json: false,
                        bits: true,
                    };
                    let (mut text, mut bytes, mut bits) =
                        (Vec::new(), Vec::new(), BitWriter::default());
                    let inputs = QueryInputs {
                        paths: std::slice::from_ref(&probes),
                        opts: &opts,
                        choice,
                        listing,
                    };
                    let r = query_stream_kind(
                        &filter,
                        &f,
                        inputs,
                        &mut |c| {
                            text.extend_from_slice(&c.text);
                            bits.write(&mut bytes, &c.bits, c.keys as usize).unwrap();
                            Ok(())
                        },
                        &mut |_| {},
                    )
                    .unwrap();
                    bits.finish(&mut bytes).unwrap();
                    let case =
                        format!("{kind}, {choice:?}, {threads} threads, {chunk}-byte chunks");
                    assert_eq!(r.keys, 9000, "{case}");
                    assert_eq!(
                        r.matches,
                        want.iter().filter(|&&w| w).count() as u64,
                        "{case}"
                    );
                    for (i, &w) in want.iter().enumerate() {
                        assert_eq!((bytes[i / 8] >> (i % 8)) & 1 == 1, w, "key {i}: {case}");
                    }
                    assert_eq!(String::from_utf8(text).unwrap(), expected_text, "{case}");
                }
            }
        }
        // Every key of the window, every inserted key of a counting or scalable filter, and the
        // newest key of a stable filter (which forgets old keys by design) is found.
        let found = match kind {
            "window" => 2000..3000,
            "stable" => 2999..3000,
            _ => 0..3000,
        };
        assert!(
            found.into_iter().all(|i| want[i]),
            "{kind}: a present key not found"
        );
    }
}

/// `bloomlanes query` of a window filter reads its keys from standard input through the
/// streaming pipeline (the report names its worker threads) and counts the core's answers.
#[test]
fn the_query_command_streams_kind_filters() {
    let (_dir, _, f) = built(
        "in.txt",
        key_lines(5000),
        "w.blf",
        "--kind window --window-keys 2000",
    );
    let filter = load_any(&f).unwrap();
    let probes = key_lines(20000);
    let want = probes
        .lines()
        .filter(|l| filter.contains(l.as_bytes()))
        .count();
    let out = succeeds(
        bl().args(["--json", "query", s(&f), "-", "--count"])
            .write_stdin(probes.clone()),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "window");
    assert_eq!(v["keys"], 20000);
    assert_eq!(v["matches"], want as u64);
    assert!(v["backend"].as_str().unwrap().contains("threads"), "{v}");
}

/// `bloomlanes insert` streams its keys into a filter of any kind in input order: cut into
/// 33-byte chunks on three workers, the result is byte for byte the one of whole chunks on one
/// worker (a window rotates and a scalable filter adds stages at the same keys), and the last
/// keys of the window are found.
#[test]
fn streamed_inserts_keep_the_input_order() {
    let d = tmp();
    let seed_keys = write(&d, "seed.txt", key_lines(10));
    let more = write(&d, "more.txt", key_lines(6000));
    let kinds: [(&str, &[&str]); 3] = [
        ("counting", &[]),
        ("window", &["--window-keys", "700", "--generations", "3"]),
        ("scalable", &["--capacity", "100"]),
    ];
    for (kind, extra) in kinds {
        let empty = build_kind(&d, &seed_keys, kind, &[&["--fpp", "0.01"], extra].concat());
        let mut outs = Vec::new();
        for (chunk, threads) in CHUNKINGS {
            let out = at(&d, &format!("{kind}-{chunk}.blf"));
            let v = edit_chunked("insert", &empty, &more, &out, chunk, threads);
            assert_eq!(v["inserted"], 6000, "{kind}");
            outs.push(std::fs::read(&out).unwrap());
        }
        assert!(
            outs[0] == outs[1],
            "{kind}: the chunking changed the filter"
        );
        let f = load_any(&at(&d, &format!("{kind}-33.blf"))).unwrap();
        let last = if kind == "window" {
            5300..6000
        } else {
            0..6000
        };
        for i in last {
            assert!(f.contains(format!("k{i}").as_bytes()), "{kind}: k{i} lost");
        }
    }
}

/// `bloomlanes delete` streams its keys: cut into 33-byte chunks on three workers it deletes
/// and refuses the same keys as whole chunks on one worker, names the first refused keys in
/// input order, and refuses a filter without deletions even when no key comes.
#[test]
fn streamed_deletes_name_the_first_refused_keys_in_order() {
    let (d, keys, c) = built(
        "k.txt",
        key_lines(3000),
        "c.blf",
        "--kind counting --fpp 0.001",
    );
    // Every 100th line is a key never inserted.
    let mixed: String = (0..2000)
        .map(|i| {
            if i % 100 == 99 {
                format!("never-{i}\n")
            } else {
                format!("k{i}\n")
            }
        })
        .collect();
    let mixed = write(&d, "mixed.txt", mixed);
    let mut outs = Vec::new();
    for (chunk, threads) in CHUNKINGS {
        let out = at(&d, &format!("c-{chunk}.blf"));
        let v = edit_chunked("delete", &c, &mixed, &out, chunk, threads);
        assert_eq!(v["not_present"], 20, "{chunk}");
        assert_eq!(v["deleted"], 1980, "{chunk}");
        let named: Vec<String> = (0..10).map(|j| format!("never-{}", 100 * j + 99)).collect();
        assert_eq!(v["not_present_keys"], serde_json::json!(named), "{chunk}");
        outs.push(std::fs::read(&out).unwrap());
    }
    assert!(outs[0] == outs[1], "the chunking changed the deletes");
    let w = at(&d, "w.blf");
    build(&keys, &w, "--kind window --window-keys 100");
    let empty = write(&d, "empty.txt", "");
    let err = fails(&["delete", s(&w), s(&empty)], 2);
    assert!(err.contains("only counting filters"), "{err}");
}

/// `bloomlanes build --kind` of files streams them (a counting pass, then the inserts in input
/// order, here cut into 33-byte chunks on three workers) and writes the filter that reading the
/// same keys whole from standard input writes, byte for byte.
#[test]
fn streamed_kind_builds_equal_whole_reads() {
    let d = tmp();
    let text = key_lines(4000);
    let keys = write(&d, "k.txt", &text);
    let kinds: [(&str, &[&str]); 4] = [
        ("counting", &[]),
        ("stable", &[]),
        ("window", &["--window-keys", "900"]),
        ("scalable", &["--capacity", "250"]),
    ];
    for (kind, extra) in kinds {
        let streamed = at(&d, &format!("{kind}-file.blf"));
        let whole = at(&d, &format!("{kind}-stdin.blf"));
        let mut args = vec!["build", s(&keys), "-o", s(&streamed), "--kind", kind];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--chunk-bytes", "33", "--threads", "3"]);
        let v = json(&args);
        assert_eq!(v["keys"], 4000, "{kind}");
        let mut args = vec!["build", "-", "-o", s(&whole), "--kind", kind];
        args.extend_from_slice(extra);
        succeeds(bl().args(&args).write_stdin(text.clone()));
        assert!(
            std::fs::read(&streamed).unwrap() == std::fs::read(&whole).unwrap(),
            "{kind}: the streamed build differs from the whole read"
        );
    }
}
