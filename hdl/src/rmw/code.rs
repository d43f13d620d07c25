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
//! Binary stays for wider classes (a code of `2^8 − 1` bits a cell is larger than the compare
//! it saves) and behind plain banks: on iCE40 HX8K the codes' registers (3727 → 4429 logic
//! cells) spread the placement and the design measured slower (hdl/REPORT.md, "Spatial
//! classes as thermometer codes").

use crate::cell::{CellAlu, CellSpec};

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
