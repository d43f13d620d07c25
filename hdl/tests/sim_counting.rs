//! The counting-filter pipeline against bloomlanes-core's CountingFilter: random inserts,
//! deletes (of present and absent keys) and lookups on a few keys, often the same key back to
//! back, with input gaps and output backpressure, in Verilator and Icarus Verilog; every result
//! and every counter of every bank afterwards must equal the core's. A design without
//! forwarding must fail the same stimulus (so the stimulus exercises the forwarding).
#[macro_use]
mod common;

use std::process::Command;

use bloomlanes_core::{CounterBits, CountingFilter, Layout};
use bloomlanes_hdl::counting::op;
use bloomlanes_hdl::counting_sim::{apply_counting_op, check_counting, run_counting_ops};
use bloomlanes_hdl::sim::{self, BenchParams, Checked, Key, Op, Simulator};
use bloomlanes_hdl::{generate_counting, CountingConfig, HdlConfig, KeyMode, PipelineConfig};
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
fn counting_ops(c: &HdlConfig, n: usize, pool: usize, seed: u64) -> Vec<Op> {
    let mut rng = Rng(seed);
    let keys: Vec<_> = (0..pool).map(|_| random_key(c, &mut rng)).collect();
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
                let fresh = random_key(c, &mut rng);
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

fn empty(c: &CountingConfig) -> CountingFilter {
    CountingFilter::counting(c.pipeline().params(), c.counter_bits)
}

/// The counting filter under test: [`matrix`], [`counting_ops`], core's `CountingFilter`.
struct Counting;

impl Kind for Counting {
    const VERILATOR: Plan = (&[0, 1, 2, 3, 4], (20_000, 3000), 1);
    const ICARUS: Plan = (&[0, 1, 2], (4_000, 1000), 0);

    type Model = CountingFilter;
    type Stim = Op;

    fn matrix() -> Vec<PipelineConfig> {
        matrix().iter().map(CountingConfig::pipeline).collect()
    }

    fn ops(c: &PipelineConfig, n: usize, pool: usize, seed: u64) -> Vec<Op> {
        counting_ops(&c.base, n, pool, seed)
    }

    fn empty(c: &PipelineConfig) -> CountingFilter {
        CountingFilter::counting(c.params(), CounterBits::from_bits(c.cells.bits).unwrap())
    }

    /// Saturated counters: inserted keys, one key 40 times.
    fn loaded(c: &PipelineConfig, seed: u64) -> CountingFilter {
        let mut f = Self::empty(c);
        let mut rng = Rng(seed);
        for _ in 0..c.base.bank_entries() / 8 {
            f.insert_hash(rng.next());
        }
        for _ in 0..40 {
            f.insert_hash(seed);
        }
        assert!(f.saturated() > 0);
        f
    }

    /// Deletes accepted and refused.
    fn exercised(ops: &[Op], run: &Checked<CountingFilter>) {
        let deletes = ops
            .iter()
            .zip(&run.expected[0])
            .filter(|(o, _)| o.code == op::DELETE);
        let accepted = deletes.clone().filter(|(_, &a)| a != 0).count();
        let refused = deletes.filter(|(_, &a)| a == 0).count();
        assert!(
            accepted > 0 && refused > 0,
            "deletes: {accepted} accepted, {refused} refused"
        );
        eprintln!(
            "  deletes: {accepted} accepted, {refused} refused; {} saturated counters at the end",
            run.after.saturated()
        );
    }
}

simulator_tests!(
    Counting,
    verilator_counting_matches_core,
    icarus_counting_matches_core
);

simulator_tests!(
    Registered<Counting>,
    verilator_registered_counting_matches_core,
    icarus_registered_counting_matches_core
);

/// At full rate, for distance d = 1..=8: a fresh key inserted, d − 1 no-ops, the key looked
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
    for d in 1..=8 {
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

/// The forwarding window is exactly the operations whose writes the bank read misses: four, or
/// six with registered banks (a read of three cycles at the memory, a write one cycle late; the
/// read address's register at the memory delays the read and every stage after it alike). A
/// design without forwarding answers wrongly at distances 1 to 4 (1 to 6) and in the
/// back-to-back pattern, and correctly from distance 5 (7) on (the bank write is then
/// visible); the real design answers everything correctly (with registered banks and a window
/// one shorter, distance 6 would be answered wrongly).
#[test]
fn forwarding_is_what_makes_back_to_back_operations_correct() {
    let sims: Vec<Simulator> = [Simulator::Icarus, Simulator::Verilator]
        .into_iter()
        .filter(|s| have(*s, "forwarding test"))
        .collect();
    for s in sims {
        for registered in [false, true] {
            let mut good = ccfg(Layout::L8x32, 1000, KeyMode::Prehashed, CounterBits::Four);
            good.base.registered_banks = registered;
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
            let window = if registered { 6 } else { 4 };
            assert_eq!(
                wrong,
                (0..=window).collect(),
                "[{}, registered banks {registered}] distances answered wrongly without forwarding",
                s.name()
            );
        }
    }
}

#[test]
fn counting_rtl_is_lint_clean_and_synthesizable() {
    // Each design behind plain banks, then behind registered ones.
    let designs: Vec<_> = matrix()
        .into_iter()
        .chain(matrix().into_iter().map(|mut c| {
            c.base.registered_banks = true;
            c.base.top_name.push_str("_rb");
            c
        }))
        .map(|c| generate_counting(&c).unwrap())
        .collect();
    assert!(designs.iter().all(|d| d.rtl.contains("forwarding")));
    // The smallest design first: its counter banks must be memories, not flip-flops.
    lint_and_synthesize(&designs);
    // Configurations the pipeline cannot take are refused.
    let mut two = matrix()[0].clone();
    two.base.lookup_ports = 2;
    assert!(generate_counting(&two).is_err());
}

/// The management port of a counting design (Icarus Verilog): write every lane's counter of one
/// entry, read it back, clear every counter, read it again.
#[test]
fn management_port_writes_reads_and_clears_counters() {
    if !have(Simulator::Icarus, "management port") {
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
        let (ok, out) = icarus(&dir, "mg_tb", &[], &["dut.v", "tb.v"]);
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
    if !have(Simulator::Icarus, "exported counting bench") {
        return;
    }
    for c in [&matrix()[1], &matrix()[3]] {
        let start = Counting::loaded(&c.pipeline(), 3);
        let dir = sim::fresh_dir("cexport").unwrap();
        bloomlanes_hdl::export_counting(c, Some(&start), &dir).unwrap();
        let t = &c.base.top_name;
        let load = [format!("-P{t}_tb.LOAD_BANKS=1")];
        let (ok, out) = icarus(
            &dir,
            &format!("{t}_tb"),
            &load,
            &[&format!("{t}.v"), &format!("{t}_tb.v")],
        );
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
        let (_, out) = run_tool(
            Command::new("vvp")
                .current_dir(&dir)
                .args(["-n", "sim.vvp"]),
        );
        assert!(out.contains("FAIL: 1 of"), "{t}: {out}");
        std::fs::remove_dir_all(dir).ok();
    }
}
