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

use bloomlanes_core::retrieval::Shape;
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
    /// A retrieval table's shape (`Some` for [`PipelineConfig::retrieval`]): one bank per cell
    /// of a key instead of one per lane, addressed as `docs/FORMAT.md` §9 "Banks" says; the
    /// layout and block count of `base` are then unused.
    pub retrieval: Option<Shape>,
}

impl PipelineConfig {
    /// A design of `base`'s shape with `cells`.
    pub fn new(base: HdlConfig, cells: CellSpec) -> PipelineConfig {
        PipelineConfig {
            base,
            cells,
            forwarding: true,
            retrieval: None,
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

    /// The retrieval table of `shape` (core's [`Shape`]: arity, segments, seed, widths): `a`
    /// banks of `v + f`-bit cells, lookups answer `m0_found_value` = `{found, value}`. The key
    /// hash (XXH64 of `base`'s seed) is the table's; `base` gives key input, tags and names.
    pub fn retrieval(base: HdlConfig, shape: Shape) -> PipelineConfig {
        PipelineConfig {
            retrieval: Some(shape),
            ..PipelineConfig::new(
                base,
                CellSpec::retrieval(shape.value_bits.into(), shape.check_bits.into()),
            )
        }
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
        if let Some(shape) = &self.retrieval {
            crate::retrieval::validate(self, shape)?;
        } else if self.cells.alu == CellAlu::Fixed {
            return Err(HdlError::InvalidConfig(
                "fixed cells need a retrieval shape (PipelineConfig::retrieval)".into(),
            ));
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

    /// Cells of one bank (`z × W`) and lanes (a retrieval table: cells of one bank and `a`).
    pub fn bank_shape(&self) -> (u64, usize) {
        match &self.retrieval {
            Some(s) => (crate::retrieval::bank_depth(s), usize::from(s.arity)),
            None => (self.base.bank_entries(), self.base.layout.lanes()),
        }
    }
}
