//! Shared helpers of the simulation tests.
#![allow(dead_code)]

use bloomlanes_core::{Filter, Layout, Params};
use bloomlanes_hdl::sim::{self, BenchParams, Key, Op, Simulator};
use bloomlanes_hdl::{generate, op, HdlConfig, KeyMode};

/// The crate's stimulus generator (SplitMix64).
pub use bloomlanes_hdl::sim::SplitMix64 as Rng;

pub fn cfg(layout: Layout, blocks: u32, key: KeyMode, ports: usize) -> HdlConfig {
    let mut c = HdlConfig::new(layout, blocks, key, 0x5eed_0000_0000_0001);
    c.lookup_ports = ports;
    c.tag_bits = 16;
    c.top_name = format!(
        "bl_{}_z{}_{}_p{ports}",
        layout.name(),
        blocks,
        match key {
            KeyMode::Bytes(n) => format!("k{n}"),
            KeyMode::VarBytes(n) => format!("v{n}"),
            KeyMode::Prehashed => "h".to_string(),
        }
    );
    c
}

pub fn random_key(cfg: &HdlConfig, rng: &mut Rng) -> Key {
    rng.key(cfg.key)
}

/// `port0` operations on port 0 (inserts, lookups, a few clears after the first `fast`), and
/// `others` lookups on every other port; lookups ask for inserted keys half of the time.
pub fn random_ops(
    cfg: &HdlConfig,
    port0: usize,
    others: usize,
    fast: usize,
    seed: u64,
) -> Vec<Vec<Op>> {
    let mut rng = Rng(seed);
    let mut pool: Vec<Key> = Vec::new();
    let clear_cost = cfg.bank_entries() + 20;
    let clears = (30_000 / clear_cost).clamp(1, 200);
    let clear_every = (port0 as u64 / (clears + 1)).max(1);
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); cfg.lookup_ports];
    let lookup = |rng: &mut Rng, pool: &Vec<Key>| {
        if !pool.is_empty() && rng.below(2) == 0 {
            pool[rng.below(pool.len() as u64) as usize].clone()
        } else {
            random_key(cfg, rng)
        }
    };
    for i in 0..port0 {
        let tag = rng.next() as u32;
        let o = if i > fast && rng.below(clear_every) == 0 {
            pool.clear();
            Op {
                code: op::CLEAR,
                tag,
                key: random_key(cfg, &mut rng),
            }
        } else if rng.below(100) < 45 {
            let k = random_key(cfg, &mut rng);
            pool.push(k.clone());
            Op {
                code: op::INSERT,
                tag,
                key: k,
            }
        } else if rng.below(200) == 0 {
            Op {
                code: op::NOP,
                tag,
                key: random_key(cfg, &mut rng),
            }
        } else {
            Op {
                code: op::LOOKUP,
                tag,
                key: lookup(&mut rng, &pool),
            }
        };
        ops[0].push(o);
        // Other ports: lookups spread over the same period.
        for port in ops.iter_mut().skip(1) {
            if port.len() < others * (i + 1) / port0.max(1) {
                let tag = rng.next() as u32;
                port.push(Op {
                    code: op::LOOKUP,
                    tag,
                    key: lookup(&mut rng, &pool),
                });
            }
        }
    }
    for port in ops.iter_mut().skip(1) {
        while port.len() < others {
            let tag = rng.next() as u32;
            port.push(Op {
                code: op::LOOKUP,
                tag,
                key: random_key(cfg, &mut rng),
            });
        }
    }
    ops
}

/// Returns false (after a visible SKIP line) if `sim` is missing.
pub fn have(sim: Simulator, what: &str) -> bool {
    if sim.is_available() {
        true
    } else {
        eprintln!("SKIP: {what}: {} is not installed", sim.name());
        false
    }
}

/// Runs `ops` on `cfg` in `sim` from `start` and checks every answer against core; also checks
/// the latency and that the first `fast` operations of every port went through at one per cycle.
pub fn run_and_check(
    cfg: &HdlConfig,
    sim: Simulator,
    start: Option<&Filter>,
    ops: &[Vec<Op>],
    params: BenchParams,
) -> sim::CheckStats {
    let t0 = std::time::Instant::now();
    let design = generate(cfg).expect("generate");
    let log = sim::run_ops(cfg, sim, start, ops, params).unwrap_or_else(|e| panic!("{e}"));
    let empty = Filter::new(Params::new(cfg.layout, cfg.blocks).with_seed(cfg.seed));
    let (stats, _) = sim::check(cfg, start.unwrap_or(&empty), ops, &log)
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.top_name));
    assert_eq!(
        stats.min_latency,
        u64::from(design.latency_cycles),
        "{}: documented latency",
        cfg.top_name
    );
    let fast = params.fast_ops as usize;
    for (p, acc) in log.accepted.iter().enumerate() {
        let n = fast.min(acc.len());
        if n > 1 {
            assert_eq!(
                acc[n - 1] - acc[0],
                n as u64 - 1,
                "{}: port {p} did not accept one operation per cycle at full rate",
                cfg.top_name
            );
            // With m_ready high, every answer comes exactly `latency` cycles after its accept.
            for (answer, accepted) in log.answers[p].iter().zip(acc).take(n) {
                assert_eq!(answer.0 - accepted, u64::from(design.latency_cycles));
            }
        }
    }
    eprintln!(
        "{} [{}]: {} ops ({} hits), {} cycles, latency {}..{}, {:.1} s",
        cfg.top_name,
        sim.name(),
        stats.ops,
        stats.hits,
        stats.cycles,
        stats.min_latency,
        stats.max_latency,
        t0.elapsed().as_secs_f64()
    );
    stats
}
