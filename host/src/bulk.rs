//! Bulk work in batches with a progress hook: the one loop that feeds a [`Backend`] its keys.
//!
//! The library measures no time and draws nothing: it calls the caller's hook with a
//! [`Progress`] before the first batch and after each one (a batch is a million keys on the CPU
//! backends, the whole input on a GPU). A caller with nothing to show passes `&mut |_| {}`, which
//! costs one empty call per batch. The `bloomlanes` binary draws progress bars from it.

use bloomlanes_core::{Bitmap, Filter, FilterRef, Keys};

use crate::backend::Backend;
use crate::error::Result;

/// What a bulk operation is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Inserting keys.
    Insert,
    /// Looking keys up.
    Query,
    /// Counting the distinct keys of the inputs (sizing a filter without `--capacity`).
    Count,
    /// Classifying packets (a count of packets, not keys).
    Classify,
}

impl Stage {
    /// A word for people: `inserting`, `querying`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Insert => "inserting",
            Stage::Query => "querying",
            Stage::Count => "counting",
            Stage::Classify => "classifying",
        }
    }
}

/// How far a bulk operation has come: reported with `done == 0` before the first batch and after
/// every batch, the last time with `done == total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// What is being done.
    pub stage: Stage,
    /// Keys done so far.
    pub done: u64,
    /// Keys in all (0 while a stream's length is unknown).
    pub total: u64,
    /// Bytes of input read so far (streams; 0 for in-memory batches).
    pub bytes: u64,
    /// Bytes of input in all (0 when unknown: standard input, compressed files).
    pub bytes_total: u64,
    /// This is the stage's last report.
    pub finished: bool,
}

impl Progress {
    /// A report on a stream: `done` keys (or packets) from `bytes` of `bytes_total` bytes.
    pub fn stream(stage: Stage, done: u64, bytes: u64, bytes_total: u64) -> Progress {
        Progress {
            stage,
            done,
            total: 0,
            bytes,
            bytes_total,
            finished: false,
        }
    }

    /// A report on an in-memory batch of `total` keys, `done` of them done (the last report
    /// when all are).
    pub fn batch(stage: Stage, done: u64, total: u64) -> Progress {
        Progress {
            stage,
            done,
            total,
            bytes: 0,
            bytes_total: 0,
            finished: done == total,
        }
    }

    /// The same report, marked as the stage's last.
    pub fn finished(mut self) -> Progress {
        self.finished = true;
        self
    }
}

/// Keys per batch for `engine`: its batch size rounded down to a whole number of answer words
/// (64 keys), at least one word.
fn step(engine: &dyn Backend) -> usize {
    (engine.batch_size().max(64) / 64) * 64
}

/// Inserts `keys` into `filter` with `engine`, in batches, calling `progress` before the first
/// batch and after each.
pub fn insert(
    engine: &dyn Backend,
    filter: &mut Filter,
    keys: Keys<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<()> {
    in_batches(Stage::Insert, keys.len(), step(engine), progress, |r| {
        engine.insert(filter, keys.slice(r))
    })
}

/// Runs `each` over `0..total` in ranges of `step` keys (the last one shorter), reporting
/// `stage` progress before the first range and after each.
pub fn in_batches(
    stage: Stage,
    total: usize,
    step: usize,
    progress: &mut dyn FnMut(Progress),
    mut each: impl FnMut(std::ops::Range<usize>) -> Result<()>,
) -> Result<()> {
    let report = |done: usize| Progress::batch(stage, done as u64, total as u64);
    progress(report(0));
    let mut at = 0;
    while at < total {
        let end = total.min(at.saturating_add(step));
        each(at..end)?;
        progress(report(end));
        at = end;
    }
    Ok(())
}

/// Looks every key of `keys` up in `view` with `engine`, in batches, calling `progress` before the
/// first batch and after each. Bit `i` of the answer is set if key `i` may be present.
pub fn contains(
    engine: &dyn Backend,
    view: FilterRef<'_, u32>,
    keys: Keys<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Bitmap> {
    let total = keys.len();
    let mut answers = Bitmap::new(total);
    let mut querier = engine.querier(view)?;
    let words = answers.words_mut();
    in_batches(Stage::Query, total, step(engine), progress, |r| {
        // Each range starts at a multiple of 64, so each batch owns whole answer words.
        let w = r.start / 64..r.end.div_ceil(64);
        querier.contains(keys.slice(r), &mut words[w])
    })?;
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::{FilterRef, Layout, Params};

    use super::*;
    use crate::backend::{Querier, Scalar};

    /// The scalar backend in batches of 64 keys, to exercise the batch loop.
    struct Small;

    impl Backend for Small {
        fn name(&self) -> String {
            "small".into()
        }
        fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
            Scalar.insert(filter, keys)
        }
        fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
            Scalar.querier(view)
        }
        fn batch_size(&self) -> usize {
            100 // rounded down to 64
        }
    }

    #[test]
    fn batches_report_progress_and_match_one_call() {
        let keys: Vec<u64> = (0..1000).collect();
        let probes: Vec<u64> = (500..1700).collect();
        let empty = Filter::new(Params::new(Layout::L8x32, 16));
        let mut one = empty.clone();
        Scalar
            .insert(&mut one, Keys::U64(&keys))
            .expect("scalar insert");

        let mut seen = Vec::new();
        let mut batched = empty.clone();
        insert(&Small, &mut batched, Keys::U64(&keys), &mut |p| {
            seen.push(p)
        })
        .unwrap();
        assert_eq!(batched, one);
        let done: Vec<u64> = seen.iter().map(|p| p.done).collect();
        let mut expected: Vec<u64> = (0..=15).map(|b| b * 64).collect();
        expected.push(1000);
        assert_eq!(done, expected);
        assert!(seen
            .iter()
            .all(|p| p.total == 1000 && p.stage == Stage::Insert));

        let mut last = None;
        let answers = contains(&Small, one.as_view(), Keys::U64(&probes), &mut |p| {
            last = Some(p)
        })
        .unwrap();
        assert_eq!(last.map(|p| (p.stage, p.done)), Some((Stage::Query, 1200)));
        for (i, k) in probes.iter().enumerate() {
            assert_eq!(answers.get(i), one.contains(k), "key {k}");
        }
        assert_eq!(
            answers.count_ones(),
            probes.iter().filter(|k| one.contains(*k)).count() as u64
        );
    }

    #[test]
    fn empty_batches_report_once() {
        let mut f = Filter::new(Params::new(Layout::L8x32, 1));
        let mut n = 0;
        insert(&Scalar, &mut f, Keys::U64(&[]), &mut |_| n += 1).unwrap();
        let a = contains(&Scalar, f.as_view(), Keys::U64(&[]), &mut |_| n += 1).unwrap();
        assert_eq!((n, a.len()), (2, 0));
    }
}
