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

impl Arith {
    /// `a + b` mod 2^`w` (both taken as numbers from bit 0), split into segments of at most
    /// `add_bits` bits, one stage each, the carry registered between them.
    fn add2(&self, p: &mut Pipe, a: V, b: V, w: u32) -> V {
        let s = self.add_bits.max(2);
        if w <= s {
            return p.reg(Op::Add(vec![a, b]), w, "add");
        }
        let mut parts: Vec<V> = Vec::new();
        let mut carry: Option<V> = None;
        let mut lo = 0;
        while lo < w {
            let seg = s.min(w - lo);
            let last = lo + seg == w;
            let mut ops = Vec::new();
            for x in [a, b] {
                let xw = p.width(x);
                if xw > lo {
                    ops.push(p.slice(x, lo, seg.min(xw - lo)));
                }
            }
            if let Some(c) = carry {
                ops.push(c);
            }
            let sw = if last { seg } else { seg + 1 };
            let sum = if ops.len() == 1 && carry.is_none() {
                p.r(ops[0])
            } else {
                p.reg(Op::Add(ops), sw, "adds")
            };
            let (low, c) = if last {
                (sum, None)
            } else {
                (p.slice(sum, 0, seg), Some(p.slice(sum, seg, 1)))
            };
            parts.push(low);
            carry = c;
            lo += seg;
        }
        parts.reverse();
        p.wire(Op::Concat(parts), w, "cat")
    }

    /// Adds two terms, keeping bits below `w` only.
    fn add_terms(&self, p: &mut Pipe, x: Term, y: Term, w: u32) -> Term {
        let (a, b) = if x.shift <= y.shift { (x, y) } else { (y, x) };
        let (wa, wb) = (p.width(a.v), p.width(b.v));
        let top = (a.shift + wa).max(b.shift + wb);
        let d = b.shift - a.shift;
        if d >= wa {
            // No overlap: a concatenation.
            let mut parts = vec![b.v];
            if d > wa {
                let z = p.konst(0, d - wa);
                parts.push(z);
            }
            parts.push(a.v);
            let cw = (wb + d).min(w - a.shift);
            let c = p.wire(Op::Concat(parts), wb + d, "cat");
            return Term::new(p.slice(c, 0, cw), a.shift);
        }
        let rw = (top + 1).min(w) - b.shift;
        let hi = p.slice(a.v, d, wa - d);
        let sum = self.add2(p, hi, b.v, rw);
        if d == 0 {
            Term::new(sum, a.shift)
        } else {
            let low = p.slice(a.v, 0, d);
            Term::new(p.wire(Op::Concat(vec![sum, low]), rw + d, "cat"), a.shift)
        }
    }

    /// The sum of `terms` mod 2^`w`, as a `w`-bit value: a tree of registered two-input adds.
    pub fn sum(&self, p: &mut Pipe, mut terms: Vec<Term>, w: u32) -> V {
        terms.retain(|t| t.shift < w);
        assert!(!terms.is_empty(), "empty sum");
        for t in terms.iter_mut() {
            let tw = p.width(t.v);
            if t.shift + tw > w {
                t.v = p.slice(t.v, 0, w - t.shift);
            }
        }
        while terms.len() > 1 {
            terms.sort_by_key(|t| (t.shift, p.stage(t.v)));
            let mut next = Vec::new();
            let mut it = terms.chunks(2);
            for pair in &mut it {
                if pair.len() == 2 {
                    next.push(self.add_terms(p, pair[0], pair[1], w));
                } else {
                    next.push(pair[0]);
                }
            }
            terms = next;
        }
        let t = terms[0];
        let tw = p.width(t.v);
        let mut parts = Vec::new();
        if t.shift + tw < w {
            parts.push(p.konst(0, w - t.shift - tw));
        }
        parts.push(t.v);
        if t.shift > 0 {
            parts.push(p.konst(0, t.shift));
        }
        if parts.len() == 1 {
            t.v
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
                    let pw = if add != 0 { w } else { (cw + bits_of(k)).min(w - lo) };
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
