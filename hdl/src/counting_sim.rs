//! Running a counting design in a simulator and checking it against `bloomlanes-core`'s
//! [`CountingFilter`]: every answer (lookup hit, delete accepted or refused, insert done) in
//! order, and the counters read back from every bank after the run.
//!
//! The bench is the static design's (see [`crate::sim`]): the same stimulus and log formats;
//! the read-back data of an entry holds lane `i`'s counter in bits `c·i + c − 1 .. c·i`.

use std::path::Path;

use bloomlanes_core::CountingFilter;

use crate::counting::{generate_counting, op, CountingConfig};
use crate::counting_banks::{counting_bank_entries, write_counting_bank_files};
use crate::sim::{
    fresh_dir, key_hash, run_simulator, write_run_files, BenchParams, CheckStats, Op, SimLog,
    Simulator,
};
use crate::HdlError;

/// Runs `ops` (port 0's operations, [`op`] codes) on the RTL of `cfg` in `sim`, in folder
/// `dir`, the banks loaded from `start` if given (else all counters 0), and returns the log.
pub fn run_counting_ops_in(
    cfg: &CountingConfig,
    sim: Simulator,
    start: Option<&CountingFilter>,
    ops: &[Op],
    params: BenchParams,
    dir: &Path,
) -> Result<SimLog, HdlError> {
    let design = generate_counting(cfg)?;
    let lists = [ops.to_vec()];
    write_run_files(&cfg.base, &design, None, &lists, params, dir)?;
    if let Some(f) = start {
        cfg.check_filter(f)?;
        write_counting_bank_files(f, dir, &cfg.base.top_name)?;
    }
    let readback = u64::from(params.readback).min(cfg.base.bank_entries());
    run_simulator(
        sim,
        dir,
        &design.top_name,
        ops.len().max(1),
        start.is_some(),
        1,
        readback,
    )
}

/// Like [`run_counting_ops_in`], in a fresh temporary folder that is removed afterwards unless
/// the run failed (its path is then in the error).
pub fn run_counting_ops(
    cfg: &CountingConfig,
    sim: Simulator,
    start: Option<&CountingFilter>,
    ops: &[Op],
    params: BenchParams,
) -> Result<SimLog, HdlError> {
    let dir = fresh_dir(sim.name())?;
    match run_counting_ops_in(cfg, sim, start, ops, params, &dir) {
        Ok(log) => {
            let _ = std::fs::remove_dir_all(&dir);
            Ok(log)
        }
        Err(HdlError::Tool { tool, message }) => Err(HdlError::Tool {
            tool,
            message: format!("{message} (files kept in {})", dir.display()),
        }),
        Err(e) => Err(e),
    }
}

/// What core's counting filter answers for `o` (and applies it to `filter`).
pub fn apply_counting_op(cfg: &CountingConfig, filter: &mut CountingFilter, o: &Op) -> bool {
    let h = key_hash(&cfg.base, &o.key);
    match o.code {
        op::LOOKUP => filter.contains_hash(h),
        op::INSERT => {
            filter.insert_hash(h);
            true
        }
        op::DELETE => filter.remove_hash(h).is_ok(),
        _ => false,
    }
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
    let tag_mask = if cfg.base.tag_bits >= 32 {
        u32::MAX
    } else {
        (1u32 << cfg.base.tag_bits) - 1
    };
    let (acc, answers) = (&log.accepted[0], &log.answers[0]);
    if acc.len() != ops.len() || answers.len() != ops.len() {
        return Err(format!(
            "{} operations, {} accepted, {} answers",
            ops.len(),
            acc.len(),
            answers.len()
        ));
    }
    let mut filter = start.clone();
    let mut stats = CheckStats {
        min_latency: u64::MAX,
        ..CheckStats::default()
    };
    for (i, o) in ops.iter().enumerate() {
        if i > 0 && acc[i] <= acc[i - 1] {
            return Err(format!("two operations accepted in cycle {}", acc[i]));
        }
        let want = apply_counting_op(cfg, &mut filter, o);
        let (cyc, tag, hit) = answers[i];
        if tag != o.tag & tag_mask {
            return Err(format!(
                "answer {i}: tag {tag:#x}, expected {:#x} (out of order)",
                o.tag & tag_mask
            ));
        }
        if hit != want {
            return Err(format!(
                "op {i} (code {}, key {:?}, accepted cycle {}, previous op accepted {}): result \
                 {hit}, core says {want}",
                o.code,
                o.key,
                acc[i],
                if i > 0 {
                    acc[i - 1].to_string()
                } else {
                    "-".into()
                }
            ));
        }
        if cyc <= acc[i] {
            return Err(format!(
                "op {i}: answered in cycle {cyc}, accepted in {}",
                acc[i]
            ));
        }
        stats.min_latency = stats.min_latency.min(cyc - acc[i]);
        stats.max_latency = stats.max_latency.max(cyc - acc[i]);
        stats.cycles = stats.cycles.max(cyc);
        stats.ops += 1;
        stats.hits += u64::from(hit);
    }
    check_counter_readback(cfg, &filter, &log.readback)?;
    Ok((stats, filter))
}

/// Compares counters read back after a run (`(entry, data)`, lane `i`'s counter in bits
/// `c·i ..`) with `filter`'s banks.
pub fn check_counter_readback(
    cfg: &CountingConfig,
    filter: &CountingFilter,
    readback: &[(u64, u128)],
) -> Result<(), String> {
    let c = cfg.entry_bits();
    let lanes = cfg.base.layout.lanes();
    let banks: Vec<Vec<u8>> = (0..lanes)
        .map(|l| counting_bank_entries(filter, l))
        .collect();
    for (i, &(addr, data)) in readback.iter().enumerate() {
        if addr != i as u64 {
            return Err(format!("read-back {i} is of entry {addr}"));
        }
        for (lane, bank) in banks.iter().enumerate() {
            let hw = (data >> (c as usize * lane)) as u32 & cfg.counter_bits.max();
            let sw = bank.get(addr as usize).copied().map_or(0, u32::from);
            if hw != sw {
                return Err(format!(
                    "bank {lane} entry {addr}: the hardware's counter is {hw}, core's is {sw}"
                ));
            }
        }
    }
    Ok(())
}
