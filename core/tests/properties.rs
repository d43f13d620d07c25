//! Property tests of the reference path: no false negatives, storage width does not matter.
mod common;

use bloomlanes_core::{FilterMut, FilterRef, Layout, Params, ShapeError};
use common::layout;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_false_negatives(
        layout in layout(),
        blocks in 1u32..40,
        seed: u64,
        keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 0..300),
    ) {
        let mut words = vec![0u32; blocks as usize * layout.block_u32s()];
        let params = Params::new(layout, blocks).with_seed(seed);
        let mut f = FilterMut::new(params, &mut words).unwrap();
        for k in &keys {
            f.insert(k.as_slice());
        }
        let view = f.as_ref();
        for k in &keys {
            prop_assert!(view.contains(k.as_slice()));
        }
    }

    #[test]
    fn u64_storage_gives_the_same_image(
        layout in layout(),
        blocks in 1u32..20,
        hashes in prop::collection::vec(any::<u64>(), 0..200),
        probes in prop::collection::vec(any::<u64>(), 0..200),
    ) {
        let mut narrow = vec![0u32; blocks as usize * layout.block_u32s()];
        let mut wide = vec![0u64; blocks as usize * layout.block_u32s() / 2];
        {
            let mut a = FilterMut::new(Params::new(layout, blocks), &mut narrow).unwrap();
            let mut b = FilterMut::new(Params::new(layout, blocks), &mut wide).unwrap();
            for &h in &hashes {
                a.insert_hash(h);
                b.insert_hash(h);
            }
        }
        let image_narrow: Vec<u8> = narrow.iter().flat_map(|w| w.to_le_bytes()).collect();
        let image_wide: Vec<u8> = wide.iter().flat_map(|w| w.to_le_bytes()).collect();
        prop_assert_eq!(&image_narrow, &image_wide);
        let a = FilterRef::new(Params::new(layout, blocks), &narrow).unwrap();
        let b = FilterRef::new(Params::new(layout, blocks), &wide).unwrap();
        for &p in &probes {
            prop_assert_eq!(a.contains_hash(p), b.contains_hash(p));
        }
    }

    #[test]
    fn one_key_sets_exactly_one_bit_per_lane(layout in layout(), blocks in 1u32..50, hash: u64) {
        let mut words = vec![0u32; blocks as usize * layout.block_u32s()];
        FilterMut::new(Params::new(layout, blocks), &mut words)
            .unwrap()
            .insert_hash(hash);
        let set: u32 = words.iter().map(|w| w.count_ones()).sum();
        prop_assert_eq!(set as usize, layout.lanes());
        let block = bloomlanes_core::block_index(hash, blocks) as usize;
        let per = layout.block_u32s();
        prop_assert!(words[block * per..(block + 1) * per].iter().any(|&w| w != 0));
        let mask = bloomlanes_core::block_mask(layout, hash);
        prop_assert_eq!(&words[block * per..(block + 1) * per], &mask[..per]);
    }
}

#[test]
fn shapes_are_checked() {
    let empty: [u32; 0] = [];
    let p8 = |z| Params::new(Layout::L8x32, z);
    assert_eq!(
        FilterRef::new(p8(1), &empty[..]).unwrap_err(),
        ShapeError::Empty
    );
    let odd = [0u32; 9];
    assert!(matches!(
        FilterRef::new(p8(1), &odd[..]),
        Err(ShapeError::NotWholeBlocks {
            words: 9,
            words_per_block: 8
        })
    ));
    assert_eq!(
        FilterRef::new(p8(3), &[0u32; 16][..]).unwrap_err(),
        ShapeError::BlockCount {
            expected: 3,
            found: 2
        }
    );
    assert_eq!(
        FilterRef::new(Params::new(Layout::L16x64, 2), &[0u64; 32][..])
            .unwrap()
            .blocks(),
        2
    );
}
