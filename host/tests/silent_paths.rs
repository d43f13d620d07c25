//! The silent paths of issue #24, each closed: `dedup` reads through the input pipeline's
//! source and format detection (compressed input undone, binary input refused); `classify`
//! refuses a filter of another key type as `query` does and names a counting filter's kind;
//! `delete --verify-with` refuses keys an authoritative list does not hold; and the messages
//! that misled now say what is wrong.

mod common;

use std::io::Write;

use common::*;

/// A pcap capture (raw IP link type) of one UDP packet from 10.0.0.1:1000 to 10.0.0.2:53.
fn one_packet_pcap() -> Vec<u8> {
    let ip: Vec<u8> = [
        &[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0][..],
        &[10, 0, 0, 1, 10, 0, 0, 2],
        &1000u16.to_be_bytes(),
        &53u16.to_be_bytes(),
        &[0, 8, 0, 0],
    ]
    .concat();
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 4, 0]);
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&101u32.to_le_bytes()); // LINKTYPE_RAW
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&(ip.len() as u32).to_le_bytes());
    b.extend_from_slice(&(ip.len() as u32).to_le_bytes());
    b.extend_from_slice(&ip);
    b
}

#[test]
fn dedup_undoes_compression_and_refuses_binary_input() {
    let d = tmp();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"a\na\nb\n").unwrap();
    let gzipped = gz.finish().unwrap();
    let t = write(&d, "t.gz", &gzipped);
    let out = bl()
        .args(["dedup", "--window-keys", "100", s(&t)])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"a\nb\n", "the lines, not the gzip bytes");
    let piped = bl()
        .args(["dedup", "--window-keys", "100"])
        .write_stdin(gzipped)
        .output()
        .unwrap();
    assert_eq!(piped.stdout, b"a\nb\n", "standard input too");
    let bin = write(&d, "x.dat", [b"ab\n".as_slice(), &[0u8, 1, 2, 3]].concat());
    let err = fails(&["dedup", "--window-keys", "100", s(&bin)], 1);
    says(&err, &["x.dat", "byte offset 3", "binary"]);
}

#[test]
fn classify_refuses_a_filter_of_another_key_type_and_names_a_counting_ones_kind() {
    let d = tmp();
    let cap = write(&d, "ok.pcap", one_packet_pcap());
    let ints = write(&d, "n.txt", "1\n2\n3\n");
    let u64s = at(&d, "u64.blf");
    json(&["build", s(&ints), "--key-type", "u64", "-o", s(&u64s)]);
    let err = fails(&["classify", s(&u64s), s(&cap)], 2);
    assert!(err.contains("u64") && err.contains("flow"), "{err}");
    // A filter of flows matches the packet.
    let flows = at(&d, "flows.blf");
    json(&["build", s(&cap), "-o", s(&flows)]);
    assert_eq!(json(&["classify", s(&flows), s(&cap)])["matched"], 1);
    let counting = at(&d, "c.blf");
    json(&["build", s(&cap), "-o", s(&counting), "--kind", "counting"]);
    let err = fails(&["classify", s(&counting), s(&cap)], 2);
    assert!(
        err.contains("cannot classify packets with a counting filter")
            && err.contains("export --static")
            && !err.contains("not a valid"),
        "{err}"
    );
}

#[test]
fn delete_verify_with_refuses_keys_the_list_does_not_hold() {
    let d = tmp();
    let present = write(&d, "present.txt", lines("p", 20_000));
    let never = write(&d, "never.txt", lines("never", 10_000));
    let c = at(&d, "c.blf");
    json(&["build", s(&present), "-o", s(&c), "--kind", "counting"]);
    let count = |f: &str| {
        json(&["query", s(&c), f, "--count"])["matches"]
            .as_u64()
            .unwrap()
    };
    // Never-inserted keys that are false positives of the filter are deleted without the list
    // (what a counting filter cannot know), never with it.
    let err = fails(
        &[
            "delete",
            s(&c),
            s(&never),
            "--strict",
            "--verify-with",
            s(&present),
        ],
        1,
    );
    says(&err, &["10000 of 10000", "--verify-with"]);
    let v = json(&["delete", s(&c), s(&never), "--verify-with", s(&present)]);
    assert_eq!(
        (v["deleted"].as_u64(), v["not_present"].as_u64()),
        (Some(0), Some(10_000))
    );
    assert_eq!(count(s(&present)), 20_000, "no present key lost");
    // A key listed once is deleted once.
    let some = write(&d, "some.txt", lines("p", 500));
    let v = json(&[
        "delete",
        s(&c),
        s(&some),
        s(&some),
        "--verify-with",
        s(&present),
    ]);
    assert_eq!(
        (v["deleted"].as_u64(), v["not_present"].as_u64()),
        (Some(500), Some(500))
    );
    assert_eq!(v["recorded_keys"], 19_500);
    let help = bl().args(["delete", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("cannot be told from a present key"), "{help}");
}

#[test]
fn misleading_messages_say_what_is_wrong() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\nb\n");
    let err = fails(
        &[
            "build",
            s(&keys),
            "-o",
            s(&at(&d, "w.blf")),
            "--kind",
            "window",
            "--window-seconds",
            "1e300",
            "--capacity",
            "10",
        ],
        2,
    );
    assert!(err.contains("too long") && err.contains("1e300"), "{err}");
    let err = fails(
        &["dedup", "--window-keys", "100", "--fpp", "1e-300", s(&keys)],
        2,
    );
    assert!(err.contains("1e-300") && err.contains("too small"), "{err}");
    assert!(!err.contains("rate 0 "), "{err}");
    // A static filter whose header claims kind metadata.
    let f = at(&d, "s.blf");
    json(&["build", s(&keys), "-o", s(&f)]);
    let mut b = std::fs::read(&f).unwrap();
    b[30] = 1;
    let check = bloomlanes_host::bloomlanes_core::xxh64(&b[..56], 0);
    b[56..64].copy_from_slice(&check.to_le_bytes());
    std::fs::write(&f, &b).unwrap();
    let err = fails(&["stats", s(&f)], 1);
    says(
        &err,
        &["metadata length field (bytes 30..32) is 1", "static"],
    );
}
