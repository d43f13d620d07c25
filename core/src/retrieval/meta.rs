//! The kind metadata of a retrieval file (`docs/FORMAT.md` §9):
//!
//! ```text
//! byte 0: value bits v (1..=32)        1: check bits f (0..=32)    2: arity a (3 or 4)
//! byte 3: segment bits σ (0..=18)      4..8: segment count S (u32, ≥ 1)
//! 8..16: construction seed (u64)       16..24: cells (u64) = (S + a − 1) × 2^σ ≤ 2^32 − 1
//! ```
//! Every other byte is zero. The header records layout 8x64 and, as its block count, the
//! 64-byte lines of the padded cell array.

use crate::format::FormatError;
use crate::kind::FilterKind;
use crate::kind_meta::{le_u32, le_u64, pad64, META_LEN};
use crate::layout::Layout;
use crate::params::Params;

use super::shape::Shape;

/// The layout a retrieval file's header records: cells are read as 64-bit words, and a "block"
/// is one 64-byte line of the cell array.
pub const HEADER_LAYOUT: Layout = Layout::L8x64;

/// Bytes of metadata used; the rest of the 64 are zero.
const USED: usize = 24;

impl Shape {
    /// The 64 metadata bytes of this shape.
    pub fn encode(&self) -> [u8; META_LEN] {
        let mut m = [0u8; META_LEN];
        m[0] = self.value_bits;
        m[1] = self.check_bits;
        m[2] = self.arity;
        m[3] = self.segment_bits;
        m[4..8].copy_from_slice(&self.segment_count.to_le_bytes());
        m[8..16].copy_from_slice(&self.seed.to_le_bytes());
        m[16..24].copy_from_slice(&self.cells().to_le_bytes());
        m
    }

    /// The shape in metadata `meta` (at least 64 bytes), every field range-checked.
    pub fn decode(meta: &[u8]) -> Result<Shape, FormatError> {
        let bad = |what| FormatError::Metadata { what };
        if meta.len() < META_LEN {
            return Err(bad("kind metadata shorter than 64 bytes"));
        }
        let shape = Shape {
            value_bits: meta[0],
            check_bits: meta[1],
            arity: meta[2],
            segment_bits: meta[3],
            segment_count: le_u32(meta, 4),
            seed: le_u64(meta, 8),
        };
        shape.check()?;
        if le_u64(meta, 16) != shape.cells() {
            return Err(bad(
                "retrieval cell count disagrees with the segment length and count",
            ));
        }
        if meta[USED..META_LEN].iter().any(|&b| b != 0) {
            return Err(bad("non-zero unused kind metadata byte"));
        }
        Ok(shape)
    }

    /// The filter kind of this shape.
    pub const fn kind(&self) -> FilterKind {
        FilterKind::Retrieval {
            value_bits: self.value_bits,
            check_bits: self.check_bits,
        }
    }

    /// The header's block count for this shape: the 64-byte lines of the padded cell array.
    pub const fn lines(&self) -> u64 {
        pad64(self.array_bytes()) / 64
    }

    /// Checks that a header's parameters agree with this shape: kind, layout 8x64 and block
    /// count = [`Shape::lines`].
    pub fn check_header(&self, params: &Params) -> Result<(), FormatError> {
        let bad = |what| Err(FormatError::Metadata { what });
        if params.kind != self.kind() {
            return bad("retrieval value or check bits disagree with the header's kind");
        }
        if params.layout != HEADER_LAYOUT || u64::from(params.blocks) != self.lines() {
            return bad(
                "a retrieval header records layout 8x64 and the cell array's 64-byte lines",
            );
        }
        Ok(())
    }
}
