//! Bit-for-bit agreement with implementations we did not write: the `parquet` crate's `Sbbf`
//! (layout 8x32, power-of-two and other block counts) and `sbbf-rs-safe` on the same hashes.
#![cfg(feature = "alloc")]
use bloomlanes_core::{xxh64, Filter, Layout, Params};
use parquet::bloom_filter::Sbbf;
use rand::{Rng, SeedableRng};

fn sbbf_bitset(sbbf: &Sbbf) -> Vec<u8> {
    let mut out = Vec::new();
    sbbf.write_bitset(&mut out).unwrap();
    out
}

#[test]
fn int64_values_give_parquet_bytes_and_answers() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for &blocks in &[1u32, 2, 3, 5, 64, 100, 1024] {
        let mut ours = Filter::new(Params::new(Layout::L8x32, blocks));
        let mut theirs = Sbbf::new(&vec![0u8; blocks as usize * 32]);
        assert_eq!(theirs.num_blocks(), blocks as usize);
        let values: Vec<i64> = (0..blocks * 20).map(|_| rng.gen()).collect();
        for v in &values {
            // Parquet's plain encoding of INT64 is the little-endian bytes: an integer key.
            ours.insert(&(*v as u64));
            theirs.insert(v);
        }
        assert_eq!(
            ours.to_image(),
            sbbf_bitset(&theirs),
            "bitset differs at {blocks} blocks"
        );
        for _ in 0..2000 {
            let probe: i64 = rng.gen();
            assert_eq!(ours.contains(&(probe as u64)), theirs.check(&probe));
        }
        for v in &values {
            assert!(ours.contains(&(*v as u64)) && theirs.check(v));
        }
    }
}

#[test]
fn byte_array_values_give_parquet_bytes() {
    let mut ours = Filter::new(Params::new(Layout::L8x32, 37));
    let mut theirs = Sbbf::new(&vec![0u8; 37 * 32]);
    for i in 0..500 {
        let s = format!("key-{i}");
        ours.insert(s.as_bytes());
        theirs.insert(s.as_str());
    }
    assert_eq!(ours.to_image(), sbbf_bitset(&theirs));
}

#[test]
fn parquet_form_round_trips_through_the_parquet_crate() {
    let mut theirs = Sbbf::new_with_ndv_fpp(1000, 0.01).unwrap();
    for i in 0..1000i64 {
        theirs.insert(&i);
    }
    let mut written = Vec::new();
    theirs.write(&mut written).unwrap();
    // We read what parquet wrote...
    let (ours, used) = Filter::from_parquet(&written).unwrap();
    assert_eq!(used, written.len());
    assert!((0..1000u64).all(|i| ours.contains(&i)));
    // ...and write exactly the same bytes back, which parquet reads.
    assert_eq!(ours.to_parquet().unwrap(), written);
    let again = Sbbf::from_bytes(&ours.to_parquet().unwrap()).unwrap();
    assert!((0..1000i64).all(|i| again.check(&i)));
}

#[test]
fn sbbf_rs_safe_agrees_on_non_power_of_two_block_counts() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for &blocks in &[3u32, 7, 13, 1000, 12345] {
        // sbbf-rs-safe sizes by bits per key; pick arguments that give exactly `blocks` blocks.
        let mut theirs = sbbf_rs_safe::Filter::new(256, blocks as usize);
        assert_eq!(theirs.as_bytes().len(), blocks as usize * 32);
        let mut ours = Filter::new(Params::new(Layout::L8x32, blocks));
        for _ in 0..blocks * 10 {
            let h = xxh64(&rng.gen::<u64>().to_le_bytes(), 0);
            ours.insert_hash(h);
            theirs.insert_hash(h);
        }
        assert_eq!(
            ours.to_image(),
            theirs.as_bytes(),
            "bytes differ at {blocks} blocks"
        );
        for _ in 0..5000 {
            let h: u64 = rng.gen();
            assert_eq!(ours.contains_hash(h), theirs.contains_hash(h));
        }
    }
}

#[test]
fn bitset_written_by_parquet_mr() {
    // A bloom filter written by parquet-mr (through Spark) for the strings "a0" … "a9", as quoted
    // in the arrow-rs parquet crate's own tests: one 32-byte block.
    let parquet_mr: [u8; 32] = [
        200, 1, 80, 20, 64, 68, 8, 109, 6, 37, 4, 67, 144, 80, 96, 32, 8, 132, 43, 33, 0, 5, 99,
        65, 2, 0, 224, 44, 64, 78, 96, 4,
    ];
    let mut ours = Filter::new(Params::new(Layout::L8x32, 1));
    for a in 0..10 {
        ours.insert(format!("a{a}").as_bytes());
    }
    assert_eq!(
        ours.to_image(),
        parquet_mr,
        "not the bytes parquet-mr wrote"
    );
    let (theirs, _) = Filter::from_parquet(&{
        let mut form = ours.to_parquet().unwrap();
        form.truncate(form.len() - 32);
        form.extend_from_slice(&parquet_mr);
        form
    })
    .unwrap();
    assert!((0..10).all(|a| theirs.contains(format!("a{a}").as_bytes())));
}
