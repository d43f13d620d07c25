//! The partitioned operations, round by round: scatter (hash and group by partition), probe or
//! insert partition by partition, and for lookups gather the answers back into input order.
//!
//! The answers of the probe pass are bits in partition order: partition `p`'s keys, producer by
//! producer and in input order within a producer, from bit `part_start[p]` on (a multiple of 64,
//! so that partitions are probed in parallel into whole words of their own). The gather pass
//! walks the keys in input order with one cursor per partition, starting for producer `j` where
//! its keys of that partition begin.

use bloomlanes_core::{FilterMut, FilterRef, Keys, Params};
use rayon::prelude::*;

use super::scatter::Scatter;
use super::Plan;
use crate::Probe;

/// Hashes probed or inserted per kernel call in the second pass (32 KiB: stays in L1).
pub(super) const STAGE: usize = 4096;

/// Where a partitioned lookup writes its answers (the whole batch's).
pub(crate) enum Out<'a> {
    /// One byte (0 or 1) per key.
    Bytes(&'a mut [u8]),
    /// One bit per key; bits past the last key cleared.
    Bits(&'a mut [u64]),
}

/// The scratch of one call, reused by its rounds.
pub(super) struct Scratch {
    pub(super) scatters: Vec<Scatter>,
    pub(super) ids: Vec<u16>,
    pub(super) answers: Vec<u64>,
    /// A cell write's values in partition order (`cells.rs`).
    pub(super) values: Vec<u32>,
}

/// Scratch kept between calls: memory that was touched once need not be faulted in again
/// (a fresh page costs about as much as partitioning 2 kilobytes of keys). At most
/// [`POOL_KEEP`] sets are kept, the largest; [`crate::release_partition_scratch`] frees them.
static POOL: std::sync::Mutex<Vec<Scratch>> = std::sync::Mutex::new(Vec::new());

/// Scratch sets kept for reuse (one per thread that runs partitioned operations at once).
const POOL_KEEP: usize = 2;

/// Frees the scratch kept for reuse.
pub(crate) fn release_scratch() {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    pool.clear();
}

impl Scratch {
    /// A scratch set for `plan` and a batch of `n` keys: the largest kept one, made ready,
    /// or a new one.
    pub(super) fn take(plan: &Plan, n: usize, lookup: bool) -> Scratch {
        let kept = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut s = kept.unwrap_or(Scratch {
            scatters: Vec::new(),
            ids: Vec::new(),
            answers: Vec::new(),
            values: Vec::new(),
        });
        let round = plan.round_keys.min(n);
        let producers = round.div_ceil(plan.task_keys).max(1);
        let task = plan.task_keys.min(round);
        s.scatters.truncate(producers);
        for sc in &mut s.scatters {
            sc.prepare(plan.part_of, plan.parts(), task, plan.stream);
        }
        while s.scatters.len() < producers {
            s.scatters
                .push(Scatter::new(plan.part_of, plan.parts(), task, plan.stream));
        }
        if lookup && s.ids.len() < round {
            s.ids = vec![0; round];
        }
        s
    }

    /// The bytes of memory held.
    fn bytes(&self) -> usize {
        self.scatters.iter().map(Scatter::bytes).sum::<usize>()
            + self.ids.capacity() * 2
            + self.answers.capacity() * 8
            + self.values.capacity() * 4
    }

    /// Keeps the scratch for the next call (the largest [`POOL_KEEP`] sets are kept).
    pub(super) fn give_back(self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.push(self);
        pool.sort_by_key(Scratch::bytes);
        if pool.len() > POOL_KEEP {
            pool.remove(0);
        }
    }

    /// Scatters the keys of one round (`keys`, at most a round long, hashed with `seed`),
    /// producer by producer, in parallel if `parallel`; lookups also record each key's
    /// partition in `ids`.
    pub(super) fn scatter(
        &mut self,
        probe: &Probe,
        plan: &Plan,
        (keys, seed): (Keys<'_>, u64),
        lookup: bool,
        parallel: bool,
    ) {
        let n = keys.len();
        let task = plan.task_keys;
        let producers = n.div_ceil(task);
        let fns = probe.fns;
        let run = |j: usize, s: &mut Scatter, ids: Option<&mut [u16]>| {
            s.clear();
            let lo = j * task;
            s.push_keys(fns, keys.slice(lo..(lo + task).min(n)), seed, ids);
        };
        let scatters = &mut self.scatters[..producers];
        match (lookup, parallel) {
            (true, true) => scatters
                .par_iter_mut()
                .zip(self.ids[..n].par_chunks_mut(task))
                .enumerate()
                .for_each(|(j, (s, ids))| run(j, s, Some(ids))),
            (true, false) => scatters
                .iter_mut()
                .zip(self.ids[..n].chunks_mut(task))
                .enumerate()
                .for_each(|(j, (s, ids))| run(j, s, Some(ids))),
            (false, true) => scatters
                .par_iter_mut()
                .enumerate()
                .for_each(|(j, s)| run(j, s, None)),
            (false, false) => scatters
                .iter_mut()
                .enumerate()
                .for_each(|(j, s)| run(j, s, None)),
        }
    }
}

/// Calls `f` on the hashes of partition `p` of every producer in order, in runs of at most
/// [`STAGE`] hashes copied into `stage`; every run but the last is exactly [`STAGE`] long.
pub(super) fn staged(
    scatters: &[Scatter],
    p: usize,
    stage: &mut Vec<u64>,
    mut f: impl FnMut(&[u64]),
) {
    stage.clear();
    for s in scatters {
        s.for_each_run(p, |mut run| {
            while !run.is_empty() {
                let take = run.len().min(STAGE - stage.len());
                stage.extend_from_slice(&run[..take]);
                run = &run[take..];
                if stage.len() == STAGE {
                    f(stage);
                    stage.clear();
                }
            }
        });
    }
    if !stage.is_empty() {
        f(stage);
    }
}

/// Reads one word per cache line of `words`, so that the hardware streams the partition's
/// slice of the filter into the caches at sequential speed before its keys probe it at random.
pub(super) fn preload(words: &[u32]) {
    let mut acc = 0u32;
    for w in words.iter().step_by(16) {
        acc ^= *w;
    }
    std::hint::black_box(acc);
}

/// Whether a partition with `keys` keys and a slice of `words` filter words is dense enough to
/// preload: at least one key per `lines_per_key` cache lines. Reading a line in sequence costs
/// about what a key's random miss costs, so a static filter's slice (one line per key) pays from
/// one key per line: with one key per 2 lines (256 MiB, 2^21-key batches) the preload took a
/// third of the lookup's time, and lookups went 38.4 → 48.2 M keys/s without it (2-core Xeon VM,
/// thread CPU time, median of 3 rounds); at 1–4 keys per line preloading or not was level.
pub(super) fn worth_preloading(keys: usize, words: usize, lines_per_key: usize) -> bool {
    keys * 16 * lines_per_key >= words
}

/// [`worth_preloading`]'s `lines_per_key` for a static filter's slice.
pub(super) const STATIC_LINES_PER_KEY: usize = 1;

/// Splits `words` into the word ranges of the partitions (`plan.parts()` of them).
fn part_ranges<'w>(
    plan: &Plan,
    params: &Params,
    mut words: &'w mut [u32],
) -> Vec<(u32, &'w mut [u32])> {
    let per = params.layout.block_u32s();
    let bpp = plan.blocks_per_part() as usize;
    let mut v = Vec::with_capacity(plan.parts());
    for p in 0..plan.parts() {
        let take = (bpp * per).min(words.len());
        let (a, b) = words.split_at_mut(take);
        v.push(((p * bpp) as u32, a));
        words = b;
    }
    v
}

/// Partitioned lookup of every key of `keys` into `out`.
pub(crate) fn contains(
    probe: &Probe,
    plan: &Plan,
    filter: FilterRef<'_, u32>,
    keys: Keys<'_>,
    mut out: Out<'_>,
    parallel: bool,
) {
    let n = keys.len();
    if n == 0 {
        return;
    }
    let params = *filter.params();
    let words = filter.words();
    let fns = probe.fns;
    let mut scratch = Scratch::take(plan, n, true);
    let mut start = 0;
    while start < n {
        let len = (n - start).min(plan.round_keys);
        let round = keys.slice(start..start + len);
        scratch.scatter(probe, plan, (round, params.seed), true, parallel);
        let producers = len.div_ceil(plan.task_keys);
        let scatters = &scratch.scatters[..producers];
        // Where each partition's answers start (bits, 64-aligned).
        let mut part_start = Vec::with_capacity(plan.parts() + 1);
        let mut at = 0usize;
        for p in 0..plan.parts() {
            part_start.push(at);
            at += scatters
                .iter()
                .map(|s| s.count(p))
                .sum::<usize>()
                .next_multiple_of(64);
        }
        part_start.push(at);
        scratch.answers.clear();
        scratch.answers.resize(at / 64, 0);
        // Probe pass: each partition into its own words.
        let mut slices = Vec::with_capacity(plan.parts());
        let mut rest = &mut scratch.answers[..];
        for p in 0..plan.parts() {
            let (a, b) = rest.split_at_mut((part_start[p + 1] - part_start[p]) / 64);
            slices.push((p, a));
            rest = b;
        }
        let per = params.layout.block_u32s();
        let part_words = plan.blocks_per_part() as usize * per;
        let probe_part = |stage: &mut Vec<u64>, (p, bits): (usize, &mut [u64])| {
            let slice =
                &words[(p * part_words).min(words.len())..((p + 1) * part_words).min(words.len())];
            if worth_preloading(bits.len() * 64, slice.len(), STATIC_LINES_PER_KEY) {
                preload(slice);
            }
            let mut w = 0;
            staged(scatters, p, stage, |hashes| {
                let words_out = hashes.len().div_ceil(64);
                // SAFETY: `fns` is the table of an available path (the caller's Probe);
                // `words` holds exactly `params.blocks` blocks (FilterRef invariant); `bits`
                // has a word per 64 answers of the partition, and the runs before this one
                // were `STAGE` (a multiple of 64) long, so `w + words_out` is within it.
                unsafe {
                    (fns.contains_bitmap)(
                        params,
                        words,
                        Keys::Hashes(hashes),
                        &mut bits[w..w + words_out],
                    )
                };
                w += words_out;
            });
        };
        if parallel {
            slices
                .into_par_iter()
                .for_each_init(|| Vec::with_capacity(STAGE), probe_part);
        } else {
            let mut stage = Vec::with_capacity(STAGE);
            slices.into_iter().for_each(|s| probe_part(&mut stage, s));
        }
        // Gather pass: producer `j`'s cursors start after the earlier producers' keys.
        let answers = &scratch.answers[..];
        let ids = &scratch.ids[..len];
        let task = plan.task_keys;
        let cursors = |j: usize| cursors_of(plan, scatters, part_start.as_slice(), j);
        match &mut out {
            Out::Bytes(o) => {
                let o = &mut o[start..start + len];
                let run = |(j, (o, ids)): (usize, (&mut [u8], &[u16]))| {
                    super::gather::bytes(ids, &mut cursors(j), answers, o)
                };
                if parallel {
                    o.par_chunks_mut(task)
                        .zip(ids.par_chunks(task))
                        .enumerate()
                        .for_each(run);
                } else {
                    o.chunks_mut(task)
                        .zip(ids.chunks(task))
                        .enumerate()
                        .for_each(run);
                }
            }
            Out::Bits(o) => {
                let o = &mut o[start / 64..(start + len).div_ceil(64)];
                gather_bits(plan, scatters, &part_start, answers, ids, o, parallel);
            }
        }
        start += len;
    }
    scratch.give_back();
}

/// Producer `j`'s first position in each partition of a round's answers: partition `p`'s
/// answers start at `part_start[p]`, and the earlier producers' keys of `p` come first.
pub(super) fn cursors_of(
    plan: &Plan,
    scatters: &[Scatter],
    part_start: &[usize],
    j: usize,
) -> Vec<u64> {
    (0..plan.parts())
        .map(|p| {
            let before: usize = scatters[..j].iter().map(|s| s.count(p)).sum();
            (part_start[p] + before) as u64
        })
        .collect()
}

/// Gathers a round's answer bits (in partition order, see [`cursors_of`]) into input order:
/// `out` holds the words of the round's `ids.len()` keys (rounds and producers' tasks are
/// multiples of 64 keys, so each task fills whole words).
pub(super) fn gather_bits(
    plan: &Plan,
    scatters: &[Scatter],
    part_start: &[usize],
    answers: &[u64],
    ids: &[u16],
    out: &mut [u64],
    parallel: bool,
) {
    let task = plan.task_keys;
    let run = |(j, (o, ids)): (usize, (&mut [u64], &[u16]))| {
        super::gather::bits(
            ids,
            &mut cursors_of(plan, scatters, part_start, j),
            answers,
            o,
        )
    };
    if parallel {
        out.par_chunks_mut(task / 64)
            .zip(ids.par_chunks(task))
            .enumerate()
            .for_each(run);
    } else {
        out.chunks_mut(task / 64)
            .zip(ids.chunks(task))
            .enumerate()
            .for_each(run);
    }
}

/// Partitioned insert of every key of `keys`: each partition's slice of the filter is written
/// by one task only (no atomics).
pub(crate) fn insert(
    probe: &Probe,
    plan: &Plan,
    mut filter: FilterMut<'_, u32>,
    keys: Keys<'_>,
    parallel: bool,
) {
    let n = keys.len();
    if n == 0 {
        return;
    }
    let params = *filter.params();
    let fns = probe.fns;
    let mut scratch = Scratch::take(plan, n, false);
    let mut parts = part_ranges(plan, &params, filter.words_mut());
    let mut start = 0;
    while start < n {
        let len = (n - start).min(plan.round_keys);
        let round = (keys.slice(start..start + len), params.seed);
        scratch.scatter(probe, plan, round, false, parallel);
        let scatters = &scratch.scatters[..len.div_ceil(plan.task_keys)];
        let insert_part =
            |stage: &mut Vec<u64>, (p, (first, words)): (usize, &mut (u32, &mut [u32]))| {
                let count: usize = scatters.iter().map(|s| s.count(p)).sum();
                if count == 0 {
                    return;
                }
                if worth_preloading(count, words.len(), STATIC_LINES_PER_KEY) {
                    preload(words);
                }
                staged(scatters, p, stage, |hashes| {
                    // SAFETY: `fns` is the table of an available path (the caller's Probe);
                    // `words` is the whole blocks `first ..` of this filter that partition `p`
                    // owns, cut from its exclusively borrowed words; the kernel checks each hash's
                    // block against that range (all of partition `p`'s are in it).
                    unsafe { (fns.insert_hashes)(params, *first, words, hashes) };
                });
            };
        if parallel {
            parts
                .par_iter_mut()
                .enumerate()
                .for_each_init(|| Vec::with_capacity(STAGE), insert_part);
        } else {
            let mut stage = Vec::with_capacity(STAGE);
            parts
                .iter_mut()
                .enumerate()
                .for_each(|x| insert_part(&mut stage, x));
        }
        start += len;
    }
    scratch.give_back();
}
