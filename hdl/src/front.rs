//! The front end of one port: input register, hash (XXH64, or none for prehashed keys), block
//! index and lane bits, address register; built on [`Pipe`] so every path is aligned and every
//! stage holds at most one table lookup, one multiplexer or one narrow adder.

use std::fmt::Write as _;

use bloomlanes_core::SALTS;

use crate::arith::Arith;
use crate::hash;
use crate::pipe::{Cost, Op, Pipe, V};
use crate::{HdlConfig, KeyMode, MulStyle};

/// Width of the length input of variable-length keys (0 to 64 needs 7 bits).
pub(crate) const LEN_BITS: u32 = 7;

/// The generated pipeline of one port.
pub(crate) struct Front {
    /// Verilog body (declarations, functions, registers, output assignments).
    pub body: String,
    /// Stage of the outputs: `o_valid` is high `stages` cycles after `i_valid`.
    pub stages: u32,
    /// Stage in which the final hash is valid (1 = right after the input register).
    pub hash_stage: u32,
    /// What the front end costs.
    pub cost: Cost,
    /// It has the `o_insert` and `o_clear` outputs ([`Shape::decode_ops`]).
    pub decodes: bool,
}

/// Internal state and parameters of a front end under construction.
pub(crate) struct Shape {
    pub kw: u32,
    pub tw: u32,
    pub lanes: usize,
    pub bit_bits: u32,
    pub block_bits: u32,
    pub blocks: u32,
    /// A retrieval table: its banks are addressed by [`crate::retrieval::index_of`] (lanes = `a`,
    /// block bits = row bits, bit bits = σ) and the check bits leave above the tag.
    pub retrieval: Option<bloomlanes_core::retrieval::Shape>,
    /// The front also decodes the operation (`o_insert`, `o_clear`: valid and of that kind),
    /// registered at its last stage, so that the bank write enable and the clear's start read
    /// one register each instead of a compare behind `o_valid` and `o_op` (static designs).
    pub decode_ops: bool,
}

/// The hash of the key words (stage-0 inputs `i_key` / `i_len`), registered first.
pub(crate) fn hash_of(p: &mut Pipe, cfg: &HdlConfig, key: &[V], len: Option<V>) -> V {
    let a = Arith {
        mul: cfg.mul_style,
        add_bits: cfg.adder_bits,
    };
    match cfg.key {
        KeyMode::Prehashed => key[0],
        KeyMode::Bytes(n) => hash::fixed(p, a, key, n, cfg.seed),
        KeyMode::VarBytes(m) => hash::variable(p, a, key, len.expect("length"), m, cfg.seed),
    }
}

/// Block index and lane bits of hash `hx`: `(block, [bit_i])`.
pub(crate) fn index_of(p: &mut Pipe, cfg: &HdlConfig, s: &Shape, hx: V) -> (Option<V>, Vec<V>) {
    // The index multiplies have constant operands: 4-bit table partial products (no DSPs).
    let a = Arith {
        mul: MulStyle::Lut,
        add_bits: cfg.adder_bits,
    };
    let hi = p.slice(hx, 32, 32);
    let lo = p.slice(hx, 0, 32);
    let blk = (s.block_bits > 0).then(|| {
        let w = 32 + s.block_bits;
        let prod = a.mulc(p, hi, u64::from(s.blocks), w, Vec::new(), 0);
        p.slice(prod, 32, s.block_bits)
    });
    let bits = (0..s.lanes)
        .map(|i| {
            let prod = a.mulc(p, lo, u64::from(SALTS[i]), 32, Vec::new(), 0);
            p.slice(prod, 32 - s.bit_bits, s.bit_bits)
        })
        .collect();
    (blk, bits)
}

/// Builds the front end: ports `i_valid, i_op, i_tag, i_key (, i_len)` in, `o_valid, o_op,
/// o_tag, o_addr` out (`o_addr` = the lanes' `{block, bit}` addresses, lane 0 lowest).
pub(crate) fn build(cfg: &HdlConfig, s: &Shape) -> Front {
    let mut p = Pipe::new();
    let iv = p.input("i_valid", 1, "iv");
    let valid = p.reg_reset(Op::Slice(iv, 0), 1, "in_valid");
    let io = p.input("i_op", 2, "iop");
    let op = p.r(io);
    let it = p.input("i_tag", s.tw, "itag");
    let tag = p.r(it);
    let mut key = Vec::new();
    let mut lo = 0;
    while lo < s.kw {
        let w = 64.min(s.kw - lo);
        let k = p.input(&format!("i_key[{}:{lo}]", lo + w - 1), w, "ik");
        key.push(p.r(k));
        lo += w;
    }
    let len = matches!(cfg.key, KeyMode::VarBytes(_)).then(|| {
        let l = p.input("i_len", LEN_BITS, "ilen");
        p.r(l)
    });
    let hx = hash_of(&mut p, cfg, &key, len);
    let hash_stage = p.stage(hx);
    let (lane_parts, check): (Vec<Vec<V>>, Option<V>) = match &s.retrieval {
        Some(shape) => {
            let a = Arith {
                mul: cfg.mul_style,
                add_bits: cfg.adder_bits,
            };
            let (addrs, check) = crate::retrieval::index_of(&mut p, a, shape, hx);
            (addrs.into_iter().map(|a| vec![a]).collect(), check)
        }
        None => {
            let (blk, bits) = index_of(&mut p, cfg, s, hx);
            let parts = bits
                .into_iter()
                .map(|b| blk.into_iter().chain([b]).collect())
                .collect();
            (parts, None)
        }
    };
    let last = lane_parts
        .iter()
        .flatten()
        .chain(check.iter())
        .map(|v| p.stage(*v))
        .max()
        .unwrap_or(0);
    let f = last + 1;
    let aw = s.block_bits + s.bit_bits;
    let addrs: Vec<V> = lane_parts
        .into_iter()
        .map(|parts| p.reg_at(Op::Concat(parts), aw, f, "addr"))
        .collect();
    // Valid-qualified decodes of the operation: reset like the valid bit (never X after reset),
    // computed from the input register and carried one bit a stage.
    let decodes: Vec<V> = if s.decode_ops {
        let zero = p.konst(0, 1);
        [crate::op::INSERT, crate::op::CLEAR]
            .into_iter()
            .map(|code| {
                let is = p.wire(Op::Eq(op, u64::from(code)), 1, "is_op");
                p.reg_reset(Op::Mux(valid, is, zero), 1, "do_op")
            })
            .collect()
    } else {
        Vec::new()
    };
    let roots: Vec<V> = [valid, op, tag]
        .into_iter()
        .chain(decodes.iter().copied())
        .chain(check)
        .chain(addrs.iter().copied())
        .collect();
    let mut outs = String::new();
    let _ = writeln!(outs, "    assign o_valid = {};", p.name_at(valid, f));
    let _ = writeln!(outs, "    assign o_op = {};", p.name_at(op, f));
    for (name, &d) in ["o_insert", "o_clear"].iter().zip(&decodes) {
        let _ = writeln!(outs, "    assign {name} = {};", p.name_at(d, f));
    }
    let tag_out = match check {
        Some(c) => format!("{{{}, {}}}", p.name_at(c, f), p.name_at(tag, f)),
        None => p.name_at(tag, f),
    };
    let _ = writeln!(outs, "    assign o_tag = {tag_out};");
    let names: Vec<String> = addrs.iter().rev().map(|&a| p.name_at(a, f)).collect();
    let _ = writeln!(outs, "    assign o_addr = {{{}}};", names.join(", "));
    let mut body = p.emit();
    body.push_str(&outs);
    Front {
        body,
        stages: f,
        hash_stage,
        cost: p.cost(&roots),
        decodes: s.decode_ops,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{block_index, lane_bit, Layout};
    use std::collections::HashMap;

    #[test]
    fn index_pipeline_matches_core() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for layout in Layout::ALL {
            for blocks in [1u32, 2, 3, 1000, 65_536, 1 << 20, 999_983] {
                let mut cfg = HdlConfig::new(layout, blocks, KeyMode::Prehashed, 0);
                cfg.adder_bits = 12;
                let s = crate::geo::shape(&crate::PipelineConfig::new(
                    cfg.clone(),
                    crate::CellSpec::STATIC,
                ));
                assert!(s.retrieval.is_none());
                let mut p = Pipe::new();
                let h = p.input("h", 64, "h");
                let (blk, bits) = index_of(&mut p, &cfg, &s, h);
                for _ in 0..200 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let vals = p.eval(&HashMap::from([("h".to_string(), x)]));
                    let b = blk.map_or(0, |b| Pipe::get(&vals, b));
                    assert_eq!(b as u32, block_index(x, blocks), "{layout} z={blocks}");
                    for (lane, &v) in bits.iter().enumerate() {
                        assert_eq!(Pipe::get(&vals, v) as u32, lane_bit(layout, x, lane));
                    }
                }
            }
        }
    }
}
