//! The counting filter in hardware: an instance of the one pipeline ([`crate::pipeline`]) with
//! `c`-bit counter cells, the counter ALU (insert + 1, delete − 1 when every counter is
//! positive, a saturated counter unchanged: exactly [`bloomlanes_core::CountingMut`]) and
//! membership lookups. The top module has the static design's interface (`s0_*`, `m0_*`,
//! `mg_*`, `busy`) with op 2 = delete, so the same test benches drive it.

use bloomlanes_core::{CounterBits, CountingFilter, HashId};

use crate::pipeline::PipelineConfig;
use crate::{CellSpec, Design, HdlConfig, HdlError, KeyMode};

/// Operation codes of a counting design's `s0_op` input: [`LOOKUP`](op::LOOKUP) answers 1 when
/// every counter of the key is positive; [`INSERT`](op::INSERT) adds 1 to every counter of the
/// key (a saturated one stays at the maximum) and answers 1.
pub mod op {
    pub use crate::op::{INSERT, LOOKUP, NOP};
    /// Delete: when every counter of the key is positive, each − 1 (a saturated one stays) and
    /// the answer is 1; otherwise nothing changes and the answer is 0.
    pub const DELETE: u8 = 2;
}

/// A counting-filter design: the static design's configuration (layout, blocks, key input,
/// seed, tag width, top name, multiplies, adders, RAM style; one port) and the counter width.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountingConfig {
    /// Shape, key input and naming; `lookup_ports` must be 1.
    pub base: HdlConfig,
    /// Counter width (4 or 8 bits): each bank holds `z × W` counters of this width.
    pub counter_bits: CounterBits,
    /// Whether the read-modify-write forwards the counters of the operations in flight (true;
    /// false generates a deliberately wrong design for the tests that prove the forwarding is
    /// exercised).
    pub forwarding: bool,
}

impl CountingConfig {
    /// A counting design of `base`'s shape with `counter_bits`-bit counters.
    pub fn new(base: HdlConfig, counter_bits: CounterBits) -> CountingConfig {
        CountingConfig {
            base,
            counter_bits,
            forwarding: true,
        }
    }

    /// The configuration that matches `filter` (layout, blocks, seed, counter width).
    pub fn for_filter(filter: &CountingFilter, key: KeyMode) -> CountingConfig {
        let p = filter.params();
        CountingConfig::new(
            HdlConfig::new(p.layout, p.blocks, key, p.seed),
            filter.counter_bits(),
        )
    }

    /// Width of one bank entry in bits (the counter width).
    pub fn entry_bits(&self) -> u32 {
        self.counter_bits.bits()
    }

    /// The design as an instance of the one pipeline: counter cells, membership lookups.
    pub fn pipeline(&self) -> PipelineConfig {
        PipelineConfig {
            base: self.base.clone(),
            cells: CellSpec::counting(self.counter_bits),
            forwarding: self.forwarding,
            retrieval: None,
        }
    }

    /// Checks the configuration (the base's checks, one port).
    pub fn validate(&self) -> Result<(), HdlError> {
        self.pipeline().validate()
    }

    /// Checks that `filter` is a counting filter of this configuration's layout, block count,
    /// seed and counter width, hashed with XXH64.
    pub fn check_filter(&self, filter: &CountingFilter) -> Result<(), HdlError> {
        let p = filter.params();
        if !matches!(p.kind, bloomlanes_core::FilterKind::Counting { .. }) {
            return Err(HdlError::Mismatch(format!(
                "the filter is a {} filter; the design is a counting filter",
                p.kind.name()
            )));
        }
        let b = &self.base;
        if p.layout != b.layout
            || p.blocks != b.blocks
            || p.seed != b.seed
            || filter.counter_bits() != self.counter_bits
        {
            return Err(HdlError::Mismatch(format!(
                "filter is {} × {} blocks, seed {}, {}-bit counters; the configuration is {} × {} \
                 blocks, seed {}, {}-bit counters",
                p.layout,
                p.blocks,
                p.seed,
                filter.counter_bits().bits(),
                b.layout,
                b.blocks,
                b.seed,
                self.counter_bits.bits()
            )));
        }
        if p.hash != HashId::Xxh64 {
            return Err(HdlError::Mismatch(format!(
                "filter uses hash {:?}; the hardware computes XXH64",
                p.hash
            )));
        }
        Ok(())
    }
}

/// Generates the RTL and test benches of a counting design: the pipeline of
/// [`CountingConfig::pipeline`].
pub fn generate_counting(cfg: &CountingConfig) -> Result<Design, HdlError> {
    cfg.validate()?;
    crate::generate_pipeline(&cfg.pipeline())
}
