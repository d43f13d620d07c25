//! The benchmark demo: deterministic sample data, one build and one screening pass per backend,
//! keys per second for each.

use bloomlanes_core::{Filter, Keys, Layout};

use crate::backend::{self, Backend, BackendChoice};
use crate::error::Result;
use crate::ops::{contains_with, insert_with, FilterBuilder};

/// SplitMix64: a small, fast, deterministic generator for sample keys.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
}

impl Iterator for SplitMix64 {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Some(z ^ (z >> 31))
    }
}

/// `n` distinct-with-overwhelming-probability sample keys.
pub fn sample_keys(n: usize) -> Vec<u64> {
    SplitMix64::new(0x5eed_b100_0000_0001).take(n).collect()
}

/// A query set of `n` keys, alternating between keys of `inserted` (present) and fresh keys
/// (absent with overwhelming probability). Returns the set and how many are present.
pub fn sample_queries(inserted: &[u64], n: usize) -> (Vec<u64>, usize) {
    let mut fresh = SplitMix64::new(0xab5e_47ab_5e47_0002);
    let mut pick = SplitMix64::new(0x9e7c_0000_0000_0003);
    let mut present = 0;
    let q = (0..n)
        .map(|i| {
            if i % 2 == 0 && !inserted.is_empty() {
                present += 1;
                inserted[(pick.next().unwrap_or(0) % inserted.len() as u64) as usize]
            } else {
                fresh.next().unwrap_or(0)
            }
        })
        .collect();
    (q, present)
}

/// What to benchmark.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Keys inserted.
    pub keys: usize,
    /// Keys screened (half present).
    pub queries: usize,
    /// Layout (`None`: chosen for the rate).
    pub layout: Option<Layout>,
    /// Target false-positive rate.
    pub fpp: f64,
    /// Which backends: `Auto` runs every backend present.
    pub backend: BackendChoice,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            keys: 4 << 20,
            queries: 4 << 20,
            layout: None,
            fpp: 0.01,
            backend: BackendChoice::Auto,
        }
    }
}

/// One backend's results.
#[derive(Clone, Debug)]
pub struct BenchRow {
    /// Backend name.
    pub backend: String,
    /// Keys inserted per second.
    pub insert_keys_per_s: f64,
    /// Keys screened per second.
    pub query_keys_per_s: f64,
    /// Whether its filter's bits equal the scalar reference's.
    pub identical_bits: bool,
    /// Whether its answers equal the scalar reference's.
    pub identical_answers: bool,
    /// Inserted keys it reported absent (must be 0).
    pub false_negatives: u64,
    /// Fraction of absent keys it reported present.
    pub false_positive_rate: f64,
}

/// The benchmark's results.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// Keys inserted.
    pub keys: usize,
    /// Keys screened.
    pub queries: usize,
    /// Layout used.
    pub layout: Layout,
    /// Blocks.
    pub blocks: u32,
    /// Filter size in bytes.
    pub bytes: usize,
    /// Expected false-positive rate.
    pub expected_fpr: f64,
    /// One row per backend.
    pub rows: Vec<BenchRow>,
    /// Backends not present, and why.
    pub absent: Vec<(String, String)>,
}

/// Runs the benchmark.
pub fn run(cfg: &BenchConfig, show_progress: bool) -> Result<BenchReport> {
    let keys = sample_keys(cfg.keys);
    let (queries, present) = sample_queries(&keys, cfg.queries);
    let builder = FilterBuilder::new().fpp(cfg.fpp).layout(cfg.layout);
    let empty = builder.empty(keys.len() as u64)?;
    let engines: Vec<Box<dyn Backend>> = match cfg.backend {
        BackendChoice::Auto => backend::available(),
        c => vec![backend::select(c, usize::MAX)?],
    };
    let mut reference: Option<(Filter, Vec<u8>)> = None;
    let mut rows = Vec::new();
    for engine in &engines {
        // Best of up to three passes (fewer when a pass is slow), after the first warmed caches.
        let mut filter = empty.clone();
        let mut t_insert = f64::INFINITY;
        let mut spent = 0.0;
        for _ in 0..3 {
            let mut f = empty.clone();
            let t = insert_with(&**engine, &mut f, Keys::U64(&keys), show_progress)?;
            t_insert = t_insert.min(t);
            spent += t;
            filter = f;
            if spent > 1.0 {
                break;
            }
        }
        let mut t_query = f64::INFINITY;
        let mut answers = Vec::new();
        spent = 0.0;
        for _ in 0..3 {
            let (a, t) = contains_with(
                &**engine,
                filter.as_view(),
                Keys::U64(&queries),
                show_progress,
            )?;
            t_query = t_query.min(t);
            spent += t;
            answers = a;
            if spent > 1.0 {
                break;
            }
        }
        let false_negatives = answers
            .iter()
            .step_by(2)
            .take(present)
            .filter(|&&a| a == 0)
            .count() as u64;
        let absent_hits = answers
            .iter()
            .skip(1)
            .step_by(2)
            .filter(|&&a| a != 0)
            .count();
        let absent_n = queries.len() - present;
        let (identical_bits, identical_answers) = match &reference {
            None => (true, true),
            Some((f, a)) => (f.words() == filter.words(), *a == answers),
        };
        rows.push(BenchRow {
            backend: engine.name(),
            insert_keys_per_s: keys.len() as f64 / t_insert.max(1e-9),
            query_keys_per_s: queries.len() as f64 / t_query.max(1e-9),
            identical_bits,
            identical_answers,
            false_negatives,
            false_positive_rate: if absent_n == 0 {
                0.0
            } else {
                absent_hits as f64 / absent_n as f64
            },
        });
        if reference.is_none() {
            reference = Some((filter, answers));
        }
    }
    Ok(BenchReport {
        keys: keys.len(),
        queries: queries.len(),
        layout: empty.layout(),
        blocks: empty.blocks(),
        bytes: empty.byte_len(),
        expected_fpr: empty.expected_fpr(Some(keys.len() as u64)),
        rows,
        absent: if cfg.backend == BackendChoice::Auto {
            backend::absent()
        } else {
            Vec::new()
        },
    })
}
