//! Running a counting design in a simulator and checking it against `bloomlanes-core`'s
//! [`CountingFilter`]: every answer (lookup hit, delete accepted or refused, insert done) in
//! order, and the counters read back from every bank after the run. The driver and the check
//! are the one pipeline's ([`crate::sim::run_pipeline`], [`crate::sim::check_pipeline`]).

use bloomlanes_core::CountingFilter;

use crate::check::{check_pipeline, check_readback, CheckStats, Reference};
use crate::counting::CountingConfig;
use crate::sim::{key_hash, run_pipeline, BenchParams, Op, SimLog, Simulator};
use crate::HdlError;

/// Runs `ops` (port 0's operations, [`crate::counting::op`] codes) on the RTL of `cfg` in
/// `sim`, the banks loaded from `start` if given (else all counters 0), in a fresh temporary
/// folder removed afterwards unless the run failed, and returns the log.
pub fn run_counting_ops(
    cfg: &CountingConfig,
    sim: Simulator,
    start: Option<&CountingFilter>,
    ops: &[Op],
    params: BenchParams,
) -> Result<SimLog, HdlError> {
    if let Some(f) = start {
        cfg.check_filter(f)?;
    }
    run_pipeline(&cfg.pipeline(), sim, start, &[ops.to_vec()], params)
}

/// What core's counting filter answers for `o` (and applies it to `filter`).
pub fn apply_counting_op(cfg: &CountingConfig, filter: &mut CountingFilter, o: &Op) -> bool {
    filter.apply(o.code, key_hash(&cfg.base, &o.key), 0) != 0
}

/// Replays `ops` in order on a copy of `start` and checks every answer of `log` (count, order
/// by tag, result bit), then the read-back counters against the filter the operations leave
/// behind. Returns the statistics and that filter.
pub fn check_counting(
    cfg: &CountingConfig,
    start: &CountingFilter,
    ops: &[Op],
    log: &SimLog,
) -> Result<(CheckStats, CountingFilter), String> {
    let (stats, after, _) = check_pipeline(&cfg.pipeline(), start, &[ops.to_vec()], log)?;
    Ok((stats, after))
}

/// Compares counters read back after a run (`(entry, data)`, lane `i`'s counter in bits
/// `c·i ..`) with `filter`'s banks.
pub fn check_counter_readback(
    cfg: &CountingConfig,
    filter: &CountingFilter,
    readback: &[(u64, Vec<u32>)],
) -> Result<(), String> {
    check_readback(&cfg.pipeline(), filter, readback)
}
