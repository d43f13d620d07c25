//! The ECP5 form of the registered banks (DP16KD tiles with `REGMODE = "OUTREG"`, selected by
//! `BLOOMLANES_ECP5_EBR`; `NOREG` tiles of plain banks cut side by side) answers exactly like
//! the portable inferred bank, cycle by cycle, for
//! every DP16KD width the generator picks (1, 2, 4, 9 and 18 bits; several tiles per bank, deep
//! or side by side), in Icarus
//! Verilog with a behavioural DP16KD (Yosys ships only a black box). The model follows the
//! address convention of Yosys's own DP16KD mapping (`brams_map_16kd.v`: the address pins count
//! bits, entry `e` of a `w`-bit port at `e << log2(w)`, byte enables in the two low pins at width
//! 18), so this checks the tiling, the write decode and the read multiplexer, not the silicon.
mod common;

use std::fmt::Write as _;
use std::process::Command;

use bloomlanes_core::retrieval::Shape;
use bloomlanes_core::{CounterBits, Layout, Params, SpatialFilter};
use bloomlanes_hdl::sim::{self, BenchParams, Op, Simulator};
use bloomlanes_hdl::{generate_pipeline, CellSpec, KeyMode, PipelineConfig};
use common::*;

/// A behavioural DP16KD: what the bank uses of it (one data width on both ports, NORMAL write
/// mode: a write leaves the output, NOREG or OUTREG).
fn dp16kd_model() -> String {
    let mut pins = Vec::new();
    for p in ["A", "B"] {
        for i in 0..18 {
            pins.push(format!("DI{p}{i}"));
        }
        for i in 0..14 {
            pins.push(format!("AD{p}{i}"));
        }
        for n in ["CE", "OCE", "CLK", "WE", "RST"] {
            pins.push(format!("{n}{p}"));
        }
        for i in 0..3 {
            pins.push(format!("CS{p}{i}"));
        }
        for i in 0..18 {
            pins.push(format!("DO{p}{i}"));
        }
    }
    let mut v = format!(
        "module DP16KD({});\n    parameter DATA_WIDTH_A = 18;\n    parameter DATA_WIDTH_B = 18;\n    parameter REGMODE_A = \"NOREG\";\n    parameter REGMODE_B = \"NOREG\";\n    parameter WRITEMODE_A = \"NORMAL\";\n    parameter WRITEMODE_B = \"NORMAL\";\n    parameter RESETMODE = \"SYNC\";\n    parameter CSDECODE_A = \"0b000\";\n    parameter CSDECODE_B = \"0b000\";\n    reg [17:0] m [0:16383];\n    integer i;\n    initial for (i = 0; i < 16384; i = i + 1) m[i] = 18'd0;\n    function integer shift(input integer w);\n        shift = (w == 1) ? 0 : (w == 2) ? 1 : (w == 4) ? 2 : (w == 9) ? 3 : 4;\n    endfunction\n",
        pins.join(", ")
    );
    for p in ["A", "B"] {
        let list = |name: &str, n: usize| {
            (0..n)
                .rev()
                .map(|i| format!("{name}{p}{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(
            v,
            "    input {di}, {ad}, CE{p}, OCE{p}, CLK{p}, WE{p}, RST{p}, CS{p}0, CS{p}1, CS{p}2;
    output {dout};
    wire [17:0] di{p} = {{{di}}};
    wire [13:0] ad{p} = {{{ad}}};
    wire [13:0] e{p} = ad{p} >> shift(DATA_WIDTH_{p});
    wire [17:0] mask{p} = (18'd1 << DATA_WIDTH_{p}) - 18'd1;
    reg [17:0] q{p}, o{p};
    always @(posedge CLK{p}) if (CE{p}) begin
        if (WE{p}) m[e{p}] <= di{p} & mask{p};
        else q{p} <= m[e{p}];
    end
    always @(posedge CLK{p}) if (OCE{p}) o{p} <= q{p};
    assign {{{dout}}} = (REGMODE_{p} == \"OUTREG\") ? o{p} : q{p};
",
            di = list("DI", 18),
            ad = list("AD", 14),
            dout = list("DO", 18),
        );
    }
    v.push_str("endmodule\n");
    v
}

/// A bench for bank module `module` (ports from its header): random writes and reads for
/// `cycles` cycles, half of them on 16 hot entries spread over the bank (back-to-back writes
/// and reads of one entry, every tile), printing every read's data (port A's read data of a
/// write cycle, which the pipeline never uses, as `-`: the inferred bank holds its last read,
/// a tile its own; port A's read data is `lag` cycles behind its address).
fn bank_bench(
    module: &str,
    header: &str,
    (cell, aw, depth): (u32, u32, u64),
    lag: u32,
    cycles: u32,
) -> String {
    let (read_a, has_b) = (header.contains("a_dout"), header.contains("b_addr"));
    let mut hot = String::new();
    for i in 0..16u64 {
        let _ = writeln!(
            hot,
            "            4'd{i}: pick = {aw}'d{};",
            (i * depth / 16 + i % 3).min(depth - 1)
        );
    }
    let conns = [
        Some(".clk(clk), .a_we(a_we), .a_din(a_din), .a_addr(a_addr)"),
        read_a.then_some(".a_dout(a_dout)"),
        has_b.then_some(".b_addr(b_addr), .b_dout(b_dout)"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    format!(
        "module tb;
    reg clk = 1'b0;
    always #5 clk = ~clk;
    reg a_we = 1'b0;
    reg [{c1}:0] a_din = 0;
    reg [{a1}:0] a_addr = 0, b_addr = 0;
    wire [{c1}:0] a_dout, b_dout;
    {module} #(.LOAD(0)) dut ({conns});
    integer seed = 7, cyc;
    reg [{lag}:0] wrote = 0;  // a_we of the last cycles; port A's read data is {lag} behind
    function [{a1}:0] pick(input [31:0] r);
        if (r[4]) pick = r[31:8] % {depth};
        else case (r[3:0])
{hot}            default: pick = 0;
        endcase
    endfunction
    initial begin
        for (cyc = 0; cyc < {cycles}; cyc = cyc + 1) begin
            @(negedge clk);
            a_we = ($random(seed) & 3) == 0;
            a_din = $random(seed);
            a_addr = pick($random(seed));
            b_addr = pick($random(seed));
            wrote = {{wrote[{lag1}:0], a_we}};
            if (cyc > 8 && wrote[{lag}]) $display(\"%0d - %h\", cyc, {bd});
            else if (cyc > 8) $display(\"%0d %h %h\", cyc, {ad}, {bd});
        end
        $finish;
    end
endmodule
",
        c1 = cell - 1,
        a1 = aw - 1,
        lag1 = lag - 1,
        ad = if read_a { "a_dout" } else { "1'b0" },
        bd = if has_b { "b_dout" } else { "1'b0" },
    )
}

#[test]
fn ecp5_tiles_answer_like_the_inferred_bank() {
    if !have(
        Simulator::Icarus,
        "ECP5 DP16KD tiles against the inferred bank",
    ) {
        return;
    }
    // A prehashed design of `blocks` blocks and `ports` ports, its top named `name`.
    let named = |layout, blocks, ports, name: &str| {
        let mut c = cfg(layout, blocks, KeyMode::Prehashed, ports);
        c.top_name = name.into();
        c
    };
    let counting = named(Layout::L8x32, 100, 1, "ebr_c8");
    let counting5 = named(Layout::L8x32, 300, 1, "ebr_c8x5");
    let spatial = named(Layout::L8x32, 40, 1, "ebr_s16");
    let one = named(Layout::L8x32, 1024, 1, "ebr_1p");
    let grid = named(Layout::L8x32, 1024, 1, "ebr_s4");
    let three = named(Layout::L8x64, 300, 3, "ebr_3p");
    let mut table = named(Layout::L8x32, 1, 1, "ebr_r8");
    let (segment_bits, segment_count) = Shape::sized(16_384, 4, 0).unwrap();
    let shape = Shape {
        value_bits: 8,
        check_bits: 8,
        arity: 4,
        segment_bits,
        segment_count,
        seed: 5,
    };
    let designs = [
        // 1-bit cells, 32 Ki entries: two 16 Ki x 1 tiles; port A reads and writes.
        PipelineConfig::static_filter(&one),
        // 1-bit cells, 19 200 entries, 3 ports: port B reads, two kinds of bank.
        PipelineConfig::static_filter(&three),
        // 8-bit counters, 3200 entries: two 4 Ki x 4 tiles side by side.
        PipelineConfig::new(counting, CellSpec::counting(CounterBits::Eight)),
        // 8-bit counters, 9600 entries: eight 16 Ki x 1 tiles side by side.
        PipelineConfig::new(counting5, CellSpec::counting(CounterBits::Eight)),
        // 16-bit classes, 1280 entries: two 2 Ki x 9 tiles side by side, 7 bits of one unused.
        PipelineConfig::spatial(spatial, 16),
        // 4-bit classes, 32 Ki entries: a grid of 2 deep x 4 wide 16 Ki x 1 tiles (a pick of
        // two; a column of eight 4 Ki x 4 before), port B's read address registered.
        PipelineConfig::spatial(grid, 4),
        // The 16384-key retrieval table's 16-bit cells, 5120 a bank: eight 8 Ki x 2 tiles side
        // by side (a column of five 1 Ki x 18 tiles before, read through a 5-tile pick).
        PipelineConfig::retrieval(table.clone(), shape),
    ];
    // Plain, the same retrieval banks: NOREG tiles side by side (Yosys would stack five).
    table.top_name = "ebr_r8_plain".into();
    let plain = [PipelineConfig::retrieval(table, shape)];
    let designs = designs.into_iter().map(|c| (c, true));
    let model = dp16kd_model();
    let dir = sim::fresh_dir("ecp5_bank").unwrap();
    std::fs::write(dir.join("dp16kd.v"), &model).unwrap();
    let mut checked = 0;
    for (mut c, registered) in designs.chain(plain.into_iter().map(|c| (c, false))) {
        c.base.registered_banks = registered;
        let d = generate_pipeline(&c).unwrap();
        let mode = if registered { "OUTREG" } else { "NOREG" };
        assert!(
            d.rtl.contains(&format!("REGMODE_A(\"{mode}\")")),
            "{}",
            d.top_name
        );
        // The tile is picked by a case per tile: a computed part-select (`sel * 18 +: c`)
        // synthesises to a multiplier and a shifter on the read path.
        assert!(!d.rtl.contains("_sel2 * 18"), "{}", d.top_name);
        let file = format!("{}.v", d.top_name);
        std::fs::write(dir.join(&file), &d.rtl).unwrap();
        let depth = c.bank_shape().0;
        let prefix = format!("module {}_bank_", d.top_name);
        for (at, _) in d.rtl.match_indices(&prefix) {
            let header = &d.rtl[at..at + d.rtl[at..].find(");").unwrap()];
            let module = header[7..].split_whitespace().next().unwrap();
            // Four cycles where the bank registers its read address with the writes (a
            // write-through design's port A), else three.
            let body = &d.rtl[at..at + d.rtl[at..].find("endmodule").unwrap()];
            let lag = if !registered {
                2
            } else if body.contains("a_addr_m <= a_addr") && header.contains("a_dout") {
                4
            } else {
                3
            };
            if registered && header.contains("b_addr") {
                assert!(body.contains("b_addr_m <= b_addr"), "{module}");
            }
            if d.top_name == "ebr_s4" {
                assert!(body.contains("2 x 4 DP16KD tile(s) of 16384 x 1"), "{body}");
            }
            let shape = (c.cells.bits, d.addr_bits, depth);
            let bench = bank_bench(module, header, shape, lag, 4000);
            std::fs::write(dir.join("tb.v"), &bench).unwrap();
            let sources = [file.as_str(), "tb.v"];
            let (ok, inferred) = icarus(&dir, "tb", &[], &sources);
            assert!(ok, "{module}: {inferred}");
            let ebr = ["-DBLOOMLANES_ECP5_EBR".to_string()];
            let (ok, tiles) = icarus(&dir, "tb", &ebr, &[&file, "tb.v", "dp16kd.v"]);
            assert!(ok, "{module} (DP16KD): {tiles}");
            let lines = inferred.lines().filter(|l| !l.contains("$finish")).count();
            assert!(lines > 3900, "{module}: {lines} lines\n{inferred}");
            assert!(!inferred.contains('x'), "{module}: unknown read data");
            for (i, (a, b)) in inferred.lines().zip(tiles.lines()).enumerate() {
                assert_eq!(a, b, "{module}, line {i}: inferred vs DP16KD tiles");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 9, "bank modules checked");
    std::fs::remove_dir_all(dir).ok();
}

/// The registered spatial pipeline of the ECP5 measurements (8x32, 1024 blocks, 4-bit classes:
/// banks of 2 x 4 tiles of 16 Ki x 1, port B's read address registered at the memory, a
/// forwarding window of six) runs on the behavioural DP16KD tiles and answers like core's
/// `SpatialFilter` at one operation per clock: for distance d = 1..=8 a fresh key inserted
/// twice (the second class higher), each looked up d operations later (read-after-write at
/// every distance of the window and past it), then random inserts and lookups on three keys,
/// mostly back to back on one key; then the first 2048 entries read back. Without forwarding
/// the same stimulus fails.
#[test]
fn ecp5_tiles_run_the_registered_spatial_pipeline() {
    if !have(
        Simulator::Icarus,
        "registered spatial pipeline on DP16KD tiles",
    ) {
        return;
    }
    let mut base = cfg(Layout::L8x32, 1024, KeyMode::Prehashed, 1);
    base.top_name = "ebr_pipe_s4".into();
    base.registered_banks = true;
    let good = PipelineConfig::spatial(base, 4);
    let mut rng = Rng(23);
    let mut ops = Vec::new();
    let push = |ops: &mut Vec<_>, code: u8, key: &sim::Key, class: u32| {
        let tag = ops.len() as u32;
        ops.push((
            Op {
                code,
                tag,
                key: key.clone(),
            },
            class,
        ));
    };
    for d in 1..=8 {
        for _ in 0..3 {
            let (k, other) = (
                random_key(&good.base, &mut rng),
                random_key(&good.base, &mut rng),
            );
            for class in [3, 9 + rng.below(7) as u32] {
                push(&mut ops, 1, &k, class);
                for _ in 1..d {
                    push(&mut ops, 0, &other, 0);
                }
                push(&mut ops, 0, &k, 0);
            }
        }
    }
    let keys: Vec<_> = (0..3).map(|_| random_key(&good.base, &mut rng)).collect();
    while ops.len() < 1500 {
        let key = &keys[rng.below(3) as usize];
        for _ in 0..1 + rng.below(10) {
            let code = rng.below(2) as u8;
            let class = if code == 1 {
                1 + rng.below(15) as u32
            } else {
                0
            };
            push(&mut ops, code, key, class);
        }
    }
    let names: Vec<String> = (1..=15).map(|c| format!("c{c}")).collect();
    let empty = SpatialFilter::new(Params::new(Layout::L8x32, 1024), 4, &names).unwrap();
    let model = dp16kd_model();
    let params = BenchParams {
        fast_ops: ops.len() as u32,
        readback: 2048,
        ..BenchParams::default()
    };
    let mut bad = good.clone();
    bad.forwarding = false;
    for (c, forwarding) in [(&good, true), (&bad, false)] {
        let d = generate_pipeline(c).unwrap();
        assert!(d.rtl.contains("2 x 4 DP16KD tile(s) of 16384 x 1"));
        assert!(d.rtl.contains("b_addr_m <= b_addr"));
        let dir = sim::fresh_dir("ecp5_pipe").unwrap();
        let stim = [ops.clone()];
        sim::write_run_files(c, &d, None::<&SpatialFilter>, &stim, params, &dir).unwrap();
        std::fs::write(dir.join("dp16kd.v"), &model).unwrap();
        let top = &d.top_name;
        let options = [
            "-DBLOOMLANES_ECP5_EBR".to_string(),
            format!("-P{top}_tb.MAX_OPS={}", ops.len()),
            format!("-P{top}_tb.LOAD_BANKS=0"),
        ];
        let (v, tb) = (format!("{top}.v"), format!("{top}_tb.v"));
        let (ok, out) = icarus(&dir, &format!("{top}_tb"), &options, &[&v, &tb, "dp16kd.v"]);
        assert!(ok, "{top}: {out}");
        let text = std::fs::read_to_string(dir.join("bench_log.txt")).unwrap();
        let log = sim::parse_log(&text, 1).unwrap();
        assert_eq!(log.readback.len(), 2048);
        let checked = sim::check_pipeline(c, &empty, &stim, &log);
        if forwarding {
            let (stats, _, _) = checked.unwrap();
            // One operation per clock, each answered the documented latency later.
            let acc = &log.accepted[0];
            assert_eq!(acc[acc.len() - 1] - acc[0], acc.len() as u64 - 1);
            assert_eq!(stats.min_latency, u64::from(d.latency_cycles));
            assert_eq!(stats.max_latency, u64::from(d.latency_cycles));
            eprintln!(
                "{top} on DP16KD tiles: {} ops, {} answers not 0, latency {}",
                stats.ops, stats.hits, stats.min_latency
            );
        } else {
            assert!(checked.is_err(), "the design without forwarding passed");
        }
        std::fs::remove_dir_all(dir).ok();
    }
}

/// A spatial design of 1024 blocks behind registered banks (8 tiles a lane) gets the ECP5-85k
/// floorplan: the export writes `fpga/ecp5_floorplan.ys`, the Makefile's ECP5 synthesis runs it
/// (and not with `FLOORPLAN=`, nor for the memory-only reference), and with Yosys the netlist
/// has every DP16KD pinned to its own site and each lane its own copy of the block address
/// (before, Yosys merged the lanes' copies into one register driving all 64 tiles).
#[test]
fn a_floorplan_pins_the_tiles_and_keeps_a_block_address_per_lane() {
    let mut c = cfg(Layout::L8x32, 1024, KeyMode::Prehashed, 1);
    c.registered_banks = true;
    c.top_name = "fp".into();
    let dir = sim::fresh_dir("ecp5_floorplan").unwrap();
    export_kind("spatial", &c, &dir);
    let script = std::fs::read_to_string(dir.join("fpga/ecp5_floorplan.ys"))
        .expect("a floorplan for 8 tiles a lane");
    assert_eq!(script.matches("setattr -set BEL").count(), 64);
    if !sim::on_path("make") {
        skip(format_args!(
            "a_floorplan_pins_the_tiles...: make is not installed"
        ));
        std::fs::remove_dir_all(dir).ok();
        return;
    }
    let make = |args: &[&str]| run_tool(Command::new("make").current_dir(&dir).args(args));
    let json = "build/fp_wrap_ecp5.json";
    let (ok, out) = make(&["-n", json, "TOP=wrap"]);
    assert!(
        ok && out.contains("flatten; script fpga/ecp5_floorplan.ys; synth_ecp5"),
        "{out}"
    );
    let (ok, out) = make(&["-n", json, "TOP=wrap", "FLOORPLAN="]);
    assert!(ok && !out.contains("ecp5_floorplan"), "{out}");
    let (ok, out) = make(&["-n", "build/fp_bramref_ecp5.json"]);
    assert!(ok && !out.contains("ecp5_floorplan"), "{out}");
    if test_may_run("a_floorplan_pins_the_tiles... (synthesis)", "yosys") {
        let (ok, out) = make(&["-s", json, "TOP=wrap"]);
        assert!(ok, "make {json}:\n{out}");
        let netlist = std::fs::read_to_string(dir.join(json)).unwrap();
        let bels: std::collections::BTreeSet<&str> = netlist
            .split("\"BEL\": \"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect();
        assert_eq!(bels.len(), 64, "{bels:?}");
        assert_eq!(netlist.matches("\"type\": \"DP16KD\"").count(), 64);
        // Every lane keeps the 14 tile address bits of its read address's register (merged,
        // lanes other than one kept only their 5 cell bits).
        for lane in 0..8 {
            let prefix = format!("\"u_core.u_bank_r0_l{lane}.b_addr_m_TRELLIS_FF_Q");
            let n = netlist.matches(&prefix).count();
            assert!(n >= 14, "lane {lane}: {n} flip-flops of b_addr_m");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}
