//! End-to-end tests of the capture and Parquet paths: 5-tuples from pcap/pcapng files the test
//! writes byte by byte, and bloom filters of Parquet files the test writes with the `parquet`
//! crate, checked value by value and bit for bit (`export --hdl`: `hdl_export.rs`).

mod common;

use std::fs::File;
use std::sync::Arc;

use common::*;
use parquet::bloom_filter::Sbbf;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::FileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

// ---- captures ---------------------------------------------------------------------------------

fn flows() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for i in 0..200u16 {
        let src = [10, 0, (i >> 8) as u8, i as u8];
        let ip = ipv4(6, src, [192, 168, 1, 1], 10000 + i, 443, 0);
        frames.push(eth(0x0800, 0, &ip));
    }
    for i in 0..50u8 {
        frames.push(eth(0x86dd, 0, &ipv6(17, i, 0xfe, 5353, 53)));
    }
    // A repeated flow, and an ARP frame that is not IP.
    frames.push(frames[0].clone());
    frames.push(eth(0x0806, 0, &[0; 28]));
    frames
}

#[test]
fn pcap_five_tuples_build_and_query() {
    let d = tmp();
    let cap = write(&d, "flows.pcap", pcap_file(&flows()));
    let f = at(&d, "flows.blf");
    let v = build(&cap, &f, "--fpp 0.0001");
    // One key per IP packet (the repeated flow twice); the filter is sized for the 250 distinct
    // flows (200 IPv4 + 50 IPv6) that a first pass counted.
    assert_eq!(v["keys"], 251, "{v}");
    assert_eq!(v["capacity"]["source"], "counted", "{v}");
    let est = v["capacity"]["estimated_distinct_keys"].as_f64().unwrap();
    assert!((est - 250.0).abs() < 5.0, "{v}");
    assert_eq!(v["inputs"][0]["format"], "pcap");
    assert_eq!(v["inputs"][0]["skipped"], 1, "the ARP frame");

    // The same capture as pcapng finds every flow; the printed keys are the 5-tuples.
    let ng = write(&d, "flows.pcapng", pcapng_file(&flows()));
    let out = succeeds(bl().args(["query", s(&f), s(&ng)]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().count(),
        251,
        "one line per IP packet, in capture order"
    );
    assert_eq!(
        text.lines().next(),
        text.lines().nth(250),
        "the repeated flow is listed again"
    );
    assert!(
        text.contains("10.0.0.0:10000 -> 192.168.1.1:443 proto 6"),
        "{text}"
    );
    assert!(
        text.contains("[2001::1]:5353 -> [2001::fe]:53 proto 17"),
        "{text}"
    );

    // Other flows (other ports) are not in the filter.
    let other: Vec<Vec<u8>> = (0..200u16)
        .map(|i| {
            let ip = ipv4(6, [10, 0, 0, i as u8], [192, 168, 1, 1], 20000 + i, 80, 0);
            eth(0x0800, 0, &ip)
        })
        .collect();
    let oc = write(&d, "other.pcap", pcap_file(&other));
    let v = json(&["query", s(&f), s(&oc), "--count"]);
    assert!(v["matches"].as_u64().unwrap() <= 2, "{v}");

    // The 13-byte IPv4 key layout: a filter built from the raw record bytes matches.
    let mut rec = vec![10, 0, 0, 0, 192, 168, 1, 1];
    rec.extend_from_slice(&10000u16.to_be_bytes());
    rec.extend_from_slice(&443u16.to_be_bytes());
    rec.push(6);
    let lib_f = bloomlanes_host::store::FilterFile::open(&f).unwrap();
    assert!(lib_f.view().contains(&rec));
}

#[test]
fn unreadable_captures_fail_with_offsets() {
    let d = tmp();
    let mut bytes = pcap_file(&flows());
    bytes.truncate(bytes.len() - 5);
    let cap = write(&d, "cut.pcap", &bytes);
    let out = at(&d, "o.blf");
    // A truncated last record is a warning naming the file and offset, as tcpdump does.
    let r = bl()
        .args(["build", s(&cap), "-o", s(&out)])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{e}");
    assert!(
        e.contains("warning")
            && e.contains("cut.pcap")
            && e.contains("byte offset")
            && e.contains("cut short"),
        "{e}"
    );
    assert!(String::from_utf8_lossy(&r.stdout).contains("251 keys"));
    std::fs::remove_file(&out).unwrap();
    // A record length no capture can have is an error with its offset.
    let mut bytes = pcap_file(&flows());
    bytes[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = write(&d, "badlen.pcap", &bytes);
    let e = fails(&["build", s(&bad), "-o", s(&out)], 1);
    says(&e, &["badlen.pcap", "byte offset 32", "captured length"]);

    let mut ng = pcapng_file(&flows());
    ng[32] = 0xff; // the interface block's length field
    let ngp = write(&d, "bad.pcapng", &ng);
    let e = fails(&["build", s(&ngp), "-o", s(&out)], 1);
    assert!(e.contains("bad.pcapng") && e.contains("byte offset"), "{e}");

    let junk = write(&d, "junk.pcap", b"this is not a capture at all");
    let e = fails(&["build", s(&junk), "--format", "pcap", "-o", s(&out)], 1);
    assert!(e.contains("junk.pcap") && e.contains("not a pcap"), "{e}");
    assert!(!out.exists());
}

// ---- Parquet ----------------------------------------------------------------------------------

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("customer-{i:05}")).collect()
}

fn ids(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| i * 1_000_003 - 77).collect()
}

/// Writes a Parquet file with two columns (`name` BYTE_ARRAY, `id` INT64), bloom filters on.
fn write_parquet(path: &std::path::Path, n: usize) {
    let schema = Arc::new(
        parse_message_type("message customers { required binary name (UTF8); required int64 id; }")
            .unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .set_bloom_filter_fpp(0.01)
            .set_bloom_filter_max_ndv(n as u64)
            .build(),
    );
    let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let name_values: Vec<ByteArray> = names(n).into_iter().map(|s| s.as_str().into()).collect();
    let mut col = rg.next_column().unwrap().unwrap();
    col.typed::<ByteArrayType>()
        .write_batch(&name_values, None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    col.typed::<Int64Type>()
        .write_batch(&ids(n), None, None)
        .unwrap();
    col.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();
}

/// The parquet crate's own bloom filter of column `i`, serialized (Thrift header + bitset).
fn parquet_crate_filter(path: &std::path::Path, i: usize) -> (Vec<u8>, Sbbf) {
    let r = parquet_reader(path);
    let rg = r.get_row_group(0).unwrap();
    let sbbf = rg
        .get_column_bloom_filter(i)
        .expect("bloom filter written")
        .clone();
    let mut bytes = Vec::new();
    sbbf.write(&mut bytes).unwrap();
    (bytes, sbbf)
}

#[test]
fn parquet_column_bloom_filters_import_value_by_value() {
    let d = tmp();
    let n = 3000;
    let pq = at(&d, "customers.parquet");
    write_parquet(&pq, n);

    // The string column: every written value is found, by the CLI and by the library.
    let fname = at(&d, "names.blf");
    let v = json(&["import", s(&pq), "--column", "name", "-o", s(&fname)]);
    assert_eq!(v["column"], "name");
    assert_eq!(v["physical_type"], "BYTE_ARRAY");
    assert_eq!(v["layout"], "8x32");
    let (crate_bytes, sbbf) = parquet_crate_filter(&pq, 0);
    let lib = bloomlanes_host::store::FilterFile::open(&fname).unwrap();
    for name in names(n) {
        assert!(sbbf.check(&name.as_str()), "the parquet crate finds {name}");
        assert!(
            lib.view().contains(name.as_bytes()),
            "bloomlanes finds {name}"
        );
    }
    let q = write(&d, "names.txt", names(n).join("\n"));
    assert_eq!(json(&["query", s(&fname), s(&q), "--count"])["matches"], n);

    // The imported bitset equals the parquet crate's, byte for byte (export gives it back).
    let back = at(&d, "names.sbbf");
    bl().args(["export", s(&fname), "--parquet", s(&back)])
        .assert()
        .success();
    assert_eq!(std::fs::read(&back).unwrap(), crate_bytes);
    // And answers agree key by key on values that were never written.
    for i in 0..2000 {
        let k = format!("stranger-{i}");
        assert_eq!(
            sbbf.check(&k.as_str()),
            lib.view().contains(k.as_bytes()),
            "{k}"
        );
    }

    // The INT64 column (by index), queried with decimal integers.
    let fid = at(&d, "ids.blf");
    let v = json(&["import", s(&pq), "--column", "1", "-o", s(&fid)]);
    assert_eq!(v["column"], "id");
    let (crate_ids, sbbf_ids) = parquet_crate_filter(&pq, 1);
    let lib = bloomlanes_host::store::FilterFile::open(&fid).unwrap();
    for id in ids(n) {
        assert!(sbbf_ids.check(&id));
        assert!(lib.view().contains(&(id as u64)), "bloomlanes finds {id}");
    }
    // Signed decimals (the INT64 column records key type i64, so text is parsed as i64).
    assert_eq!(v["key_type"], "i64");
    let dec: String = ids(n).iter().map(|i| format!("{i}\n")).collect();
    let q = write(&d, "ids.txt", dec);
    assert_eq!(
        json(&["query", s(&fid), s(&q), "--format", "decimal", "--count"])["matches"],
        n
    );
    let back = at(&d, "ids.sbbf");
    bl().args(["export", s(&fid), "--parquet", s(&back)])
        .assert()
        .success();
    assert_eq!(std::fs::read(&back).unwrap(), crate_ids);

    // A bare Parquet bloom filter imports too, and round-trips.
    let again = at(&d, "again.blf");
    bl().args(["import", s(&back), "-o", s(&again)])
        .assert()
        .success();
    let a = bloomlanes_host::store::FilterFile::open(&again).unwrap();
    assert_eq!(a.words(), lib.words());
}

#[test]
fn parquet_bad_inputs() {
    let d = tmp();
    let pq = at(&d, "c.parquet");
    write_parquet(&pq, 100);
    let out = at(&d, "o.blf");
    let e = fails(&["import", s(&pq), "--column", "nope", "-o", s(&out)], 2);
    assert!(e.contains("nope") && e.contains("name, id"), "{e}");
    let e = fails(&["import", s(&pq), "--row-group", "5", "-o", s(&out)], 2);
    assert!(e.contains("row group"), "{e}");
    // A truncated Parquet file.
    let bytes = std::fs::read(&pq).unwrap();
    let cut = write(&d, "cut.parquet", &bytes[..bytes.len() / 2]);
    let e = fails(&["import", s(&cut), "-o", s(&out)], 1);
    assert!(e.contains("cut.parquet"), "{e}");
    let junk = write(&d, "junk.bin", b"\x15\x00garbage");
    let e = fails(&["import", s(&junk), "-o", s(&out)], 1);
    assert!(e.contains("junk.bin") && e.contains("Parquet"), "{e}");
    assert!(!out.exists());

    // Only 8x32 seed-0 filters have a Parquet form.
    let (_, f) = write_and_build(&d, "k.txt", "a\n", "f.blf", "--layout 16x64");
    let e = fails(&["export", s(&f), "--parquet", s(&at(&d, "x.sbbf"))], 1);
    assert!(e.contains("8x32"), "{e}");
    assert!(!at(&d, "x.sbbf").exists());
}
