//! One pipeline generator for every kind of filter: the shape and key input of an
//! [`HdlConfig`] and the cells of a [`CellSpec`] (width, ALU, reduction). The static, counting
//! and spatial designs are instances: `PipelineConfig::new(base, CellSpec::STATIC)`,
//! [`CellSpec::counting`], [`CellSpec::spatial`].
//!
//! Every design has the same front end (input register, XXH64, block index, lane bits, address
//! register), one bank per lane (and replica) of `z × W` cells, the same management port
//! (`mg_*`: clear, read or write one entry of every lane after draining the pipeline) and the
//! same answer FIFO per port. Behind the address register, an ALU that only writes
//! ([`CellAlu::SetBit`]) writes the banks at once and reduces the bits read by every port; the
//! others read, modify and write the key's cells at one operation per clock with forwarding
//! (see `rmw`).

use bloomlanes_core::Params;

use crate::cell::{CellAlu, CellSpec};
use crate::{HdlConfig, HdlError};

/// A design: the shape, key input and naming of `base` and the cells.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineConfig {
    /// Layout, blocks, seed, key input, ports, tags, names, multiplies, adders, RAM style. A
    /// read-modify-write design has one port.
    pub base: HdlConfig,
    /// Cell width, ALU and reduction.
    pub cells: CellSpec,
    /// Whether a read-modify-write design forwards the cells of the operations in flight (true;
    /// false generates a deliberately wrong design for the tests that prove the forwarding is
    /// exercised).
    pub forwarding: bool,
}

impl PipelineConfig {
    /// A design of `base`'s shape with `cells`.
    pub fn new(base: HdlConfig, cells: CellSpec) -> PipelineConfig {
        PipelineConfig {
            base,
            cells,
            forwarding: true,
        }
    }

    /// The static filter of `base`'s shape: 1-bit cells, set, membership (what
    /// [`crate::generate`] builds).
    pub fn static_filter(base: &HdlConfig) -> PipelineConfig {
        PipelineConfig::new(base.clone(), CellSpec::STATIC)
    }

    /// The spatial filter of `base`'s shape: `bits`-bit classes (4, 8 or 16), insert
    /// `Max(class)` (the class on `s0_value`), lookup answers the minimum (`m0_min`, 0 = absent).
    pub fn spatial(base: HdlConfig, bits: u32) -> PipelineConfig {
        PipelineConfig::new(base, CellSpec::spatial(bits))
    }

    /// Checks the configuration; every generator entry point calls this first.
    pub fn validate(&self) -> Result<(), HdlError> {
        self.base.validate()?;
        self.cells.validate().map_err(HdlError::InvalidConfig)?;
        if self.cells.reads_cells() && self.base.lookup_ports != 1 {
            return Err(HdlError::InvalidConfig(format!(
                "a read-modify-write design ({}) has one port, not {}",
                self.cells, self.base.lookup_ports
            )));
        }
        Ok(())
    }

    /// Whether operation code 2 clears the whole filter (the static design).
    pub fn op_clears(&self) -> bool {
        self.cells.alu == CellAlu::SetBit
    }

    /// The parameters of a filter of this shape.
    pub fn params(&self) -> Params {
        Params::new(self.base.layout, self.base.blocks).with_seed(self.base.seed)
    }

    /// Cells of one bank (`z × W`) and lanes.
    pub fn bank_shape(&self) -> (u64, usize) {
        (self.base.bank_entries(), self.base.layout.lanes())
    }
}
