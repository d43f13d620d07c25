//! A tiny pipeline builder: values in single-assignment form, each tagged with the pipeline stage
//! it is valid in. A register op lands one stage after its latest operand; operands from earlier
//! stages are read through delay registers that the builder adds, so every datapath is aligned by
//! construction. The same graph is printed as Verilog and evaluated in Rust (the tests check the
//! hash and index pipelines against `bloomlanes-core` without a simulator).

mod cost;

pub(crate) use cost::Cost;

#[cfg(test)]
use std::collections::HashMap;
use std::fmt::Write as _;

/// A value of the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct V(usize);

/// What a node computes (all values at most 64 bits wide, unsigned).
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// An external signal (Verilog expression text), valid in stage 0.
    Input(String),
    /// A constant (valid in every stage; never delayed).
    Const(u64),
    Xor(V, V),
    Or(V, V),
    /// Sum of the operands, mod 2^width (operands zero-extended or truncated to the width).
    Add(Vec<V>),
    /// Rotate left by the amount, within the operand's width (= the node's width).
    Rotl(V, u32),
    /// Logical shift right.
    Shr(V, u32),
    /// Bits `[lo + width - 1 : lo]` of the operand.
    Slice(V, u32),
    /// Concatenation, most significant operand first.
    Concat(Vec<V>),
    /// `sel ? one : zero` (sel is 1 bit).
    Mux(V, V, V),
    /// `x == constant` (1 bit).
    Eq(V, u64),
    /// `table[x]`, a constant table indexed by a small operand (a LUT per output bit).
    Table(V, Vec<u64>),
    /// `x * constant`, mod 2^width: a small multiply meant for one DSP block.
    MulK(V, u64),
}

#[derive(Clone, Debug)]
struct Node {
    op: Op,
    width: u32,
    stage: u32,
    reg: bool,
    reset: bool,
    name: String,
}

/// The builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pipe {
    nodes: Vec<Node>,
    /// Latest stage each node is read in.
    max_use: Vec<u32>,
}

fn mask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

impl Pipe {
    pub fn new() -> Pipe {
        Pipe::default()
    }

    pub fn width(&self, v: V) -> u32 {
        self.nodes[v.0].width
    }

    pub fn stage(&self, v: V) -> u32 {
        self.nodes[v.0].stage
    }

    fn is_const(&self, v: V) -> bool {
        matches!(self.nodes[v.0].op, Op::Const(_))
    }

    fn args(op: &Op) -> Vec<V> {
        match op {
            Op::Input(_) | Op::Const(_) => vec![],
            Op::Xor(a, b) | Op::Or(a, b) => vec![*a, *b],
            Op::Add(v) | Op::Concat(v) => v.clone(),
            Op::Rotl(a, _)
            | Op::Shr(a, _)
            | Op::Slice(a, _)
            | Op::Eq(a, _)
            | Op::Table(a, _)
            | Op::MulK(a, _) => vec![*a],
            Op::Mux(s, a, b) => vec![*s, *a, *b],
        }
    }

    fn latest(&self, op: &Op) -> u32 {
        Self::args(op)
            .into_iter()
            .filter(|a| !self.is_const(*a))
            .map(|a| self.stage(a))
            .max()
            .unwrap_or(0)
    }

    fn push(&mut self, op: Op, width: u32, stage: u32, reg: bool, reset: bool, hint: &str) -> V {
        assert!((1..=64).contains(&width), "width {width} of {hint}");
        let read_at = if reg { stage - 1 } else { stage };
        for a in Self::args(&op) {
            assert!(
                self.stage(a) <= read_at || self.is_const(a),
                "{hint} reads the future"
            );
            self.max_use[a.0] = self.max_use[a.0].max(read_at);
        }
        let id = self.nodes.len();
        let name = format!("{hint}_{id}");
        self.nodes.push(Node {
            op,
            width,
            stage,
            reg,
            reset,
            name,
        });
        self.max_use.push(stage);
        V(id)
    }

    /// An input signal valid in stage 0.
    pub fn input(&mut self, expr: &str, width: u32, hint: &str) -> V {
        self.push(Op::Input(expr.to_string()), width, 0, false, false, hint)
    }

    pub fn konst(&mut self, value: u64, width: u32) -> V {
        self.push(Op::Const(value & mask(width)), width, 0, false, false, "k")
    }

    /// Combinational: valid in the stage of its latest operand (folded when all operands are
    /// constants).
    pub fn wire(&mut self, op: Op, width: u32, hint: &str) -> V {
        let args = Self::args(&op);
        if !args.is_empty() && args.iter().all(|a| self.is_const(*a)) {
            let vals: Vec<u64> = self
                .nodes
                .iter()
                .map(|n| match n.op {
                    Op::Const(c) => c,
                    _ => 0,
                })
                .collect();
            let x = self.eval_op(&op, width, &vals);
            return self.konst(x, width);
        }
        let s = self.latest(&op);
        self.push(op, width, s, false, false, hint)
    }

    /// Registered: valid one stage after its latest operand.
    pub fn reg(&mut self, op: Op, width: u32, hint: &str) -> V {
        let s = self.latest(&op) + 1;
        self.push(op, width, s, true, false, hint)
    }

    /// Registered, in stage `stage` (at least one after its latest operand).
    pub fn reg_at(&mut self, op: Op, width: u32, stage: u32, hint: &str) -> V {
        let s = stage.max(self.latest(&op) + 1);
        self.push(op, width, s, true, false, hint)
    }

    /// A register with synchronous reset to 0 (valid bits); its delay copies reset too.
    pub fn reg_reset(&mut self, op: Op, width: u32, hint: &str) -> V {
        let s = self.latest(&op) + 1;
        self.push(op, width, s, true, true, hint)
    }

    /// A register of `v` (one stage later).
    pub fn r(&mut self, v: V) -> V {
        let w = self.width(v);
        let reset = self.nodes[v.0].reset;
        let s = self.stage(v) + 1;
        self.push(Op::Slice(v, 0), w, s, true, reset, "r")
    }

    pub fn slice(&mut self, v: V, lo: u32, width: u32) -> V {
        if lo == 0 && width == self.width(v) {
            return v;
        }
        assert!(lo + width <= self.width(v), "slice out of range");
        self.wire(Op::Slice(v, lo), width, "sl")
    }

    pub fn rotl(&mut self, v: V, r: u32) -> V {
        let w = self.width(v);
        self.wire(Op::Rotl(v, r % w), w, "rot")
    }

    pub fn xor(&mut self, a: V, b: V) -> V {
        let w = self.width(a).max(self.width(b));
        self.wire(Op::Xor(a, b), w, "x")
    }

    /// The Verilog name of `v` as read in stage `stage` (marks the delay registers needed).
    pub fn name_at(&mut self, v: V, stage: u32) -> String {
        let n = &self.nodes[v.0];
        if let Op::Const(c) = n.op {
            return format!("{}'h{c:x}", n.width);
        }
        assert!(n.stage <= stage, "{} read before it is valid", n.name);
        self.max_use[v.0] = self.max_use[v.0].max(stage);
        Self::delayed(&n.name, stage - n.stage)
    }

    fn delayed(name: &str, d: u32) -> String {
        if d == 0 {
            name.to_string()
        } else {
            format!("{name}_d{d}")
        }
    }

    fn arg(&self, a: V, at: u32) -> String {
        let n = &self.nodes[a.0];
        if let Op::Const(c) = n.op {
            return format!("{}'h{c:x}", n.width);
        }
        Self::delayed(&n.name, at - n.stage)
    }

    /// `a` extended (zeros) or truncated to `w` bits.
    fn fit(&self, a: V, at: u32, w: u32) -> String {
        let aw = self.width(a);
        let s = self.arg(a, at);
        if aw == w {
            s
        } else if aw < w {
            format!("{{{}'d0, {s}}}", w - aw)
        } else if self.is_const(a) {
            let c = match self.nodes[a.0].op {
                Op::Const(c) => c & mask(w),
                _ => 0,
            };
            format!("{w}'h{c:x}")
        } else {
            format!("{s}[{}:0]", w - 1)
        }
    }

    fn expr(&self, n: &Node) -> String {
        let at = if n.reg { n.stage - 1 } else { n.stage };
        let w = n.width;
        match &n.op {
            Op::Input(e) => e.clone(),
            Op::Const(c) => format!("{w}'h{c:x}"),
            Op::Xor(a, b) => format!("{} ^ {}", self.fit(*a, at, w), self.fit(*b, at, w)),
            Op::Or(a, b) => format!("{} | {}", self.fit(*a, at, w), self.fit(*b, at, w)),
            Op::Add(v) => v
                .iter()
                .map(|a| self.fit(*a, at, w))
                .collect::<Vec<_>>()
                .join(" + "),
            Op::Rotl(a, r) => {
                let s = self.arg(*a, at);
                if *r == 0 {
                    s
                } else {
                    format!("{{{s}[{}:0], {s}[{}:{}]}}", w - 1 - r, w - 1, w - r)
                }
            }
            Op::Shr(a, k) => {
                let aw = self.width(*a);
                let s = self.arg(*a, at);
                format!("{{{k}'d0, {s}[{}:{k}]}}", aw - 1)
            }
            Op::Slice(a, lo) => {
                let s = self.arg(*a, at);
                if *lo == 0 && self.width(*a) == w {
                    s
                } else if w == 1 {
                    format!("{s}[{lo}]")
                } else {
                    format!("{s}[{}:{lo}]", lo + w - 1)
                }
            }
            Op::Concat(v) => format!(
                "{{{}}}",
                v.iter()
                    .map(|a| self.arg(*a, at))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Op::Mux(s, a, b) => format!(
                "{} ? {} : {}",
                self.arg(*s, at),
                self.fit(*a, at, w),
                self.fit(*b, at, w)
            ),
            Op::Eq(a, c) => format!("({} == {}'d{c})", self.arg(*a, at), self.width(*a)),
            Op::Table(a, _) => format!("{}_f({})", n.name, self.arg(*a, at)),
            Op::MulK(a, k) => format!("{} * {w}'h{:x}", self.fit(*a, at, w), k & mask(w)),
        }
    }

    /// The Verilog text: declarations, table functions, and one `always` block.
    pub fn emit(&self) -> String {
        let mut decl = String::new();
        let mut funcs = String::new();
        let mut wires = String::new();
        let mut regs = String::new();
        let mut resets = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Op::Const(_) = n.op {
                continue;
            }
            let w = n.width;
            let range = if w == 1 {
                String::new()
            } else {
                format!("[{}:0] ", w - 1)
            };
            if let Op::Table(a, t) = &n.op {
                let iw = self.width(*a);
                let _ = writeln!(
                    funcs,
                    "    function [{}:0] {}_f;\n        input [{}:0] i;\n        case (i)",
                    w - 1,
                    n.name,
                    iw - 1
                );
                for (j, e) in t.iter().enumerate() {
                    let _ = writeln!(
                        funcs,
                        "            {iw}'d{j}: {}_f = {w}'h{:x};",
                        n.name,
                        e & mask(w)
                    );
                }
                let _ = writeln!(
                    funcs,
                    "            default: {}_f = {w}'h0;\n        endcase\n    endfunction",
                    n.name
                );
            }
            if n.reg {
                let _ = writeln!(decl, "    reg  {range}{};", n.name);
                let e = self.expr(n);
                if n.reset {
                    let _ = writeln!(
                        resets,
                        "        if (rst) {} <= {w}'d0;\n        else {} <= {e};",
                        n.name, n.name
                    );
                } else {
                    let _ = writeln!(regs, "        {} <= {e};", n.name);
                }
            } else {
                let _ = writeln!(wires, "    wire {range}{} = {};", n.name, self.expr(n));
            }
            for d in 1..=(self.max_use[i] - n.stage) {
                let dn = Self::delayed(&n.name, d);
                let prev = Self::delayed(&n.name, d - 1);
                let _ = writeln!(decl, "    reg  {range}{dn};");
                if n.reset {
                    let _ = writeln!(
                        resets,
                        "        if (rst) {dn} <= {w}'d0;\n        else {dn} <= {prev};"
                    );
                } else {
                    let _ = writeln!(regs, "        {dn} <= {prev};");
                }
            }
        }
        let mut out = decl;
        out.push_str(&funcs);
        out.push_str(&wires);
        let _ = write!(
            out,
            "    always @(posedge clk) begin\n{resets}{regs}    end\n"
        );
        out
    }

    fn eval_op(&self, op: &Op, w: u32, val: &[u64]) -> u64 {
        let g = |v: &V| val[v.0];
        let x = match op {
            Op::Input(_) => 0,
            Op::Const(c) => *c,
            Op::Xor(a, b) => g(a) ^ g(b),
            Op::Or(a, b) => g(a) | g(b),
            Op::Add(v) => v.iter().fold(0u64, |s, a| s.wrapping_add(g(a) & mask(w))),
            Op::Rotl(a, r) => {
                let x = g(a);
                if *r == 0 {
                    x
                } else {
                    (x << r | x >> (w - r)) & mask(w)
                }
            }
            Op::Shr(a, k) => g(a) >> k,
            Op::Slice(a, lo) => g(a) >> lo,
            Op::Concat(v) => v.iter().fold(0u64, |acc, a| {
                let aw = self.width(*a);
                (if aw >= 64 { 0 } else { acc << aw }) | g(a)
            }),
            Op::Mux(s, a, b) => {
                if g(s) & 1 == 1 {
                    g(a)
                } else {
                    g(b)
                }
            }
            Op::Eq(a, c) => u64::from(g(a) == *c),
            Op::Table(a, t) => t[g(a) as usize],
            Op::MulK(a, k) => g(a).wrapping_mul(*k),
        };
        x & mask(w)
    }

    #[cfg(test)]
    /// Evaluates every node for the given inputs (by their expression text); returns all values.
    pub fn eval(&self, inputs: &HashMap<String, u64>) -> Vec<u64> {
        let mut val: Vec<u64> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let x = match &n.op {
                Op::Input(e) => *inputs.get(e).unwrap_or_else(|| panic!("input {e}")),
                op => self.eval_op(op, n.width, &val),
            };
            val.push(x & mask(n.width));
        }
        val
    }

    /// Width of the widest adder (for tests of the stage depth).
    #[cfg(test)]
    pub fn widest_add(&self) -> u32 {
        self.nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Add(_)))
            .map(|n| n.width)
            .max()
            .unwrap_or(0)
    }

    /// The most operands of any adder (for tests of how sums are written: a third operand, a
    /// carry-in, is a second carry chain on ECP5).
    #[cfg(test)]
    pub fn most_add_operands(&self) -> usize {
        self.nodes
            .iter()
            .filter_map(|n| match &n.op {
                Op::Add(ops) => Some(ops.len()),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    #[cfg(test)]
    /// The value of `v` in a result of [`Pipe::eval`].
    pub fn get(vals: &[u64], v: V) -> u64 {
        vals[v.0]
    }
}
