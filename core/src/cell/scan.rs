//! Scans of a whole cell array: every cell in order, and the checks a cell-based file passes on
//! reading (its image is the projection of its cells; a spatial filter's cells hold no class
//! above its last), each a word at a time where it can be.

use super::{cells_above, projection_of, projection_word, repeat, CellBits};

/// Calls `f` with the value of every cell of `cells`, in cell order.
pub fn for_each_cell(cells: &[u32], bits: CellBits, mut f: impl FnMut(u32)) {
    let (c, max) = (bits.bits(), bits.max());
    for &w in cells {
        for i in 0..bits.per_word() {
            f((w >> (i * c)) & max);
        }
    }
}

/// The number of cells holding at least `value` (e.g. counters stuck at the maximum).
pub fn count_at_least(cells: &[u32], bits: CellBits, value: u32) -> u64 {
    let mut n = 0;
    for_each_cell(cells, bits, |v| n += u64::from(v >= value));
    n
}

/// The index of the first image word of `image` that is not the projection of its `C` words of
/// `cells`.
fn first_unprojected_word<const C: u32>(image: &[u32], cells: &[u32]) -> Option<usize> {
    image
        .iter()
        .zip(cells.chunks_exact(C as usize))
        .position(|(&w, group)| w != projection_of::<C>(group))
}

/// The first image bit that differs from its cell's projection (`cell > 0`), if any: `image`
/// holds one bit per cell of `cells` (every cell-based file is checked with it on reading).
pub fn first_unprojected(image: &[u32], cells: &[u32], bits: CellBits) -> Option<u64> {
    let word = match bits {
        CellBits::One => image.iter().zip(cells).position(|(a, b)| a != b),
        CellBits::Four => first_unprojected_word::<4>(image, cells),
        CellBits::Eight => first_unprojected_word::<8>(image, cells),
        CellBits::Sixteen => first_unprojected_word::<16>(image, cells),
    }?;
    let c = bits.bits() as usize;
    let diff = image[word] ^ projection_word(&cells[word * c..(word + 1) * c], bits);
    Some(word as u64 * 32 + u64::from(diff.trailing_zeros()))
}

/// The first cell holding more than `limit`, with its value, if any. Every file of classes is
/// checked with it on reading, so it skips a word at a time: a word is looked into cell by cell
/// only when a guarded add says one of its cells may be above `limit`.
pub fn first_above(cells: &[u32], bits: CellBits, limit: u32) -> Option<(u64, u32)> {
    let (c, max, per) = (bits.bits(), bits.max(), bits.per_word());
    if limit >= max {
        return None;
    }
    let test = AboveTest::new(bits, limit);
    for (i, &w) in cells.iter().enumerate() {
        if !test.may_exceed(w) {
            continue;
        }
        for j in 0..per {
            let v = (w >> (j * c)) & max;
            if v > limit {
                return Some((i as u64 * u64::from(per) + u64::from(j), v));
            }
        }
    }
    None
}

/// Whether a word's cells may hold more than a limit below their maximum, a word at a time:
/// exact when the limit is below half the maximum ([`cells_above`]), else whether any cell has
/// its top bit set (every cell above the limit has).
struct AboveTest {
    /// Each cell's top bit.
    top: u32,
    /// `half − 1 − limit` in each cell, when the limit is below half.
    add: Option<u32>,
}

impl AboveTest {
    fn new(bits: CellBits, limit: u32) -> AboveTest {
        let c = bits.bits();
        let half = 1u32 << (c - 1);
        let add = (limit < half).then(|| repeat(half - 1 - limit, c));
        AboveTest {
            top: repeat(half, c),
            add,
        }
    }

    #[inline]
    fn may_exceed(&self, word: u32) -> bool {
        match self.add {
            Some(add) => cells_above(word, self.top, add) != 0,
            None => word & self.top != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_above_finds_the_first_cell_over_every_limit_at_every_width() {
        // Words of small cells with a few large ones, at every width and many limits below the
        // maximum (guarded and top-bit word tests alike): the answer of a cell-by-cell scan.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let widths = [
            CellBits::One,
            CellBits::Four,
            CellBits::Eight,
            CellBits::Sixteen,
        ];
        for bits in widths {
            let max = bits.max();
            for trial in 0..200 {
                let n = 1 + (next() % 40) as usize;
                let mut buf = [0u32; 40];
                for w in &mut buf[..n] {
                    // Mostly small cells (the low bits of each cell only), sometimes any.
                    let small = repeat(max >> (trial % 4), bits.bits());
                    *w = next() as u32 & if next() % 8 == 0 { u32::MAX } else { small };
                }
                let words = &buf[..n];
                let limits = (0..max).step_by(1 + max as usize / 64);
                for limit in limits.chain([max - 1, max]) {
                    let (mut want, mut k) = (None, 0u64);
                    for_each_cell(words, bits, |v| {
                        if v > limit && want.is_none() {
                            want = Some((k, v));
                        }
                        k += 1;
                    });
                    let got = first_above(words, bits, limit);
                    assert_eq!(got, want, "{bits:?} limit {limit}");
                }
            }
        }
    }
}
