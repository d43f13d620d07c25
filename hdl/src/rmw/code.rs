//! How the read-modify-write stage carries cells between the bank read and the bank write.
//!
//! The banks always hold binary cells. A spatial filter of 4-bit classes behind registered
//! banks carries them through the forwarding registers, X and Y as 15-bit thermometer codes
//! instead (bit `j` set when the class is above `j`): the maximum of two classes is then the OR
//! of their codes and the minimum the AND, so the one-cycle loop from Y back into X is one LUT4
//! a bit (`nxt[j] = (x_fw_y ? y_cell[j] : x_other[j]) | x_vth[j]`), where the binary form took
//! a 4-bit compare and two multiplexers (ECP5-85k, z=64 registered: `x_val` / `x_other` →
//! `y_cell`, two wide LUTs and three routing hops, 4.8–5.3 ns on every seed). A class only
//! grows, so the newest write to a cell is also its largest and the forwarded codes merge by
//! OR, without the flags' priority. The code is made once where a cell enters (the bank read,
//! the inserted class) and undone once where it leaves (the bank write, the answer).
//!
//! The banks then hold each class in a balanced Gray code ([`BANK_GRAY`]): consecutive classes
//! differ in one bit, and each bit changes at most four times from class 0 to 15, so each bank
//! bit is the XOR of at most four code bits, one LUT4 on the way to the write register. In
//! binary, bit 0 was the parity of all fifteen code bits, two LUT levels before the management
//! multiplexer (ECP5-85k, z=64 registered: `y_cell` → `a_din_m`, 4.4–4.7 ns, critical on half
//! the seeds). Reading a bank is a LUT4 a code bit either way. Everything outside the banks
//! stays binary: the management port translates both ways, and the bank files are written and
//! read through [`CellCode::bank_of`] and [`CellCode::class_of`].
//!
//! Binary stays for wider classes (a code of `2^8 − 1` bits a cell is larger than the compare
//! it saves) and behind plain banks: on iCE40 HX8K the codes' registers (3727 → 4429 logic
//! cells) spread the placement and the design measured slower (hdl/REPORT.md, "Spatial
//! classes as thermometer codes").

use crate::cell::{CellAlu, CellSpec};
use crate::pipeline::PipelineConfig;

/// The bank form of each 4-bit class of a thermometer design (class `n` is `BANK_GRAY[n]`): a
/// Gray code whose bits change 4, 4, 4 and 3 times from class 0 to 15 (bit 0 between classes
/// 0/1, 2/3, 4/5 and 10/11; see [`transitions`]), with class 0 (an empty cell, a cleared bank)
/// all zeros.
const BANK_GRAY: [u8; 16] = [0, 1, 3, 2, 6, 7, 15, 11, 9, 13, 5, 4, 12, 14, 10, 8];

/// The code bits `j` (class above `j`) where bit `b` of the bank form changes between class
/// `j` and `j + 1`: the bank bit is their XOR.
fn transitions(b: u32) -> impl Iterator<Item = u32> {
    (0..15u32).filter(move |&j| (BANK_GRAY[j as usize] ^ BANK_GRAY[j as usize + 1]) >> b & 1 == 1)
}

/// A Verilog expression of the 4-input function `table` (bit `i` its value for input `i`) of
/// the 4-bit expression `x`: one LUT4.
fn lut4(x: &str, table: u16) -> String {
    format!("(|(16'h{table:04x} & (16'd1 << {x})))")
}

/// Verilog's `{a, b, ..}` of `bits`, most significant first.
fn concat(bits: impl DoubleEndedIterator<Item = String>) -> String {
    format!("{{{}}}", bits.rev().collect::<Vec<_>>().join(", "))
}

/// The form in which the execute stage carries a design's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CellCode {
    /// As the banks hold them, `c` bits.
    Binary,
    /// A thermometer code of `2^c − 1` bits (4-bit spatial classes only).
    Thermometer,
}

impl CellCode {
    /// The code of a design's cells: thermometer for 4-bit classes behind registered banks,
    /// binary otherwise.
    pub(crate) fn of(cells: CellSpec, registered_banks: bool) -> CellCode {
        if cells.alu == CellAlu::Max && cells.bits == 4 && registered_banks {
            CellCode::Thermometer
        } else {
            CellCode::Binary
        }
    }

    /// The code of design `cfg`'s cells ([`CellCode::of`] of its cells and banks).
    pub(crate) fn of_config(cfg: &PipelineConfig) -> CellCode {
        CellCode::of(cfg.cells, cfg.base.registered_banks)
    }

    /// The bank form of the class or count `cell` (what a bank entry holds for it).
    pub(crate) fn bank_of(self, cell: u64) -> u64 {
        match self {
            CellCode::Binary => cell,
            CellCode::Thermometer => u64::from(BANK_GRAY[cell as usize & 15]),
        }
    }

    /// The class or count a bank entry `bank` holds (the inverse of [`CellCode::bank_of`]).
    pub(crate) fn class_of(self, bank: u64) -> u64 {
        match self {
            CellCode::Binary => bank,
            CellCode::Thermometer => BANK_GRAY
                .iter()
                .position(|&g| u64::from(g) == bank & 15)
                .map_or(0, |n| n as u64),
        }
    }

    /// Bits of a carried cell of `c` binary bits.
    pub(crate) fn width(self, c: u32) -> u32 {
        match self {
            CellCode::Binary => c,
            CellCode::Thermometer => (1 << c) - 1,
        }
    }

    /// A Verilog expression of the code of the `c`-bit binary expression `x` (a name or a
    /// part select).
    pub(crate) fn encode(self, x: &str, c: u32) -> String {
        match self {
            CellCode::Binary => x.to_string(),
            CellCode::Thermometer => {
                let bits: Vec<String> = (0..self.width(c))
                    .rev()
                    .map(|j| format!("({x} > {c}'d{j})"))
                    .collect();
                format!("{{{}}}", bits.join(", "))
            }
        }
    }

    /// A Verilog expression of the code of the `c`-bit bank entry `x` (a name or a part
    /// select): bit `j`, the class above `j`, one LUT4 of the entry's bits.
    pub(crate) fn code_of_bank(self, x: &str, c: u32) -> String {
        self.bank_lut(x, self.width(c), |g| (1 << self.class_of(g)) - 1)
    }

    /// A Verilog expression of the bank entry of the code in bits `lo ..` of signal `sig`:
    /// each bit the XOR of the code bits where it changes ([`BANK_GRAY`]), four at most.
    pub(crate) fn to_bank(self, sig: &str, lo: u32, c: u32) -> String {
        match self {
            CellCode::Binary => crate::geo::bits(sig, lo, c),
            CellCode::Thermometer => concat((0..c).map(|b| {
                let xs: Vec<String> = transitions(b)
                    .map(|j| format!("{sig}[{}]", lo + j))
                    .collect();
                format!("({})", xs.join(" ^ "))
            })),
        }
    }

    /// A Verilog expression of the bank entry of the `c`-bit binary class `x` (management
    /// writes), one LUT4 a bit.
    pub(crate) fn bank_from_binary(self, x: &str, c: u32) -> String {
        self.bank_lut(x, c, |n| self.bank_of(n))
    }

    /// A Verilog expression of the binary class of the `c`-bit bank entry `x` (management
    /// reads), one LUT4 a bit.
    pub(crate) fn binary_from_bank(self, x: &str, c: u32) -> String {
        self.bank_lut(x, c, |g| self.class_of(g))
    }

    /// A Verilog expression of the binary cells of the `lanes` bank entries of `c` bits each
    /// packed in `sig` (lane 0 lowest): the management port's read data.
    pub(crate) fn binary_from_banks(self, sig: &str, lanes: usize, c: u32) -> String {
        match self {
            CellCode::Binary => sig.to_string(),
            CellCode::Thermometer => concat(
                (0..lanes).map(|lane| self.binary_from_bank(&crate::geo::part(sig, lane, c), c)),
            ),
        }
    }

    /// The Verilog header's note on how the banks hold a cell (empty where they hold it as it
    /// is), continuing its paragraph on the bank contents.
    pub(crate) fn header_note(self) -> String {
        match self {
            CellCode::Binary => String::new(),
            CellCode::Thermometer => {
                let table: Vec<String> = BANK_GRAY.iter().map(|g| format!("{g:x}")).collect();
                format!(
                    "\n//   Banks and bank files hold class n as the Gray code G[n] ({}, n = 0 .. 15), one bit\n//   a LUT4 from the pipeline's thermometer codes; the management port reads and writes binary.",
                    table.join(" ")
                )
            }
        }
    }

    /// `x` (Binary), or the `bits`-bit function `f` of the 4-bit bank entry `x`, one LUT4 a
    /// bit.
    fn bank_lut(self, x: &str, bits: u32, f: impl Fn(u64) -> u64) -> String {
        match self {
            CellCode::Binary => x.to_string(),
            CellCode::Thermometer => concat((0..bits).map(|b| {
                let table = (0..16u64)
                    .filter(|&i| f(i) >> b & 1 == 1)
                    .fold(0u16, |t, i| t | 1 << i);
                lut4(x, table)
            })),
        }
    }

    /// A Verilog expression of the `c`-bit binary value of the code in bits `lo ..` of signal
    /// `sig`. Bit `b` of a thermometer code's value `n` is the parity of
    /// `floor(n / 2^b)`, the number of its set bits `j` with `j ≡ 2^b − 1 (mod 2^b)`.
    pub(crate) fn decode(self, sig: &str, lo: u32, c: u32) -> String {
        match self {
            CellCode::Binary => crate::geo::bits(sig, lo, c),
            CellCode::Thermometer => {
                let k = self.width(c);
                let bits: Vec<String> = (0..c)
                    .rev()
                    .map(|b| {
                        let step = 1usize << b;
                        let xs: Vec<String> = ((step - 1) as u32..k)
                            .step_by(step)
                            .map(|j| format!("{sig}[{}]", lo + j))
                            .collect();
                        format!("({})", xs.join(" ^ "))
                    })
                    .collect();
                format!("{{{}}}", bits.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of a thermometer code, evaluated the way `decode` writes it.
    fn decoded(code: u32, c: u32) -> u32 {
        let k = CellCode::Thermometer.width(c);
        (0..c)
            .map(|b| {
                let step = 1usize << b;
                let parity = ((step - 1) as u32..k)
                    .step_by(step)
                    .fold(0, |p, j| p ^ ((code >> j) & 1));
                parity << b
            })
            .sum()
    }

    #[test]
    fn thermometer_codes_decode_to_their_value_and_combine_by_or_and_and() {
        let code = |n: u32| (1u32 << n) - 1;
        for a in 0..16 {
            assert_eq!(decoded(code(a), 4), a);
            for b in 0..16 {
                assert_eq!(decoded(code(a) | code(b), 4), a.max(b));
                assert_eq!(decoded(code(a) & code(b), 4), a.min(b));
            }
        }
    }

    #[test]
    fn expressions_name_the_bits_they_read() {
        let t = CellCode::Thermometer;
        assert_eq!(t.width(4), 15);
        let e = t.encode("rd0[7:4]", 4);
        assert!(e.starts_with("{(rd0[7:4] > 4'd14), "), "{e}");
        assert!(e.ends_with(", (rd0[7:4] > 4'd0)}"), "{e}");
        assert_eq!(
            t.decode("y", 15, 4),
            "{(y[22]), (y[18] ^ y[22] ^ y[26]), (y[16] ^ y[18] ^ y[20] ^ y[22] ^ y[24] ^ y[26] ^ y[28]), (y[15] ^ y[16] ^ y[17] ^ y[18] ^ y[19] ^ y[20] ^ y[21] ^ y[22] ^ y[23] ^ y[24] ^ y[25] ^ y[26] ^ y[27] ^ y[28] ^ y[29])}"
        );
        assert_eq!(CellCode::Binary.decode("y", 8, 4), "y[11:8]");
        assert_eq!(CellCode::Binary.encode("rd0[3:0]", 4), "rd0[3:0]");
    }

    /// Evaluates a concatenation the bank expressions write (`{e_hi, .., e_0}` of
    /// `(|(16'hTTTT & (16'd1 << x)))` LUTs of the 4-bit input `x`, or `(s[i] ^ ..)` XORs of the
    /// bits `bit(i)`), bit 0 from the last element.
    fn eval(expr: &str, x: u32, bit: impl Fn(u32) -> u32) -> u32 {
        let body = expr.strip_prefix('{').and_then(|e| e.strip_suffix('}'));
        let parts: Vec<&str> = body.expect("a concatenation").split(", ").collect();
        parts.iter().rev().enumerate().fold(0, |acc, (b, part)| {
            let v = match part.split_once("16'h") {
                Some((_, t)) => (u32::from_str_radix(&t[..4], 16).unwrap() >> x) & 1,
                None => part
                    .split('[')
                    .skip(1)
                    .map(|i| bit(i.split(']').next().unwrap().parse().unwrap()))
                    .fold(0, |p, v| p ^ v),
            };
            acc | v << b
        })
    }

    #[test]
    fn the_bank_form_is_a_balanced_gray_code_from_zero() {
        let mut seen = [false; 16];
        for (n, &g) in BANK_GRAY.iter().enumerate() {
            assert!(!seen[g as usize], "{g} twice");
            seen[g as usize] = true;
            if n > 0 {
                assert_eq!(
                    (g ^ BANK_GRAY[n - 1]).count_ones(),
                    1,
                    "classes {} and {n}",
                    n - 1
                );
            }
        }
        assert_eq!(BANK_GRAY[0], 0, "an empty or cleared cell is all zeros");
        for b in 0..4 {
            assert!(transitions(b).count() <= 4, "bit {b}: one LUT4");
        }
    }

    #[test]
    fn every_bank_expression_maps_each_class_to_its_form_and_back() {
        let t = CellCode::Thermometer;
        let (to_bank, code_of_bank) = (t.to_bank("y", 15, 4), t.code_of_bank("rd0[7:4]", 4));
        let (from_binary, to_binary) = (t.bank_from_binary("w", 4), t.binary_from_bank("r", 4));
        for part in to_bank.trim_matches(['{', '}']).split(", ") {
            assert!(part.matches('[').count() <= 4, "{part}: more than a LUT4");
        }
        for n in 0..16u32 {
            let (code, g) = ((1u32 << n) - 1, u32::from(BANK_GRAY[n as usize]));
            assert_eq!(
                eval(&to_bank, 0, |i| (code >> (i - 15)) & 1),
                g,
                "class {n} written"
            );
            assert_eq!(eval(&code_of_bank, g, |_| 0), code, "class {n} read");
            assert_eq!(eval(&from_binary, n, |_| 0), g, "class {n} by management");
            assert_eq!(eval(&to_binary, g, |_| 0), n, "class {n} read back");
            assert_eq!(t.bank_of(u64::from(n)), u64::from(g));
            assert_eq!(t.class_of(u64::from(g)), u64::from(n));
            assert_eq!(CellCode::Binary.bank_of(u64::from(n)), u64::from(n));
        }
    }

    #[test]
    fn only_four_bit_classes_behind_registered_banks_are_carried_as_thermometers() {
        assert_eq!(
            CellCode::of(CellSpec::spatial(4), true),
            CellCode::Thermometer
        );
        assert_eq!(CellCode::of(CellSpec::spatial(4), false), CellCode::Binary);
        assert_eq!(CellCode::of(CellSpec::spatial(8), true), CellCode::Binary);
        assert_eq!(
            CellCode::of(CellSpec::counting(bloomlanes_core::CounterBits::Four), true),
            CellCode::Binary
        );
    }
}
