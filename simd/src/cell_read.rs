//! The bulk read of every cell-based kind (`bloomlanes_core::cell`): [`min`] answers each key's
//! smallest cell (a spatial filter's class, a counting filter's count), 0 for a key its image
//! block does not hold, key after key over [`CellIsa`], with the image block and then the cells of
//! upcoming keys prefetched beyond L2.

use bloomlanes_core::{block_index, cell, CellBits, Params};

use crate::cell_lanes::{Block, CellIsa, Eight};
use crate::prefetch::Prefetch;
use crate::shape::{with_shape, Shape};

/// Prefetch distance of [`min`], in keys: the image block of the key `2 × READ_AHEAD` ahead is
/// prefetched, and the cells of the key `READ_AHEAD` ahead if its image block holds it.
const READ_AHEAD: usize = 16;

/// Where [`min`]'s prefetches go: the reads prefetch only for storage beyond L2, whose lines
/// come from L3 or memory (see [`Prefetch`]).
const TARGET: Prefetch = Prefetch::L2;

/// Prefetches the `bytes` bytes of cells at `cells` if `present`, else the line at `image`
/// again (absent keys read no cells): the same number of hints either way, so that the choice
/// is a select, not a branch (whether a key is present is unpredictable in a mixed batch).
#[inline(always)]
fn prefetch_cells(present: bool, cells: *const u32, bytes: usize, image: *const u32) {
    let skew = (cells as usize) & 63;
    let start = cells.cast::<u8>().wrapping_sub(skew);
    for line in 0..(bytes + skew).div_ceil(64) {
        let at = if present {
            start.wrapping_add(64 * line)
        } else {
            image.cast()
        };
        TARGET.line(at);
    }
}

/// [`min`] for blocks of `S` and `C`-bit cells, prefetching if `PF`.
///
/// # Safety
/// `image` and `cells` are the words of `blocks` blocks of `S` with `C`-bit cells; the CPU
/// supports `I`.
#[inline(always)]
unsafe fn min_shaped<I: CellIsa, S: Shape, const C: u32, const PF: bool>(
    blocks: u32,
    image: &[u32],
    cells: &[u32],
    hashes: &[u64],
    out: &mut [u32],
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let (ip, cp) = (image.as_ptr(), cells.as_ptr());
    // The reads only read through these pointers.
    let at = Block {
        image: ip.cast_mut(),
        cells: cp.cast_mut(),
    };
    let block = |i: usize| block_index(hashes[i], blocks) as usize;
    // Keys eight or two at a time where the cells' word offsets fit `i32` (`CellIsa::read2`).
    let wide = cells.len() <= i32::MAX as usize;
    let mut i = 0;
    while i < hashes.len() {
        let left = hashes.len() - i;
        let n = match (wide, left) {
            (false, _) => 1,
            (true, 8..) => 8,
            (true, _) => left.min(2),
        };
        if PF {
            for a in i + 2 * READ_AHEAD..(i + 2 * READ_AHEAD + n).min(hashes.len()) {
                // A hint: never faults, and the address arithmetic wraps.
                TARGET.bytes(ip.wrapping_add(block(a) * per), per * 4);
            }
            for &a in hashes.iter().skip(i + READ_AHEAD).take(n) {
                let b = block_index(a, blocks) as usize;
                // SAFETY: `b < blocks`, so block `b`'s image lies in `image` (caller), whose
                // line was prefetched `READ_AHEAD` keys ago; the CPU supports I (caller).
                let present = unsafe { I::present::<S>(ip.add(b * per), a) };
                let cells = cp.wrapping_add(b * cper);
                prefetch_cells(present, cells, cper * 4, ip.wrapping_add(b * per));
            }
        }
        // SAFETY: every `block(_) < blocks`, so the blocks' image (`per` words at `b × per`)
        // and cells (`cper` words at `b × cper`) lie in `image` and `cells` (caller), whose
        // words number at most `i32::MAX` for `read2` and `read8`; the CPU supports I (caller).
        unsafe {
            match n {
                8 => {
                    let mut k = Eight {
                        blocks: core::array::from_fn(|k| block(i + k)),
                        hashes: hashes[i..i + 8].try_into().expect("8 hashes"),
                        out: [0; 8],
                    };
                    I::read8::<S, C, PF>(at, &mut k);
                    out[i..i + 8].copy_from_slice(&k.out);
                }
                2 => {
                    let (b0, b1) = (block(i), block(i + 1));
                    let got = I::read2::<S, C>(at, [b0, b1], [hashes[i], hashes[i + 1]]);
                    out[i..i + 2].copy_from_slice(&got);
                }
                _ => out[i] = I::read::<S, C>(Block::nth::<S, C>(at, block(i)), hashes[i]),
            }
        }
        i += n;
    }
}

/// The smallest of each key's cells ([`CellReduce::Min`](bloomlanes_core::CellReduce::Min)):
/// `out[i]` for `hashes[i]`, 0 for a key not in the image, in a filter with parameters `p`
/// whose image and cells are `image` and `cells`.
///
/// # Panics
/// If `p` is not of a kind with cells wider than a bit, the slices are not its image and
/// cells, or `out` is not as long as `hashes`.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn min<I: CellIsa>(
    p: Params,
    image: &[u32],
    cells: &[u32],
    hashes: &[u64],
    out: &mut [u32],
) {
    let bits = p.kind.cell_bits();
    assert!(bits != CellBits::One, "a kind with cells wider than a bit");
    assert_eq!(image.len() as u64, p.u32_len(), "image words");
    assert_eq!(cells.len() as u64, cell::cell_words(&p, bits), "cell words");
    assert_eq!(out.len(), hashes.len(), "one output per key");
    // Reads prefetch beyond L2 only: below, the image tests that choose the lines cost more
    // than the hardware's own fetches (measured: 1 MiB of image and cells in a 2 MiB L2, 4-bit
    // cells, 170 → 140 M keys/s with the prefetches).
    let pf = (image.len() + cells.len()) * 4 > crate::CacheSizes::detected().l2;
    let (b, i, c) = (p.blocks, image, cells);
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the shapes were checked above.
        unsafe {
            match (bits, pf) {
                (CellBits::Four, false) => min_shaped::<I, S, 4, false>(b, i, c, hashes, out),
                (CellBits::Four, true) => min_shaped::<I, S, 4, true>(b, i, c, hashes, out),
                (CellBits::Eight, false) => min_shaped::<I, S, 8, false>(b, i, c, hashes, out),
                (CellBits::Eight, true) => min_shaped::<I, S, 8, true>(b, i, c, hashes, out),
                (_, false) => min_shaped::<I, S, 16, false>(b, i, c, hashes, out),
                (_, true) => min_shaped::<I, S, 16, true>(b, i, c, hashes, out),
            }
        }
    })
}
