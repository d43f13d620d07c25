//! All-core inserts that scale with the cores, without atomics: small filters get a private
//! copy per thread, OR'd together at the end; larger ones are partitioned, so that each
//! partition's blocks are written by one task only, or split into block ranges whose tasks
//! each insert the hashes that fall into them, or inserted on one thread, whichever this
//! process has timed fastest for calls of the size (as lookups and one-thread inserts choose,
//! `measure.rs`). One thread is a candidate because on few cores it can win: 2-core Zen 4 VM,
//! 6 MiB filter, 1 Mi-key calls, 300 M keys/s on one thread against 200–257 on both.

use bloomlanes_core::{FilterMut, Keys};
use rayon::prelude::*;

use super::measure::{Mode, Op, Timed};
use super::{run, PartitionMode, Partitioning};
use crate::{Probe, PAR_INSERT_MIN_KEYS};

/// Private copies pay while the copies' extra traffic (zeroing one and OR-ing it back, per
/// thread but the first) stays below this many bytes per key of the batch.
const COPY_BYTES_PER_KEY: u64 = 16;

/// Private copies are made of filters of at most this many L2 sizes (the floor under which
/// [`super::PartitionAuto`] does not partition either): 2-core VM (2 MiB L2 per core),
/// 2026-11-29, `bloomlanes bench --keys 4194304` (6 MiB): one thread 179-184 M keys/s,
/// partitioned on both cores 127, copies on both 252-297.
const COPY_MAX_L2S: u64 = 4;

/// Partitions per thread of a partitioned all-core insert, at least (evens out the load when a
/// core is busy elsewhere).
const PARTS_PER_THREAD: usize = 4;

/// How an all-core insert runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParInsert {
    /// On the calling thread ([`Probe::insert`]).
    OneThread,
    /// One private copy of the filter per thread, OR'd together.
    Copies(usize),
    /// Partitioned, partitions spread over the threads.
    Partitioned,
    /// The block-range scheme of [`Probe::par_insert_ranges`] (the direct mode's).
    Ranges,
}

/// The choice of [`Probe::par_insert`] for `n` keys into a filter of `filter_bytes` bytes with
/// `threads` threads.
pub(crate) fn choose(probe: &Probe, filter_bytes: u64, n: usize, threads: usize) -> ParInsert {
    let part = &probe.partitioning;
    match part.mode {
        PartitionMode::Direct => ParInsert::Ranges,
        PartitionMode::Partitioned => ParInsert::Partitioned,
        PartitionMode::Auto => {
            if threads <= 1 || n < PAR_INSERT_MIN_KEYS {
                ParInsert::OneThread
            } else if filter_bytes <= COPY_MAX_L2S * part.caches.l2 as u64
                && (threads as u64 - 1) * filter_bytes <= n as u64 * COPY_BYTES_PER_KEY
            {
                ParInsert::Copies(threads)
            } else {
                ParInsert::Partitioned
            }
        }
    }
}

/// [`Probe::par_insert`] in the partitioning modes; gives the filter back where the block
/// ranges are to insert (the direct mode, or the automatic mode where they have been timed
/// faster for calls of this size), with the timer the caller stops after inserting.
pub(crate) fn par_insert<'f>(
    probe: &Probe,
    filter: FilterMut<'f, u32>,
    keys: Keys<'_>,
) -> Option<(FilterMut<'f, u32>, Timed)> {
    let threads = rayon::current_num_threads();
    let n = keys.len();
    let bytes = filter.params().byte_len();
    match choose(probe, bytes, n, threads) {
        ParInsert::Ranges => return Some((filter, Timed::fixed(false))),
        ParInsert::OneThread => probe.insert(filter, keys),
        ParInsert::Copies(copies) => probe.par_insert_copies(filter, keys, copies),
        ParInsert::Partitioned => {
            // The rule partitions; in the automatic mode the process's own timings may say
            // the block ranges (the "direct" mode of an all-core insert) or one thread are
            // faster here. The forced partitioned mode always partitions.
            let timed = match probe.partitioning.mode {
                PartitionMode::Auto => {
                    Timed::auto_among(Op::Insert, true, bytes, n, Mode::Partitioned, 3)
                }
                _ => Timed::fixed(true),
            };
            match timed.mode() {
                Mode::Direct => return Some((filter, timed)),
                // One thread, probing directly: the one-thread insert's own timed choice would
                // try its partitioned mode now and then, and those calls would count against
                // this mode (a 6 MiB filter: 7.1 against 3.2 ns a key).
                Mode::OneThread => {
                    let direct = Partitioning {
                        mode: PartitionMode::Direct,
                        ..probe.partitioning
                    };
                    probe.with_partitioning(direct).insert(filter, keys);
                }
                Mode::Partitioned if n > 0 => {
                    let plan = probe.partitioning.plan(
                        filter.params(),
                        n,
                        threads,
                        threads * PARTS_PER_THREAD,
                    );
                    run::insert(probe, &plan, filter, keys, true);
                }
                Mode::Partitioned => {}
            }
            timed.done();
        }
    }
    None
}

impl Probe {
    /// Inserts every key on every core (rayon's current pool) into `copies` filters: the
    /// batch's first share into `filter`, each other share into a private zeroed copy, then
    /// ORs the copies into `filter` (slices of it in parallel). The words end up exactly as
    /// after [`Probe::insert`] (OR does not depend on the order). [`Probe::par_insert`] takes
    /// this for filters that fit in L2 when the batch is large enough to pay for the copies.
    pub fn par_insert_copies(&self, mut filter: FilterMut<'_, u32>, keys: Keys<'_>, copies: usize) {
        let n = keys.len();
        let copies = copies.clamp(1, n.max(1));
        let share = n.div_ceil(copies);
        let params = *filter.params();
        let words = filter.words_mut();
        let len = words.len();
        let fns = self.fns;
        let insert = |words: &mut [u32], j: usize| {
            let lo = (j * share).min(n);
            // SAFETY: `fns` is the table of an available path (only `Probe::new` builds a
            // Probe); `words` is either the filter's (FilterMut invariant: exactly
            // `params.blocks` blocks, exclusively borrowed) or a private copy of the same length.
            unsafe { (fns.insert)(params, words, keys.slice(lo..(lo + share).min(n))) };
        };
        let ((), private): ((), Vec<Vec<u32>>) = rayon::join(
            || insert(words, 0),
            || {
                (1..copies)
                    .into_par_iter()
                    .map(|j| {
                        // Zeroed by the thread that fills it: the copy starts in its caches.
                        let mut copy = vec![0u32; len];
                        insert(&mut copy, j);
                        copy
                    })
                    .collect()
            },
        );
        if private.is_empty() {
            return;
        }
        let slice = len
            .div_ceil(rayon::current_num_threads() * PARTS_PER_THREAD)
            .next_multiple_of(16);
        words.par_chunks_mut(slice).enumerate().for_each(|(s, w)| {
            for copy in &private {
                for (a, &b) in w.iter_mut().zip(&copy[s * slice..]) {
                    *a |= b;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CacheSizes, Partitioning, SimdPath};

    #[test]
    fn the_choice_follows_the_sizes() {
        let caches = CacheSizes {
            l2: 1 << 20,
            llc: 32 << 20,
        };
        let probe = Probe::new(SimdPath::Scalar)
            .unwrap()
            .with_partitioning(Partitioning {
                caches,
                ..Partitioning::default()
            });
        let big = PAR_INSERT_MIN_KEYS * 64;
        assert_eq!(choose(&probe, 1 << 30, big, 1), ParInsert::OneThread);
        assert_eq!(
            choose(&probe, 1 << 30, PAR_INSERT_MIN_KEYS - 1, 16),
            ParInsert::OneThread
        );
        assert_eq!(choose(&probe, 1 << 30, big, 16), ParInsert::Partitioned);
        assert_eq!(choose(&probe, 64 << 10, big, 16), ParInsert::Copies(16));
        // 15 copies of 1 MiB for 2^21 keys: 7.5 bytes per key, pays; for 2^18 keys it does not.
        assert_eq!(choose(&probe, 1 << 20, 1 << 21, 16), ParInsert::Copies(16));
        assert_eq!(choose(&probe, 1 << 20, 1 << 18, 16), ParInsert::Partitioned);
        // Up to four L2s, copies (6 MiB with 2 MiB L2s measured: 1.4-1.6x one thread, where
        // partitioning ran at 0.7x); past them, partitions.
        assert_eq!(choose(&probe, 2 << 20, big, 2), ParInsert::Copies(2));
        assert_eq!(choose(&probe, 4 << 20, big, 2), ParInsert::Copies(2));
        assert_eq!(
            choose(&probe, (4 << 20) + 64, big, 2),
            ParInsert::Partitioned,
            "over 4 L2s"
        );
        for (mode, want) in [
            (PartitionMode::Direct, ParInsert::Ranges),
            (PartitionMode::Partitioned, ParInsert::Partitioned),
        ] {
            let p = probe.with_partitioning(Partitioning {
                mode,
                ..*probe.partitioning()
            });
            assert_eq!(choose(&p, 64 << 10, big, 16), want);
        }
    }
}
