//! The retrieval table (`docs/FORMAT.md` §9, core's `bloomlanes_core::retrieval`) as an
//! instance of the one pipeline: the front end's XXH64 of the key, then the table's mix and
//! segment arithmetic (below), `a` banks of `v + f`-bit cells read in the same clock (the
//! parallel-partitioned layout of §9 "Banks": bank `b` holds the segments `b, b + a, …`, so a
//! key's `a` cells lie in `a` different banks), the XOR of the cells in its own register stage
//! and the compare of the check bits in the answer register. The cells are loaded (bank files,
//! or the management port); no operation changes them.
//!
//! Segment arithmetic, for `m = mix(h + seed)`, `L = 2^σ`, `S` segments:
//! `start = (m × S·L) >> 64`, `seg = start >> σ`, `q = seg / a`, `rem = seg mod a`
//! (`a = 3`: `q = (seg × 0xaaaaaaab) >> 33`, `rem = (seg + q) mod 4`); the key's cell `j` is in
//! segment `seg + j`, bank `(rem + j) mod a`, at address `(q + (rem + j ≥ a))·L + low_j` with
//! `low_0 = start mod L` and `low_j = low_0 XOR ((r >> (j − 1)σ) mod L)`. So bank `b` reads
//! cell `j = (b − rem) mod a` at `{q + (b < rem), low_j}`: a multiplexer by `rem`.

use std::fmt::Write as _;

use bloomlanes_core::retrieval::{read_cell, RetrievalTable, Shape, MIX_MUL1, MIX_MUL2};

use crate::arith::{Arith, Term};
use crate::banks::Cells;
use crate::check::Reference;
use crate::geo::{ceil_log2, Geo};
use crate::pipe::{Op, Pipe, V};
use crate::pipeline::PipelineConfig;
use crate::retrieval_mul::mulc_paced;
use crate::{op, HdlError, MAX_BANK_ENTRIES};

/// Rows of `L` cells in one bank: `⌈(S + a − 1) / a⌉`.
fn rows(s: &Shape) -> u64 {
    (u64::from(s.segment_count) + u64::from(s.arity) - 1).div_ceil(u64::from(s.arity))
}

/// Cells of one bank: rows × `L`.
pub(crate) fn bank_depth(s: &Shape) -> u64 {
    rows(s) << s.segment_bits
}

/// Bits of a bank's row index (the address is `{row, cell mod L}`).
pub(crate) fn row_bits(s: &Shape) -> u32 {
    ceil_log2(rows(s))
}

/// The checks of a retrieval design beyond the pipeline's.
pub(crate) fn validate(cfg: &PipelineConfig, s: &Shape) -> Result<(), HdlError> {
    let bad = |m: String| Err(HdlError::InvalidConfig(m));
    s.check()
        .or_else(|e| bad(format!("retrieval shape: {e}")))?;
    if cfg.cells != crate::CellSpec::retrieval(s.value_bits.into(), s.check_bits.into()) {
        return bad(format!(
            "a retrieval table of {} value and {} check bits needs its own cells, not {}",
            s.value_bits, s.check_bits, cfg.cells
        ));
    }
    if s.segment_bits == 0 {
        return bad("retrieval segments of one cell are not supported (σ ≥ 1)".into());
    }
    if bank_depth(s) > MAX_BANK_ENTRIES {
        return bad(format!(
            "banks of {} cells; at most {MAX_BANK_ENTRIES} per bank are supported",
            bank_depth(s)
        ));
    }
    if cfg.base.lookup_ports != 1 {
        return bad(format!(
            "a retrieval design has one port, not {}",
            cfg.base.lookup_ports
        ));
    }
    Ok(())
}

/// `spread(m) mod 2^n` (core's `spread`: the high and low halves of `m × MIX_MUL2`, XORed): only
/// bits `[0, n)` and `[64, 64 + n)` of the 128-bit product are needed, so the high half is an
/// `n`-bit product (not 64) and the low half is cut to `n` bits; the carry into bit 64 still
/// needs the three other 32 × 32-bit products in full.
fn spread_low(p: &mut Pipe, a: Arith, m: V, n: u32) -> V {
    assert!((1..=64).contains(&n), "spread bits {n}");
    let k = MIX_MUL2;
    let (ml, mh) = (p.slice(m, 0, 32), p.slice(m, 32, 32));
    let (kl, kh) = (k & 0xffff_ffff, k >> 32);
    let ll = mulc_paced(p, a, ml, kl, 64, Vec::new());
    let lh = mulc_paced(p, a, ml, kh, 64, Vec::new());
    let hl = mulc_paced(p, a, mh, kl, 64, Vec::new());
    let lo32 = |p: &mut Pipe, v| p.slice(v, 0, 32);
    let hi32 = |p: &mut Pipe, v| p.slice(v, 32, 32);
    // mid = ll >> 32 + lh mod 2^32 + hl mod 2^32 (34 bits): its bits 32, 33 carry into bit 64.
    let terms = vec![
        Term::new(hi32(p, ll), 0),
        Term::new(lo32(p, lh), 0),
        Term::new(lo32(p, hl), 0),
    ];
    let mid = a.sum(p, terms, 34);
    let carry = p.slice(mid, 32, 2);
    let extra = vec![
        Term::new(hi32(p, lh), 0),
        Term::new(hi32(p, hl), 0),
        Term::new(carry, 0),
    ];
    let hi = mulc_paced(p, a, mh, kh, n, extra);
    let lo = if n <= 32 {
        p.slice(ll, 0, n)
    } else {
        let (l0, m0) = (lo32(p, ll), p.slice(mid, 0, n - 32));
        p.wire(Op::Concat(vec![m0, l0]), n, "lo")
    };
    p.xor(hi, lo)
}

/// The bank addresses (bank 0 first, each `row_bits + σ` bits) and the check bits
/// (`m mod 2^f`, `None` when `f = 0`) of the key with hash `hx`.
pub(crate) fn index_of(p: &mut Pipe, a: Arith, s: &Shape, hx: V) -> (Vec<V>, Option<V>) {
    let sigma = u32::from(s.segment_bits);
    let arity = usize::from(s.arity);
    let x = if s.seed == 0 {
        hx
    } else {
        let k = p.konst(s.seed, 64);
        a.sum(p, vec![Term::new(hx, 0), Term::new(k, 0)], 64)
    };
    // mix(x): (x ^ x >> 33) × MIX_MUL1, the same with MIX_MUL2, then x ^ x >> 33 once more.
    let xorshift = |p: &mut Pipe, v: V| {
        let sh = p.wire(Op::Shr(v, 33), 64, "shr");
        p.xor(v, sh)
    };
    let mut m = x;
    for k in [MIX_MUL1, MIX_MUL2] {
        let v = xorshift(p, m);
        m = mulc_paced(p, a, v, k, 64, Vec::new());
    }
    let m = xorshift(p, m);
    // Cells 1.. take σ bits each of spread(m).
    let r = (arity > 1).then(|| spread_low(p, a, m, (arity as u32 - 1) * sigma));
    // start = (m × S·L) >> 64 with S·L < 2^32: (mh·SL + (ml·SL >> 32)) >> 32.
    let span = u64::from(s.segment_count) << sigma;
    let (ml, mh) = (p.slice(m, 0, 32), p.slice(m, 32, 32));
    let pl = mulc_paced(p, a, ml, span, 64, Vec::new());
    let pl_hi = p.slice(pl, 32, 32);
    let t = mulc_paced(p, a, mh, span, 64, vec![Term::new(pl_hi, 0)]);
    let start = p.slice(t, 32, 32);
    let seg = p.slice(start, sigma, 32 - sigma);
    let rb = row_bits(s);
    let (q, rem) = if arity == 4 {
        let rem = p.slice(seg, 0, 2);
        let q = p.slice(seg, 2, rb.min(30 - sigma).max(1));
        (q, rem)
    } else {
        let prod = mulc_paced(p, a, seg, 0xaaaa_aaab, 64, Vec::new());
        let q = p.slice(prod, 33, rb.max(1));
        let (s2, q2) = (p.slice(seg, 0, 2), p.slice(q, 0, 1.max(rb.min(2))));
        let rem = p.reg(Op::Add(vec![s2, q2]), 2, "rem");
        (q, rem)
    };
    let low0 = p.slice(start, 0, sigma);
    let lows: Vec<V> = (0..arity)
        .map(|j| {
            if j == 0 {
                low0
            } else {
                let r = r.expect("arity > 1");
                let off = p.slice(r, (j as u32 - 1) * sigma, sigma);
                p.xor(low0, off)
            }
        })
        .collect();
    let addrs = (0..arity)
        .map(|b| {
            // Cell j = (b − rem) mod a, one step further in the row when b < rem.
            let mut low = lows[b];
            for k in 1..arity {
                let sel = p.wire(Op::Eq(rem, k as u64), 1, "rk");
                low = p.wire(
                    Op::Mux(sel, lows[(b + arity - k) % arity], low),
                    sigma,
                    "lm",
                );
            }
            let low = p.reg(Op::Slice(low, 0), sigma, "low");
            if rb == 0 {
                return low;
            }
            let next: Vec<u64> = (0..4).map(|x| u64::from(b < x)).collect();
            let inc = p.reg(Op::Table(rem, next), 1, "inc");
            let row = p.reg(Op::Add(vec![q, inc]), rb, "row");
            p.wire(Op::Concat(vec![row, low]), rb + sigma, "ra")
        })
        .collect();
    let check = (s.check_bits > 0).then(|| p.slice(m, 0, u32::from(s.check_bits)));
    (addrs, check)
}

/// The answer register's input of port `p` for a retrieval: the XOR of the lanes' cells
/// (`rd<p>`), registered beside stage `n + 1` (`x<p>_cells`, `n` the bank read's cycles), is
/// found when its bits above the value equal the check bits carried above the tag. The XOR of
/// `a` banks and the check compare in one cycle were the critical path of registered ECP5
/// banks (1.7–2.0 ns of logic, 3.4–4.0 ns of routing from the banks).
pub(crate) fn answer_expr(v: &mut String, g: &Geo, value_bits: u32, p: usize) -> String {
    let c = g.cell_bits;
    let lanes: Vec<String> = (0..g.lanes)
        .map(|l| crate::geo::part(&format!("rd{p}"), l, c))
        .collect();
    let _ = writeln!(
        v,
        "    wire [{c1}:0] x{p}_xor = {};\n    reg [{c1}:0] x{p}_cells;\n    always @(posedge clk) begin\n        x{p}_cells <= x{p}_xor;\n    end",
        lanes.join(" ^ "),
        c1 = c - 1,
    );
    let at = g.bank_read + 1;
    let check = if g.check_bits == 0 {
        String::new()
    } else {
        format!(
            " & (x{p}_cells[{}:{value_bits}] == r{p}_tag{at}[{}:{}])",
            c - 1,
            g.tw + g.check_bits - 1,
            g.tw
        )
    };
    let _ = writeln!(v, "    wire x{p}_found = r{p}_lookup{at}{check};");
    format!(
        "x{p}_found ? {{1'b1, x{p}_cells[{}:0]}} : {}'d0",
        value_bits - 1,
        value_bits + 1
    )
}

/// A retrieval table as the design's banks and reference: bank `b` entry `e` is cell
/// `((e >> σ)·a + b)·L + e mod L` (0 past the table), lookups answer `1 << v | value` when
/// found, else 0, and the other operations 0.
#[derive(Clone, Copy, Debug)]
pub struct RetrievalBanks<'a>(pub &'a RetrievalTable);

/// What the hardware answers for `got` (a lookup's result) in a table of `value_bits`.
pub fn answer_word(got: Option<u32>, value_bits: u8) -> u32 {
    got.map_or(0, |x| 1 << value_bits | x)
}

impl Cells for RetrievalBanks<'_> {
    fn cell(&self, lane: usize, entry: u64) -> u64 {
        let s = self.0.shape();
        let segment = (entry >> s.segment_bits) * u64::from(s.arity) + lane as u64;
        let index = (segment << s.segment_bits) + (entry & (s.segment_len() - 1));
        if index >= s.cells() {
            return 0;
        }
        read_cell(self.0.words(), s.cell_bits(), index as u32) & s.cell_mask()
    }
}

impl Reference for RetrievalBanks<'_> {
    fn apply(&mut self, code: u8, hash: u64, _: u32) -> u32 {
        if code == op::LOOKUP {
            answer_word(self.0.get_hash(hash), self.0.shape().value_bits)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cone::register_cone;
    use crate::{HdlConfig, KeyMode, MulStyle};
    use bloomlanes_core::retrieval::RetrievalSpec;
    use bloomlanes_core::{Layout, Params};
    use std::collections::HashMap;

    fn table(n: u64, v: u8, f: u8, arity: u8) -> RetrievalTable {
        let keys: Vec<u64> = (0..n).map(|k| k * 0x9e37_79b9 + 7).collect();
        let values: Vec<u32> = keys.iter().map(|k| (k % (1 << v)) as u32).collect();
        let spec = RetrievalSpec::new(v, f).with_arity(arity);
        let base = Params::new(Layout::L8x64, 1).with_seed(5);
        RetrievalTable::build_keys(base, spec, &keys, &values).expect("build")
    }

    #[test]
    fn banks_hold_every_cell_where_core_says() {
        for (n, arity) in [(300, 3), (1000, 4), (5, 4)] {
            let t = table(n, 8, 8, arity);
            let s = t.shape();
            let banks = RetrievalBanks(&t);
            for i in 0..s.cells() as u32 {
                let want = read_cell(t.words(), s.cell_bits(), i) & s.cell_mask();
                let got = banks.cell(s.bank(i) as usize, s.bank_address(i));
                assert_eq!(got, want, "cell {i} arity {arity}");
                assert!(s.bank_address(i) < bank_depth(s));
            }
        }
    }

    /// The answer register reads the XOR of the banks from a register, never the banks' read
    /// data: the XOR of four banks and the check compare in one cycle were the critical path
    /// of registered ECP5 banks (the answer register read `rd0` before).
    #[test]
    fn the_answer_register_reads_the_registered_xor() {
        let t = table(1000, 8, 8, 4);
        for registered_banks in [false, true] {
            let mut base = HdlConfig::new(Layout::L8x64, 1, KeyMode::Prehashed, 5);
            base.registered_banks = registered_banks;
            let rtl = crate::generate_pipeline(&PipelineConfig::retrieval(base, *t.shape()))
                .unwrap()
                .rtl;
            let answer = register_cone(&rtl, "next:w0_ans");
            assert!(
                answer.iter().all(|b| !b.starts_with("rd0")),
                "registered {registered_banks}: {answer:?}"
            );
            assert!(answer.contains("x0_cells[15]"), "{answer:?}");
            // The XOR register reads the four banks' cells, nothing else.
            let xor = register_cone(&rtl, "next:x0_cells");
            assert_eq!(xor.len(), 4 * 16, "{xor:?}");
            assert!(xor.iter().all(|b| b.starts_with("rd0[")), "{xor:?}");
        }
    }

    #[test]
    fn index_pipeline_matches_core() {
        for mul in [MulStyle::Lut, MulStyle::Dsp] {
            for (n, arity) in [(300, 3), (20_000, 4), (3, 3), (70_000, 3)] {
                let t = table(n, 4, 20, arity);
                let s = t.shape();
                let mut p = Pipe::new();
                let h = p.input("h", 64, "h");
                let a = Arith { mul, add_bits: 12 };
                let (addrs, check) = index_of(&mut p, a, s, h);
                let mut x = 0x1234_5678_9abc_def0u64;
                for _ in 0..300 {
                    x = bloomlanes_core::retrieval::mix(x.wrapping_add(1));
                    let vals = p.eval(&HashMap::from([("h".to_string(), x)]));
                    let m = s.mixed(x);
                    let cells = s.cells_of(m);
                    for &c in &cells[..usize::from(s.arity)] {
                        let b = s.bank(c) as usize;
                        assert_eq!(Pipe::get(&vals, addrs[b]), s.bank_address(c), "{n} {arity}");
                    }
                    assert_eq!(check.map(|c| Pipe::get(&vals, c)), Some(s.check_of(m)));
                }
            }
        }
    }
}
