//! The automatic mode's check of its own rule: each process times the batches it runs, per kind
//! of call (lookup or insert, one thread or all), filter size and batch size (powers of two),
//! and takes the mode that has been faster there, trying the other one again now and then.
//!
//! Why: the rule ([`super::PartitionAuto`]) was measured on one machine in one state, and the
//! better mode moves with the machine and its load. On a 2-core Xeon VM whose L3 the other guests
//! shared, partitioning 1 GiB lookups of 2^16 keys and more was up to 2.3× faster than probing
//! directly; on a quiet 2-core EPYC VM, probing directly was 1.24–1.37× faster for the same
//! batches (BENCHMARKS.md, 2026-11-29). The rule still decides a slot's first calls, so a process
//! that makes one or two large calls behaves as before.
//!
//! The cost: of a slot's first four calls two take the rule's other mode (the first call of
//! each mode is not counted: it may fault in the partition scratch), and later the slower mode
//! is tried again at calls 8, 16 and 32 and then one call in [`RECHECK`], so that a change
//! (another load, the filter's pages now faulted in or cached) is noticed. Answers never depend
//! on the mode.
//!
//! A mode's figure follows a faster time at once and a slower one by a quarter of the gap: a
//! call slowed by something else (page faults of a fresh filter: 0.2 against 30 M keys/s in
//! the first direct calls into a new 1.3 GB counting filter; a neighbour's burst) moves it
//! little, while a lasting slowdown still shows after a few calls.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::Instant;

/// One call in this many takes the mode measured slower, to measure it again.
pub const RECHECK: u32 = 64;
/// The least batch timed: smaller batches take the rule alone (a call of a few microseconds
/// times too noisily to choose by).
pub const MIN_KEYS: usize = 1 << 16;

/// Filter sizes 2^0 … 2^47 bytes, batch sizes 2^16 … 2^32 keys, three operations, two thread
/// counts.
const FILTER_LOG2S: usize = 48;
const KEY_LOG2S: usize = 17;
const OPS: usize = 3;
const SLOTS: usize = OPS * 2 * FILTER_LOG2S * KEY_LOG2S;

static MEASURE: AtomicBool = AtomicBool::new(true);
static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// Turns the automatic mode's measurements on (the default) or off for this process; off, it
/// follows its rule alone (for measuring the rule, or for runs that must repeat exactly).
pub fn set_partition_measurement(on: bool) {
    MEASURE.store(on, Relaxed);
}

/// The operation timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A static filter's lookups.
    Lookup,
    /// A static filter's inserts.
    Insert,
    /// A cell kind's writes (counting inserts and deletes, spatial inserts), timed by the
    /// bytes of image and cells together.
    CellWrite,
}

/// What one slot has seen: its calls, and each mode's time per key (picoseconds, a running
/// mean; 0 = not measured yet). Index 0: direct, 1: partitioned.
pub(crate) struct Slot {
    calls: AtomicU32,
    ps_per_key: [AtomicU32; 2],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            calls: AtomicU32::new(0),
            ps_per_key: [AtomicU32::new(0), AtomicU32::new(0)],
        }
    }

    /// Whether call number `call` of this slot partitions, where the rule says `rule`: the
    /// rule, then the other mode, each twice; then the faster, and the slower at calls 8, 16
    /// and 32 and every [`RECHECK`]th call (or whichever has no measurement yet).
    pub(crate) fn pick(&self, call: u32, rule: bool) -> bool {
        if call < 4 {
            return rule ^ (call % 2 == 1);
        }
        let direct = self.ps_per_key[0].load(Relaxed);
        let partitioned = self.ps_per_key[1].load(Relaxed);
        if direct == 0 || partitioned == 0 {
            return partitioned == 0;
        }
        let faster = partitioned < direct;
        let early = (8..RECHECK).contains(&call) && call.is_power_of_two();
        let recheck = early || call % RECHECK == RECHECK - 1;
        faster ^ recheck
    }

    /// Counts a time of `ps_per_key` picoseconds a key for the mode `partitioned`: a faster
    /// time than the mode's figure replaces it, a slower one raises it by a quarter of the gap.
    pub(crate) fn record(&self, partitioned: bool, ps_per_key: u32) {
        let cell = &self.ps_per_key[usize::from(partitioned)];
        let old = cell.load(Relaxed);
        let new = match old {
            0 => ps_per_key,
            _ if ps_per_key <= old => ps_per_key,
            _ => ((3 * u64::from(old) + u64::from(ps_per_key)) / 4) as u32,
        };
        cell.store(new.max(1), Relaxed);
    }
}

/// A call's choice of mode, and its timer where the call is measured: the caller runs the
/// chosen mode, then calls [`Timed::done`].
pub(crate) struct Timed {
    partition: bool,
    clock: Option<(&'static Slot, Instant, usize)>,
}

impl Timed {
    /// A choice that is not measured.
    pub(crate) fn fixed(partition: bool) -> Timed {
        Timed {
            partition,
            clock: None,
        }
    }

    /// The automatic choice for a batch of `keys` keys and a filter of `filter_bytes` where the
    /// rule says `rule` and partitioning is a candidate (the filter is past the rule's floor).
    pub(crate) fn auto(
        op: Op,
        parallel: bool,
        filter_bytes: u64,
        keys: usize,
        rule: bool,
    ) -> Timed {
        if keys < MIN_KEYS || !MEASURE.load(Relaxed) {
            return Timed::fixed(rule);
        }
        let f = (filter_bytes.max(1).ilog2() as usize).min(FILTER_LOG2S - 1);
        let k = (keys.ilog2() as usize - MIN_KEYS.ilog2() as usize).min(KEY_LOG2S - 1);
        let slot =
            &TABLE[((op as usize * 2 + usize::from(parallel)) * FILTER_LOG2S + f) * KEY_LOG2S + k];
        let call = slot.calls.fetch_add(1, Relaxed);
        let partition = slot.pick(call, rule);
        // The first call of each mode (calls 0 and 1) is not counted.
        let clock = (call >= 2).then(|| (slot, Instant::now(), keys));
        Timed { partition, clock }
    }

    /// Whether to partition.
    pub(crate) fn partition(&self) -> bool {
        self.partition
    }

    /// Counts the call's time, if it is measured.
    pub(crate) fn done(self) {
        if let Some((slot, start, keys)) = self.clock {
            let ps = start.elapsed().as_nanos() * 1000 / keys as u128;
            slot.record(self.partition, ps.clamp(1, u128::from(u32::MAX)) as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_then_the_other_mode_then_the_faster() {
        let slot = Slot::new();
        let first: Vec<bool> = (0..4).map(|c| slot.pick(c, true)).collect();
        assert_eq!(first, [true, false, true, false]);
        // Unmeasured: the mode without a figure is measured first.
        assert!(slot.pick(4, true));
        slot.record(true, 5_000);
        assert!(!slot.pick(4, true), "direct has no figure yet");
        slot.record(false, 2_000);
        // Direct is faster: taken, except at calls 8, 16, 32 and every RECHECK-th call.
        for call in 4..4 * RECHECK {
            let expect_partition = [8, 16, 32].contains(&call) || call % RECHECK == RECHECK - 1;
            assert_eq!(slot.pick(call, true), expect_partition, "call {call}");
        }
        // A slow call moves direct's figure by a quarter of the gap: 2000 → 3000 after 6000.
        slot.record(false, 6_000);
        assert!(
            !slot.pick(10, true),
            "direct still faster after one slow call"
        );
        // Partitioned becomes faster at once with a faster time: 1000 replaces 5000.
        slot.record(true, 1_000);
        assert!(slot.pick(10, false));
        assert!(
            !slot.pick(RECHECK - 1, false),
            "the recheck takes the slower"
        );
        // A lasting slowdown of partitioned shows after a few calls: 1000 → 2500 → 3625 →
        // 4468 → 5101, past direct's 3000.
        for _ in 0..4 {
            slot.record(true, 7_000);
        }
        assert!(!slot.pick(10, true), "direct (3000) faster again");
    }

    #[test]
    fn small_batches_and_switched_off_follow_the_rule() {
        for rule in [false, true] {
            let t = Timed::auto(Op::Lookup, false, 1 << 30, MIN_KEYS - 1, rule);
            assert_eq!(t.partition(), rule);
            assert!(t.clock.is_none());
        }
        // Slot of 2^40-byte filters and 2^32-key batches: no other test uses it.
        let slot_calls = |op| {
            let t = Timed::auto(op, true, 1 << 40, 1 << 32, true);
            t.done();
        };
        slot_calls(Op::Insert);
        let t = Timed::auto(Op::Insert, true, 1 << 40, 1 << 32, true);
        assert!(!t.partition(), "second call of the slot: the other mode");
        assert!(t.clock.is_none(), "not counted: the mode's first call");
    }
}
