//! Checking a simulation against a software filter: the accepted operations replayed in the
//! hardware's order on a [`Reference`] (core's `Filter`, `CountingFilter` and `SpatialFilter`, or
//! a test's model), every answer, tag and latency compared, and the bank entries read back
//! compared with the reference's cells.

use bloomlanes_core::{CountingFilter, Filter, SpatialFilter};

use crate::banks::Cells;
use crate::counting::op as counting_op;
use crate::sim::{
    key_hash, run_pipeline, simulator_available, tool_err, BenchParams, Key, Op, SimLog, Simulator,
    Stim,
};
use crate::{generate_pipeline, op, HdlConfig, HdlError, KeyMode, PipelineConfig};

/// The software filter a design is checked against: it applies every operation and says what
/// the hardware must answer and what its banks must hold.
pub trait Reference: Cells + Clone {
    /// Applies operation `code` on the key with hash `hash` (and `value`, for an insert that
    /// carries one) and returns the answer the hardware must give.
    fn apply(&mut self, code: u8, hash: u64, value: u32) -> u32;
}

/// A static filter: lookups answer membership, inserts and clears answer 0.
impl Reference for Filter {
    fn apply(&mut self, code: u8, hash: u64, _: u32) -> u32 {
        match code {
            op::LOOKUP => return u32::from(self.contains_hash(hash)),
            op::INSERT => self.insert_hash(hash),
            op::CLEAR => self.clear(),
            _ => {}
        }
        0
    }
}

/// A counting filter: lookups answer membership, inserts 1, deletes whether they were accepted.
impl Reference for CountingFilter {
    fn apply(&mut self, code: u8, hash: u64, _: u32) -> u32 {
        u32::from(match code {
            counting_op::LOOKUP => self.contains_hash(hash),
            counting_op::INSERT => {
                self.insert_hash(hash);
                true
            }
            counting_op::DELETE => self.remove_hash(hash).is_ok(),
            _ => false,
        })
    }
}

/// A spatial filter (the spatial pipeline: insert `Max(class)`, lookup `Min`): lookups answer
/// the key's class (0: absent), inserts write the class they carry and answer 0; the pipeline
/// has no clear, so other codes change nothing and answer 0. A class beyond the filter's named
/// ones is written as the hardware writes it, by core's cell update alone (its key is not
/// counted in any class).
impl Reference for SpatialFilter {
    fn apply(&mut self, code: u8, hash: u64, value: u32) -> u32 {
        match code {
            op::LOOKUP => self.class_of_hash(hash),
            op::INSERT => {
                let named = self.insert_hash(hash, value);
                if named.is_err() {
                    self.as_view_mut().spatial_insert_hash(hash, value);
                }
                0
            }
            _ => 0,
        }
    }
}

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// Operations compared.
    pub ops: u64,
    /// Answers other than 0 (lookup hits, accepted deletes, non-zero minima).
    pub hits: u64,
    /// Smallest latency (answer cycle − accept cycle) seen.
    pub min_latency: u64,
    /// Largest.
    pub max_latency: u64,
    /// Cycles of the run.
    pub cycles: u64,
}

/// Replays the accepted operations on a copy of `start` in the order the hardware applied them
/// (by accept cycle; within a cycle the lookups of ports 1.. before port 0's operation) and
/// checks every answer: count, order (tags), value and latency; then the read-back bank entries
/// against the cells the operations leave. Returns the statistics, the reference after the
/// operations and the expected answers of every port.
pub fn check_pipeline<R: Reference, S: Stim>(
    cfg: &PipelineConfig,
    start: &R,
    ops: &[Vec<S>],
    log: &SimLog,
) -> Result<(CheckStats, R, Vec<Vec<u32>>), String> {
    let b = &cfg.base;
    let tag_mask = u32::MAX >> (32 - b.tag_bits);
    let mut events: Vec<(u64, bool, usize, usize)> = Vec::new();
    for (p, port_ops) in ops.iter().enumerate() {
        let acc = &log.accepted[p];
        if acc.len() != port_ops.len() || log.answers[p].len() != port_ops.len() {
            return Err(format!(
                "port {p}: {} operations, {} accepted, {} answers",
                port_ops.len(),
                acc.len(),
                log.answers[p].len()
            ));
        }
        for (i, &c) in acc.iter().enumerate() {
            if i > 0 && c <= acc[i - 1] {
                return Err(format!("port {p}: two operations accepted in cycle {c}"));
            }
            events.push((c, p == 0, p, i));
        }
    }
    events.sort_unstable();
    let mut reference = start.clone();
    let mut expected: Vec<Vec<u32>> = ops.iter().map(|o| vec![0; o.len()]).collect();
    for &(_, _, p, i) in &events {
        let o = &ops[p][i];
        let h = key_hash(b, &o.op().key);
        expected[p][i] = reference.apply(o.op().code, h, o.value());
    }
    check_readback(cfg, &reference, &log.readback)?;
    let mut stats = CheckStats {
        min_latency: u64::MAX,
        ..CheckStats::default()
    };
    for (p, port_ops) in ops.iter().enumerate() {
        for (i, o) in port_ops.iter().enumerate() {
            let (o, (cyc, tag, answer)) = (o.op(), log.answers[p][i]);
            let acc = log.accepted[p][i];
            if tag != o.tag & tag_mask {
                return Err(format!(
                    "port {p} answer {i}: tag {tag:#x}, expected {:#x} (out of order)",
                    o.tag & tag_mask
                ));
            }
            if answer != expected[p][i] {
                let before = i.checked_sub(1).map(|j| log.accepted[p][j]);
                return Err(format!(
                    "port {p} op {i} (code {}, key {:?}, accepted cycle {acc}, previous op \
                     accepted {before:?}): answer {answer}, the reference says {}",
                    o.code, o.key, expected[p][i]
                ));
            }
            if cyc <= acc {
                return Err(format!(
                    "port {p} op {i}: answered in cycle {cyc}, accepted in {acc}"
                ));
            }
            stats.min_latency = stats.min_latency.min(cyc - acc);
            stats.max_latency = stats.max_latency.max(cyc - acc);
            stats.cycles = stats.cycles.max(cyc);
            stats.ops += 1;
            stats.hits += u64::from(answer != 0);
        }
    }
    Ok((stats, reference, expected))
}

/// Compares bank entries read back after a run (`(entry, data)`, lane `i`'s cell in bits
/// `c·i ..`) with the cells of `reference`.
pub fn check_readback(
    cfg: &PipelineConfig,
    reference: &(impl Cells + ?Sized),
    readback: &[(u64, Vec<u32>)],
) -> Result<(), String> {
    let c = cfg.cells.bits as usize;
    for (i, (addr, data)) in readback.iter().enumerate() {
        let addr = *addr;
        if addr != i as u64 {
            return Err(format!("read-back {i} is of entry {addr}"));
        }
        for lane in 0..cfg.bank_shape().1 {
            // Bit by bit: a cell of a retrieval table may straddle 32-bit words.
            let hw = (0..c).fold(0u64, |acc, j| {
                let bit = c * lane + j;
                let word = data.get(bit / 32).copied().unwrap_or(0);
                acc | u64::from(word >> (bit % 32) & 1) << j
            });
            let sw = reference.cell(lane, addr);
            if hw != sw {
                return Err(format!(
                    "bank {lane} entry {addr}: the hardware's cell is {hw}, the reference's {sw}"
                ));
            }
        }
    }
    Ok(())
}

/// What [`run_and_check`] found: the statistics, the reference after the operations, the
/// answers it expected of every port and the bench's log. Shown as one line of figures.
#[derive(Clone, Debug)]
pub struct Checked<R> {
    /// Operations, answers, latencies, cycles.
    pub stats: CheckStats,
    /// The reference after the operations.
    pub after: R,
    /// The answers of every port.
    pub expected: Vec<Vec<u32>>,
    /// What the bench logged.
    pub log: SimLog,
}

impl<R> std::fmt::Display for Checked<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "{} ops ({} answers not 0), {} cycles, latency {}..{}",
            s.ops, s.hits, s.cycles, s.min_latency, s.max_latency
        )
    }
}

/// Runs `ops` on design `cfg` in `sim` (the banks loaded from `start` when `load` is set, else
/// every cell 0, as `start`'s must then be) and checks every answer and the cells read back
/// against `start` ([`check_pipeline`]), and the timing the RTL documents: the smallest latency
/// is the design's, and while the bench drives at full rate (`params.fast_ops`) every port
/// accepts one operation per cycle and answers each exactly that latency later.
pub fn run_and_check<R: Reference, S: Stim>(
    cfg: &PipelineConfig,
    sim: Simulator,
    start: &R,
    load: bool,
    ops: &[Vec<S>],
    params: BenchParams,
) -> Result<Checked<R>, String> {
    let design = generate_pipeline(cfg).map_err(|e| e.to_string())?;
    let log =
        run_pipeline(cfg, sim, load.then_some(start), ops, params).map_err(|e| e.to_string())?;
    let (stats, after, expected) = check_pipeline(cfg, start, ops, &log)?;
    let latency = u64::from(design.latency_cycles);
    if stats.ops > 0 && stats.min_latency != latency {
        return Err(format!(
            "smallest latency {} cycles; the design documents {latency}",
            stats.min_latency
        ));
    }
    let fast = params.fast_ops as usize;
    for (p, acc) in log.accepted.iter().enumerate() {
        let n = fast.min(acc.len());
        if n > 1 && acc[n - 1] - acc[0] != n as u64 - 1 {
            return Err(format!(
                "port {p} did not accept one operation per cycle at full rate"
            ));
        }
        for (i, (answer, accepted)) in log.answers[p].iter().zip(acc).take(n).enumerate() {
            if answer.0 - accepted != latency {
                return Err(format!(
                    "port {p} answer {i} came {} cycles after its operation at full rate, not \
                     {latency}",
                    answer.0 - accepted
                ));
            }
        }
    }
    Ok(Checked {
        stats,
        after,
        expected,
        log,
    })
}

/// [`check_pipeline`] for the static design `cfg` against core's `start` filter; returns the
/// answers of every port as hit bits.
pub fn check(
    cfg: &HdlConfig,
    start: &Filter,
    ops: &[Vec<Op>],
    log: &SimLog,
) -> Result<(CheckStats, Vec<Vec<bool>>), String> {
    let (stats, _, expected) =
        check_pipeline(&PipelineConfig::static_filter(cfg), start, ops, log)?;
    let hits = expected
        .into_iter()
        .map(|port| port.into_iter().map(|a| a != 0).collect())
        .collect();
    Ok((stats, hits))
}

fn lookups_in(cfg: &HdlConfig, filter: &Filter, keys: Vec<Key>) -> Result<Vec<bool>, HdlError> {
    cfg.validate()?;
    cfg.check_filter(filter)?;
    let sim = simulator_available().ok_or(HdlError::NoSimulator)?;
    let p = cfg.lookup_ports;
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); p];
    for (i, key) in keys.into_iter().enumerate() {
        ops[i % p].push(Op {
            code: op::LOOKUP,
            tag: (i / p) as u32,
            key,
        });
    }
    let design = PipelineConfig::static_filter(cfg);
    let log = run_pipeline(&design, sim, Some(filter), &ops, BenchParams::default())?;
    let (_, answers) = check(cfg, filter, &ops, &log).map_err(|m| tool_err(sim.name(), m))?;
    // Return the hardware's answers (check() has verified they equal the software's).
    let mut out = Vec::new();
    for i in 0..ops.iter().map(Vec::len).sum::<usize>() {
        out.push(answers[i % p][i / p]);
    }
    Ok(out)
}

/// Looks `keys` up in the RTL of `cfg` with the banks loaded from `filter`'s bank files, in the
/// first available simulator, and returns the hardware's answers (spread over all lookup
/// ports). With [`KeyMode::Prehashed`] the keys are hashed on the host with `filter`'s seed.
/// Fails with [`HdlError::NoSimulator`] when none is installed, and with a tool error if any
/// answer differs from the software filter's (they are compared before returning).
pub fn simulate_lookups(
    cfg: &HdlConfig,
    filter: &Filter,
    keys: &[Vec<u8>],
) -> Result<Vec<bool>, HdlError> {
    let keys = keys
        .iter()
        .map(|k| Key::from_key_bytes(cfg, k))
        .collect::<Result<Vec<_>, _>>()?;
    lookups_in(cfg, filter, keys)
}

/// Like [`simulate_lookups`] with 64-bit hashes; the design must be [`KeyMode::Prehashed`].
pub fn simulate_lookup_hashes(
    cfg: &HdlConfig,
    filter: &Filter,
    hashes: &[u64],
) -> Result<Vec<bool>, HdlError> {
    if cfg.key != KeyMode::Prehashed {
        return Err(HdlError::Mismatch(format!(
            "hashes given to a design with {}; use KeyMode::Prehashed",
            cfg.key
        )));
    }
    lookups_in(cfg, filter, hashes.iter().map(|&h| Key::Hash(h)).collect())
}
