//! The partitioned bulk operations against the core's scalar reference: every path, layout and
//! key form, with the partitioning forced and its sizes made small (slices of one block or a
//! few, rounds of 64 keys and more, tasks of 64 keys, no minimum of keys per partition), so
//! that small batches cross rounds, producers, partial write-combining lines and pages, empty
//! partitions and the ragged last block range; one thread and pools of several; lookups into
//! bytes, bitmaps and positions, inserts, and the all-core inserts' private copies.

mod common;

use bloomlanes_core::{FilterMut, FilterRef, Layout, Params};
use bloomlanes_simd::{CacheSizes, PartitionAuto, PartitionMode, Partitioning, Probe};
use common::{pack, paths, ref_contains, ref_insert, splitmix, Batch, Form};
use proptest::prelude::*;

/// Forced partitioning with small sizes.
fn forced(slice_bytes: usize, round_keys: usize, task_keys: usize) -> Partitioning {
    Partitioning {
        mode: PartitionMode::Partitioned,
        slice_bytes,
        round_keys,
        task_keys,
        min_part_keys: 0,
        ..Partitioning::default()
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Positions of the ones in `bytes`.
fn ones(bytes: &[u8]) -> Vec<u32> {
    (0..bytes.len() as u32)
        .filter(|&i| bytes[i as usize] == 1)
        .collect()
}

/// Every operation of `probe` (one thread, and in a pool of `threads`) against the reference.
#[allow(clippy::too_many_arguments)]
fn check(
    probe: Probe,
    threads: usize,
    layout: Layout,
    blocks: u32,
    seed: u64,
    form: Form,
    inserted: &[u64],
    probed: &[u64],
    fill_seed: u64,
) -> Result<(), TestCaseError> {
    let params = Params::new(layout, blocks).with_seed(seed);
    let len = blocks as usize * layout.block_u32s();
    let mut state = fill_seed;
    let base: Vec<u32> = (0..len)
        .map(|_| (splitmix(&mut state) & splitmix(&mut state) & splitmix(&mut state)) as u32)
        .collect();
    let ins = Batch::new(form, inserted);
    let prb = Batch::new(form, probed);
    let mut want = base.clone();
    ref_insert(params, &mut want, ins.keys());
    let want_hits = ref_contains(params, &want, prb.keys());
    let p = probe.path();
    let part = probe.partitioning();
    if part.mode == PartitionMode::Partitioned {
        prop_assert_eq!(
            part.partitions(&params, inserted.len()),
            !inserted.is_empty()
        );
    }

    let mut got = base.clone();
    probe.insert(FilterMut::new(params, &mut got).unwrap(), ins.keys());
    prop_assert_eq!(&got, &want, "insert words on {} ({:?})", p, part);
    let mut got = base.clone();
    pool(threads)
        .install(|| probe.par_insert(FilterMut::new(params, &mut got).unwrap(), ins.keys()));
    prop_assert_eq!(
        &got,
        &want,
        "par_insert words on {}, {} threads",
        p,
        threads
    );
    let mut got = base.clone();
    pool(threads).install(|| {
        probe.par_insert_copies(
            FilterMut::new(params, &mut got).unwrap(),
            ins.keys(),
            threads + 1,
        )
    });
    prop_assert_eq!(&got, &want, "par_insert_copies words on {}", p);

    let view = FilterRef::new(params, &want).unwrap();
    let mut hits = vec![7u8; probed.len()];
    probe.contains(view, prb.keys(), &mut hits);
    prop_assert_eq!(&hits, &want_hits, "contains on {}", p);
    let mut bits = vec![u64::MAX; probed.len().div_ceil(64)];
    probe.contains_bitmap(view, prb.keys(), &mut bits);
    prop_assert_eq!(&bits, &pack(&want_hits), "contains_bitmap on {}", p);
    let mut list = vec![12345];
    probe.contains_positions(view, prb.keys(), &mut list);
    prop_assert_eq!(&list, &ones(&want_hits), "contains_positions on {}", p);
    pool(threads).install(|| {
        let mut hits = vec![7u8; probed.len()];
        probe.par_contains(view, prb.keys(), &mut hits);
        prop_assert_eq!(
            &hits,
            &want_hits,
            "par_contains on {}, {} threads",
            p,
            threads
        );
        let mut bits = vec![u64::MAX; probed.len().div_ceil(64)];
        probe.par_contains_bitmap(view, prb.keys(), &mut bits);
        prop_assert_eq!(&bits, &pack(&want_hits), "par_contains_bitmap on {}", p);
        let mut list = Vec::new();
        probe.par_contains_positions(view, prb.keys(), &mut list);
        prop_assert_eq!(&list, &ones(&want_hits), "par_contains_positions on {}", p);
        Ok(())
    })?;
    Ok(())
}

fn layout() -> impl Strategy<Value = Layout> {
    prop::sample::select(Layout::ALL.to_vec())
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        3 => Just(Form::U64),
        1 => Just(Form::Hashes),
        1 => (1usize..40).prop_map(Form::Records),
        1 => Just(Form::Strings),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 96 }))]

    #[test]
    fn partitioned_paths_match_the_reference(
        layout in layout(),
        blocks in prop_oneof![Just(1u32), Just(2), Just(3), Just(64), 1u32..700],
        seed in prop_oneof![Just(0u64), any::<u64>()],
        form in form(),
        n_ins in 0usize..1500,
        n_probe in 0usize..1500,
        slice_blocks in prop_oneof![Just(1usize), Just(2), 1usize..40],
        round in prop_oneof![Just(0usize), Just(64), 1usize..2000],
        task in prop_oneof![Just(64usize), 1usize..700],
        threads in 1usize..5,
        keys_seed in any::<u64>(),
    ) {
        let mut state = keys_seed;
        let inserted: Vec<u64> = (0..n_ins).map(|_| splitmix(&mut state)).collect();
        let mut probed: Vec<u64> = (0..n_probe).map(|_| splitmix(&mut state)).collect();
        probed.extend(inserted.iter().step_by(2).copied());
        let part = forced(slice_blocks * layout.block_bytes(), round, task);
        for probe in paths() {
            let probe = probe.with_partitioning(part);
            check(probe, threads, layout, blocks, seed, form, &inserted, &probed, keys_seed)?;
        }
    }
}

/// Repeated keys pile into one partition: long page chains, one busy partition among empty
/// ones.
#[test]
fn repeated_keys_fill_one_partition() {
    let keys = vec![0xdead_beef_u64; 3000];
    let mut probed = keys.clone();
    probed.extend([1, 2, 3]);
    for layout in Layout::ALL {
        for probe in paths() {
            let probe = probe.with_partitioning(forced(layout.block_bytes(), 0, 64));
            check(probe, 3, layout, 97, 1, Form::U64, &keys, &probed, 2).unwrap();
        }
    }
}

/// Larger batches with the default sizes (one round, real pages of up to 64 lines, streamed
/// scatter stores once the scratch outgrows the "last-level cache" given here).
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn large_batches_with_default_sizes() {
    let mut state = 11;
    let keys: Vec<u64> = (0..300_001).map(|_| splitmix(&mut state)).collect();
    for (llc, threads) in [(32 << 20, 1), (64 << 10, 3)] {
        let part = Partitioning {
            mode: PartitionMode::Partitioned,
            caches: CacheSizes { l2: 64 << 10, llc },
            min_part_keys: 0,
            ..Partitioning::default()
        };
        for layout in [Layout::L8x32, Layout::L16x64] {
            let probe = Probe::active().with_partitioning(part);
            let blocks = (1 << 20) / layout.block_bytes() as u32 + 3;
            check(
                probe,
                threads,
                layout,
                blocks,
                3,
                Form::U64,
                &keys[..200_000],
                &keys[100_000..],
                5,
            )
            .unwrap();
        }
    }
}

/// The automatic mode takes the partitioned path exactly where its rule says, with the same
/// results either way.
#[test]
fn the_automatic_rule() {
    let caches = CacheSizes {
        l2: 4 << 10,
        llc: 16 << 10,
    };
    let auto = PartitionAuto {
        min_filter_bytes: 0,
        min_keys: 1000,
        max_filter_bytes_per_key: 64,
    };
    let part = Partitioning {
        caches,
        auto,
        ..Partitioning::default()
    };
    let params = |bytes: usize| Params::new(Layout::L8x32, (bytes / 32) as u32);
    // Over the last-level cache, enough keys, at most 64 filter bytes per key.
    assert!(part.partitions(&params(64 << 10), 1024));
    assert!(!part.partitions(&params(64 << 10), 999), "too few keys");
    assert!(
        !part.partitions(&params(128 << 10), 1024),
        "128 bytes per key"
    );
    assert!(
        !part.partitions(&params(16 << 10), 100_000),
        "fits in the LLC"
    );
    let fixed = Partitioning {
        auto: PartitionAuto {
            min_filter_bytes: 1 << 20,
            ..auto
        },
        ..part
    };
    assert!(!fixed.partitions(&params(1 << 20), 1 << 20));
    assert!(fixed.partitions(&params(2 << 20), 1 << 20));
    let direct = Partitioning {
        mode: PartitionMode::Direct,
        ..part
    };
    assert!(!direct.partitions(&params(64 << 10), 1 << 20));
    // Both sides of the rule give the reference's answers.
    let mut state = 4;
    let keys: Vec<u64> = (0..1500).map(|_| splitmix(&mut state)).collect();
    for probe in paths() {
        let probe = probe.with_partitioning(part);
        check(
            probe,
            2,
            Layout::L8x32,
            2048,
            0,
            Form::U64,
            &keys,
            &keys[..999],
            1,
        )
        .unwrap();
    }
}
