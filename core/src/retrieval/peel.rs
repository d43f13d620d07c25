//! The peeling pass of the retrieval build ([`super::build`] has the other passes and the
//! slot format): a left-to-right scan that follows each cascade at once.

use alloc::vec;
use alloc::vec::Vec;

use super::build::{touch_cells, Lookahead, COUNT_SHIFT, INDEX_MASK, ONE};
use super::shape::Shape;

/// Peels the cells left to right and returns the cells that determined keys, in peeling order;
/// fewer than all keys when some did not peel. Each such cell's slot is left holding its key's
/// index (count 0), the slots of the keys that did not peel are left as they are, every other
/// slot is zero.
///
/// A cell that comes to hold one key is peeled at once only if the scan has passed it; one
/// ahead is left for the scan to find. So every access stays within a few segments of the scan
/// (a cascade followed depth-first would run along the whole peeling wave, all over the table).
/// `ahead` sees the key in the cell `2 × DISTANCE` ahead of the scan, the cells of the key
/// `DISTANCE` ahead, and the key of each cell pushed on the cascade's stack as it is pushed.
#[inline(never)]
pub fn peel_scan<L: Lookahead>(
    shape: &Shape,
    mixed: &[u64],
    slots: &mut [u64],
    ahead: &L,
) -> Vec<u32> {
    if shape.arity == 3 {
        peel_arity::<3, L>(shape, mixed, slots, ahead)
    } else {
        peel_arity::<4, L>(shape, mixed, slots, ahead)
    }
}

/// Whether slot `s` holds exactly one key.
#[inline(always)]
fn holds_one(s: u64) -> bool {
    s >> COUNT_SHIFT == 1
}

/// [`peel_scan`] for `A` cells per key. A peeled key leaves all its cells, the one that
/// determined it too (which becomes zero), and each cell is pushed whether or not it now holds
/// one key, the stack top advancing only when it does (no unpredictable branches); the cells
/// pushed, and their order, are those of a loop that skips the own cell and pushes on a branch.
#[inline(always)]
fn peel_arity<const A: usize, L: Lookahead>(
    shape: &Shape,
    mixed: &[u64],
    slots: &mut [u64],
    ahead: &L,
) -> Vec<u32> {
    let mut order = Vec::with_capacity(mixed.len());
    let mut stack = vec![0u32; 64];
    for scan in 0..slots.len() {
        if L::DISTANCE > 0 {
            if let Some(&s) = slots.get(scan + 2 * L::DISTANCE) {
                if holds_one(s) {
                    ahead.touch(mixed.as_ptr().wrapping_add((s & INDEX_MASK) as usize));
                }
            }
            if let Some(&s) = slots.get(scan + L::DISTANCE) {
                if holds_one(s) {
                    if let Some(&m) = mixed.get((s & INDEX_MASK) as usize) {
                        touch_cells::<A, L>(ahead, shape, slots, m);
                    }
                }
            }
        }
        if !holds_one(slots[scan]) {
            continue;
        }
        stack[0] = scan as u32;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let own = stack[top];
            let s = slots[own as usize];
            if !holds_one(s) {
                continue;
            }
            let index = (s & INDEX_MASK) as usize;
            order.push(own);
            if stack.len() < top + A {
                stack.resize(2 * stack.len(), 0);
            }
            let c = shape.cells_for(mixed[index], A as u32);
            for &cell in &c[..A] {
                let t = &mut slots[cell as usize];
                *t = t.wrapping_sub(ONE) ^ index as u64;
                let push = holds_one(*t) & (cell as usize <= scan);
                if L::DISTANCE > 0 {
                    // The key a pushed cell will peel (else this one's, a line already here):
                    // its hash is fetched while the other cells are read.
                    let next = if push {
                        (*t & INDEX_MASK) as usize
                    } else {
                        index
                    };
                    ahead.touch(mixed.as_ptr().wrapping_add(next));
                    stack[top] = cell;
                    top += usize::from(push);
                } else if push {
                    // Without prefetching, a predicted branch lets the next key's loads start
                    // before this key's cells arrive (measured: faster than the branch-free push).
                    stack[top] = cell;
                    top += 1;
                }
            }
            // The own cell, now empty, names its key for `assign` (count 0: never peeled again).
            slots[own as usize] = index as u64;
        }
    }
    order
}
