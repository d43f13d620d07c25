//! The automatic mode's check of its own rule: each process times the batches it runs, per kind
//! of call (lookup or insert, one thread or all), filter size and batch size (powers of two),
//! and takes the mode that has been fastest there, trying the others again now and then. The
//! modes are direct and partitioned, and for all-core inserts also one thread: on 2 cores the
//! two-thread inserts of a filter in L3 can be slower than one thread's.
//!
//! Why: the rule ([`super::PartitionAuto`]) was measured on one machine in one state, and the
//! better mode moves with the machine and its load. On a 2-core Xeon VM whose L3 the other guests
//! shared, partitioning 1 GiB lookups of 2^16 keys and more was up to 2.3× faster than probing
//! directly; on a quiet 2-core EPYC VM, probing directly was 1.24–1.37× faster for the same
//! batches (BENCHMARKS.md, 2026-11-29). The rule decides a slot's first two calls, so a process
//! that makes one or two large calls behaves as the rule says.
//!
//! The cost: a slot's first calls take each mode twice in a row, the rule's first (the first
//! call of each mode is not counted: it may fault in the partition scratch or the filter's
//! pages), and later the slower modes are tried again, in turn, at calls 8, 16 and 32 and then
//! one call in [`RECHECK`], so that a change (another load, the filter's pages now faulted in or
//! cached) is noticed. Answers never depend on the mode. A process of three calls (a benchmark
//! of three reps) pays for one call of another mode, not two.
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

/// A way to run a call that the automatic mode times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Probe the filter directly (all-core inserts: the block ranges).
    Direct = 0,
    /// Partition the batch by filter region first.
    Partitioned = 1,
    /// All-core inserts only: on the calling thread.
    OneThread = 2,
}

impl Mode {
    /// Every mode, by index; a call chooses among the first two or all three.
    const ALL: [Mode; 3] = [Mode::Direct, Mode::Partitioned, Mode::OneThread];

    /// Direct or partitioned.
    pub(crate) fn partitioned(partition: bool) -> Mode {
        Mode::ALL[usize::from(partition)]
    }
}

/// What one slot has seen: its calls, and each mode's time per key (picoseconds, a running
/// mean; 0 = not measured yet), indexed by [`Mode`].
pub(crate) struct Slot {
    calls: AtomicU32,
    ps_per_key: [AtomicU32; 3],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            calls: AtomicU32::new(0),
            ps_per_key: [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)],
        }
    }

    /// The mode of call number `call` of this slot, among the first `modes` (2 or 3) of
    /// [`Mode::ALL`], where the rule says `rule`: each mode twice in a row from the rule on
    /// (see [`Slot::counted`]); then a mode not measured yet (the rule first); then the
    /// fastest, and at calls 8, 16 and 32 and every [`RECHECK`]th call the others in turn.
    pub(crate) fn pick(&self, call: u32, rule: Mode, modes: usize) -> Mode {
        let m = modes as u32;
        if call < 2 * m {
            return Mode::ALL[((rule as u32 + call / 2) % m) as usize];
        }
        let figure = |i: usize| self.ps_per_key[i].load(Relaxed);
        if figure(rule as usize) == 0 {
            return rule;
        }
        if let Some(i) = (0..modes).find(|&i| figure(i) == 0) {
            return Mode::ALL[i];
        }
        let fastest = (0..modes).min_by_key(|&i| figure(i)).unwrap_or(0);
        let early = (8..RECHECK).contains(&call) && call.is_power_of_two();
        if !early && call % RECHECK != RECHECK - 1 {
            return Mode::ALL[fastest];
        }
        let turn = if early { call.ilog2() } else { call / RECHECK } as usize;
        Mode::ALL[(fastest + 1 + turn % (modes - 1)) % modes]
    }

    /// Whether call number `call` of a slot choosing among `modes` modes is timed: all but
    /// the first call of each mode in the slot's first calls (the even ones of [`Slot::pick`]'s
    /// pairs).
    fn counted(call: u32, modes: usize) -> bool {
        call >= 2 * modes as u32 || call % 2 == 1
    }

    /// Counts a time of `ps_per_key` picoseconds a key for `mode`: a faster time than the
    /// mode's figure replaces it, a slower one raises it by a quarter of the gap.
    pub(crate) fn record(&self, mode: Mode, ps_per_key: u32) {
        let cell = &self.ps_per_key[mode as usize];
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
    mode: Mode,
    clock: Option<(&'static Slot, Instant, usize)>,
}

impl Timed {
    /// A choice between direct and partitioned that is not measured.
    pub(crate) fn fixed(partition: bool) -> Timed {
        Timed::fixed_mode(Mode::partitioned(partition))
    }

    /// A choice that is not measured.
    pub(crate) fn fixed_mode(mode: Mode) -> Timed {
        Timed { mode, clock: None }
    }

    /// The automatic choice between direct and partitioned for a batch of `keys` keys and a
    /// filter of `filter_bytes` where the rule says `rule` and partitioning is a candidate (the
    /// filter is past the rule's floor).
    pub(crate) fn auto(
        op: Op,
        parallel: bool,
        filter_bytes: u64,
        keys: usize,
        rule: bool,
    ) -> Timed {
        Timed::auto_among(op, parallel, filter_bytes, keys, Mode::partitioned(rule), 2)
    }

    /// The automatic choice among the first `modes` (2 or 3) modes of [`Mode::ALL`], where the
    /// rule says `rule`, as [`Timed::auto`].
    pub(crate) fn auto_among(
        op: Op,
        parallel: bool,
        filter_bytes: u64,
        keys: usize,
        rule: Mode,
        modes: usize,
    ) -> Timed {
        debug_assert!((2..=3).contains(&modes) && (rule as usize) < modes);
        if keys < MIN_KEYS || !MEASURE.load(Relaxed) {
            return Timed::fixed_mode(rule);
        }
        let f = (filter_bytes.max(1).ilog2() as usize).min(FILTER_LOG2S - 1);
        let k = (keys.ilog2() as usize - MIN_KEYS.ilog2() as usize).min(KEY_LOG2S - 1);
        let slot =
            &TABLE[((op as usize * 2 + usize::from(parallel)) * FILTER_LOG2S + f) * KEY_LOG2S + k];
        let call = slot.calls.fetch_add(1, Relaxed);
        let mode = slot.pick(call, rule, modes);
        let clock = Slot::counted(call, modes).then(|| (slot, Instant::now(), keys));
        Timed { mode, clock }
    }

    /// Whether to partition.
    pub(crate) fn partition(&self) -> bool {
        self.mode == Mode::Partitioned
    }

    /// The mode to run.
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// Counts the call's time, if it is measured.
    pub(crate) fn done(self) {
        if let Some((slot, start, keys)) = self.clock {
            let ps = start.elapsed().as_nanos() * 1000 / keys as u128;
            slot.record(self.mode, ps.clamp(1, u128::from(u32::MAX)) as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Mode::{Direct, OneThread, Partitioned};

    #[test]
    fn the_rule_then_the_other_mode_then_the_faster() {
        let slot = Slot::new();
        let first: Vec<Mode> = (0..4).map(|c| slot.pick(c, Partitioned, 2)).collect();
        assert_eq!(first, [Partitioned, Partitioned, Direct, Direct]);
        let counted: Vec<bool> = (0..5).map(|c| Slot::counted(c, 2)).collect();
        assert_eq!(counted, [false, true, false, true, true]);
        // Unmeasured: the rule's mode is measured first, then the other.
        assert_eq!(slot.pick(4, Partitioned, 2), Partitioned);
        slot.record(Partitioned, 5_000);
        assert_eq!(
            slot.pick(4, Partitioned, 2),
            Direct,
            "direct has no figure yet"
        );
        slot.record(Direct, 2_000);
        // Direct is faster: taken, except at calls 8, 16, 32 and every RECHECK-th call.
        for call in 4..4 * RECHECK {
            let recheck = [8, 16, 32].contains(&call) || call % RECHECK == RECHECK - 1;
            let want = if recheck { Partitioned } else { Direct };
            assert_eq!(slot.pick(call, Partitioned, 2), want, "call {call}");
        }
        // A slow call moves direct's figure by a quarter of the gap: 2000 → 3000 after 6000.
        slot.record(Direct, 6_000);
        assert_eq!(slot.pick(10, Partitioned, 2), Direct, "still faster");
        // Partitioned becomes faster at once with a faster time: 1000 replaces 5000.
        slot.record(Partitioned, 1_000);
        assert_eq!(slot.pick(10, Direct, 2), Partitioned);
        assert_eq!(slot.pick(RECHECK - 1, Direct, 2), Direct, "the recheck");
        // A lasting slowdown of partitioned shows after a few calls: 1000 → 2500 → 3625 →
        // 4468 → 5101, past direct's 3000.
        for _ in 0..4 {
            slot.record(Partitioned, 7_000);
        }
        assert_eq!(
            slot.pick(10, Partitioned, 2),
            Direct,
            "direct (3000) faster again"
        );
    }

    #[test]
    fn three_modes_take_turns_then_the_fastest_and_recheck_both_others() {
        let slot = Slot::new();
        let first: Vec<Mode> = (0..6).map(|c| slot.pick(c, Partitioned, 3)).collect();
        assert_eq!(
            first,
            [
                Partitioned,
                Partitioned,
                OneThread,
                OneThread,
                Direct,
                Direct
            ]
        );
        let counted: Vec<bool> = (0..7).map(|c| Slot::counted(c, 3)).collect();
        assert_eq!(counted, [false, true, false, true, false, true, true]);
        slot.record(Partitioned, 3_000);
        slot.record(Direct, 4_000);
        assert_eq!(slot.pick(6, Partitioned, 3), OneThread, "not measured yet");
        slot.record(OneThread, 2_000);
        assert_eq!(slot.pick(7, Partitioned, 3), OneThread, "the fastest");
        // The rechecks take the two slower modes in turn, each of them now and then.
        let rechecks: Vec<Mode> = [8, 16, 32, RECHECK - 1, 2 * RECHECK - 1]
            .iter()
            .map(|&c| slot.pick(c, Partitioned, 3))
            .collect();
        assert!(rechecks.iter().all(|&m| m != OneThread), "{rechecks:?}");
        assert!(rechecks.contains(&Direct) && rechecks.contains(&Partitioned));
        // Between the rechecks, the fastest.
        for call in [9, 10, 33, RECHECK] {
            assert_eq!(slot.pick(call, Partitioned, 3), OneThread, "call {call}");
        }
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
        assert!(t.partition(), "second call of the slot: the rule again");
        assert!(t.clock.is_some(), "counted: the mode's second call");
        t.done();
        let t = Timed::auto(Op::Insert, true, 1 << 40, 1 << 32, true);
        assert!(!t.partition(), "third call: the other mode");
        assert!(t.clock.is_none(), "not counted: the mode's first call");
    }
}
