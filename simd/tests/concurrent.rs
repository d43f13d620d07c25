//! Many threads insert into one shared filter at once: no bit is lost, and every path sets
//! exactly the reference's bits.

mod common;

use std::sync::atomic::AtomicU32;

use bloomlanes_core::{Filter, Keys, Layout, Params};
use bloomlanes_simd::SharedFilter;
use common::splitmix;

/// Blocks of the shared filter: few, so that threads constantly hit the same words.
const BLOCKS: u32 = 257;

/// Inserts `keys` into a fresh filter of `layout` from 8 threads at once on every path and
/// compares the words with the sequential reference; returns the fraction of bits set.
fn shared_insert_matches_the_reference(layout: Layout, keys: &[u64]) -> f64 {
    let mut want = Filter::new(Params::new(layout, BLOCKS).with_seed(3));
    let mut r = want.as_view_mut();
    for &k in keys {
        r.insert(&k);
    }
    for probe in common::paths() {
        let mut f = Filter::new(Params::new(layout, BLOCKS).with_seed(3));
        {
            let mut view = f.as_view_mut();
            let shared = SharedFilter::new(probe, &mut view);
            // More threads than this machine's cores, each with interleaved small batches,
            // force real interleaving of the atomic ORs.
            let threads = 8;
            std::thread::scope(|s| {
                for t in 0..threads {
                    let shared = &shared;
                    s.spawn(move || {
                        for batch in keys.chunks(97).skip(t).step_by(threads) {
                            shared.insert(Keys::U64(batch));
                        }
                    });
                }
            });
        }
        if let Some(i) = (0..want.words().len()).find(|&i| f.words()[i] != want.words()[i]) {
            panic!(
                "{layout} on {}: word {i} is {:#010x}, the reference's {:#010x}",
                probe.path(),
                f.words()[i],
                want.words()[i]
            );
        }
        let mut hits = vec![0u8; keys.len()];
        probe.par_contains(f.as_view(), Keys::U64(keys), &mut hits);
        assert!(hits.iter().all(|&h| h == 1));
    }
    let ones: u32 = want.words().iter().map(|w| w.count_ones()).sum();
    f64::from(ones) / (want.words().len() as f64 * 32.0)
}

#[test]
fn shared_filter_inserts_from_many_threads_lose_no_bit() {
    let mut state = 11;
    let n = if cfg!(miri) { 300 } else { 300_000 };
    let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut state)).collect();
    for layout in Layout::ALL {
        shared_insert_matches_the_reference(layout, &keys);
    }
}

/// A filter that many keys saturate would hide a wrong hash or mask (every key would set only
/// bits that are already there), so the words are also compared at about 0.5 keys per lane bit,
/// where about 40 % of the bits end up set.
#[test]
fn shared_filter_sets_the_reference_bits_at_partial_fill() {
    let mut state = 12;
    for layout in Layout::ALL {
        let n = if cfg!(miri) {
            40
        } else {
            BLOCKS as usize * layout.block_bits() / (2 * layout.lanes())
        };
        let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut state)).collect();
        let fill = shared_insert_matches_the_reference(layout, &keys);
        if !cfg!(miri) {
            assert!(
                (0.3..0.5).contains(&fill),
                "{layout}: fill {fill}, meant 0.4"
            );
        }
    }
}

/// The atomic view used by [`SharedFilter`] relies on `AtomicU32` having the layout of `u32`.
#[test]
fn atomic_u32_has_the_layout_of_u32() {
    assert_eq!(std::mem::size_of::<AtomicU32>(), std::mem::size_of::<u32>());
    assert_eq!(
        std::mem::align_of::<AtomicU32>(),
        std::mem::align_of::<u32>()
    );
}
