//! `.parquet` files: typed import of every row group, `parquet add-filters` checked against the
//! `parquet` crate's reader value by value, `parquet probe`, and corrupt footers (issue #11
//! defect 3: a negative `bloom_filter_length` is an error, not a panic).

mod common;

use std::fs::File;
use std::sync::Arc;

use bloomlanes_host::parquet_io::ParquetFile;
use common::*;
use parquet::bloom_filter::Sbbf;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

const ROWS: i32 = 1500;

fn n32(i: i32) -> i32 {
    i * 7919 - 4_000_000
}
fn f64v(i: i32) -> f64 {
    if i == 0 {
        -0.0
    } else {
        f64::from(i) * -0.37
    }
}
fn name(i: i32) -> String {
    format!("name-{i}")
}

/// Three row groups of (`n` INT32, `x` DOUBLE, `s` BYTE_ARRAY); bloom filters only if `blooms`.
fn write_file(path: &std::path::Path, blooms: bool) {
    let schema = Arc::new(
        parse_message_type(
            "message t { required int32 n; required double x; optional binary s (UTF8); }",
        )
        .unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_bloom_filter_enabled(blooms)
            .build(),
    );
    let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
    for g in 0..3 {
        let range = (g * ROWS / 3)..((g + 1) * ROWS / 3);
        let mut rg = w.next_row_group().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        let v: Vec<i32> = range.clone().map(n32).collect();
        c.typed::<Int32Type>().write_batch(&v, None, None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        let v: Vec<f64> = range.clone().map(f64v).collect();
        c.typed::<DoubleType>().write_batch(&v, None, None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        // Every third value is null.
        let def: Vec<i16> = range.clone().map(|i| i16::from(i % 3 != 0)).collect();
        let v: Vec<ByteArray> = range
            .clone()
            .filter(|i| i % 3 != 0)
            .map(|i| name(i).as_str().into())
            .collect();
        c.typed::<ByteArrayType>()
            .write_batch(&v, Some(&def), None)
            .unwrap();
        c.close().unwrap();
        rg.close().unwrap();
    }
    w.close().unwrap();
}

/// The parquet crate's bloom filter of (row group, column).
fn crate_filter(path: &std::path::Path, g: usize, c: usize) -> Option<Sbbf> {
    let r = parquet_reader(path);
    let rg = r.get_row_group(g).unwrap();
    rg.get_column_bloom_filter(c).cloned()
}

#[test]
fn add_filters_writes_what_the_parquet_crate_reads_value_by_value() {
    let d = tmp();
    let plain = at(&d, "plain.parquet");
    write_file(&plain, false);
    let out = at(&d, "with.parquet");
    let v = add_filters(
        &plain,
        &out,
        "--column n --column x --column s --fpp 0.01 --fpp s=0.001",
    );
    assert_eq!(v["filters"].as_array().unwrap().len(), 9);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v}");
    for f in v["filters"].as_array().unwrap() {
        let bytes = f["bytes"].as_u64().unwrap();
        assert!(bytes.is_power_of_two() && bytes >= 32, "{f}");
        let want = if f["column"] == "s" { 0.001 } else { 0.01 };
        assert!(f["expected_fpr"].as_f64().unwrap() <= want, "{f}");
        let g = f["row_group"].as_u64().unwrap() as i32;
        let rows = (g * ROWS / 3)..((g + 1) * ROWS / 3);
        let non_null = if f["column"] == "s" {
            rows.filter(|i| i % 3 != 0).count()
        } else {
            rows.count()
        };
        assert_eq!(f["values"], non_null, "{f}");
    }

    // The data pages are copied byte for byte: only the footer follows them.
    let a = std::fs::read(&plain).unwrap();
    let b = std::fs::read(&out).unwrap();
    let data_end = ParquetFile::open(&plain).unwrap().footer().start as usize;
    assert_eq!(a[..data_end], b[..data_end]);

    // The parquet crate reads every value back from the filters we wrote, per row group; the
    // crate's rows are unchanged.
    let r = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), i64::from(ROWS));
    for g in 0..3usize {
        let range = (g as i32 * ROWS / 3)..((g as i32 + 1) * ROWS / 3);
        let (fn_, fx, fs) = (
            crate_filter(&out, g, 0).unwrap(),
            crate_filter(&out, g, 1).unwrap(),
            crate_filter(&out, g, 2).unwrap(),
        );
        for i in range.clone() {
            assert!(fn_.check(&n32(i)), "n {i}");
            assert!(fx.check(&f64v(i)), "x {i}");
            if i % 3 != 0 {
                assert!(fs.check(&name(i).as_str()), "s {i}");
            }
        }
        // Values of other row groups are (almost all) absent: the filters really discriminate.
        let other = (0..ROWS).filter(|i| !range.contains(i));
        let fp = other.clone().filter(|&i| fn_.check(&n32(i))).count();
        assert!(fp < 30, "{fp} false positives of {}", other.count());
    }

    // `parquet probe` agrees with the crate, key by key and row group by row group.
    let keys: Vec<i32> = (0..ROWS).step_by(7).map(n32).chain([1, 2, 3]).collect();
    let kf = write(
        &d,
        "keys.txt",
        keys.iter().map(|k| format!("{k}\n")).collect::<String>(),
    );
    let v = json(&argv!("parquet probe", out, "--column n --keys", kf));
    assert_eq!(v["column_key_type"], "i32");
    let crate_filters: Vec<Sbbf> = (0..3).map(|g| crate_filter(&out, g, 0).unwrap()).collect();
    for (i, k) in keys.iter().enumerate() {
        let ours: Vec<u64> = v["keys"][i]["row_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["row_group"].as_u64().unwrap())
            .collect();
        let theirs: Vec<u64> = (0..3u64)
            .filter(|&g| crate_filters[g as usize].check(k))
            .collect();
        assert_eq!(ours, theirs, "key {k}");
    }

    // Imported filters record the column's type: INT32 → i32, queryable as such.
    let dir = at(&d, "groups");
    let import_all = || {
        json(&[
            "import",
            s(&out),
            "--column",
            "n",
            "--row-group",
            "all",
            "-o",
            s(&dir),
        ])
    };
    let v = import_all();
    assert_eq!(v["key_type"], "i32");
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    // An earlier import of a file with more row groups left 7.blf: an import into the same
    // folder removes it (it would be taken for this file's), and nothing else (issue #24).
    std::fs::copy(dir.join("0.blf"), dir.join("7.blf")).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let v = import_all();
    assert_eq!(v["removed_stale"], serde_json::json!(["7.blf"]));
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["0.blf", "1.blf", "2.blf", "notes.txt"]);
    let q = write(
        &d,
        "g0.txt",
        (0..ROWS / 3)
            .map(|i| format!("{}\n", n32(i)))
            .collect::<String>(),
    );
    let g0 = dir.join("0.blf");
    assert_eq!(json(&["query", s(&g0), s(&q), "--count"])["matches"], 500);
    let e = fails(&["query", s(&g0), s(&q), "--key-type", "i64", "--count"], 2);
    assert!(e.contains("i32") && e.contains("i64"), "{e}");
    let merged = at(&d, "all.blf");
    let v = import_merged_n(&out, &merged);
    assert!(v["union_fpr_from_bits"].as_f64().unwrap() > 0.0);
    let all = write(
        &d,
        "all.txt",
        (0..ROWS)
            .map(|i| format!("{}\n", n32(i)))
            .collect::<String>(),
    );
    assert_eq!(
        json(&["query", s(&merged), s(&all), "--count"])["matches"],
        ROWS
    );

    // --no-pow2 sizes exactly and warns that some readers refuse it.
    let v = add_filters(
        &plain,
        &at(&d, "np.parquet"),
        "--column n --ndv 1000 --no-pow2",
    );
    assert!(
        v["warnings"][0].as_str().unwrap().contains("power of two"),
        "{v}"
    );
    // Replacing a file's filters: the old ones are replaced, the data still byte for byte.
    let again = at(&d, "again.parquet");
    let v = add_filters(&out, &again, "--column n --fpp 0.2");
    assert_eq!(v["filters"][0]["replaced"], true);
    let smaller = crate_filter(&again, 0, 0).unwrap();
    assert!((0..ROWS / 3).all(|i| smaller.check(&n32(i))));
}

#[test]
fn corrupt_footers_are_errors_naming_the_file_and_field() {
    let d = tmp();
    let good = at(&d, "good.parquet");
    write_file(&good, true);
    let pf = ParquetFile::open(&good).unwrap();
    let footer = pf.footer();
    let bytes = std::fs::read(&good).unwrap();
    let rewrite = |name: &str, blooms: &[(usize, usize, u64, u32)]| {
        let meta = footer.with_blooms(blooms);
        let mut b = bytes[..footer.start as usize].to_vec();
        b.extend_from_slice(&meta);
        b.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        b.extend_from_slice(b"PAR1");
        write(&d, name, b)
    };
    // Issue #11 defect 3: bloom_filter_length = -1 made the parquet crate panic ("capacity
    // overflow"). Import, probe and add-filters now refuse the file.
    let off = footer.row_groups[0].chunks[0].bloom.unwrap().offset;
    let neg = rewrite("neg.parquet", &[(0, 0, off, u32::MAX)]);
    for args in [
        vec!["import", s(&neg), "--column", "n", "-o", "x.blf"],
        vec!["parquet", "probe", s(&neg), "--column", "n", "--key", "1"],
        vec![
            "parquet",
            "add-filters",
            s(&neg),
            "-o",
            "y.parquet",
            "--column",
            "n",
        ],
    ] {
        let e = fails(&args, 1);
        says(&e, &["neg.parquet", "bloom_filter_length -1"]);
    }
    // An offset past the data, a length running past it.
    let past = rewrite("past.parquet", &[(1, 2, bytes.len() as u64 + 10, 64)]);
    let e = fails(
        &argv!("import", past, "--column s --row-group 1 -o x.blf"),
        1,
    );
    assert!(e.contains("bloom_filter_offset"), "{e}");
    let long = rewrite("long.parquet", &[(0, 1, off, 1 << 30)]);
    let e = fails(&["import", s(&long), "--column", "x", "-o", "x.blf"], 1);
    assert!(e.contains("runs past"), "{e}");
    // Truncations anywhere and a footer length that lies: errors, never panics.
    for cut in [0, 3, 11, bytes.len() / 2, bytes.len() - 9, bytes.len() - 1] {
        let p = write(&d, "cut.parquet", &bytes[..cut]);
        fails(&["import", s(&p), "-o", "x.blf"], 1);
    }
    let mut lie = bytes.clone();
    let n = lie.len();
    lie[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let p = write(&d, "lie.parquet", lie);
    let e = fails(
        &["parquet", "probe", s(&p), "--column", "n", "--key", "1"],
        1,
    );
    assert!(e.contains("footer length"), "{e}");
}
