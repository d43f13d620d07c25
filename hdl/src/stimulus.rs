//! The stimulus of the exported self-checking benches, from one deterministic generator
//! ([`SplitMix64`]) that no seed can degenerate, and the files the Verilog bench reads:
//! `bench_cfg.hex`, `stim_p<p>.hex` and `bench_expect_p<p>.hex` (the answer the reference
//! expects for every operation, in order).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bloomlanes_core::{CountingFilter, Filter};

use crate::check::Reference;
use crate::counting::op as counting_op;
use crate::sim::{key_hash, write_stimulus, Key, Op, Stim};
use crate::{op, CountingConfig, HdlConfig, HdlError, KeyMode, PipelineConfig};

/// Operations per port of the stimulus that [`crate::export`] writes for the Verilog bench.
pub const EXPORT_BENCH_OPS: usize = 1000;

/// How many keys the search for one port's keys may draw per key it needs before it gives up.
const DRAWS_PER_KEY: usize = 64;

/// SplitMix64 (Steele, Lea and Flood, 2014): a counter stepped by the golden-ratio constant
/// through a bijective mixer, so every seed, 0 included, gives a sequence of period 2^64 (a
/// xorshift generator seeded with 0 returns 0 forever).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64-bit value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A random key for a design with key input `mode` (variable-length keys of random length).
    pub fn key(&mut self, mode: KeyMode) -> Key {
        match mode {
            KeyMode::Prehashed => Key::Hash(self.next()),
            KeyMode::Bytes(n) => Key::Bytes((0..n).map(|_| self.next() as u8).collect()),
            KeyMode::VarBytes(n) => {
                let len = self.below(n as u64 + 1) as usize;
                Key::Bytes((0..len).map(|_| self.next() as u8).collect())
            }
        }
    }
}

/// The generator of an export's stimulus for a design with XXH64 seed `seed`.
pub(crate) fn bench_rng(seed: u64) -> SplitMix64 {
    SplitMix64(0x0123_4567_89ab_cdef ^ seed)
}

/// Writes the stimulus files of the exported bench and the answers the reference `start`
/// expects: port 0's operations applied in order, the other ports' lookups answered from the
/// state after them (their keys are chosen so that the answer is the same before and after).
/// Returns the paths written.
pub(crate) fn write_expected<R: Reference, S: Stim>(
    cfg: &PipelineConfig,
    start: &R,
    ops: &[Vec<S>],
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    let mut after = start.clone();
    let mut expected: Vec<Vec<u32>> = Vec::new();
    for (p, list) in ops.iter().enumerate() {
        let answers = list
            .iter()
            .map(|o| {
                let h = key_hash(&cfg.base, &o.op().key);
                match p {
                    0 => after.apply(o.op().code, h, o.value()),
                    _ => after.clone().apply(op::LOOKUP, h, 0),
                }
            })
            .collect();
        expected.push(answers);
    }
    let mut files = write_stimulus(cfg, ops, &[200, 90, 80, 7], 0, dir)?;
    let digits = cfg.cells.answer_bits().div_ceil(4) as usize;
    for (port, answers) in expected.iter().enumerate() {
        let mut exp = String::new();
        for a in answers {
            let _ = writeln!(exp, "{a:0digits$x}");
        }
        let p = dir.join(format!("bench_expect_p{port}.hex"));
        std::fs::write(&p, exp)?;
        files.push(p);
    }
    Ok(files)
}

/// `n` lookups of random keys whose answer in `before` equals that in `after` (so that it holds
/// whatever the timing against port 0's inserts), drawn from `rng`; fails with a message after
/// [`DRAWS_PER_KEY`] × `n` draws instead of searching forever.
fn stable_lookups(
    cfg: &HdlConfig,
    before: &Filter,
    after: &Filter,
    rng: &mut SplitMix64,
    n: usize,
    port: usize,
) -> Result<Vec<Op>, HdlError> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..DRAWS_PER_KEY * n {
        if v.len() == n {
            break;
        }
        let k = rng.key(cfg.key);
        let h = key_hash(cfg, &k);
        if before.contains_hash(h) == after.contains_hash(h) {
            v.push(Op {
                code: op::LOOKUP,
                tag: v.len() as u32,
                key: k,
            });
        }
    }
    if v.len() < n {
        return Err(HdlError::InvalidConfig(format!(
            "the bench of port {port} needs {n} keys whose answer port 0's inserts cannot change; \
             {} random keys gave only {}",
            DRAWS_PER_KEY * n,
            v.len()
        )));
    }
    Ok(v)
}

/// Writes a self-checking stimulus for the exported Verilog bench into `dir`: `bench_cfg.hex`,
/// `stim_p<p>.hex` and `bench_expect_p<p>.hex` (the hit bit core expects for every answer) for
/// banks loaded from `filter` (`LOAD_BANKS = 1`). Port 0 looks up random keys, inserts new ones
/// and looks those up (they must hit); the other ports look up random keys whose answer no
/// insert of port 0 can change, so the expectations hold whatever the timing.
pub fn write_export_bench(
    cfg: &HdlConfig,
    filter: &Filter,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    cfg.check_filter(filter)?;
    let mut rng = bench_rng(cfg.seed);
    let n = EXPORT_BENCH_OPS;
    let third = n / 3;
    let mut after = filter.clone();
    let lookups: Vec<Key> = (0..third).map(|_| rng.key(cfg.key)).collect();
    let inserted: Vec<Key> = (0..third).map(|_| rng.key(cfg.key)).collect();
    for k in &inserted {
        after.insert_hash(key_hash(cfg, k));
    }
    let plan = lookups
        .into_iter()
        .map(|k| (op::LOOKUP, k))
        .chain(inserted.iter().map(|k| (op::INSERT, k.clone())))
        .chain(inserted.iter().map(|k| (op::LOOKUP, k.clone())));
    let port0: Vec<Op> = plan
        .enumerate()
        .map(|(i, (code, key))| Op {
            code,
            tag: i as u32,
            key,
        })
        .collect();
    let mut ops = vec![port0];
    for port in 1..cfg.lookup_ports {
        ops.push(stable_lookups(cfg, filter, &after, &mut rng, n, port)?);
    }
    write_expected(&PipelineConfig::static_filter(cfg), filter, &ops, dir)
}

/// Operations of the stimulus that [`crate::export_counting`] writes.
pub const COUNTING_BENCH_OPS: usize = 1000;

/// The counting export's stimulus for `start`'s banks: rounds of 8 new keys inserted, looked
/// up, deleted (each twice: the second is refused unless another key shares the counters) and
/// looked up again, then an absent key deleted; the same key is hit back to back.
pub(crate) fn write_counting_bench(
    cfg: &CountingConfig,
    start: &CountingFilter,
    dir: &Path,
) -> Result<Vec<PathBuf>, HdlError> {
    let mut rng = bench_rng(cfg.base.seed);
    let mut ops = Vec::with_capacity(COUNTING_BENCH_OPS);
    while ops.len() < COUNTING_BENCH_OPS {
        let keys: Vec<Key> = (0..8).map(|_| rng.key(cfg.base.key)).collect();
        let mut round = Vec::new();
        for k in &keys {
            round.extend([(op::INSERT, k), (op::LOOKUP, k), (op::INSERT, k)]);
        }
        for k in &keys {
            round.extend([(counting_op::DELETE, k), (op::LOOKUP, k)]);
            round.extend([
                (counting_op::DELETE, k),
                (counting_op::DELETE, k),
                (op::LOOKUP, k),
            ]);
        }
        let absent = rng.key(cfg.base.key);
        round.push((counting_op::DELETE, &absent));
        for (code, k) in round.into_iter().take(COUNTING_BENCH_OPS - ops.len()) {
            ops.push(Op {
                code,
                tag: ops.len() as u32,
                key: k.clone(),
            });
        }
    }
    write_expected(&cfg.pipeline(), start, &[ops], dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{Layout, Params};

    #[test]
    fn the_search_for_stable_keys_gives_up_with_a_message() {
        // No key answers alike in an empty filter and in a full one: the search must stop.
        let cfg = HdlConfig::new(Layout::L8x32, 4, KeyMode::Prehashed, 0);
        let empty = Filter::new(Params::new(Layout::L8x32, 4));
        let mut full = empty.clone();
        for i in 0..100_000u64 {
            full.insert_hash(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        let mut rng = SplitMix64(1);
        let e = stable_lookups(&cfg, &empty, &full, &mut rng, 10, 1).unwrap_err();
        assert!(e.to_string().contains("640 random keys gave only 0"), "{e}");
        assert_eq!(
            stable_lookups(&cfg, &empty, &empty, &mut rng, 10, 1)
                .unwrap()
                .len(),
            10
        );
    }

    #[test]
    fn no_seed_degenerates_the_generator() {
        for seed in [0, 0x0123_4567_89ab_cdef, u64::MAX] {
            let mut rng = bench_rng(seed);
            let v: std::collections::BTreeSet<u64> = (0..1000).map(|_| rng.next()).collect();
            assert_eq!(v.len(), 1000, "seed {seed:#x}");
        }
    }
}
