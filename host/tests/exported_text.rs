//! Text as Windows tools and spreadsheets export it: a CSV error or warning names the line and
//! byte offset an editor shows, also with CRLF endings and blank lines, where the `csv` crate's
//! own positions are a line early (input's `csv_place`), read whole, in small chunks and
//! streamed from standard input; and a key list that starts with a UTF-8 byte order mark gives
//! its first key as written, not with the mark in front of it. A file that is not text at all
//! (a Parquet export of the table, a filter file given as keys) is named for what it is, with
//! what to do instead, by every reader; nothing is written.

mod common;

use std::path::Path;

use common::*;

/// A CSV of `rows` records under a header, with CRLF endings, a blank line every 7 records
/// and a bad IP address in record `bad`: the text and the bad record's (line, byte offset).
fn rules(rows: usize, bad: usize) -> (String, (usize, usize)) {
    let mut text = String::from("ip,action\r\n");
    let mut place = (0, 0);
    for i in 0..rows {
        if i % 7 == 3 {
            text.push_str("\r\n");
        }
        if i == bad {
            place = (text.matches('\n').count() + 1, text.len());
            text.push_str("10.0.0.x,deny\r\n");
        } else {
            text.push_str(&format!("10.{}.{}.1,allow\r\n", i / 250, i % 250));
        }
    }
    (text, place)
}

/// The flags of a spatial build from the columns `ip` and `action`.
const SPATIAL: &str = "--kind spatial --csv-column ip --class-column action --key-type ip";

#[test]
fn a_bad_key_is_placed_on_its_line_in_a_crlf_csv() {
    let d = tmp();
    let (text, (line, byte)) = rules(3000, 2400);
    let csv = write(&d, "rules.csv", &text);
    let out = at(&d, "rules.blf");
    let want = format!("line {line} (byte offset {byte})");
    // Read whole, in chunks of 4 KiB (records cut at every boundary), and as a spatial build.
    for flags in [
        "--csv-column ip --key-type ip",
        "--csv-column ip --key-type ip --chunk-bytes 4096",
        SPATIAL,
    ] {
        let err = fails(&argv!("build", &csv, "-o", &out, flags), 1);
        assert!(err.contains(&want), "{flags}: want {want}: {err}");
        assert!(!out.exists(), "nothing is written");
    }
    // Streamed from standard input.
    let run = bl()
        .args(argv!("build - -o", &out, SPATIAL, "--format csv"))
        .write_stdin(text)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains(&want), "stdin: want {want}: {err}");
}

#[test]
fn a_key_in_two_classes_is_placed_on_both_lines() {
    let d = tmp();
    let text = "\u{feff}ip,action\r\n10.0.0.1,allow\r\n\r\n10.0.0.2,deny\r\n10.0.0.1,deny\r\n";
    let csv = write(&d, "rules.csv", text);
    let out = at(&d, "rules.blf");
    let run = succeeds(bl().args(argv!(
        "build",
        &csv,
        "-o",
        &out,
        SPATIAL,
        "--classes allow,deny"
    )));
    let err = String::from_utf8_lossy(&run.stderr);
    let (low, high) = (
        "rules.csv: line 2) and in class deny (",
        "rules.csv: line 5)",
    );
    assert!(err.contains(low) && err.contains(high), "{err}");
}

#[test]
fn a_byte_order_mark_is_no_part_of_the_first_key() {
    let d = tmp();
    let list = write(&d, "keys.txt", "\u{feff}alpha\r\nbeta\r\n");
    let ips = write(&d, "ips.txt", "\u{feff}10.0.0.1\n10.0.0.2\n");
    let (f, g) = (at(&d, "keys.blf"), at(&d, "ips.blf"));
    succeeds(bl().args(argv!("build", &list, "-o", &f)));
    succeeds(bl().args(argv!("build", &ips, "-o", &g, "--key-type ip")));
    for (filter, keys) in [(&f, "alpha\nbeta\n"), (&g, "10.0.0.1\n10.0.0.2\n")] {
        let run = bl()
            .args(argv!("query", filter, "- --count"))
            .write_stdin(keys)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&run.stdout);
        assert!(
            out.trim_start().starts_with('2'),
            "{}: {out}",
            filter.display()
        );
    }
    // The same from standard input, and a bad first key is placed after the mark.
    let run = bl()
        .args(argv!("build - -o", &f, "--key-type ip --capacity 10"))
        .write_stdin("\u{feff}10.0.0.x\n")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("line 1 (byte offset 3)") && err.contains("\"10.0.0.x\""),
        "{err}"
    );
}

/// A spreadsheet's `;` export read with the default `,`: the error says which delimiter to give.
#[test]
fn a_header_read_as_one_field_names_the_delimiter() {
    let d = tmp();
    let csv = write(&d, "rules.csv", "ip;action\r\n10.0.0.1;allow\r\n");
    let out = at(&d, "rules.blf");
    let flags = "--csv-column ip --key-type ip";
    let err = fails(&argv!("build", &csv, "-o", &out, flags), 1);
    assert!(err.contains("give --delimiter ';'"), "{err}");
    succeeds(bl().args(argv!("build", &csv, "-o", &out, flags, "--delimiter ;")));
}

/// A Parquet file where a key list goes: the plain, CSV and labelled readers each name it (not
/// "binary data", not a header of its bytes) and say how to get its columns as CSV; a filter
/// file given as keys is named too.
#[test]
fn a_parquet_or_filter_file_given_as_keys_is_named_for_what_it_is() {
    let d = tmp();
    let table = at(&d, "rules.parquet");
    parquet_of(&table, &[10]);
    let out = at(&d, "f.blf");
    for flags in [
        "",
        "--csv-column n",
        "--kind spatial --csv-column n --class-column n",
        "--kind retrieval --csv-column n --value-column n --value-bits 8",
    ] {
        let err = fails(&argv!("build", &table, "-o", &out, flags), 1);
        says(
            &err,
            &["rules.parquet", "is a Parquet file", "COPY (SELECT"],
        );
        assert!(
            !err.contains("binary data") && !err.contains("header"),
            "{err}"
        );
        assert!(!out.exists(), "{flags}: nothing is written");
    }
    let keys = write(&d, "keys.txt", "a\nb\n");
    let filter = at(&d, "g.blf");
    build(&keys, &filter, "");
    let err = fails(&argv!("query", &filter, &filter), 2);
    let named = ["g.blf", "is a bloomlanes filter file", "query FILTER KEYS"];
    says(&err, &named);
}

/// A spreadsheet's header (`"IP Address", Action`) finds its columns by the names a user types
/// (`--csv-column "ip address" --class-column action`), as SQL engines match column names; a
/// name two header fields share but for case is refused, listing both.
#[test]
fn csv_columns_are_found_by_name_whatever_their_case() {
    let d = tmp();
    let text = "\"IP Address\", Action\r\n\"10.0.0.1\",Deny\r\n10.0.0.2,Allow\r\n";
    let (csv, f) = (write(&d, "fw.csv", text), at(&d, "fw.blf"));
    let (by, ip) = (SPATIAL_BY_ACTION, Path::new("ip address"));
    let b = json(&argv!("build", &csv, "-o", &f, by, ip));
    assert_eq!(per_class(&b["labels"], "name"), ["Deny", "Allow"]);
    let q = write(&d, "q.txt", "10.0.0.2\n");
    assert_eq!(answers(&f, &q, "", "class"), ["Allow"]);
    // A number is an index: " 0" in the header is not column 0 for `--csv-column 0`.
    let (data, g) = (write(&d, "data.csv", "1, 0\n10,1\n11,2\n"), at(&d, "g.blf"));
    json(&argv!(
        "build",
        &data,
        "-o",
        &g,
        "--csv-column 0 --key-type u64"
    ));
    let q = write(&d, "q.txt", "10\n11\n0\n2\n");
    assert_eq!(
        matches(&g, &q),
        2,
        "column 0's keys 10 and 11, not 0, 1 and 2"
    );
    let two = write(&d, "two.csv", "ip,IP\n1,2\n");
    let err = fails(&argv!("build", &two, "-o", &f, "--csv-column Ip"), 1);
    says(&err, &["no CSV column named \"Ip\"", "ip, IP"]);
}

/// A spatial build of IP keys with classes in column `action`, the key column named after it.
const SPATIAL_BY_ACTION: &str = "--kind spatial --key-type ip --class-column action --csv-column";

/// Only the input's first bytes can be a byte order mark: a later record that starts with
/// U+FEFF keeps it as its key's bytes in a CSV read in chunks of any size (the `csv` crate drops
/// those bytes at the start of whatever it is given, and each chunk is given to it alone).
#[test]
fn a_mark_inside_a_csv_is_a_key_whatever_the_chunks() {
    let d = tmp();
    let text = "\u{feff}a\nb\n\u{feff}c\n \n\u{feff}\n";
    let (csv, f) = (write(&d, "marks.csv", text), at(&d, "f.blf"));
    for chunk in ["1048576", "2", "3", "4", "7"] {
        let flags = format!("--format csv --no-header --chunk-bytes {chunk}");
        let b = json(&argv!("build", &csv, "-o", &f, flags.as_str()));
        assert_eq!(b["inputs"][0]["keys"], 5, "chunks of {chunk}: {b}");
    }
    let q = write(&d, "q.txt", "c\n\u{feff}c\n");
    assert_eq!(
        matches(&f, &q),
        1,
        "the mark is part of the key \\u{{feff}}c"
    );
}
