//! What a pipeline costs: the bits that reach its outputs, counted as LUT4s, flip-flops and
//! DSP products the way synthesis keeps them (the basis of `resources`).

use super::{mask, Op, Pipe, V};

/// Resources of a piece of logic, as counted by [`Pipe::cost`] and the resource estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cost {
    /// LUT4 equivalents.
    pub luts: u64,
    /// Flip-flops.
    pub ffs: u64,
    /// DSP products (16 × 16 bits).
    pub dsps: u64,
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            luts: self.luts + o.luts,
            ffs: self.ffs + o.ffs,
            dsps: self.dsps + o.dsps,
        }
    }
}

impl Pipe {
    /// The bits of every node that reach `roots` (all their bits): a node's operands need the
    /// bits its used bits depend on (an adder every bit up to its highest used one).
    fn live_bits(&self, roots: &[V]) -> Vec<u64> {
        let mut used = vec![0u64; self.nodes.len()];
        for r in roots {
            used[r.0] = mask(self.width(*r));
        }
        for i in (0..self.nodes.len()).rev() {
            let u = used[i];
            if u == 0 {
                continue;
            }
            let below = mask(64 - u.leading_zeros());
            let mut need = |a: &V, m: u64| used[a.0] |= m & mask(self.nodes[a.0].width);
            match &self.nodes[i].op {
                Op::Input(_) | Op::Const(_) => {}
                Op::Xor(a, b) | Op::Or(a, b) => {
                    need(a, u);
                    need(b, u);
                }
                Op::Add(v) => v.iter().for_each(|a| need(a, below)),
                Op::MulK(a, _) => need(a, below),
                Op::Rotl(a, r) => {
                    let w = self.nodes[i].width;
                    need(a, (u >> r) | (u << (w - r)) & mask(w));
                }
                Op::Shr(a, k) => need(a, u << k),
                Op::Slice(a, lo) => need(a, u << lo),
                Op::Concat(v) => {
                    let mut shift = 0;
                    for a in v.iter().rev() {
                        need(a, u.checked_shr(shift).unwrap_or(0));
                        shift += self.nodes[a.0].width;
                    }
                }
                Op::Mux(sel, a, b) => {
                    need(sel, 1);
                    need(a, u);
                    need(b, u);
                }
                Op::Eq(a, _) | Op::Table(a, _) => need(a, u64::MAX),
            }
        }
        used
    }

    /// Where bit `b` of wiring node `i` (slice, concatenation, rotation, shift) comes from:
    /// `Some((node, bit))`, `None` for a constant-zero bit or a node that computes.
    fn source_bit(&self, i: usize, b: u32) -> Option<(usize, u32)> {
        let n = &self.nodes[i];
        if n.reg {
            return None;
        }
        match &n.op {
            Op::Slice(a, lo) => Some((a.0, b + lo)),
            Op::Rotl(a, r) => Some((a.0, (b + n.width - r) % n.width)),
            Op::Shr(a, k) => (b + k < self.width(*a)).then_some((a.0, b + k)),
            Op::Concat(v) => {
                let mut shift = 0;
                for a in v.iter().rev() {
                    let w = self.width(*a);
                    if b < shift + w {
                        return (!self.is_const(*a)).then_some((a.0, b - shift));
                    }
                    shift += w;
                }
                None
            }
            _ => None,
        }
    }

    /// What the bits that reach `roots` cost in LUT4s (adders one per bit, tables one per
    /// output bit and 16 entries), flip-flops and DSP products, as synthesis keeps them: unused
    /// bits are removed, and a delayed slice is the same flip-flops as its source's delayed bits
    /// (merged). The basis of the resource estimate (see `resources`).
    pub fn cost(&self, roots: &[V]) -> Cost {
        let used = self.live_bits(roots);
        // The last stage each bit is read in, wiring nodes' reads moved to their sources.
        let mut last: Vec<Vec<u32>> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| vec![self.max_use[i]; n.width as usize])
            .collect();
        let mut alias = vec![false; self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            for b in 0..self.nodes[i].width {
                if let Some((src, sb)) = self.source_bit(i, b) {
                    alias[i] = true;
                    let t = last[i][b as usize];
                    let l = &mut last[src][sb as usize];
                    *l = (*l).max(t);
                }
            }
        }
        let mut c = Cost::default();
        for (i, n) in self.nodes.iter().enumerate() {
            let bits = u64::from(used[i].count_ones());
            let below = u64::from(64 - used[i].leading_zeros());
            if !alias[i] && !matches!(n.op, Op::Const(_)) {
                c.ffs += (0..n.width)
                    .filter(|b| used[i] >> b & 1 == 1)
                    .map(|b| u64::from(n.reg) + u64::from(last[i][b as usize] - n.stage))
                    .sum::<u64>();
            }
            c.luts += match &n.op {
                Op::Xor(..) | Op::Or(..) | Op::Mux(..) => bits,
                Op::Add(v) => {
                    let wide = v.iter().filter(|a| self.width(**a) > 1).count() as u64;
                    below * wide.saturating_sub(1).max(1)
                }
                Op::Eq(a, _) if bits > 0 => u64::from(self.width(*a)).div_ceil(3),
                Op::Table(a, _) => bits << self.width(*a).saturating_sub(4),
                Op::MulK(..) if bits > 0 => {
                    c.dsps += 1;
                    0
                }
                _ => 0,
            };
        }
        c
    }
}
