//! The partitioned bulk operations against the core's scalar reference: every path, layout and
//! key form, with the partitioning forced and its sizes made small (slices of one block or a
//! few, rounds of 64 keys and more, tasks of 64 keys, no minimum of keys per partition), so
//! that small batches cross rounds, producers, partial write-combining lines and pages, empty
//! partitions and the ragged last block range; one thread and pools of several; lookups into
//! bytes, bitmaps and positions, inserts, and the all-core inserts' private copies.

mod common;

use bloomlanes_core::{FilterMut, FilterRef, Keys, Layout, Params};
use bloomlanes_simd::{CacheSizes, PartitionAuto, PartitionMode, Partitioning, Probe};
use common::{
    forced, form, layout, lookups_match, pack, paths, ref_contains, ref_insert, sparse_words,
    splitmix, Batch, Form,
};
use proptest::prelude::*;

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
    let base = sparse_words(len, fill_seed);
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
    lookups_match(&probe, view, prb.keys(), &want_hits)?;
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
        llc: 256 << 10,
    };
    let auto = PartitionAuto {
        min_filter_bytes: 0,
        resident_bytes: 0,
        resident_min_keys: 4000,
        min_keys: 1000,
        far_bytes: 0,
        far_min_keys: 500,
    };
    let part = Partitioning {
        caches,
        auto,
        ..Partitioning::default()
    };
    let params = |bytes: usize| Params::new(Layout::L8x32, (bytes / 32) as u32);
    // Past 4 L2s (16 KiB) from `resident_min_keys`, past 16 (64 KiB) from `min_keys`, past 256
    // (1 MiB) from `far_min_keys`, however many bytes per key.
    assert!(part.partitions(&params(128 << 10), 1000));
    assert!(part.partitions(&params(16 << 20), 500), "32 KiB per key");
    assert!(!part.partitions(&params(16 << 20), 499));
    assert!(!part.partitions(&params(128 << 10), 999), "too few keys");
    assert!(
        !part.partitions(&params(64 << 10), 3999),
        "resident, too few keys"
    );
    assert!(part.partitions(&params(64 << 10), 4000));
    assert!(!part.partitions(&params(16 << 10), 100_000), "in 4 L2s");
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
    assert!(!direct.partitions(&params(128 << 10), 1 << 20));
    // Both sides of the rule give the reference's answers.
    let mut state = 4;
    let keys: Vec<u64> = (0..1500).map(|_| splitmix(&mut state)).collect();
    for probe in paths() {
        let probe = probe.with_partitioning(part);
        check(
            probe,
            2,
            Layout::L8x32,
            4096,
            0,
            Form::U64,
            &keys,
            &keys[..999],
            1,
        )
        .unwrap();
    }
}

/// Every output of `part` against the same probe in [`PartitionMode::Direct`]: lookups into
/// bytes, bitmaps and positions (one thread and all threads) and the filter bytes after
/// inserts, for one filter and one batch.
fn same_as_direct(probe: Probe, part: Partitioning, params: Params, base: &[u32], keys: &[u64]) {
    let direct = probe.with_partitioning(Partitioning {
        mode: PartitionMode::Direct,
        ..part
    });
    let parted = probe.with_partitioning(part);
    let what = format!("{} {:?}, {} keys", probe.path(), params.layout, keys.len());
    let ks = bloomlanes_core::Keys::U64(keys);

    let mut want = base.to_vec();
    direct.insert(FilterMut::new(params, &mut want).unwrap(), ks);
    let mut got = base.to_vec();
    parted.insert(FilterMut::new(params, &mut got).unwrap(), ks);
    assert_eq!(got, want, "insert filter bytes, {what}");
    let mut got = base.to_vec();
    pool(2).install(|| parted.par_insert(FilterMut::new(params, &mut got).unwrap(), ks));
    assert_eq!(got, want, "par_insert filter bytes, {what}");

    // Probe the filter before the inserts, so that about half the inserted keys are absent.
    let view = FilterRef::new(params, base).unwrap();
    let (mut a, mut b) = (vec![7u8; keys.len()], vec![9u8; keys.len()]);
    direct.contains(view, ks, &mut a);
    parted.contains(view, ks, &mut b);
    assert_eq!(b, a, "contains, {what}");
    pool(2).install(|| parted.par_contains(view, ks, &mut b));
    assert_eq!(b, a, "par_contains, {what}");
    let words = keys.len().div_ceil(64);
    let (mut a, mut b) = (vec![0u64; words], vec![u64::MAX; words]);
    direct.contains_bitmap(view, ks, &mut a);
    parted.contains_bitmap(view, ks, &mut b);
    assert_eq!(b, a, "contains_bitmap, {what}");
    pool(2).install(|| parted.par_contains_bitmap(view, ks, &mut b));
    assert_eq!(b, a, "par_contains_bitmap, {what}");
    let (mut a, mut b) = (Vec::new(), vec![1, 2, 3]);
    direct.contains_positions(view, ks, &mut a);
    parted.contains_positions(view, ks, &mut b);
    assert_eq!(b, a, "contains_positions, {what}");
    pool(2).install(|| parted.par_contains_positions(view, ks, &mut b));
    assert_eq!(b, a, "par_contains_positions, {what}");
}

/// The partitioned path gives bit for bit the direct path's answers and filter bytes, for every
/// path and layout: one block, odd block counts, no keys, one key, ragged batches; partitions
/// of one block and of a few, rounds and tasks of 64 keys and of the defaults.
#[test]
fn partitioned_is_bit_identical_to_direct() {
    let mut state = 21;
    let keys: Vec<u64> = (0..1537).map(|_| splitmix(&mut state)).collect();
    for layout in Layout::ALL {
        for blocks in [1u32, 3, 777] {
            let params = Params::new(layout, blocks).with_seed(5);
            let base: Vec<u32> = (0..blocks as usize * layout.block_u32s())
                .map(|_| (splitmix(&mut state) & splitmix(&mut state)) as u32)
                .collect();
            let bb = layout.block_bytes();
            for part in [forced(bb, 64, 64), forced(3 * bb, 0, 128), forced(0, 0, 0)] {
                for n in [0usize, 1, 63, 64, 65, 1000, 1537] {
                    for probe in paths() {
                        same_as_direct(probe, part, params, &base, &keys[..n]);
                    }
                }
            }
        }
    }
}

/// An empty batch changes nothing and writes nothing, partitioned or not.
#[test]
fn empty_batches_change_nothing() {
    let params = Params::new(Layout::L8x32, 5);
    let base: Vec<u32> = (0..40).map(|i| i * 0x0101_0101).collect();
    for probe in paths() {
        let probe = probe.with_partitioning(forced(32, 64, 64));
        assert!(!probe.partitioning().partitions(&params, 0));
        let mut words = base.clone();
        probe.insert(FilterMut::new(params, &mut words).unwrap(), Keys::U64(&[]));
        pool(2).install(|| {
            probe.par_insert(FilterMut::new(params, &mut words).unwrap(), Keys::U64(&[]))
        });
        assert_eq!(words, base);
        let view = FilterRef::new(params, &base).unwrap();
        probe.contains(view, Keys::U64(&[]), &mut []);
        probe.contains_bitmap(view, Keys::U64(&[]), &mut []);
        let mut list = vec![4, 5];
        probe.contains_positions(view, Keys::U64(&[]), &mut list);
        assert!(list.is_empty(), "positions of an empty batch: {list:?}");
    }
}

/// The default (automatic) settings never partition a filter of at most 4 L2 caches (at most
/// the last-level cache), however large the batch: it is probed directly. Well past the
/// last-level cache and with a large batch, they partition.
#[test]
fn auto_probes_cache_resident_filters_directly() {
    let part = Partitioning::default();
    assert_eq!(part.mode, PartitionMode::Auto);
    assert_eq!(part.caches, CacheSizes::detected());
    let (l2, llc) = (part.caches.l2, part.caches.llc);
    assert!(llc >= l2 && l2 > 0, "{:?}", part.caches);
    let floor = (4 * l2).min(llc);
    for layout in Layout::ALL {
        let bb = layout.block_bytes();
        for bytes in [bb, 64 << 10, l2, floor] {
            let params = Params::new(layout, (bytes / bb) as u32);
            for n in [1usize, 1 << 16, 1 << 26, 1 << 32] {
                assert!(
                    !part.partitions(&params, n),
                    "{bytes}-byte {layout:?} filter, {n} keys, caches {:?}",
                    part.caches
                );
            }
        }
        let big = Params::new(layout, ((4 * llc) / bb) as u32);
        assert!(
            part.partitions(&big, 1 << 26),
            "{layout:?}, caches {:?}",
            part.caches
        );
    }
}

/// Partitioned calls of different shapes on several threads at once share the kept scratch
/// (see `release_partition_scratch`) without mixing their answers.
#[test]
fn concurrent_calls_of_different_shapes() {
    let mut state = 8;
    let keys: Vec<u64> = (0..20_000).map(|_| splitmix(&mut state)).collect();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let keys = &keys;
            s.spawn(move || {
                let layout = Layout::ALL[t % Layout::ALL.len()];
                let blocks = 101 + 400 * t as u32;
                let params = Params::new(layout, blocks);
                let mut words = vec![0u32; blocks as usize * layout.block_u32s()];
                let probe =
                    Probe::active().with_partitioning(forced(layout.block_bytes() * (t + 1), 0, 0));
                for round in 0..6 {
                    let n = 1000 + 3000 * ((t + round) % 6);
                    let ins = Keys::U64(&keys[..n / 2]);
                    probe.insert(FilterMut::new(params, &mut words).unwrap(), ins);
                    let want = ref_contains(params, &words, Keys::U64(&keys[..n]));
                    let mut got = vec![0u8; n];
                    probe.contains(
                        FilterRef::new(params, &words).unwrap(),
                        Keys::U64(&keys[..n]),
                        &mut got,
                    );
                    assert_eq!(got, want, "thread {t}, round {round}");
                    assert!(got[..n / 2].iter().all(|&b| b == 1), "a false negative");
                }
            });
        }
    });
    bloomlanes_simd::release_partition_scratch();
}

/// The automatic mode with its timings (the default): a filter past the rule's floor and
/// batches of 2^16 keys, so that its calls take every mode (the rule's, the others, then the
/// one timed fastest, and rechecks; all-core inserts also one thread), answer every call as
/// the direct path does.
#[test]
fn measured_auto_answers_as_direct_on_every_call() {
    let caches = CacheSizes {
        l2: 4 << 10,
        llc: 64 << 10,
    };
    let auto = Partitioning {
        mode: PartitionMode::Auto,
        caches,
        ..Partitioning::default()
    };
    let params = Params::new(Layout::L8x32, (2 << 20) / 32).with_seed(3);
    let mut state = 5;
    let base: Vec<u32> = (0..params.u32_len())
        .map(|_| (splitmix(&mut state) & splitmix(&mut state)) as u32)
        .collect();
    let probe = Probe::active();
    let direct = probe.with_partitioning(Partitioning {
        mode: PartitionMode::Direct,
        ..auto
    });
    let measured = probe.with_partitioning(auto);
    let view = FilterRef::new(params, &base).unwrap();
    let n = 1 << 16;
    for call in 0..12 {
        let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut state)).collect();
        let ks = Keys::U64(&keys);
        let (mut want, mut got) = (vec![0u8; n], vec![9u8; n]);
        direct.contains(view, ks, &mut want);
        measured.contains(view, ks, &mut got);
        assert_eq!(got, want, "contains, call {call}");
        let (mut want, mut got) = (vec![0u64; n / 64], vec![u64::MAX; n / 64]);
        direct.contains_bitmap(view, ks, &mut want);
        pool(2).install(|| measured.par_contains_bitmap(view, ks, &mut got));
        assert_eq!(got, want, "par_contains_bitmap, call {call}");
        let (mut want, mut got) = (base.clone(), base.clone());
        direct.insert(FilterMut::new(params, &mut want).unwrap(), ks);
        measured.insert(FilterMut::new(params, &mut got).unwrap(), ks);
        assert!(got == want, "insert, call {call}");
        // All-core inserts: partitioned, block ranges or one thread, as timed, the words of
        // one thread's.
        let mut par = base.clone();
        pool(2).install(|| measured.par_insert(FilterMut::new(params, &mut par).unwrap(), ks));
        assert!(par == want, "par_insert, call {call}");
    }
}
