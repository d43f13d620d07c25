//! `par_insert` (block ranges, no atomics) leaves exactly the words of the sequential
//! reference: every layout, odd block counts, batch lengths from 0, and more ranges than blocks
//! (ranges with no block), with both the scanning (≤ 4 ranges) and the sorting (> 4) scheme.

mod common;

use bloomlanes_core::{Filter, Keys, Layout, Params};
use common::{paths, splitmix, Batch, Form};

fn reference(layout: Layout, blocks: u32, keys: Keys<'_>) -> Vec<u32> {
    let mut f = Filter::new(Params::new(layout, blocks).with_seed(5));
    let mut v = f.as_view_mut();
    for i in 0..keys.len() {
        v.insert_hash(keys.hash(i, 5));
    }
    f.words().to_vec()
}

#[test]
fn par_insert_ranges_match_the_reference() {
    let mut state = 3;
    let keys: Vec<u64> = (0..3000).map(|_| splitmix(&mut state)).collect();
    let lens: &[usize] = if cfg!(miri) {
        &[0, 33]
    } else {
        &[0, 1, 2, 31, 32, 33, 257, 3000]
    };
    let blocks_list: &[u32] = if cfg!(miri) {
        &[3]
    } else {
        &[1, 2, 3, 7, 64, 129, 1001]
    };
    let ranges_list: &[usize] = if cfg!(miri) {
        &[2, 7]
    } else {
        &[1, 2, 3, 4, 5, 7, 16, 200]
    };
    for layout in Layout::ALL {
        for &blocks in blocks_list {
            for &n in lens {
                let batch = Batch::new(Form::U64, &keys[..n]);
                let want = reference(layout, blocks, batch.keys());
                for probe in paths() {
                    for &ranges in ranges_list {
                        let mut f = Filter::new(Params::new(layout, blocks).with_seed(5));
                        probe.par_insert_ranges(f.as_view_mut(), batch.keys(), ranges);
                        assert_eq!(
                            f.words(),
                            &want[..],
                            "{layout}, {blocks} blocks, {n} keys, {ranges} ranges on {}",
                            probe.path()
                        );
                    }
                    let mut f = Filter::new(Params::new(layout, blocks).with_seed(5));
                    probe.par_insert(f.as_view_mut(), batch.keys());
                    assert_eq!(f.words(), &want[..], "par_insert on {}", probe.path());
                }
            }
        }
    }
}

/// Batches longer than one chunk, on a filter above the single-thread threshold, with other key
/// forms; in a pool of many threads so that `par_insert` takes the sorting scheme too.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn par_insert_large_batches_and_forms() {
    let mut state = 9;
    let keys: Vec<u64> = (0..150_001).map(|_| splitmix(&mut state)).collect();
    let blocks = 40_001; // 1.2 MiB at 8x32: above `PAR_INSERT_MIN_BYTES`
    for form in [Form::U64, Form::Hashes, Form::Records(13), Form::Strings] {
        let batch = Batch::new(form, &keys);
        let want = reference(Layout::L8x32, blocks, batch.keys());
        for probe in paths() {
            for threads in [2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut f = Filter::new(Params::new(Layout::L8x32, blocks).with_seed(5));
                pool.install(|| probe.par_insert(f.as_view_mut(), batch.keys()));
                assert!(
                    f.words() == &want[..],
                    "{form:?}, {threads} threads on {}",
                    probe.path()
                );
            }
        }
    }
}
