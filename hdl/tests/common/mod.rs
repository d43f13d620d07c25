//! Shared helpers of the simulation tests.
#![allow(dead_code)]

/// The workspace's one visible `SKIP:` line.
pub use bloomlanes_testkit::{each_in_parallel, skip};

use std::path::Path;
use std::process::Command;

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Filter, Layout, Params};
use bloomlanes_hdl::sim::{self, BenchParams, Checked, Key, Op, Reference, Simulator, Stim};
use bloomlanes_hdl::{op, Design, HdlConfig, KeyMode, PipelineConfig};

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

/// The kinds whose exports carry the whole kit (README, Makefile, board tops, AXI wrapper,
/// cocotb, formal), as [`export_kind`] names them.
pub const KIT_KINDS: [&str; 4] = ["static", "counting", "spatial", "retrieval"];

/// Exports a design of `c`'s shape of `kind` (static; counting with 4-bit counters, one port,
/// empty banks; spatial with 4-bit classes, one port, 60 keys in 3 classes; retrieval: a table
/// of [`KIT_RETRIEVAL_KEYS`] random keys of `c`'s key input with 8-bit values and 4 check bits,
/// arity 3, one port, the stimulus looking up its built keys) into `dir`.
pub fn export_kind(kind: &str, c: &HdlConfig, dir: &Path) -> bloomlanes_hdl::ExportSummary {
    use bloomlanes_core::CounterBits;
    use bloomlanes_hdl::CountingConfig;
    let done = match kind {
        "static" => bloomlanes_hdl::export(c, None, dir, false),
        "counting" => {
            let mut one = c.clone();
            one.lookup_ports = 1;
            let cc = CountingConfig::new(one, CounterBits::Four);
            bloomlanes_hdl::export_counting_kit(&cc, None, dir, false)
        }
        "spatial" => {
            let mut one = c.clone();
            one.lookup_ports = 1;
            let params = bloomlanes_core::Params::new(c.layout, c.blocks).with_seed(c.seed);
            let mut f = bloomlanes_core::SpatialFilter::new(params, 4, &["a", "b", "c"]).unwrap();
            let mut rng = Rng(7);
            for i in 0..60u32 {
                f.insert_hash(rng.next(), 1 + i % 3).unwrap();
            }
            let pc = PipelineConfig::spatial(one, 4);
            bloomlanes_hdl::export_spatial_kit(&pc, &f, dir, false)
        }
        "retrieval" => {
            let mut one = c.clone();
            one.lookup_ports = 1;
            let params = bloomlanes_core::Params::new(c.layout, c.blocks).with_seed(c.seed);
            let mut rng = Rng(11);
            let keys: Vec<Key> = (0..KIT_RETRIEVAL_KEYS)
                .map(|_| random_key(&one, &mut rng))
                .collect();
            let hashes: Vec<u64> = keys.iter().map(|k| sim::key_hash(&one, k)).collect();
            let values: Vec<u32> = (0..keys.len()).map(|_| rng.below(256) as u32).collect();
            let spec = RetrievalSpec::new(8, 4).with_arity(3);
            let t = RetrievalTable::build(params, spec, &hashes, &values).unwrap();
            let pc = PipelineConfig::retrieval(one, *t.shape());
            bloomlanes_hdl::export_retrieval_kit(&pc, &t, &keys, dir, false)
        }
        k => panic!("no export of a {k} filter"),
    };
    done.unwrap_or_else(|e| panic!("{kind} export of {}: {e}", c.top_name))
}

/// Keys of the retrieval table [`export_kind`] exports.
pub const KIT_RETRIEVAL_KEYS: usize = 300;

/// Whether the long HDL runs (simulations, synthesis, lint) are on: `BLOOMLANES_FULL=1`, which
/// `.ci/run` sets; off, the README's `cargo test --workspace` finishes in minutes and each such
/// test prints a visible SKIP line.
pub fn full_runs() -> bool {
    std::env::var_os("BLOOMLANES_FULL").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether `tool` may run here: the long runs are on ([`full_runs`]) and it is installed. Off,
/// says so in a SKIP line.
pub fn on_path(tool: &str) -> bool {
    long_runs_for(tool) && sim::on_path(tool)
}

/// Whether the test `test` may run `tool` ([`on_path`]); when not, says so in a SKIP line that
/// names the test.
pub fn test_may_run(test: &str, tool: &str) -> bool {
    let may = on_path(tool);
    if !may {
        skip(format_args!(
            "{test}: {tool} is not installed or BLOOMLANES_FULL is unset"
        ));
    }
    may
}

/// Whether the long runs are on ([`full_runs`]); off, says so in a SKIP line for `what`.
fn long_runs_for(what: &str) -> bool {
    let on = full_runs();
    if !on {
        skip(format_args!(
            "{what}: the long HDL runs are off; set BLOOMLANES_FULL=1 (.ci/run does)"
        ));
    }
    on
}

/// Returns false (after a visible SKIP line) if `sim` is missing or the long runs are off.
pub fn have(sim: Simulator, what: &str) -> bool {
    if !long_runs_for(what) {
        false
    } else if sim.is_available() {
        true
    } else {
        skip(format_args!("{what}: {} is not installed", sim.name()));
        false
    }
}

/// Runs `ops` on design `c` in `sim` from `start` (its banks loaded when `load`) and checks
/// every answer, cell and the documented timing ([`sim::run_and_check`]); panics with the
/// design's name on a difference, prints the figures otherwise.
pub fn checked<R: Reference, S: Stim>(
    c: &PipelineConfig,
    simulator: Simulator,
    (start, load): (&R, bool),
    ops: &[Vec<S>],
    params: BenchParams,
) -> Checked<R> {
    let t0 = std::time::Instant::now();
    let name = format!("{} [{}]", c.base.top_name, simulator.name());
    let checked = sim::run_and_check(c, simulator, start, load, ops, params)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    eprintln!("{name}: {checked}, {:.1} s", t0.elapsed().as_secs_f64());
    checked
}

/// A kind of filter under test: its designs, stimulus and reference model.
pub trait Kind {
    /// The reference the hardware is checked against.
    type Model: Reference;
    /// One operation of a stimulus.
    type Stim: Stim + Clone;
    /// The designs tested.
    fn matrix() -> Vec<PipelineConfig>;
    /// `n` random operations on `pool` keys (and fresh ones), often one key back to back.
    fn ops(c: &PipelineConfig, n: usize, pool: usize, seed: u64) -> Vec<Self::Stim>;
    /// The reference of `c` with every cell 0.
    fn empty(c: &PipelineConfig) -> Self::Model;
    /// A reference with cells set, to load the banks from.
    fn loaded(c: &PipelineConfig, seed: u64) -> Self::Model;
    /// Panics unless the run exercised what this kind must (deletes both ways, classes...).
    fn exercised(ops: &[Self::Stim], run: &Checked<Self::Model>);
    /// What Verilator runs ([`matches`]).
    const VERILATOR: Plan;
    /// What Icarus Verilog runs (slower: fewer designs and operations).
    const ICARUS: Plan;
}

/// Kind `K` with registered banks ([`HdlConfig::registered_banks`]: the memories' output
/// registers and a registered write port; a bank read of four cycles in write-through designs,
/// three and two more levels of forwarding in read-modify-write ones): every design of `K`'s
/// matrix, the same stimulus, reference and checks, half the operations.
pub struct Registered<K>(std::marker::PhantomData<K>);

/// `plan` with half its operations.
const fn halved((picks, (n, fast), load): Plan) -> Plan {
    (picks, (n / 2, fast), load)
}

impl<K: Kind> Kind for Registered<K> {
    type Model = K::Model;
    type Stim = K::Stim;
    const VERILATOR: Plan = halved(K::VERILATOR);
    const ICARUS: Plan = halved(K::ICARUS);

    fn matrix() -> Vec<PipelineConfig> {
        K::matrix().into_iter().map(registered).collect()
    }
    fn ops(c: &PipelineConfig, n: usize, pool: usize, seed: u64) -> Vec<Self::Stim> {
        K::ops(c, n, pool, seed)
    }
    fn empty(c: &PipelineConfig) -> Self::Model {
        K::empty(c)
    }
    fn loaded(c: &PipelineConfig, seed: u64) -> Self::Model {
        K::loaded(c, seed)
    }
    fn exercised(ops: &[Self::Stim], run: &Checked<Self::Model>) {
        K::exercised(ops, run)
    }
}

/// `c` with registered banks, its top module named `<top>_rb`.
pub fn registered(mut c: PipelineConfig) -> PipelineConfig {
    c.base.registered_banks = true;
    c.base.top_name.push_str("_rb");
    c
}

/// The designs of a matrix a simulator runs: their indices, (operations, of which at full
/// rate), and the design whose banks are loaded from a reference.
pub type Plan = (&'static [usize], (usize, u32), usize);

/// The Verilator and Icarus tests of a [`Kind`]: `simulator_tests!(Kind, verilator_name,
/// icarus_name)`.
#[allow(unused_macros)]
macro_rules! simulator_tests {
    ($kind:ty, $verilator:ident, $icarus:ident) => {
        #[test]
        fn $verilator() {
            common::matches::<$kind>(Simulator::Verilator, <$kind as Kind>::VERILATOR);
        }

        #[test]
        fn $icarus() {
            common::matches::<$kind>(Simulator::Icarus, <$kind as Kind>::ICARUS);
        }
    };
}

/// Runs `ops` on design `c` of kind `K` from `start` (banks loaded) or empty banks, checks it
/// ([`checked`]), every bank entry read back and what the kind must exercise.
pub fn run_kind<K: Kind>(
    c: &PipelineConfig,
    simulator: Simulator,
    start: Option<&K::Model>,
    ops: &[K::Stim],
    params: BenchParams,
) -> Checked<K::Model> {
    let first = start.cloned().unwrap_or_else(|| K::empty(c));
    let load = (&first, start.is_some());
    let run = checked(c, simulator, load, &[ops.to_vec()], params);
    let entries = c.bank_shape().0.min(params.readback.into());
    assert_eq!(run.log.readback.len() as u64, entries);
    K::exercised(ops, &run);
    run
}

/// The designs `picks` of kind `K`, `n` operations each (the first `fast` at full rate), then
/// banks loaded from a reference (design `load_in`, a quarter of the operations), in
/// `simulator` (skipped with a SKIP line when it is not installed).
pub fn matches<K: Kind>(simulator: Simulator, (picks, (n, fast), load_in): Plan) {
    if !have(simulator, "random operations against the reference") {
        return;
    }
    let m = K::matrix();
    // The picks from empty banks, then (`None`) the loaded run.
    let runs: Vec<Option<usize>> = picks.iter().map(|&i| Some(i)).chain([None]).collect();
    each_in_parallel(&runs, |run| match *run {
        Some(i) => {
            let ops = K::ops(&m[i], n, 3 + 2 * i, 500 + i as u64);
            let params = backpressure(3 + i as u32, fast);
            run_kind::<K>(&m[i], simulator, None, &ops, params);
        }
        None => {
            let start = K::loaded(&m[load_in], 99);
            let ops = K::ops(&m[load_in], n / 4, 6, 42);
            let params = backpressure(5, fast / 3);
            run_kind::<K>(&m[load_in], simulator, Some(&start), &ops, params);
        }
    });
}

/// [`checked`] for the static design `cfg` against core's filter `start` (banks loaded from
/// it), or an empty one.
pub fn run_and_check(
    cfg: &HdlConfig,
    simulator: Simulator,
    start: Option<&Filter>,
    ops: &[Vec<Op>],
    params: BenchParams,
) -> sim::CheckStats {
    let empty = Filter::new(Params::new(cfg.layout, cfg.blocks).with_seed(cfg.seed));
    let from = (start.unwrap_or(&empty), start.is_some());
    checked(
        &PipelineConfig::static_filter(cfg),
        simulator,
        from,
        ops,
        params,
    )
    .stats
}

/// Random gaps and backpressure after `fast` operations at full rate; every bank entry read
/// back afterwards.
pub fn backpressure(seed: u32, fast: u32) -> BenchParams {
    BenchParams {
        fast_ops: fast,
        valid_pct: 70,
        ready_pct: 60,
        seed,
        readback: u32::MAX,
    }
}

/// Runs a tool; returns whether it succeeded and its output.
pub fn run_tool(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("start tool");
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), s)
}

/// Compiles `sources` in `dir` with Icarus Verilog (top module `top`, extra `iverilog` options)
/// and runs the result; returns whether both succeeded and the run's output.
pub fn icarus(dir: &Path, top: &str, options: &[String], sources: &[&str]) -> (bool, String) {
    let (ok, out) = run_tool(
        Command::new("iverilog")
            .current_dir(dir)
            .args(["-g2005", "-o", "sim.vvp", "-s", top])
            .args(options)
            .args(sources),
    );
    assert!(ok, "{top}: {out}");
    run_tool(Command::new("vvp").current_dir(dir).args(["-n", "sim.vvp"]))
}

/// Returns false (after a visible SKIP line) if the program `tool` is missing.
pub fn have_tool(tool: &str, what: &str) -> bool {
    on_path(tool) || {
        skip(format_args!("{what}: {tool} is not installed"));
        false
    }
}

/// Every design of `designs` passes `verilator --lint-only -Wall` (when installed).
pub fn lint(designs: &[Design]) {
    if !have_tool("verilator", "lint") {
        return;
    }
    let dir = sim::fresh_dir("lint").unwrap();
    for d in designs {
        let f = dir.join(format!("{}.v", d.top_name));
        std::fs::write(&f, &d.rtl).unwrap();
        let (ok, out) = run_tool(
            Command::new("verilator")
                .args(["--lint-only", "-Wall"])
                .arg(&f),
        );
        assert!(ok && !out.contains("%Warning"), "{}:\n{out}", d.top_name);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// [`lint`], and Yosys maps the first design's banks to iCE40 block RAM (when installed).
pub fn lint_and_synthesize(designs: &[Design]) {
    lint(designs);
    if !have_tool("yosys", "bank synthesis") {
        return;
    }
    let dir = sim::fresh_dir("synth").unwrap();
    let d = &designs[0];
    std::fs::write(dir.join(format!("{}.v", d.top_name)), &d.rtl).unwrap();
    let script = format!(
        "read_verilog {}.v; synth_ice40 -top {}; stat",
        d.top_name, d.top_name
    );
    let (ok, out) = run_tool(
        Command::new("yosys")
            .current_dir(&dir)
            .args(["-p", &script]),
    );
    assert!(ok, "{out}");
    assert!(out.contains("SB_RAM40_4K"), "no block RAM:\n{out}");
    std::fs::remove_dir_all(dir).ok();
}
