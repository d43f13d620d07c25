//! Cache-line aligned word storage shared by the owning filter types.

use alloc::vec::Vec;

/// Bytes of a cache line: the storage's alignment, so that no block straddles a line.
const LINE: usize = 64;
/// 64-bit units a line.
const LINE_U64S: usize = LINE / 8;

/// `len` 32-bit words, 64-byte aligned, zero past `len` up to the next line.
///
/// Held in a vector of `u64` with room for one more line, the words starting at its first
/// 64-byte boundary: a vector of 8-byte units comes zeroed from the allocator without being
/// written (`calloc`, fresh pages for a large one), where a 64-byte-aligned allocation is
/// zeroed by writing it. So a large filter's pages are mapped by its first inserts, and a
/// backend may ask for huge pages before them.
pub(crate) struct Words {
    buf: Vec<u64>,
    /// Index in `buf` of the first word's `u64` (at a 64-byte boundary).
    start: usize,
    len: usize,
}

/// Shows the length, not the words (a filter's bits are no reading matter).
impl core::fmt::Debug for Words {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "[{} words]", self.len)
    }
}

impl PartialEq for Words {
    fn eq(&self, other: &Words) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// A copy starts at its own 64-byte boundary (the clone of the vector may not).
impl Clone for Words {
    fn clone(&self) -> Words {
        let mut copy = Words::zeroed(self.len as u64);
        copy.as_mut_slice().copy_from_slice(self.as_slice());
        copy
    }
}

impl Words {
    /// `len` zero words.
    ///
    /// # Panics
    /// If `len` words do not fit the address space or the allocator refuses them.
    pub(crate) fn zeroed(len: u64) -> Words {
        Words::try_zeroed(len).expect("filter larger than memory")
    }

    /// `len` zero words, or `None` when they do not fit the address space or the allocator
    /// refuses them (the fallible form of [`Words::zeroed`]).
    pub(crate) fn try_zeroed(len: u64) -> Option<Words> {
        let len = usize::try_from(len).ok()?;
        let units = len.div_ceil(2 * LINE_U64S).checked_mul(LINE_U64S)?;
        let buf: Vec<u64> =
            bytemuck::allocation::try_zeroed_vec(units.checked_add(LINE_U64S - 1)?).ok()?;
        let start = (buf.as_ptr() as usize).wrapping_neg() % LINE / 8;
        Some(Words { buf, start, len })
    }

    /// The whole lines holding the words.
    fn lines(&self) -> &[u64] {
        &self.buf[self.start..self.start + self.len.div_ceil(2 * LINE_U64S) * LINE_U64S]
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
        &bytemuck::cast_slice(self.lines())[..self.len]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u32] {
        let end = self.start + self.len.div_ceil(2 * LINE_U64S) * LINE_U64S;
        &mut bytemuck::cast_slice_mut(&mut self.buf[self.start..end])[..self.len]
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
        self.buf.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_start_on_a_line_are_zero_and_clone_on_a_line() {
        for len in [0u64, 1, 15, 16, 17, 1000, 1 << 16] {
            let mut w = Words::zeroed(len);
            assert_eq!(w.as_slice().len() as u64, len);
            assert_eq!(w.as_slice().as_ptr() as usize % LINE, 0, "len {len}");
            assert!(w.lines().iter().all(|&x| x == 0), "zero up to the line");
            for (i, x) in w.as_mut_slice().iter_mut().enumerate() {
                *x = i as u32 * 3 + 1;
            }
            let c = w.clone();
            assert_eq!(c.as_slice().as_ptr() as usize % LINE, 0);
            assert!(c == w);
            assert_eq!(c.lines().len(), w.lines().len());
            w.fill_zero();
            assert!(w.as_slice().iter().all(|&x| x == 0));
            assert!(c.as_slice().iter().enumerate().all(|(i, &x)| x == i as u32 * 3 + 1));
        }
    }
}
