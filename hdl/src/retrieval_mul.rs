//! Constant multiplies for the retrieval table's index arithmetic whose partial products keep
//! the skewed adder's pace: [`Arith::mulc`] registers every 4-bit partial product whole in one
//! stage, and the adder tree then reads segment `j` of it `j` stages later, so every partial
//! product bit above the first segment waits in delay registers (about 1000 flip-flops a 64-bit
//! product with 16-bit adders, more than its partial products). Here segment `j` of a partial
//! product is its own table, looked up `j` stages after segment 0 from the multiplicand nibble,
//! so only the 4 nibble bits wait. Same sum, same tree, same answer, bit for bit; a segment's
//! carry-in is folded into one adder a bit wider (one ECP5 carry chain, [`Arith::sum_segs`]).

use crate::arith::{Arith, Segs, Term};
use crate::pipe::{Op, Pipe, V};
use crate::MulStyle;

/// Bits of `x` below its highest set bit (at least 1).
fn bit_len(x: u64) -> u32 {
    (64 - x.leading_zeros()).max(1)
}

/// `(x × k + Σ extra) mod 2^w`, as [`Arith::mulc`] (without its constant) computes it, with
/// each segment's partial products looked up when the adder tree reads them. DSP products are
/// left to [`Arith::mulc`].
pub(crate) fn mulc_paced(p: &mut Pipe, a: Arith, x: V, k: u64, w: u32, extra: Vec<Term>) -> V {
    if a.mul != MulStyle::Lut {
        return a.mulc(p, x, k, w, extra, 0);
    }
    let seg = a.seg_bits();
    let segs = w.div_ceil(seg);
    let first = p.stage(x) + 1;
    let mut nums: Vec<Segs> = extra
        .into_iter()
        .filter(|t| t.shift < w)
        .map(|t| a.segments(p, t, w))
        .collect();
    let xw = p.width(x);
    let mut lo = 0;
    while lo < xw && lo < w {
        let cw = 4.min(xw - lo);
        let nibble = p.slice(x, lo, cw);
        // The partial product `nibble × k`, at bit `lo` of the product (< 2^128: lo ≤ 60).
        let product = |t: u64| (u128::from(t) * u128::from(k)) << lo;
        let pieces: Segs = (0..segs)
            .map(|j| {
                let (from, to) = (j * seg, ((j + 1) * seg).min(w));
                // Bits below `lo` are zero in every entry: a constant, not a table.
                let zeros = lo.saturating_sub(from);
                if from + zeros >= to {
                    return None;
                }
                let bits = to - from - zeros;
                let mask = if bits >= 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                };
                let table: Vec<u64> = (0..1u64 << cw)
                    .map(|t| (product(t) >> (from + zeros)) as u64 & mask)
                    .collect();
                let top = table.iter().copied().max().unwrap_or(0);
                if top == 0 {
                    return None;
                }
                let pw = bit_len(top);
                let piece = p.reg_at(Op::Table(nibble, table), pw, first + j, "ppj");
                if zeros == 0 {
                    Some(piece)
                } else {
                    let z = p.konst(0, zeros);
                    Some(p.wire(Op::Concat(vec![piece, z]), pw + zeros, "cat"))
                }
            })
            .collect();
        nums.push(pieces);
        lo += cw;
    }
    if nums.is_empty() {
        return p.konst(0, w);
    }
    a.sum_segs(p, nums, w, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Same products as the arithmetic's own multiply, with extra terms, for widths that cut
    /// partial products anywhere in a segment; and fewer flip-flops.
    #[test]
    fn paced_products_match_and_cost_fewer_flip_flops() {
        let ks = [
            0xff51_afd7_ed55_8ccdu64,
            0xc4ce_b9fe_1a85_ec53,
            0x1a85_ec53,
            1300,
            1,
            0,
        ];
        for add_bits in [5, 12, 16, 32] {
            for (xw, w) in [(64, 64), (32, 64), (32, 15), (32, 43), (11, 20), (3, 64)] {
                for &k in &ks {
                    let a = Arith {
                        mul: MulStyle::Lut,
                        add_bits,
                    };
                    let mut p = Pipe::new();
                    let x = p.input("x", xw, "x");
                    let e = p.input("e", 32, "e");
                    let ex = p.r(e); // an extra term one stage later than x
                    let terms = || vec![Term::new(ex, 3)];
                    let paced = mulc_paced(&mut p, a, x, k, w, terms());
                    let mut q = p.clone();
                    let plain = a.mulc(&mut p, x, k, w, terms(), 0);
                    let mut y = 0x9e37_79b9_7f4a_7c15u64;
                    let m = |b: u32| if b >= 64 { u64::MAX } else { (1 << b) - 1 };
                    for _ in 0..100 {
                        y ^= y << 13;
                        y ^= y >> 7;
                        y ^= y << 17;
                        let (xv, ev) = (y & m(xw), (y >> 17) & m(32));
                        let vals = p.eval(&HashMap::from([
                            ("x".to_string(), xv),
                            ("e".to_string(), ev),
                        ]));
                        let want = xv.wrapping_mul(k).wrapping_add(ev << 3) & m(w);
                        let at = format!("add {add_bits} x {xw} w {w} k {k:x}");
                        assert_eq!(Pipe::get(&vals, paced), want, "paced {at}");
                        assert_eq!(Pipe::get(&vals, plain), want, "plain {at}");
                    }
                    if k > 1 && xw > 4 && w > add_bits {
                        let o = p.r(plain);
                        let plain_cost = p.cost(&[o]);
                        let o = q.r(paced);
                        let paced_cost = q.cost(&[o]);
                        assert!(
                            paced_cost.ffs < plain_cost.ffs,
                            "add {add_bits} x {xw} w {w} k {k:x}: {paced_cost:?} vs {plain_cost:?}"
                        );
                    }
                }
            }
        }
    }

    /// Every adder of a paced multiply has two operands: a segment's carry-in is folded into a
    /// wider add (one ECP5 carry chain), not a third operand (Yosys 0.23: two chains in series,
    /// the registered retrieval's critical path on ECP5); the products stay exact (above).
    #[test]
    fn paced_adders_take_the_carry_in_as_a_low_bit() {
        for add_bits in [5, 12, 16, 32] {
            let a = Arith {
                mul: MulStyle::Lut,
                add_bits,
            };
            let mut p = Pipe::new();
            let x = p.input("x", 64, "x");
            let e = p.input("e", 32, "e");
            mulc_paced(
                &mut p,
                a,
                x,
                0xff51_afd7_ed55_8ccd,
                64,
                vec![Term::new(e, 3)],
            );
            assert_eq!(p.most_add_operands(), 2, "add {add_bits}");
        }
    }
}
