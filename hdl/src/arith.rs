//! Pipelined arithmetic on the [`Pipe`] builder: adder trees whose every adder is at most
//! `add_bits` wide (longer sums are split into segments with a registered carry), and multiplies
//! by a constant as registered partial products (4-bit table lookups, one LUT per bit, or small
//! DSP-sized products) summed by such a tree.

use crate::pipe::{Op, Pipe, V};
use crate::MulStyle;

/// Value `v` holds bits `[shift, shift + width(v))` of a number.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    pub v: V,
    pub shift: u32,
}

impl Term {
    pub fn new(v: V, shift: u32) -> Term {
        Term { v, shift }
    }
}

/// How wide operations are cut into pipeline stages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arith {
    /// Partial products of constant multiplies.
    pub mul: MulStyle,
    /// Widest adder in one stage.
    pub add_bits: u32,
}

/// Bits needed to hold `k`.
fn bits_of(k: u64) -> u32 {
    (64 - k.leading_zeros()).max(1)
}

/// A number cut at multiples of the segment width: segment `j` holds bits `[jS, jS + S)`
/// (`None`: all zero); every segment is valid in its own stage, so a sum's low segments move on
/// while its carries still ripple through the high ones (a skewed pipelined adder).
pub(crate) type Segs = Vec<Option<V>>;

impl Arith {
    /// Bits of one adder segment.
    pub fn seg_bits(&self) -> u32 {
        self.add_bits.max(2)
    }

    /// A term as segments of a `w`-bit number.
    pub fn segments(&self, p: &mut Pipe, t: Term, w: u32) -> Segs {
        let s = self.seg_bits();
        let n = w.div_ceil(s);
        let tw = p.width(t.v);
        (0..n)
            .map(|j| {
                let lo = j * s;
                let hi = (lo + s).min(w);
                let (a, b) = (t.shift.max(lo), (t.shift + tw).min(hi));
                if a >= b {
                    return None;
                }
                let part = p.slice(t.v, a - t.shift, b - a);
                if a == lo {
                    Some(part)
                } else {
                    let z = p.konst(0, a - lo);
                    Some(p.wire(Op::Concat(vec![part, z]), b - lo, "cat"))
                }
            })
            .collect()
    }

    /// Segment-wise sum of two numbers, carries registered between segments (`fold`: see
    /// [`Arith::sum_segs`]).
    fn add_segs(&self, p: &mut Pipe, x: &Segs, y: &Segs, w: u32, fold: bool) -> Segs {
        let s = self.seg_bits();
        let mut out = Vec::with_capacity(x.len());
        let mut carry: Option<V> = None;
        for j in 0..x.len() {
            let seg = s.min(w - j as u32 * s);
            let last = j + 1 == x.len();
            let ops: Vec<V> = [x[j], y[j], carry].into_iter().flatten().collect();
            match ops.len() {
                0 => {
                    out.push(None);
                    carry = None;
                }
                1 => {
                    out.push(Some(ops[0]));
                    carry = None;
                }
                _ => {
                    // Without a carry-out the segment may be narrower than the segment width.
                    let sw = if last { seg } else { seg + 1 };
                    let sum = if fold && ops.len() == 3 && sw < 64 {
                        // x + y + c = ({x, 1} + {y, c}) >> 1 (c is the 1-bit carry).
                        let one = p.konst(1, 1);
                        let (xw, yw) = (p.width(ops[0]) + 1, p.width(ops[1]) + 1);
                        let xa = p.wire(Op::Concat(vec![ops[0], one]), xw, "cx");
                        let ya = p.wire(Op::Concat(vec![ops[1], ops[2]]), yw, "cy");
                        let wide = p.reg(Op::Add(vec![xa, ya]), sw + 1, "adds");
                        p.slice(wide, 1, sw)
                    } else {
                        p.reg(Op::Add(ops), sw, "adds")
                    };
                    if last {
                        out.push(Some(sum));
                        carry = None;
                    } else {
                        out.push(Some(p.slice(sum, 0, seg)));
                        carry = Some(p.slice(sum, seg, 1));
                    }
                }
            }
        }
        out
    }

    /// The sum of `terms` mod 2^`w`, as a `w`-bit value: a tree of registered two-input adds,
    /// each at most `add_bits` (+ carry) wide.
    pub fn sum(&self, p: &mut Pipe, mut terms: Vec<Term>, w: u32) -> V {
        terms.retain(|t| t.shift < w);
        assert!(!terms.is_empty(), "empty sum");
        terms.sort_by_key(|t| t.shift);
        let nums: Vec<Segs> = terms.iter().map(|&t| self.segments(p, t, w)).collect();
        self.sum_segs(p, nums, w, false)
    }

    /// The sum of numbers already cut into segments ([`Arith::segments`]), mod 2^`w`: the tree
    /// of [`Arith::sum`], pairing them in the order given. `fold`: a segment's add with a
    /// carry-in is written as one adder a bit wider (`{x, 1} + {y, c}`, its low bit dropped),
    /// which Yosys 0.23 maps to one ECP5 carry chain where `x + y + c` is two in series.
    pub fn sum_segs(&self, p: &mut Pipe, mut nums: Vec<Segs>, w: u32, fold: bool) -> V {
        assert!(!nums.is_empty(), "empty sum");
        while nums.len() > 1 {
            let mut next = Vec::new();
            for pair in nums.chunks(2) {
                if pair.len() == 2 {
                    next.push(self.add_segs(p, &pair[0], &pair[1], w, fold));
                } else {
                    next.push(pair[0].clone());
                }
            }
            nums = next;
        }
        let s = self.seg_bits();
        let parts: Vec<V> = nums[0]
            .iter()
            .enumerate()
            .rev()
            .map(|(j, seg)| {
                let sw = s.min(w - j as u32 * s);
                match seg {
                    Some(v) => {
                        let vw = p.width(*v);
                        if vw < sw {
                            let z = p.konst(0, sw - vw);
                            p.wire(Op::Concat(vec![z, *v]), sw, "cat")
                        } else {
                            *v
                        }
                    }
                    None => p.konst(0, sw),
                }
            })
            .collect();
        if parts.len() == 1 {
            parts[0]
        } else {
            p.wire(Op::Concat(parts), w, "cat")
        }
    }

    /// `(x * k + Σ extra + c) mod 2^w`: registered partial products, then [`Arith::sum`].
    pub fn mulc(&self, p: &mut Pipe, x: V, k: u64, w: u32, extra: Vec<Term>, c: u64) -> V {
        let xw = p.width(x);
        let mut terms = extra;
        let wmask = |n: u32| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        let c = c & wmask(w);
        match self.mul {
            MulStyle::Lut => {
                let mut lo = 0;
                while lo < xw && lo < w {
                    let cw = 4.min(xw - lo);
                    let xi = p.slice(x, lo, cw);
                    let add = if lo == 0 { c } else { 0 };
                    let pw = if add != 0 {
                        w
                    } else {
                        (cw + bits_of(k)).min(w - lo)
                    };
                    let table: Vec<u64> = (0..1u64 << cw)
                        .map(|t| t.wrapping_mul(k).wrapping_add(add) & wmask(pw))
                        .collect();
                    let pp = p.reg(Op::Table(xi, table), pw, "pp");
                    terms.push(Term::new(pp, lo));
                    lo += cw;
                }
                if lo == 0 || (c != 0 && xw == 0) {
                    terms.push(Term::new(p.konst(c, w), 0));
                }
            }
            MulStyle::Dsp => {
                const CX: u32 = 16;
                const CK: u32 = 16;
                let mut i = 0;
                while i < xw {
                    let cw = CX.min(xw - i);
                    let xi = p.slice(x, i, cw);
                    let mut j = 0;
                    while j < 64 && i + j < w {
                        let kj = (k >> j) & wmask(CK);
                        if kj != 0 {
                            let pw = (cw + bits_of(kj)).min(w - i - j);
                            let xr = p.r(xi);
                            let pp = p.reg(Op::MulK(xr, kj), pw, "dsp");
                            let pp = p.r(pp);
                            terms.push(Term::new(pp, i + j));
                        }
                        j += CK;
                    }
                    i += cw;
                }
                if c != 0 {
                    terms.push(Term::new(p.konst(c, w), 0));
                }
            }
        }
        self.sum(p, terms, w)
    }
}
