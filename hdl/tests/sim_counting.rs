//! The counting-filter pipeline against bloomlanes-core's CountingFilter: random inserts,
//! deletes (of present and absent keys) and lookups on a few keys, often the same key back to
//! back, with input gaps and output backpressure, in Verilator and Icarus Verilog; every result
//! and every counter of every bank afterwards must equal the core's. A design without
//! forwarding must fail the same stimulus (so the stimulus exercises the forwarding).
mod common;

use std::process::Command;

use bloomlanes_core::{CounterBits, CountingFilter, Layout, Params};
use bloomlanes_hdl::counting::op;
use bloomlanes_hdl::counting_sim::{apply_counting_op, check_counting, run_counting_ops};
use bloomlanes_hdl::sim::{self, on_path, BenchParams, Key, Op, Simulator};
use bloomlanes_hdl::{generate_counting, CountingConfig, KeyMode};
use common::*;

fn ccfg(layout: Layout, blocks: u32, key: KeyMode, bits: CounterBits) -> CountingConfig {
    let mut base = cfg(layout, blocks, key, 1);
    base.top_name = format!("c{}_{}", bits.bits(), base.top_name);
    CountingConfig::new(base, bits)
}

fn matrix() -> Vec<CountingConfig> {
    vec![
        ccfg(Layout::L8x32, 1, KeyMode::Prehashed, CounterBits::Four),
        ccfg(Layout::L8x32, 3, KeyMode::Bytes(8), CounterBits::Four),
        ccfg(Layout::L16x64, 2, KeyMode::Bytes(13), CounterBits::Eight),
        ccfg(Layout::L8x64, 40, KeyMode::VarBytes(16), CounterBits::Four),
        ccfg(Layout::L16x32, 100, KeyMode::Prehashed, CounterBits::Eight),
    ]
}

/// `n` operations on a pool of `pool` keys (plus fresh keys: lookups and deletes of absent
/// keys); a third of the time a run of 2 to 24 operations on one key back to back (long runs
/// of inserts saturate 4-bit counters, then deletes walk them down).
fn counting_ops(c: &CountingConfig, n: usize, pool: usize, seed: u64) -> Vec<Op> {
    let mut rng = Rng(seed);
    let keys: Vec<_> = (0..pool).map(|_| random_key(&c.base, &mut rng)).collect();
    let mut ops = Vec::with_capacity(n);
    let push = |ops: &mut Vec<Op>, code: u8, key, rng: &mut Rng| {
        ops.push(Op {
            code,
            tag: rng.next() as u32,
            key,
        })
    };
    while ops.len() < n {
        let k = keys[rng.below(pool as u64) as usize].clone();
        match rng.below(12) {
            0..=3 => {
                let len = 2 + rng.below(23);
                let ins = rng.below(2) == 0;
                for _ in 0..len {
                    let code = match rng.below(8) {
                        0..=3 if ins => op::INSERT,
                        0..=3 => op::DELETE,
                        4 | 5 => op::LOOKUP,
                        6 => op::INSERT,
                        _ => op::DELETE,
                    };
                    push(&mut ops, code, k.clone(), &mut rng);
                }
            }
            4..=6 => push(&mut ops, op::INSERT, k, &mut rng),
            7 | 8 => push(&mut ops, op::DELETE, k, &mut rng),
            9 => push(&mut ops, op::LOOKUP, k, &mut rng),
            10 => {
                let fresh = random_key(&c.base, &mut rng);
                let code = if rng.below(2) == 0 {
                    op::DELETE
                } else {
                    op::LOOKUP
                };
                push(&mut ops, code, fresh, &mut rng);
            }
            _ => push(&mut ops, op::NOP, k, &mut rng),
        }
    }
    ops.truncate(n);
    ops
}

fn params(seed: u32, fast: u32) -> BenchParams {
    BenchParams {
        fast_ops: fast,
        valid_pct: 70,
        ready_pct: 60,
        seed,
        readback: u32::MAX,
    }
}

fn empty(c: &CountingConfig) -> CountingFilter {
    let b = &c.base;
    CountingFilter::counting(
        Params::new(b.layout, b.blocks).with_seed(b.seed),
        c.counter_bits,
    )
}

/// Runs and checks; also checks the documented latency and one accept per cycle while the
/// bench drives at full rate.
fn run_and_check_counting(
    c: &CountingConfig,
    simulator: Simulator,
    start: Option<&CountingFilter>,
    ops: &[Op],
    p: BenchParams,
) {
    let t0 = std::time::Instant::now();
    let design = generate_counting(c).unwrap();
    let log = run_counting_ops(c, simulator, start, ops, p).unwrap_or_else(|e| panic!("{e}"));
    let first = start.cloned().unwrap_or_else(|| empty(c));
    let (stats, after) = check_counting(c, &first, ops, &log)
        .unwrap_or_else(|e| panic!("{} [{}]: {e}", c.base.top_name, simulator.name()));
    assert_eq!(log.readback.len() as u64, c.base.bank_entries());
    assert_eq!(stats.min_latency, u64::from(design.latency_cycles));
    let acc = &log.accepted[0];
    let n = (p.fast_ops as usize).min(acc.len());
    assert_eq!(acc[n - 1] - acc[0], n as u64 - 1, "II = 1 at full rate");
    let (ins, del, refused) = ops
        .iter()
        .zip(&log.answers[0])
        .fold((0, 0, 0), |s, (o, a)| match o.code {
            op::INSERT => (s.0 + 1, s.1, s.2),
            op::DELETE if a.2 != 0 => (s.0, s.1 + 1, s.2),
            op::DELETE => (s.0, s.1, s.2 + 1),
            _ => s,
        });
    // The stimulus must exercise deletes both ways and saturation.
    assert!(
        del > 0 && refused > 0,
        "deletes: {del} accepted, {refused} refused"
    );
    eprintln!(
        "{} [{}]: {} ops ({ins} inserts, {del} deletes accepted, {refused} refused, {} \
         lookup hits), {} cycles, {} saturated counters at the end, latency {}..{}, {:.1} s",
        c.base.top_name,
        simulator.name(),
        stats.ops,
        stats.hits - ins - del,
        stats.cycles,
        after.saturated(),
        stats.min_latency,
        stats.max_latency,
        t0.elapsed().as_secs_f64()
    );
}

/// A start filter with saturated counters: inserted keys, one key 40 times.
fn loaded(c: &CountingConfig, seed: u64) -> CountingFilter {
    let mut f = empty(c);
    let mut rng = Rng(seed);
    for _ in 0..c.base.bank_entries() / 8 {
        f.insert_hash(rng.next());
    }
    for _ in 0..40 {
        f.insert_hash(seed);
    }
    f
}

#[test]
fn verilator_counting_matches_core() {
    if !have(Simulator::Verilator, "verilator_counting_matches_core") {
        return;
    }
    for (i, c) in matrix().iter().enumerate() {
        let ops = counting_ops(c, 20_000, 3 + 2 * i, 500 + i as u64);
        run_and_check_counting(
            c,
            Simulator::Verilator,
            None,
            &ops,
            params(3 + i as u32, 3000),
        );
    }
    // Banks loaded from a software filter with saturated counters.
    let c = &matrix()[1];
    let start = loaded(c, 99);
    assert!(start.saturated() > 0);
    let ops = counting_ops(c, 5_000, 6, 42);
    run_and_check_counting(c, Simulator::Verilator, Some(&start), &ops, params(5, 1000));
}

#[test]
fn icarus_counting_matches_core() {
    if !have(Simulator::Icarus, "icarus_counting_matches_core") {
        return;
    }
    for (i, c) in matrix().iter().enumerate().filter(|(i, _)| *i < 3) {
        let ops = counting_ops(c, 4_000, 4 + i, 700 + i as u64);
        run_and_check_counting(c, Simulator::Icarus, None, &ops, params(9 + i as u32, 1000));
    }
    let c = &matrix()[0];
    let start = loaded(c, 7);
    let ops = counting_ops(c, 2_000, 5, 43);
    run_and_check_counting(c, Simulator::Icarus, Some(&start), &ops, params(6, 500));
}

/// At full rate, for distance d = 1..=6: a fresh key inserted, d − 1 no-ops, the key looked
/// up, deleted, d − 1 no-ops, looked up, deleted again; then the same key back to back in a
/// mixed pattern. Returns the operations and the distance of each (0: the mixed part).
fn distance_ops(c: &CountingConfig) -> (Vec<Op>, Vec<usize>) {
    let mut rng = Rng(5);
    let mut ops = Vec::new();
    let mut dist = Vec::new();
    let mut push = |ops: &mut Vec<Op>, code, key: &Key, d| {
        ops.push(Op {
            code,
            tag: ops.len() as u32,
            key: key.clone(),
        });
        dist.push(d);
    };
    for d in 1..=6 {
        for _ in 0..4 {
            let k = random_key(&c.base, &mut rng);
            let other = random_key(&c.base, &mut rng);
            for (first, second) in [(op::INSERT, op::LOOKUP), (op::DELETE, op::LOOKUP)] {
                push(&mut ops, first, &k, d);
                for _ in 1..d {
                    push(&mut ops, op::NOP, &other, d);
                }
                push(&mut ops, second, &k, d);
            }
            push(&mut ops, op::DELETE, &k, d);
        }
    }
    let k = random_key(&c.base, &mut rng);
    let pattern = [
        op::INSERT,
        op::LOOKUP,
        op::DELETE,
        op::DELETE,
        op::LOOKUP,
        op::INSERT,
        op::INSERT,
        op::DELETE,
        op::LOOKUP,
    ];
    for i in 0..90 {
        push(&mut ops, pattern[i % pattern.len()], &k, 0);
    }
    (ops, dist)
}

/// The forwarding window is exactly four operations: a design without forwarding answers wrongly
/// at distances 1 to 4 and in the back-to-back pattern, and correctly from distance 5 on (the
/// bank write is then visible); the real design answers everything correctly.
#[test]
fn forwarding_is_what_makes_back_to_back_operations_correct() {
    let sims: Vec<Simulator> = [Simulator::Icarus, Simulator::Verilator]
        .into_iter()
        .filter(|s| have(*s, "forwarding test"))
        .collect();
    for s in sims {
        let good = ccfg(Layout::L8x32, 1000, KeyMode::Prehashed, CounterBits::Four);
        let mut bad = good.clone();
        bad.forwarding = false;
        bad.base.top_name = "c4_no_forwarding".into();
        let (ops, dist) = distance_ops(&good);
        let p = BenchParams {
            fast_ops: ops.len() as u32,
            readback: 64,
            ..BenchParams::default()
        };
        let log = run_counting_ops(&good, s, None, &ops, p).unwrap();
        check_counting(&good, &empty(&good), &ops, &log).unwrap();
        let log = run_counting_ops(&bad, s, None, &ops, p).unwrap();
        let mut core = empty(&bad);
        let mut wrong = std::collections::BTreeSet::new();
        for (i, o) in ops.iter().enumerate() {
            let want = apply_counting_op(&bad, &mut core, o);
            if (log.answers[0][i].2 != 0) != want {
                wrong.insert(dist[i]);
            }
        }
        assert_eq!(
            wrong,
            [0, 1, 2, 3, 4].into_iter().collect(),
            "[{}] distances answered wrongly without forwarding",
            s.name()
        );
    }
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("start tool");
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), s)
}

#[test]
fn counting_rtl_is_lint_clean_and_synthesizable() {
    let dir = sim::fresh_dir("clint").unwrap();
    let verilator = on_path("verilator");
    let yosys = on_path("yosys");
    if !verilator {
        eprintln!("SKIP: counting lint: verilator is not installed");
    }
    if !yosys {
        eprintln!("SKIP: counting yosys check: yosys is not installed");
    }
    for c in matrix() {
        let d = generate_counting(&c).unwrap();
        assert!(d.rtl.contains("forwarding"));
        let f = dir.join(format!("{}.v", d.top_name));
        std::fs::write(&f, &d.rtl).unwrap();
        if verilator {
            let (ok, out) = run(Command::new("verilator")
                .args(["--lint-only", "-Wall"])
                .arg(&f));
            assert!(ok && !out.contains("%Warning"), "{}:\n{out}", d.top_name);
        }
    }
    if yosys {
        // The smallest design: the counter banks must be inferred as memories, not flip-flops.
        let c = &matrix()[0];
        let d = generate_counting(c).unwrap();
        let f = dir.join(format!("{}.v", d.top_name));
        let (ok, out) = run(Command::new("yosys").arg("-p").arg(format!(
            "read_verilog {}; synth_ice40 -top {}; stat",
            f.display(),
            d.top_name
        )));
        assert!(ok, "{out}");
        assert!(out.contains("SB_RAM40_4K"), "no block RAM:\n{out}");
    }
    // Configurations the pipeline cannot take are refused.
    let mut two = matrix()[0].clone();
    two.base.lookup_ports = 2;
    assert!(generate_counting(&two).is_err());
    std::fs::remove_dir_all(dir).ok();
}

/// The management port of a counting design (Icarus Verilog): write every lane's counter of one
/// entry, read it back, clear every counter, read it again.
#[test]
fn management_port_writes_reads_and_clears_counters() {
    if !have(
        Simulator::Icarus,
        "management_port_writes_reads_and_clears_counters",
    ) {
        return;
    }
    for c in [&matrix()[0], &matrix()[2]] {
        let d = generate_counting(c).unwrap();
        let (t, aw, mb) = (
            &d.top_name,
            d.addr_bits,
            c.base.layout.lanes() as u32 * c.entry_bits(),
        );
        let kw = c.base.key.key_bits();
        let pattern = "deadbeef_c001d00d_12345678_9abcdef0";
        let tb = format!(
            "`timescale 1ns/1ps
module mg_tb;
    reg clk = 0, rst = 1, mg_req = 0, mg_clear = 0, mg_we = 0;
    reg [{a1}:0] mg_addr = 0;
    reg [{m1}:0] mg_wdata = 0;
    wire mg_ack, busy, s0_ready, m0_valid, m0_hit;
    wire [{m1}:0] mg_rdata;
    wire [{t1}:0] m0_tag;
    integer fails = 0;
    always #5 clk = ~clk;
    {t} dut (.clk(clk), .rst(rst), .busy(busy), .mg_req(mg_req), .mg_clear(mg_clear),
        .mg_we(mg_we), .mg_addr(mg_addr), .mg_wdata(mg_wdata), .mg_ack(mg_ack),
        .mg_rdata(mg_rdata), .s0_valid(1'b0), .s0_ready(s0_ready), .s0_op(2'd0),
        .s0_tag({tw}'d0), .s0_key({kw}'d0), .m0_valid(m0_valid), .m0_ready(1'b1),
        .m0_hit(m0_hit), .m0_tag(m0_tag));
    task access;
        input clear, we;
        input [{a1}:0] addr;
        begin
            mg_clear <= clear; mg_we <= we; mg_addr <= addr; mg_req <= 1;
            @(posedge clk);
            while (!mg_ack) @(posedge clk);
            mg_req <= 0;
            @(posedge clk);
        end
    endtask
    initial begin
        repeat (4) @(posedge clk);
        rst <= 0;
        mg_wdata <= {mb}'h{pattern};
        access(0, 1, 3);
        access(0, 0, 3);
        if (mg_rdata !== {mb}'h{pattern}) begin fails = fails + 1; $display(\"FAIL: read %h\", mg_rdata); end
        access(0, 0, 2);
        if (mg_rdata !== 0) begin fails = fails + 1; $display(\"FAIL: entry 2 is %h\", mg_rdata); end
        access(1, 0, 0);
        access(0, 0, 3);
        if (mg_rdata !== 0) begin fails = fails + 1; $display(\"FAIL: after clear %h\", mg_rdata); end
        if (fails == 0) $display(\"PASS\");
        $finish;
    end
endmodule
",
            a1 = aw - 1,
            m1 = mb - 1,
            t1 = c.base.tag_bits - 1,
            tw = c.base.tag_bits,
        );
        let dir = sim::fresh_dir("cmg").unwrap();
        std::fs::write(dir.join("dut.v"), &d.rtl).unwrap();
        std::fs::write(dir.join("tb.v"), tb).unwrap();
        let (ok, out) = run(Command::new("iverilog")
            .current_dir(&dir)
            .args(["-g2005", "-o", "mg.vvp", "-s", "mg_tb", "dut.v", "tb.v"]));
        assert!(ok, "{out}");
        let (ok, out) = run(Command::new("vvp").current_dir(&dir).args(["-n", "mg.vvp"]));
        assert!(
            ok && out.contains("PASS") && !out.contains("FAIL"),
            "{t}: {out}"
        );
        std::fs::remove_dir_all(dir).ok();
    }
}

/// The exported folder runs as documented: banks of a software filter loaded, every expected
/// result (core's) met.
#[test]
fn exported_counting_bench_passes_in_icarus() {
    if !have(
        Simulator::Icarus,
        "exported_counting_bench_passes_in_icarus",
    ) {
        return;
    }
    for c in [&matrix()[1], &matrix()[3]] {
        let start = loaded(c, 3);
        let dir = sim::fresh_dir("cexport").unwrap();
        bloomlanes_hdl::export_counting(c, Some(&start), &dir).unwrap();
        let t = &c.base.top_name;
        let (ok, out) = run(Command::new("iverilog").current_dir(&dir).args([
            "-g2005".to_string(),
            "-s".into(),
            format!("{t}_tb"),
            format!("-P{t}_tb.LOAD_BANKS=1"),
            "-o".into(),
            "sim.vvp".into(),
            format!("{t}.v"),
            format!("{t}_tb.v"),
        ]));
        assert!(ok, "{out}");
        let (ok, out) = run(Command::new("vvp")
            .current_dir(&dir)
            .args(["-n", "sim.vvp"]));
        let want = format!("PASS: {} answers", bloomlanes_hdl::COUNTING_BENCH_OPS);
        assert!(ok && out.contains(&want), "{t}: {out}");
        // A flipped expectation is reported.
        let p = dir.join("bench_expect_p0.hex");
        let mut lines: Vec<String> = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        lines[7] = if lines[7] == "1" { "0" } else { "1" }.to_string();
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let (_, out) = run(Command::new("vvp")
            .current_dir(&dir)
            .args(["-n", "sim.vvp"]));
        assert!(out.contains("FAIL: 1 of"), "{t}: {out}");
        std::fs::remove_dir_all(dir).ok();
    }
}
