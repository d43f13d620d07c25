//! The ports of the generated modules, listed once: the top module's (declared by `top`,
//! connected by the benches, the board tops and the AXI wrapper) and a bank's (declared by
//! `verilog`, connected by `top`).

use crate::front::LEN_BITS;
use crate::geo::{range, Geo};

/// One port of a module.
#[derive(Clone, Debug)]
pub(crate) struct Pin {
    /// Its name (`clk`, `mg_addr`, `s0_valid`, `m1_hit`, `a_din`, ...).
    pub name: String,
    /// The stream port it belongs to (top module only).
    pub port: Option<usize>,
    /// What it is, without the port number: `s_valid`, `s_op`, `m_ans`, ...; else its name.
    pub role: &'static str,
    /// `input  wire`, `output wire` or `output reg `.
    pub dir: &'static str,
    /// Width in bits.
    pub width: u32,
}

const IN: &str = "input  wire";
const OUT: &str = "output wire";
const OUT_REG: &str = "output reg ";

fn pin(role: &'static str, dir: &'static str, width: u32) -> Pin {
    Pin {
        name: role.to_string(),
        port: None,
        role,
        dir,
        width,
    }
}

/// The top module's ports, in declaration order.
pub(crate) fn core_pins(g: &Geo) -> Vec<Pin> {
    let mut pins = vec![
        pin("clk", IN, 1),
        pin("rst", IN, 1),
        pin("busy", OUT, 1),
        pin("mg_req", IN, 1),
        pin("mg_clear", IN, 1),
        pin("mg_we", IN, 1),
        pin("mg_addr", IN, g.aw),
        pin("mg_wdata", IN, g.mg_bits),
        pin("mg_ack", OUT_REG, 1),
        pin("mg_rdata", OUT_REG, g.mg_bits),
    ];
    for p in 0..g.ports {
        let mut roles = vec![("s_valid", IN, 1), ("s_ready", OUT, 1)];
        if p == 0 {
            roles.push(("s_op", IN, 2));
            if g.value_bits > 0 {
                roles.push(("s_value", IN, g.value_bits));
            }
        }
        roles.extend([("s_tag", IN, g.tw), ("s_key", IN, g.kw)]);
        if g.var_len {
            roles.push(("s_len", IN, LEN_BITS));
        }
        roles.extend([
            ("m_valid", OUT, 1),
            ("m_ready", IN, 1),
            ("m_ans", OUT, g.ans_bits),
            ("m_tag", OUT, g.tw),
        ]);
        for (role, dir, width) in roles {
            let (side, field) = role.split_at(1);
            let field = if role == "m_ans" {
                g.ans_name
            } else {
                &field[1..]
            };
            pins.push(Pin {
                name: format!("{side}{p}_{field}"),
                port: Some(p),
                role,
                dir,
                width,
            });
        }
    }
    pins
}

/// The ports of a bank of `cells`-bit entries and `aw` address bits with a read on port A
/// (`read_a`) and a read port B (`has_b`).
pub(crate) fn bank_pins(read_a: bool, has_b: bool, cell: u32, aw: u32) -> Vec<Pin> {
    let mut pins = vec![
        pin("clk", IN, 1),
        pin("a_we", IN, 1),
        pin("a_din", IN, cell),
        pin("a_addr", IN, aw),
    ];
    if read_a {
        pins.push(pin("a_dout", OUT_REG, cell));
    }
    if has_b {
        pins.push(pin("b_addr", IN, aw));
        pins.push(pin("b_dout", OUT_REG, cell));
    }
    pins
}

/// The port list of a module declaration (one port a line, no parentheses).
pub(crate) fn declare(pins: &[Pin]) -> String {
    pins.iter()
        .map(|p| format!("    {} {}{}", p.dir, range(p.width), p.name))
        .collect::<Vec<_>>()
        .join(",\n")
}

/// The connections of an instance: `.name(wire(pin))` for every pin, joined for a multi-line
/// port list.
pub(crate) fn connect(pins: &[Pin], mut wire: impl FnMut(&Pin) -> String) -> String {
    pins.iter()
        .map(|p| format!(".{}({})", p.name, wire(p)))
        .collect::<Vec<_>>()
        .join(",\n        ")
}
