//! Exporting a retrieval design into a folder: its banks loaded from a software
//! [`RetrievalTable`] (one bank per cell of a key), a self-checking stimulus of lookups of the
//! table's keys and of absent ones whose expected answers come from `bloomlanes-core`, and the
//! kit every export has (report, README, Makefile, board tops, AXI wrapper, cocotb bench, formal
//! harness). A retrieval table is static: operations 1 to 3 are no-ops (answer 0), so the
//! self-test board top (below) looks keys up in the banks loaded from the exported files and
//! compares every answer with the one baked into `<top>_selftest.hex`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bloomlanes_core::retrieval::RetrievalTable;
use bloomlanes_core::HashId;

use crate::banks::write_cell_bank_files;
use crate::geo::{range, Geo};
use crate::pins::{connect, core_pins};
use crate::report::{export_pipeline, ExportSummary};
use crate::retrieval::{answer_word, RetrievalBanks};
use crate::sim::{key_hash, stim_word, Key, Op};
use crate::stimulus::{bench_rng, write_expected, SplitMix64, EXPORT_BENCH_OPS};
use crate::{op, HdlError, PipelineConfig};

/// Lookups of the retrieval self-test board top (lines of `<top>_selftest.hex`).
pub const RETRIEVAL_SELFTEST_LOOKUPS: usize = 64;

/// Random keys the stimulus may draw, per key it wants, when it looks for keys the table finds
/// (no built keys given): enough for tables of up to about 10 check bits.
const DRAWS_PER_FOUND_KEY: usize = 1 << 10;

/// Checks that `cfg` is the retrieval design of `table`: its shape, the seed of its key hash and
/// XXH64.
fn check(cfg: &PipelineConfig, table: &RetrievalTable) -> Result<(), HdlError> {
    let (p, s) = (table.params(), table.shape());
    if cfg.retrieval.as_ref() != Some(s) || p.seed != cfg.base.seed {
        return Err(HdlError::Mismatch(format!(
            "table is {s:?} with key hash seed {}; the configuration is {:?} with seed {}",
            p.seed, cfg.retrieval, cfg.base.seed
        )));
    }
    if p.hash != HashId::Xxh64 {
        return Err(HdlError::Mismatch(format!(
            "table uses hash {:?}; the hardware computes XXH64",
            p.hash
        )));
    }
    Ok(())
}

/// The keys the stimulus looks up as present: `keys` (the table's built keys as the design
/// takes them) when given, else random keys that `table` finds (with `f` check bits one in
/// `2^f`; every key when `f = 0`), at most `want`, drawn from `rng` within a bounded budget.
fn present_keys(
    cfg: &PipelineConfig,
    table: &RetrievalTable,
    keys: &[Key],
    rng: &mut SplitMix64,
    want: usize,
) -> Vec<Key> {
    if !keys.is_empty() {
        return keys.to_vec();
    }
    let mut found = Vec::new();
    for _ in 0..want * DRAWS_PER_FOUND_KEY {
        if found.len() == want {
            break;
        }
        let k = rng.key(cfg.base.key);
        if table.get_hash(key_hash(&cfg.base, &k)).is_some() {
            found.push(k);
        }
    }
    found
}

/// Writes the retrieval design `cfg` ([`PipelineConfig::retrieval`] of `table`'s shape, one
/// port) of `table` into `dir` (created if needed): the RTL and benches, one bank file per cell
/// of a key holding `table`'s cells, a stimulus of lookups (60 % of keys the table holds:
/// `keys`, its built keys as the design takes them, or when `keys` is empty random keys it
/// finds; 30 % random keys; 10 % no-ops of codes 1 to 3) whose expected answers are core's
/// (`{found, value}`, 0 when absent), `<top>_selftest.hex` (the first
/// [`RETRIEVAL_SELFTEST_LOOKUPS`] lookups with their answers, for the self-test board top) and
/// the kit of [`crate::export`]. With `synth`, synthesis figures when Yosys is installed.
/// Returns what was written.
pub fn export_retrieval_kit(
    cfg: &PipelineConfig,
    table: &RetrievalTable,
    keys: &[Key],
    dir: &Path,
    synth: bool,
) -> Result<ExportSummary, HdlError> {
    cfg.validate()?;
    check(cfg, table)?;
    export_pipeline(cfg, dir, synth, |design, dir| {
        let banks = RetrievalBanks(table);
        let mut paths = write_cell_bank_files(cfg, &banks, dir)?;
        let mut rng = bench_rng(cfg.base.seed);
        let present = present_keys(cfg, table, keys, &mut rng, EXPORT_BENCH_OPS / 2);
        let mut ops = Vec::with_capacity(EXPORT_BENCH_OPS);
        while ops.len() < EXPORT_BENCH_OPS {
            let r = rng.below(10);
            let (code, key) = match r {
                0..=5 if !present.is_empty() => {
                    let k = &present[rng.below(present.len() as u64) as usize];
                    (op::LOOKUP, k.clone())
                }
                9 => (1 + rng.below(3) as u8, rng.key(cfg.base.key)),
                _ => (op::LOOKUP, rng.key(cfg.base.key)),
            };
            let tag = ops.len() as u32;
            ops.push(Op { code, tag, key });
        }
        paths.push(write_selftest_lines(
            cfg,
            table,
            &ops,
            dir,
            &design.top_name,
        )?);
        paths.extend(write_expected(cfg, &banks, &[ops], dir)?);
        Ok(paths)
    })
}

/// Writes `<top>_selftest.hex`: the first [`RETRIEVAL_SELFTEST_LOOKUPS`] lookups of `ops`, one
/// a line, as a stimulus word (see [`stim_word`]) whose tag field holds the answer core gives:
/// `{2'b00, answer, length, key}`. Returns its path.
fn write_selftest_lines(
    cfg: &PipelineConfig,
    table: &RetrievalTable,
    ops: &[Op],
    dir: &Path,
    top: &str,
) -> Result<PathBuf, HdlError> {
    let mut line_cfg = cfg.base.clone();
    line_cfg.tag_bits = cfg.cells.answer_bits();
    let v = table.shape().value_bits;
    let mut text = String::new();
    for o in ops
        .iter()
        .filter(|o| o.code == op::LOOKUP)
        .take(RETRIEVAL_SELFTEST_LOOKUPS)
    {
        let answer = answer_word(table.get_hash(key_hash(&cfg.base, &o.key)), v);
        let line = Op {
            code: op::LOOKUP,
            tag: answer,
            key: o.key.clone(),
        };
        let _ = writeln!(text, "{}", stim_word(&line_cfg, 0, &line, 0)?);
    }
    if text.lines().count() != RETRIEVAL_SELFTEST_LOOKUPS {
        return Err(HdlError::InvalidConfig(format!(
            "the self-test needs {RETRIEVAL_SELFTEST_LOOKUPS} lookups; the stimulus has fewer"
        )));
    }
    let path = dir.join(format!("{top}_selftest.hex"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The self-test board top of a retrieval design (`<top>_selftest`), into `v`: the core with its
/// banks loaded from the exported files, [`RETRIEVAL_SELFTEST_LOOKUPS`] lookups of the keys of
/// `<top>_selftest.hex` at one per clock, each answer compared with the one on its line.
pub(crate) fn selftest(v: &mut String, g: &Geo) {
    let t = &g.top;
    let (kw, ab) = (g.kw, g.ans_bits);
    let lw = if g.var_len { crate::front::LEN_BITS } else { 0 };
    let sw = 2 + ab + lw + kw;
    let n = RETRIEVAL_SELFTEST_LOOKUPS;
    let ib = n.trailing_zeros();
    let _ = writeln!(
        v,
        "// Self-test of a retrieval table (static: operations 1 to 3 change nothing): the banks start
// from the exported bank files (LOAD_BANKS = 1), then the {n} keys of {t}_selftest.hex (keys the
// table holds and absent ones) are looked up at one per clock, and each answer m0_{ans} is
// compared with the one core gave, on the same line ({{2'b00, answer, {len}key}}). led[0] = pass
// (every answer came and equalled core's), led[1] = done, led[2] = some key was found,
// led[7:3] = heartbeat.
module {t}_selftest (
    input  wire clk,
    output wire [7:0] led
);
    localparam [{ib}:0] LOOKUPS = {ib1}'d{n};
    reg [{sw1}:0] rom [0:{n1}];
    initial $readmemh(\"{t}_selftest.hex\", rom);
    reg [7:0] por = 8'd0;
    wire rst = ~por[7];
    always @(posedge clk) if (!por[7]) por <= por + 8'd1;
    reg [{ib}:0] sent = {ib1}'d0;
    reg [{ib}:0] answered = {ib1}'d0;
    reg [{ib}:0] good = {ib1}'d0;
    reg found = 1'b0;
    reg pass = 1'b0;
    reg done = 1'b0;
    reg all_answered = 1'b0;
    reg all_good = 1'b0;
    reg [25:0] beat = 26'd0;
    wire busy;
    wire sending = ~rst & (sent != LOOKUPS);
    wire [{sw1}:0] line = rom[sent[{ibm}:0]];
    wire s0_ready;
    wire m0_valid;
    wire {ar}m0_{ans};
    wire [{tw1}:0] m0_tag;
    wire [{kw1}:0] s0_key = line[{kw1}:0];",
        ans = g.ans_name,
        len = if g.var_len { "length, " } else { "" },
        ib1 = ib + 1,
        sw1 = sw - 1,
        n1 = n - 1,
        ibm = ib - 1,
        ar = range(ab),
        tw1 = g.tw - 1,
        kw1 = kw - 1,
    );
    if g.var_len {
        let _ = writeln!(
            v,
            "    wire [{}:0] s0_len = line[{}:{kw}];",
            lw - 1,
            kw + lw - 1
        );
    }
    let conns = connect(&core_pins(g), |p| match p.role {
        "mg_req" | "mg_clear" | "mg_we" => "1'b0".to_string(),
        "mg_addr" | "mg_wdata" => format!("{}'d0", p.width),
        "mg_ack" | "mg_rdata" => String::new(),
        "s_valid" => "sending".to_string(),
        "s_op" => format!("2'd{}", op::LOOKUP),
        "s_tag" => format!("{}'d0", p.width),
        "m_ready" => "1'b1".to_string(),
        _ => p.name.clone(),
    });
    let _ = writeln!(
        v,
        "    {t} #(.LOAD_BANKS(1)) u_filter (
        {conns}
    );
    // Answers are registered before they are compared (the filter's outputs may come straight
    // from its answer FIFO's memory).
    reg ans_valid = 1'b0;
    reg {ar}ans = {ab}'d0;
    wire [{sw1}:0] want_line = rom[answered[{ibm}:0]];
    wire {ar}want = want_line[{hi}:{lo}];
    always @(posedge clk) begin
        ans_valid <= m0_valid;
        ans <= m0_{name};
    end
    always @(posedge clk) begin
        beat <= beat + 26'd1;
        if (rst) begin
            sent <= {ib1}'d0;
            answered <= {ib1}'d0;
            good <= {ib1}'d0;
            found <= 1'b0;
            all_answered <= 1'b0;
            all_good <= 1'b0;
            pass <= 1'b0;
            done <= 1'b0;
        end else begin
            if (sending & s0_ready) sent <= sent + {ib1}'d1;
            if (ans_valid) begin
                answered <= answered + {ib1}'d1;
                if (ans == want) good <= good + {ib1}'d1;
                if (|ans) found <= 1'b1;
            end
            all_answered <= (answered == LOOKUPS);
            all_good <= (good == LOOKUPS);
            done <= all_answered;
            pass <= all_answered & all_good;
        end
    end
    assign led = {{beat[25:21], found, done, pass}};
    wire unused_ok = &{{1'b0, busy, m0_tag, line[{sw1}:{kl}], want_line[{sw1}:{hi1}], want_line[{kl1}:0]}};
endmodule
",
        name = g.ans_name,
        ar = range(ab),
        sw1 = sw - 1,
        ibm = ib - 1,
        ib1 = ib + 1,
        hi = kw + lw + ab - 1,
        hi1 = kw + lw + ab,
        lo = kw + lw,
        kl = kw + lw,
        kl1 = kw + lw - 1,
    );
}
