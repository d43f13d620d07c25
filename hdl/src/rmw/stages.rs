//! The read-modify-write pipeline's stages and how far each register travels along them: the
//! valid bits and addresses as far as a forwarding compare reads them, the cells as far as a
//! merge reads them, and nothing further (Verilator's `-Wall` lint flags an unread bit).

use std::fmt::Write as _;

use crate::geo::bits;

/// The read's stages, R1 to Rn.
const READS: [&str; 6] = ["r1", "r2", "r3", "r4", "r5", "r6"];
/// The stages after Y, each a cycle later.
const AFTER_Y: [&str; 4] = ["z", "w", "v", "u"];

/// The stages of a read of `n` cycles and a forwarding window of `m + 2` operations.
///
/// The bank read takes n cycles (R1..Rn) and a write lands d cycles after Y (the write port's
/// registers); an operation's read misses the writes of the m + 2 operations ahead (m = n + d,
/// the forwarding window). X takes the one ahead's cells from Y; Rn merges those of the 2nd to
/// (m + 2)th ahead, which are then in Y and the m stages after it (`after_y`), with flags
/// compared in R(n-1) against the addresses of X, Y and the m - 1 stages after Y.
///
/// With a read of three cycles or more (`early`), the flags are compared one stage earlier
/// still, in R(n-2) against the stage that will be ahead a cycle later (`{rm}_p1..`), so that
/// R(n-1) can merge the zero flags of the three to (m + 2)th ahead (`{rn}_far`) into a
/// register; the addresses then go one stage less far.
pub(super) struct Stages {
    /// R1..Rn.
    pub reads: &'static [&'static str],
    /// Rn, R(n-1) and (early) R(n-2).
    pub rn: &'static str,
    pub rm: &'static str,
    pub rp: &'static str,
    pub early: bool,
    /// The m stages after Y.
    pub after_y: &'static [&'static str],
    /// How many stages after Y carry the address (compared).
    pub far_stages: usize,
    /// The stages whose zero flags are merged: Y and after_y (early: but the last).
    pub nz_stages: usize,
    /// The stages an operation's address is compared against: X, Y, `after_y[..far_stages]`.
    pub compared: Vec<&'static str>,
    /// The stages whose cells are merged: Y and after_y.
    pub merged: Vec<&'static str>,
    /// How many of `merged` keep their cells: thermometer codes merge Y's by its flag and
    /// OR Y's to the (m - 1)th after Y's a stage early, so the last one's have no reader.
    pub kept_cells: usize,
    /// The compare split over two stages (early, forwarding): the last compared stage is read
    /// a stage later than its valid bit and upper address bits, which the stage before it
    /// gives, so it keeps only each lane's lower address bits and no valid bit.
    pub narrow: bool,
    /// f0 (the front's output), R1..Rn, then the compared stages: the valid bits' and
    /// addresses' path.
    pub chain: Vec<&'static str>,
}

impl Stages {
    /// The stages of a read of `n` cycles and a window of `m + 2`; `thermo`: the cells travel
    /// as thermometer codes; `forwarding` off only in the tests' broken designs.
    pub fn new(n: usize, m: usize, thermo: bool, forwarding: bool) -> Self {
        let reads = &READS[..n];
        let after_y = &AFTER_Y[..m];
        let early = n >= 3;
        let far_stages = if early { m - 2 } else { m - 1 };
        let compared: Vec<&str> = ["x", "y"]
            .iter()
            .chain(&after_y[..far_stages])
            .copied()
            .collect();
        let merged: Vec<&str> = ["y"].iter().chain(after_y).copied().collect();
        let narrow = early && forwarding && far_stages > 0;
        let chain = ["f0"]
            .iter()
            .chain(reads)
            .chain(&compared)
            .copied()
            .collect();
        Stages {
            reads,
            rn: reads[n - 1],
            rm: reads[n - 2],
            rp: if early { reads[n - 3] } else { "" },
            early,
            after_y,
            far_stages,
            nz_stages: if early { m } else { m + 1 },
            kept_cells: if thermo { m } else { m + 1 },
            compared,
            merged,
            narrow,
            chain,
        }
    }

    /// The stage before `s` on the chain.
    pub fn before(&self, s: &str) -> &'static str {
        let i = self.chain.iter().position(|c| *c == s);
        self.chain[i.expect("every compared stage is in the chain") - 1]
    }

    /// The stage that keeps only each lane's lower address bits (`narrow`), if any.
    pub fn narrow_stage(&self) -> Option<&'static str> {
        self.narrow.then(|| self.compared[self.compared.len() - 1])
    }

    /// The stages after f0 with an address register (full width; a narrow last one apart).
    pub fn addressed(&self) -> &[&'static str] {
        &self.chain[1..self.chain.len() - usize::from(self.narrow)]
    }

    /// The declarations of the valid bits, a comma-separated list: as far as a compare reads
    /// them.
    pub fn valid_names(&self) -> String {
        let names: Vec<String> = self
            .addressed()
            .iter()
            .map(|s| format!("{s}_valid"))
            .collect();
        names.join(", ")
    }

    /// Emits the narrow stage's declaration into `v`; returns the
    /// always block's resets and valid updates, and its unconditional registers: op, tag and
    /// address from f0 to X, then addresses, cells and (`flags`) zero flags after Y, for `l`
    /// lanes of `aw`-bit addresses whose lower `lo_bits` the narrow stage keeps.
    pub fn registers(
        &self,
        v: &mut String,
        l: usize,
        aw: u32,
        lo_bits: u32,
        tw: u32,
        flags: bool,
    ) -> [String; 3] {
        let (mut resets, mut valids, mut regs) = (String::new(), String::new(), String::new());
        let valid = self.addressed();
        for (prev, st) in ["f0"].iter().chain(valid).zip(valid) {
            let _ = writeln!(resets, "            {st}_valid <= 1'b0;");
            let _ = writeln!(valids, "            {st}_valid <= {prev}_valid;");
        }
        if let Some(st) = self.narrow_stage() {
            let _ = writeln!(
                v,
                "    reg [{}:0] {st}_addr; // the lower address bits, {lo_bits} a lane",
                l as u32 * lo_bits - 1,
            );
        }
        for (i, st) in self.reads.iter().chain(&["x"]).enumerate() {
            let prev = self.chain[i];
            let tag = if i == 0 {
                format!("f0_tag[{}:0]", tw - 1)
            } else {
                format!("{prev}_tag")
            };
            let _ = writeln!(
                regs,
                "        {st}_op <= {prev}_op;\n        {st}_tag <= {tag};\n        {st}_addr <= {prev}_addr;"
            );
        }
        let _ = writeln!(regs, "        x_ins <= ({}_op == OP_INSERT);", self.rn);
        regs.push_str("        x_other <= other_next;\n        y_tag <= x_tag;\n        y_addr <= x_addr;\n        y_cell <= nxt;\n");
        for (k, st) in self.after_y.iter().enumerate() {
            let prev = self.merged[k];
            if self.narrow && k + 1 == self.far_stages {
                let lanes: Vec<String> = (0..l as u32)
                    .rev()
                    .map(|lane| bits(&format!("{prev}_addr"), lane * aw, lo_bits))
                    .collect();
                let _ = writeln!(regs, "        {st}_addr <= {{{}}};", lanes.join(", "));
            } else if k < self.far_stages {
                let _ = writeln!(regs, "        {st}_addr <= {prev}_addr;");
            }
            if k + 1 < self.kept_cells {
                let _ = writeln!(regs, "        {st}_cell <= {prev}_cell;");
            }
            if flags && k + 1 < self.nz_stages {
                let _ = writeln!(regs, "        {st}_nz <= {prev}_nz;");
            }
        }
        [resets, valids, regs]
    }
}

#[cfg(test)]
mod tests {
    use super::Stages;

    /// Registered banks (a read of four cycles, a window of six): the last compared stage, W,
    /// keeps each lane's lower address bits and no valid bit, and thermometer codes stop a
    /// stage before binary cells (no `u_cell`); plain banks keep every register.
    #[test]
    fn registers_go_as_far_as_they_are_read() {
        let mut v = String::new();
        let thermo = Stages::new(4, 4, true, true);
        assert_eq!(thermo.compared, ["x", "y", "z", "w"]);
        assert!(thermo.narrow);
        assert_eq!(
            thermo.valid_names(),
            "r1_valid, r2_valid, r3_valid, r4_valid, x_valid, y_valid, z_valid"
        );
        let [_, valids, regs] = thermo.registers(&mut v, 2, 15, 5, 8, false);
        assert_eq!(
            v,
            "    reg [9:0] w_addr; // the lower address bits, 5 a lane\n"
        );
        assert!(
            regs.contains("w_addr <= {z_addr[19:15], z_addr[4:0]};"),
            "{regs}"
        );
        assert!(
            regs.contains("v_cell <= w_cell;") && !regs.contains("u_cell"),
            "{regs}"
        );
        assert!(!valids.contains("w_valid"), "{valids}");
        let binary = Stages::new(4, 4, false, true);
        let [_, _, regs] = binary.registers(&mut String::new(), 2, 15, 5, 8, false);
        assert!(regs.contains("u_cell <= v_cell;"), "{regs}");
        // The tests' design without forwarding compares nothing: nothing is narrowed.
        assert!(!Stages::new(4, 4, true, false).narrow);
        let plain = Stages::new(2, 2, false, true);
        let mut v = String::new();
        let [_, valids, regs] = plain.registers(&mut v, 2, 15, 5, 8, true);
        assert!(v.is_empty() && !plain.narrow);
        assert_eq!(plain.compared, ["x", "y", "z"]);
        assert!(valids.contains("z_valid <= y_valid;") && regs.contains("z_addr <= y_addr;"));
        assert!(
            regs.contains("w_cell <= z_cell;") && regs.contains("z_nz <= y_nz;"),
            "{regs}"
        );
    }
}
