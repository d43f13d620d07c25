//! Many threads insert into one shared filter at once: no bit is lost.

mod common;

use std::sync::atomic::AtomicU32;

use bloomlanes_core::{Filter, Keys, Layout, Params};
use bloomlanes_simd::SharedFilter;
use common::splitmix;

#[test]
fn shared_filter_inserts_from_many_threads_lose_no_bit() {
    let mut state = 11;
    let n = if cfg!(miri) { 300 } else { 300_000 };
    let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut state)).collect();
    // A small filter, so that threads constantly hit the same words.
    for layout in Layout::ALL {
        let mut want = Filter::new(Params::new(layout, 257).with_seed(3));
        let mut r = want.as_view_mut();
        for &k in &keys {
            r.insert(&k);
        }
        for probe in common::paths() {
            let mut f = Filter::new(Params::new(layout, 257).with_seed(3));
            {
                let mut view = f.as_view_mut();
                let shared = SharedFilter::new(probe, &mut view);
                // More threads than this machine's cores, each with interleaved small batches,
                // force real interleaving of the atomic ORs.
                let threads = 8;
                std::thread::scope(|s| {
                    for t in 0..threads {
                        let (shared, keys) = (&shared, &keys);
                        s.spawn(move || {
                            for batch in keys.chunks(97).skip(t).step_by(threads) {
                                shared.insert(Keys::U64(batch));
                            }
                        });
                    }
                });
            }
            assert_eq!(f.words(), want.words(), "{layout} on {}", probe.path());
            let mut hits = vec![0u8; keys.len()];
            probe.par_contains(f.as_view(), Keys::U64(&keys), &mut hits);
            assert!(hits.iter().all(|&h| h == 1));
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
