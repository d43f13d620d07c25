//! The kind metadata of format 2 files: the first `64 × units` bytes of the payload of every
//! filter that is not static, with the kind's parameters and state, and the layout of the arrays
//! that follow it. See `docs/FORMAT.md` §9.
//!
//! ```text
//! counting  byte 0: counter bits (4 or 8)                       arrays: image | counters
//! stable    byte 0: counter bits; 4..8: decrements P (u32)       arrays: image | counters
//! window    0..2: generations g (u16); 2: unit (0 keys, 1 ns);    array: g + 1 generations,
//!           8..16: span (u64); 16..18: current generation (u16);         interleaved by block
//!           18: started (0/1); 24..32: keys in the current generation; 32..40: its start (ns)
//! scalable  0: growth s; 1: tightening r × 256; 8..16: target rate (f64 bits);
//!           16..24: initial capacity (u64); 24..28: stages (u32);  arrays: one image per stage
//!           from byte 64, 16 bytes per stage: blocks (u32), 0 (u32), keys (u64)
//! spatial   byte 0: cell bits (4, 8, 16); 2..4: classes n (u16);   arrays: image | cells
//!           4..8: name bytes N (u32); from byte 64: the class table (crate::spatial)
//! ```
//! Every other metadata byte is zero. Each array starts 64-byte aligned: it is followed by zero
//! bytes up to a multiple of 64.

use crate::cell::{cell_words, CellBits};
use crate::counting::counter_words;
use crate::format::FormatError;
use crate::kind::{CounterBits, FilterKind, WindowUnit};
use crate::params::Params;
use crate::retrieval::Shape;
use crate::spatial::{self, ClassTable};
use crate::window::{window_words, WindowState};

/// Bytes of kind metadata before the stage table of a scalable filter.
pub const META_LEN: usize = 64;
/// Bytes per stage in a scalable filter's stage table.
pub const STAGE_LEN: usize = 16;

/// `n` rounded up to a multiple of 64.
pub const fn pad64(n: u64) -> u64 {
    n.div_ceil(64) * 64
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The little-endian `u32` at `b[at..at + 4]`.
pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The little-endian `u64` at `b[at..at + 8]`.
pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn bad(what: &'static str) -> FormatError {
    FormatError::Metadata { what }
}

/// Checks that the bytes of `meta[range]` other than `used` are zero.
fn unused_zero(meta: &[u8], used: &[core::ops::Range<usize>]) -> Result<(), FormatError> {
    for (i, &b) in meta[..META_LEN].iter().enumerate() {
        if b != 0 && !used.iter().any(|r| r.contains(&i)) {
            return Err(bad("non-zero unused kind metadata byte"));
        }
    }
    Ok(())
}

/// The kind of a header's kind code and metadata (`meta` is at least 64 bytes), checked.
pub fn decode_kind(code: u8, meta: &[u8]) -> Result<FilterKind, FormatError> {
    if meta.len() < META_LEN {
        return Err(bad("kind metadata shorter than 64 bytes"));
    }
    let counter_bits =
        || CounterBits::from_bits(u32::from(meta[0])).ok_or(bad("counter bits must be 4 or 8"));
    match code {
        1 => {
            let counter_bits = counter_bits()?;
            unused_zero(meta, core::slice::from_ref(&(0..1)))?;
            Ok(FilterKind::Counting { counter_bits })
        }
        2 => {
            let counter_bits = counter_bits()?;
            let decrements = le_u32(meta, 4);
            if decrements == 0 {
                return Err(bad(
                    "a stable filter decrements at least one cell per insert",
                ));
            }
            unused_zero(meta, &[0..1, 4..8])?;
            Ok(FilterKind::Stable {
                counter_bits,
                decrements,
            })
        }
        3 => {
            let generations = le_u16(meta, 0);
            let unit = match meta[2] {
                0 => WindowUnit::Keys,
                1 => WindowUnit::Nanos,
                _ => return Err(bad("window unit must be 0 (keys) or 1 (nanoseconds)")),
            };
            let span = le_u64(meta, 8);
            if generations == 0 || span == 0 {
                return Err(bad("a window needs at least one generation and a span"));
            }
            if le_u16(meta, 16) > generations || meta[18] > 1 {
                return Err(bad("window state out of range"));
            }
            unused_zero(meta, &[0..3, 8..19, 24..40])?;
            Ok(FilterKind::Window {
                generations,
                unit,
                span,
            })
        }
        4 => {
            let (growth, tightening) = (meta[0], meta[1]);
            if growth < 2 || tightening == 0 {
                return Err(bad(
                    "scalable growth must be at least 2 and tightening positive",
                ));
            }
            let rate = f64::from_bits(le_u64(meta, 8));
            if !(rate > 0.0 && rate < 1.0) || le_u64(meta, 16) == 0 || le_u32(meta, 24) == 0 {
                return Err(bad(
                    "scalable rate, initial capacity or stage count out of range",
                ));
            }
            unused_zero(meta, &[0..2, 8..28])?;
            Ok(FilterKind::Scalable { growth, tightening })
        }
        5 => {
            let cell_bits = match CellBits::from_bits(u32::from(meta[0])) {
                Some(b @ (CellBits::Four | CellBits::Eight | CellBits::Sixteen)) => b,
                _ => return Err(bad("spatial cell bits must be 4, 8 or 16")),
            };
            let classes = le_u16(meta, 2);
            if classes == 0 || u32::from(classes) > cell_bits.max() {
                return Err(bad(
                    "spatial class count must be between 1 and the cells' maximum",
                ));
            }
            if u64::from(le_u32(meta, 4)) > 256 * u64::from(classes) {
                return Err(bad("spatial class names longer than 256 bytes per class"));
            }
            unused_zero(meta, &[0..1, 2..8])?;
            Ok(FilterKind::Spatial { cell_bits, classes })
        }
        6 => Ok(Shape::decode(meta)?.kind()),
        other => Err(FormatError::UnknownKind(other)),
    }
}

/// Checks the tables a kind keeps in its metadata past the first 64 bytes, once
/// [`meta_len`] has agreed with the header: a spatial filter's class table.
pub fn check_tables(params: &Params, meta: &[u8]) -> Result<(), FormatError> {
    match params.kind {
        FilterKind::Spatial { .. } => ClassTable::parse(meta).map(|_| ()),
        _ => Ok(()),
    }
}

/// The metadata bytes (`units × 64`) a kind needs besides its first 64: the stage table of a
/// scalable filter.
pub fn meta_len(params: &Params, meta: &[u8]) -> Result<u64, FormatError> {
    match params.kind {
        FilterKind::Static => Ok(0),
        FilterKind::Scalable { .. } => {
            let stages = u64::from(le_u32(meta, 24));
            Ok(pad64(META_LEN as u64 + stages * STAGE_LEN as u64))
        }
        FilterKind::Spatial { classes, .. } => Ok(pad64(
            META_LEN as u64 + spatial::table_len(classes, le_u32(meta, 4)),
        )),
        _ => Ok(META_LEN as u64),
    }
}

/// The array lengths (unpadded, in bytes) of a filter: for a scalable filter, one per stage
/// from the stage table in `meta`. Calls `f(len)` for each in order; stops at the first error.
pub fn for_each_array(
    params: &Params,
    meta: &[u8],
    mut f: impl FnMut(u64) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    match params.kind {
        FilterKind::Static => f(params.byte_len()),
        FilterKind::Counting { counter_bits } | FilterKind::Stable { counter_bits, .. } => {
            f(params.byte_len())?;
            f(counter_words(params, counter_bits) * 4)
        }
        FilterKind::Spatial { cell_bits, .. } => {
            f(params.byte_len())?;
            f(cell_words(params, cell_bits) * 4)
        }
        FilterKind::Window { .. } => f(window_words(params) * 4),
        FilterKind::Scalable { .. } => {
            let stages = le_u32(meta, 24) as usize;
            for s in 0..stages {
                let at = META_LEN + s * STAGE_LEN;
                let blocks = le_u32(meta, at);
                if blocks == 0 || le_u32(meta, at + 4) != 0 {
                    return Err(bad(
                        "a scalable stage has 0 blocks or a non-zero reserved word",
                    ));
                }
                if s == 0 && blocks != params.blocks {
                    return Err(bad("stage 0's block count differs from the header's"));
                }
                f(u64::from(blocks) * params.layout.block_bytes() as u64)?;
            }
            Ok(())
        }
        FilterKind::Retrieval { .. } => {
            let shape = Shape::decode(meta)?;
            shape.check_header(params)?;
            f(shape.array_bytes())
        }
    }
}

/// The payload length a filter with `params` and kind metadata `meta` must have: the metadata,
/// then each array padded to 64 bytes (a static image is not padded).
pub fn payload_len(params: &Params, meta: &[u8]) -> Result<u64, FormatError> {
    if params.kind == FilterKind::Static {
        return Ok(params.byte_len());
    }
    let mut total = meta_len(params, meta)?;
    for_each_array(params, meta, |len| {
        total = total.saturating_add(pad64(len));
        Ok(())
    })?;
    Ok(total)
}

/// Checks that the padding after each array of `payload` is zero.
pub fn check_padding(params: &Params, payload: &[u8], meta_len: u64) -> Result<(), FormatError> {
    if params.kind == FilterKind::Static {
        return Ok(());
    }
    let meta = &payload[..meta_len as usize];
    let mut at = meta_len;
    for_each_array(params, meta, |len| {
        let end = at + pad64(len);
        if payload[(at + len) as usize..end as usize]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(FormatError::Padding { offset: at + len });
        }
        at = end;
        Ok(())
    })
}

/// The first 64 metadata bytes for `kind` (and window `state`; scalable fields are written by
/// [`scalable_meta`]).
pub fn encode_meta(kind: FilterKind, state: Option<&WindowState>) -> [u8; META_LEN] {
    let mut m = [0u8; META_LEN];
    match kind {
        FilterKind::Spatial { cell_bits, classes } => {
            // The name length (bytes 4..8) is written with the class table (SpatialFilter).
            m[0] = cell_bits.bits() as u8;
            m[2..4].copy_from_slice(&classes.to_le_bytes());
        }
        // Scalable and retrieval metadata are written by their owners.
        FilterKind::Static | FilterKind::Scalable { .. } | FilterKind::Retrieval { .. } => {}
        FilterKind::Counting { counter_bits } => m[0] = counter_bits.bits() as u8,
        FilterKind::Stable {
            counter_bits,
            decrements,
        } => {
            m[0] = counter_bits.bits() as u8;
            m[4..8].copy_from_slice(&decrements.to_le_bytes());
        }
        FilterKind::Window {
            generations,
            unit,
            span,
        } => {
            m[0..2].copy_from_slice(&generations.to_le_bytes());
            m[2] = match unit {
                WindowUnit::Keys => 0,
                WindowUnit::Nanos => 1,
            };
            m[8..16].copy_from_slice(&span.to_le_bytes());
            let s = state.copied().unwrap_or_default();
            m[16..18].copy_from_slice(&s.current.to_le_bytes());
            m[18] = u8::from(s.started);
            m[24..32].copy_from_slice(&s.keys_in_current.to_le_bytes());
            m[32..40].copy_from_slice(&s.current_start.to_le_bytes());
        }
    }
    m
}

/// A window filter's state from its metadata (checked by [`decode_kind`]).
pub fn decode_window_state(meta: &[u8]) -> WindowState {
    WindowState {
        current: le_u16(meta, 16),
        started: meta[18] == 1,
        keys_in_current: le_u64(meta, 24),
        current_start: le_u64(meta, 32),
    }
}

/// A scalable filter's fixed metadata fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalableMeta {
    /// Capacity growth factor `s`.
    pub growth: u8,
    /// Tightening ratio × 256.
    pub tightening: u8,
    /// Overall false-positive rate target.
    pub rate: f64,
    /// Capacity of stage 0.
    pub initial_capacity: u64,
}

/// Decodes a scalable filter's fixed fields and its stage table: `(blocks, keys)` per stage.
pub fn decode_scalable(meta: &[u8]) -> (ScalableMeta, impl Iterator<Item = (u32, u64)> + '_) {
    let stages = le_u32(meta, 24) as usize;
    let fixed = ScalableMeta {
        growth: meta[0],
        tightening: meta[1],
        rate: f64::from_bits(le_u64(meta, 8)),
        initial_capacity: le_u64(meta, 16),
    };
    let table = (0..stages).map(move |s| {
        let at = META_LEN + s * STAGE_LEN;
        (le_u32(meta, at), le_u64(meta, at + 8))
    });
    (fixed, table)
}

/// Writes a scalable filter's metadata (fixed fields and stage table) into `out`, which must be
/// `pad64(64 + 16 × stages)` bytes of zeros.
pub fn scalable_meta(fixed: &ScalableMeta, stages: &[(u32, u64)], out: &mut [u8]) {
    out[0] = fixed.growth;
    out[1] = fixed.tightening;
    out[8..16].copy_from_slice(&fixed.rate.to_bits().to_le_bytes());
    out[16..24].copy_from_slice(&fixed.initial_capacity.to_le_bytes());
    out[24..28].copy_from_slice(&(stages.len() as u32).to_le_bytes());
    for (s, &(blocks, keys)) in stages.iter().enumerate() {
        let at = META_LEN + s * STAGE_LEN;
        out[at..at + 4].copy_from_slice(&blocks.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&keys.to_le_bytes());
    }
}
