//! Every available path rebuilds the committed golden filters byte for byte.

mod common;

use bloomlanes_core::golden::filter_vectors;
use bloomlanes_core::Params;
use bloomlanes_core::{Filter, Keys};

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn golden_filters() {
    let vectors = filter_vectors();
    assert!(!vectors.is_empty());
    for probe in common::paths() {
        for v in &vectors {
            let keys: Vec<u64> = (0..v.keys).collect();
            for parallel in [false, true] {
                let mut f = Filter::new(Params::new(v.layout, v.blocks).with_seed(v.seed));
                if parallel {
                    probe.par_insert(f.as_view_mut(), Keys::U64(&keys));
                } else {
                    probe.insert(f.as_view_mut(), Keys::U64(&keys));
                }
                assert_eq!(
                    f.to_image(),
                    v.image,
                    "{} {} blocks seed {} on {} (parallel {parallel})",
                    v.layout,
                    v.blocks,
                    v.seed,
                    probe.path()
                );
                let mut hits = vec![0u8; keys.len()];
                probe.contains(f.as_view(), Keys::U64(&keys), &mut hits);
                assert!(hits.iter().all(|&h| h == 1));
            }
        }
    }
}
