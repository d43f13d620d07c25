//! The bulk kernels of the sliding-window filter over the per-ISA [`Vector`]: a lookup builds the
//! key's block mask once and tests it against the `g + 1` copies of its block, which are
//! consecutive in memory (`bloomlanes_core::window` interleaves the generations by block), so
//! one contiguous read, prefetched for upcoming keys, answers it; an insert ORs the mask into
//! the current generation's copy.

use bloomlanes_core::{block_index, Params};

use crate::prefetch::Prefetch;
use crate::shape::{with_shape, Shape};
use crate::vector::{self, on_vector, Isa, OnVector, Vector};

/// Prefetch distance of the window kernels, in keys.
const AHEAD: usize = 24;

/// Whether any of the consecutive readable blocks from the pointer (as many as the count)
/// holds every bit of a hash's mask.
struct AnyHas(*const u32, usize, u64);

impl OnVector for AnyHas {
    type Out = bool;

    #[inline(always)]
    unsafe fn run<V: Vector, S: Shape>(self) -> bool {
        let AnyHas(base, gens, h) = self;
        let per = S::LAYOUT.block_u32s();
        let regs = per / V::WORDS;
        // SAFETY: the CPU supports V (caller); block `g < gens` starts at `base + g × per` and
        // is readable (caller); the parts read are below `regs`, the block's register count.
        unsafe {
            let mask = V::block_mask::<S>(h as u32);
            // Every generation is tested, without an early exit: for present keys the
            // generation that holds them is random, and a branch on it mispredicted about once
            // per key (present-key lookups ran at 0.4× the rate of absent ones, which test all
            // copies).
            let mut found = false;
            for g in 0..gens {
                let block = base.add(g * per);
                let mut missing = V::zero();
                for (i, m) in mask.iter().enumerate().take(regs) {
                    missing = missing.or(m.clear_in(V::load_part::<S>(block, i)));
                }
                found |= missing.is_zero();
            }
            found
        }
    }
}

/// Whether any of the `gens` consecutive blocks of `S` from `base` holds every bit of `h`'s
/// mask.
///
/// # Safety
/// `base` points to `gens` readable blocks of `S`; the CPU supports `I`.
#[inline(always)]
unsafe fn any_has<I: Isa, S: Shape>(base: *const u32, gens: usize, h: u64) -> bool {
    // SAFETY: the caller's contract.
    unsafe { on_vector::<I, S, _>(AnyHas(base, gens, h)) }
}

/// [`contains`] for blocks of `S` and `G` generations (`G = 0`: `gens`, known only at run
/// time). A known count unrolls the test of the copies: 1.3× the lookups of a run-time count
/// with 5 generations in the L2 (see BENCHMARKS.md).
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn contains_gens<I: Isa, S: Shape, const G: usize>(
    blocks: u32,
    gens: usize,
    words: &[u32],
    hashes: &[u64],
    out: &mut [u8],
) {
    let gens = if G == 0 { gens } else { G };
    let per = S::LAYOUT.block_u32s();
    let stride = gens * per;
    assert_eq!(words.len(), blocks as usize * stride);
    assert_eq!(out.len(), hashes.len());
    let w = words.as_ptr();
    let pf = Prefetch::for_bytes(words.len() as u64 * 4);
    let at = |h: u64| block_index(h, blocks) as usize * stride;
    for (i, (o, &h)) in out.iter_mut().zip(hashes).enumerate() {
        if pf.is_on() {
            if let Some(&a) = hashes.get(i + AHEAD) {
                pf.bytes(w.wrapping_add(at(a)), stride * 4);
            }
        }
        // SAFETY: the key's block index is below `blocks`, so its `gens` copies
        // `at(h) .. at(h) + stride` lie in `words` (length asserted above), borrowed for the
        // call; the CPU supports I (caller).
        *o = u8::from(unsafe { any_has::<I, S>(w.add(at(h)), gens, h) });
    }
}

/// [`contains`] for blocks of `S`: the generation counts of common windows (2 to 9: `g` from 1
/// to 8) with the count known at compile time, any other at run time.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn contains_shaped<I: Isa, S: Shape>(
    blocks: u32,
    gens: usize,
    words: &[u32],
    hashes: &[u64],
    out: &mut [u8],
) {
    // SAFETY: the CPU supports I (caller), all `contains_gens` needs.
    unsafe {
        match gens {
            2 => contains_gens::<I, S, 2>(blocks, gens, words, hashes, out),
            3 => contains_gens::<I, S, 3>(blocks, gens, words, hashes, out),
            4 => contains_gens::<I, S, 4>(blocks, gens, words, hashes, out),
            5 => contains_gens::<I, S, 5>(blocks, gens, words, hashes, out),
            6 => contains_gens::<I, S, 6>(blocks, gens, words, hashes, out),
            7 => contains_gens::<I, S, 7>(blocks, gens, words, hashes, out),
            8 => contains_gens::<I, S, 8>(blocks, gens, words, hashes, out),
            9 => contains_gens::<I, S, 9>(blocks, gens, words, hashes, out),
            _ => contains_gens::<I, S, 0>(blocks, gens, words, hashes, out),
        }
    }
}

/// Window lookups: `out[i]` is 1 if all the bits of `hashes[i]` are set in one of the `gens`
/// generations of the interleaved `words` of a filter with parameters `p`, else 0.
///
/// # Panics
/// If `words` is not `gens × p.blocks` blocks or `out` is not as long as `hashes`.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn contains<I: Isa>(
    p: Params,
    gens: usize,
    words: &[u32],
    hashes: &[u64],
    out: &mut [u8],
) {
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the shapes are checked by `contains_shaped`.
        unsafe { contains_shaped::<I, S>(p.blocks, gens, words, hashes, out) }
    })
}

/// [`set`] for blocks of `S`.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn set_shaped<I: Isa, S: Shape>(
    blocks: u32,
    gens: usize,
    current: usize,
    words: &mut [u32],
    hashes: &[u64],
) {
    let per = S::LAYOUT.block_u32s();
    assert!(current < gens);
    assert_eq!(words.len(), blocks as usize * gens * per);
    let w = words.as_mut_ptr();
    let pf = Prefetch::for_bytes(words.len() as u64 * 4);
    let at = |h: u64| (block_index(h, blocks) as usize * gens + current) * per;
    for (i, &h) in hashes.iter().enumerate() {
        if pf.is_on() {
            if let Some(&a) = hashes.get(i + AHEAD) {
                pf.bytes(w.wrapping_add(at(a)), per * 4);
            }
        }
        // SAFETY: block index `< blocks` and `current < gens` (asserted), so the block
        // `at(h) .. at(h) + per` lies in `words` (length asserted), exclusively borrowed for the
        // call; the CPU supports I (caller).
        unsafe { vector::insert::<I, S>(w.add(at(h)), h) };
    }
}

/// Sets the bits of every hash of `hashes` in generation `current` of the interleaved `words`
/// (`gens` generations) of a filter with parameters `p` (no rotation, no key counting).
///
/// # Panics
/// If `current >= gens` or `words` is not `gens × p.blocks` blocks.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn set<I: Isa>(
    p: Params,
    gens: usize,
    current: usize,
    words: &mut [u32],
    hashes: &[u64],
) {
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the shapes are checked by `set_shaped`.
        unsafe { set_shaped::<I, S>(p.blocks, gens, current, words, hashes) }
    })
}
