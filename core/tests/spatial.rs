//! The spatial filter (the classification issue): a key of class c is never reported below c,
//! inserts are order-free, the projection is the static filter of every key, files round-trip,
//! and crafted class tables are rejected.
#![cfg(feature = "alloc")]

mod common;

use bloomlanes_core::{
    AnyFilter, CellBits, Filter, FilterKind, FormatError, Layout, Params, SpatialFilter,
};
use common::{layout, rechecksum};
use proptest::prelude::*;

fn shape(layout: Layout, blocks: u32) -> Params {
    Params::new(layout, blocks).with_seed(7)
}

fn names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("class-{i}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_key_is_never_reported_below_its_class_and_order_does_not_matter(
        layout in layout(),
        blocks in 1u32..40,
        bits in prop::sample::select(vec![4u32, 8, 16]),
        keys in prop::collection::vec((any::<u64>(), 1u32..=15), 1..400),
    ) {
        let classes = 15usize;
        let mut forward = SpatialFilter::new(shape(layout, blocks), bits, &names(classes)).unwrap();
        let mut backward = forward.clone();
        let mut projection = Filter::new(shape(layout, blocks));
        for &(k, c) in &keys {
            forward.insert(&k, c).unwrap();
            projection.insert(&k);
        }
        for &(k, c) in keys.iter().rev() {
            backward.insert(&k, c).unwrap();
        }
        prop_assert_eq!(forward.cell_words(), backward.cell_words());
        let image = forward.to_static();
        prop_assert_eq!(image.words(), projection.words());
        for &(k, c) in &keys {
            let got = forward.class_of(&k);
            prop_assert!(got >= c, "key {} of class {} reported as {}", k, c, got);
            prop_assert!(got <= classes as u32);
        }
        let per_class: u64 = forward.keys_per_class().iter().sum();
        prop_assert_eq!(per_class, keys.len() as u64);
    }
}

#[test]
fn an_absent_key_is_class_zero_and_a_lone_key_its_own_class() {
    let mut f = SpatialFilter::new(shape(Layout::L8x32, 1024), 8, &["deny", "allow"]).unwrap();
    f.insert("10.0.0.1", 2).unwrap();
    assert_eq!(f.class_of("10.0.0.1"), 2);
    assert_eq!(f.class_name(2), Some("allow"));
    assert_eq!(f.class_number("deny"), Some(1));
    let absent = (0..10_000u64).filter(|k| f.class_of(k) != 0).count();
    assert_eq!(absent, 0, "one key in 1024 blocks reports no absent key");
    assert_eq!(f.cells_per_class(), vec![0, 8]);
}

#[test]
fn construction_refuses_what_the_cells_cannot_hold() {
    let p = shape(Layout::L8x32, 4);
    assert!(SpatialFilter::new(p, 4, &names(15)).is_ok());
    assert!(SpatialFilter::new(p, 4, &names(16)).is_err());
    assert!(SpatialFilter::new(p, 2, &names(2)).is_err());
    assert!(SpatialFilter::new(p, 8, &["a", "a"]).is_err());
    assert!(SpatialFilter::new(p, 8, &["a", ""]).is_err());
    assert!(SpatialFilter::new(p, 8, &["a,b"]).is_err());
    assert!(SpatialFilter::new(p, 8, &Vec::<String>::new()).is_err());
    let mut f = SpatialFilter::new(p, 8, &["a", "b"]).unwrap();
    assert!(f.insert("k", 3).is_err());
    assert!(f.insert("k", 0).is_err());
}

#[test]
fn names_padded_with_white_space_are_refused_but_still_read() {
    let p = shape(Layout::L8x32, 8);
    for padded in ["deny ", " deny", "deny\u{a0}", "\tdeny"] {
        let err = SpatialFilter::new(p, 4, &["allow", padded]).expect_err(padded);
        assert!(err.to_string().contains("white space"), "{padded:?}: {err}");
    }
    // A file an earlier writer made with "deny " (the name's space written over "denyX").
    let mut bytes = SpatialFilter::new(p, 4, &["allow", "denyX"])
        .unwrap()
        .to_file_bytes();
    let at = bytes.windows(5).position(|w| w == b"denyX").unwrap();
    bytes[at + 4] = b' ';
    rechecksum(&mut bytes);
    let back = SpatialFilter::from_file_bytes(&bytes).expect("a padded stored name reads");
    assert_eq!(back.class_names(), ["allow", "deny "]);
    // Remade from what was read (a device copy coming back, a key type learnt): kept.
    let again = SpatialFilter::with_stored_names(p, 4, back.class_names()).unwrap();
    assert_eq!(again.class_names(), back.class_names());
    assert!(SpatialFilter::with_stored_names(p, 4, &["a,b"]).is_err());
}

#[test]
fn files_round_trip_with_their_names_and_counts() {
    let mut f =
        SpatialFilter::new(shape(Layout::L16x64, 33), 16, &["deny", "mirror", "allow"]).unwrap();
    for k in 0..3000u64 {
        f.insert(&k, (k % 3 + 1) as u32).unwrap();
    }
    let bytes = f.to_file_bytes();
    let back = SpatialFilter::from_file_bytes(&bytes).unwrap();
    assert_eq!(back, f);
    assert_eq!(back.class_names(), ["deny", "mirror", "allow"]);
    assert_eq!(back.keys_per_class(), [1000, 1000, 1000]);
    match AnyFilter::from_file_bytes(&bytes).unwrap() {
        AnyFilter::Spatial(g) => assert_eq!(g, f),
        other => panic!("read as {:?}", other.params().kind),
    }
    assert!(matches!(
        f.params().kind,
        FilterKind::Spatial {
            cell_bits: CellBits::Sixteen,
            classes: 3
        }
    ));
}

#[test]
fn crafted_class_tables_are_rejected() {
    let f = SpatialFilter::new(shape(Layout::L8x32, 8), 4, &["deny", "allow"]).unwrap();
    let good = f.to_file_bytes();
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    // Metadata offsets in the file: the payload (and the metadata) start at byte 64.
    let edits: Vec<(&str, Edit)> = vec![
        ("cell bits 5", Box::new(|b| b[64] = 5)),
        (
            "zero classes",
            Box::new(|b| b[66..68].copy_from_slice(&0u16.to_le_bytes())),
        ),
        (
            "16 classes in 4-bit cells",
            Box::new(|b| b[66..68].copy_from_slice(&16u16.to_le_bytes())),
        ),
        (
            "huge name length",
            Box::new(|b| b[68..72].copy_from_slice(&u32::MAX.to_le_bytes())),
        ),
        ("names one byte short", Box::new(|b| b[68] -= 1)),
        (
            "a name length past the table",
            Box::new(|b| b[64 + 64 + 16] = 200),
        ),
        (
            "a duplicate name",
            Box::new(|b| {
                // "deny" (4 bytes) then "allow" (5 bytes): make the second "deny" too.
                let at = 64 + 64 + 16;
                b[at + 5] = 4;
                let deny = *b"deny";
                b[at + 6..at + 10].copy_from_slice(&deny);
                b[at + 10] = 0;
            }),
        ),
        (
            "a name with a comma",
            Box::new(|b| b[64 + 64 + 16 + 2] = b','),
        ),
        ("a non-UTF-8 name", Box::new(|b| b[64 + 64 + 16 + 1] = 0xff)),
        ("a stray metadata byte", Box::new(|b| b[64 + 40] = 1)),
    ];
    for (what, edit) in edits {
        let mut bytes = good.clone();
        edit(&mut bytes);
        rechecksum(&mut bytes);
        let err = SpatialFilter::from_file_bytes(&bytes).expect_err(what);
        assert!(
            matches!(
                err,
                FormatError::Metadata { .. } | FormatError::PayloadLength { .. }
            ),
            "{what}: {err:?}"
        );
    }
}

/// The most classes a file holds (65535 in 16-bit cells) round-trip, and a repeated name among
/// them is found wherever it is, by the constructor and by the file reader (a set of the names,
/// not a scan: the scan made such a file take minutes to open).
#[test]
fn the_widest_class_table_round_trips_and_its_duplicates_are_found() {
    let many = names(65535);
    let f = SpatialFilter::new(shape(Layout::L8x32, 1), 16, &many).unwrap();
    let bytes = f.to_file_bytes();
    let back = SpatialFilter::from_file_bytes(&bytes).unwrap();
    assert_eq!(back.class_names(), many.as_slice());
    let mut twice = many.clone();
    twice[65534] = twice[0].clone();
    let err = SpatialFilter::new(shape(Layout::L8x32, 1), 16, &twice).unwrap_err();
    assert!(
        err.to_string().contains("\"class-1\" is given twice"),
        "{err}"
    );
    // The file: class-10000 renamed in place to class-65535 (the same length), the last
    // class's name, so only the repeat is wrong.
    let (from, to) = (b"class-10000", b"class-65535");
    let mut crafted = bytes.clone();
    let at = crafted
        .windows(from.len())
        .position(|w| w == from)
        .expect("the name in the table");
    crafted[at..at + from.len()].copy_from_slice(to);
    rechecksum(&mut crafted);
    let err = SpatialFilter::from_file_bytes(&crafted).unwrap_err();
    assert!(matches!(err, FormatError::Metadata { .. }), "{err:?}");
}
