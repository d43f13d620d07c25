//! Filters that always merge (issue #27 item 2): `merge` folds a filter whose block count is a
//! multiple of the other's into the same bytes as a one-shot build, keeps the key count (the
//! sum), refuses block counts that do not divide and names both files; `import --row-group all
//! --merge` folds row groups of different sizes.

mod common;

use common::*;

/// Builds `keys` into `out` with 10 bits per key for `capacity` keys (layout 8x32: capacity /
/// 25.6 blocks).
fn sized(keys: &std::path::Path, out: &std::path::Path, capacity: u32) -> serde_json::Value {
    build(
        keys,
        out,
        &format!("--capacity {capacity} --bits-per-key 10 --layout 8x32"),
    )
}

#[test]
fn merge_folds_the_larger_filter_into_the_bytes_of_a_one_shot_build() {
    let d = tmp();
    let a = write(&d, "a.txt", lines("a", 2000));
    let b = write(&d, "b.txt", lines("b", 1500));
    let both = write(&d, "both.txt", lines("a", 2000) + &lines("b", 1500));
    let (fa, fb, one) = (at(&d, "a.blf"), at(&d, "b.blf"), at(&d, "one.blf"));
    assert_eq!(sized(&a, &fa, 10_240)["blocks"], 400);
    assert_eq!(sized(&b, &fb, 2_560)["blocks"], 100);
    assert_eq!(sized(&both, &one, 2_560)["blocks"], 100);

    let m = at(&d, "m.blf");
    let v = json(&["merge", s(&fa), s(&fb), "-o", s(&m)]);
    assert_eq!(v["blocks"], 100);
    assert_eq!(v["key_count"], 3500, "the sum of the recorded counts");
    assert_eq!(v["folded"][0]["input"], s(&fa));
    assert_eq!(v["folded"][0]["from_blocks"], 400);
    assert_eq!(v["folded"][0]["to_blocks"], 100);
    assert_eq!(v["folded"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read(&m).unwrap(),
        std::fs::read(&one).unwrap(),
        "a fold and a merge give the bytes of a one-shot build"
    );
    assert_eq!(
        json(&["query", s(&m), s(&both), "--count"])["matches"],
        3500
    );

    // The text report says what was folded; the order of the inputs does not matter.
    let m2 = at(&d, "m2.blf");
    let out = succeeds(bl().args(["merge", s(&fb), s(&fa), "-o", s(&m2)]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("folded {} 400 → 100 blocks", fa.display()))
            && text.contains("3500 keys recorded"),
        "{text}"
    );
    assert_eq!(std::fs::read(&m2).unwrap(), std::fs::read(&one).unwrap());
}

#[test]
fn block_counts_that_do_not_divide_are_refused_naming_both_files_and_counts() {
    let d = tmp();
    let a = write(&d, "a.txt", lines("a", 500));
    let (fa, fb) = (at(&d, "a.blf"), at(&d, "b.blf"));
    assert_eq!(sized(&a, &fa, 2_560)["blocks"], 100);
    assert_eq!(sized(&a, &fb, 2_611)["blocks"], 102);
    let out = at(&d, "m.blf");
    let e = fails(&["merge", s(&fa), s(&fb), "-o", s(&out)], 1);
    assert!(
        e.contains(s(&fa)) && e.contains(s(&fb)) && e.contains("100") && e.contains("102"),
        "{e}"
    );
    assert!(e.contains("multiple"), "{e}");
    assert!(!out.exists());
}

#[test]
fn import_merge_folds_row_groups_of_different_sizes() {
    let d = tmp();
    let plain = at(&d, "plain.parquet");
    // Like DuckDB: full row groups, then a last one with fewer rows (and a smaller filter).
    parquet_of(&plain, &[3000, 3000, 1000]);
    let with = at(&d, "with.parquet");
    let v = add_filters(&plain, &with, "--column n --fpp 0.01");
    let bytes: Vec<u64> = v["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bytes"].as_u64().unwrap())
        .collect();
    assert!(bytes[0] == bytes[1] && bytes[2] < bytes[0], "{v}");
    let merged = at(&d, "all.blf");
    let v = import_merged_n(&with, &merged);
    let small = bytes[2] / 32;
    assert_eq!(v["blocks"], small, "{v}");
    let folded = v["folded"].as_array().unwrap();
    assert_eq!(folded.len(), 2, "{v}");
    assert_eq!(folded[0]["row_group"], 0);
    assert_eq!(folded[0]["from_blocks"], bytes[0] / 32);
    assert_eq!(folded[1]["to_blocks"], small);
    let all = write(
        &d,
        "all.txt",
        (0..7000).map(|i| format!("{i}\n")).collect::<String>(),
    );
    assert_eq!(
        json(&["query", s(&merged), s(&all), "--count", "--key-type", "i32"])["matches"],
        7000,
        "every key of every row group is found in the folded union"
    );
}
