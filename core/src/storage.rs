//! Cache-line aligned word storage shared by the owning filter types.

use alloc::vec;
use alloc::vec::Vec;
use bytemuck::{Pod, Zeroable};

/// 64 bytes aligned to 64: the unit of storage, so that no block straddles a cache line.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// `len` 32-bit words, 64-byte aligned, zero past `len` up to the next line.
#[derive(Clone)]
pub(crate) struct Words {
    lines: Vec<Line>,
    len: usize,
}

impl PartialEq for Words {
    fn eq(&self, other: &Words) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Words {
    /// `len` zero words.
    ///
    /// # Panics
    /// If `len` words do not fit the address space.
    pub(crate) fn zeroed(len: u64) -> Words {
        let len = usize::try_from(len).expect("filter larger than memory");
        Words {
            lines: vec![Line([0; 16]); len.div_ceil(16)],
            len,
        }
    }

    /// `len` zero words, or `None` when they do not fit the address space or the allocator
    /// refuses them (the fallible form of [`Words::zeroed`]: the memory is reserved, then
    /// written, so a refusal comes here rather than at first use).
    pub(crate) fn try_zeroed(len: u64) -> Option<Words> {
        let len = usize::try_from(len).ok()?;
        let mut lines = Vec::new();
        lines.try_reserve_exact(len.div_ceil(16)).ok()?;
        lines.resize(len.div_ceil(16), Line([0; 16]));
        Some(Words { lines, len })
    }

    /// The words of a little-endian byte image (`bytes.len()` a multiple of 4).
    pub(crate) fn from_le_bytes(bytes: &[u8]) -> Words {
        let mut w = Words::zeroed(bytes.len() as u64 / 4);
        for (x, b) in w.as_mut_slice().iter_mut().zip(bytes.chunks_exact(4)) {
            *x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        w
    }

    pub(crate) fn as_slice(&self) -> &[u32] {
        &bytemuck::cast_slice(&self.lines)[..self.len]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut bytemuck::cast_slice_mut(&mut self.lines)[..self.len]
    }

    /// Appends the words as little-endian bytes, then zeros up to a multiple of 64 bytes if
    /// `pad` is set.
    pub(crate) fn write_le(&self, out: &mut Vec<u8>, pad: bool) {
        for w in self.as_slice() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if pad {
            out.resize(out.len().div_ceil(64) * 64, 0);
        }
    }

    pub(crate) fn fill_zero(&mut self) {
        self.lines.fill(Line([0; 16]));
    }
}
