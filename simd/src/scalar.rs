//! The scalar path: the core's reference, one key at a time, no batching and no prefetch. It is
//! both a fallback and the baseline that the benchmarks compare the vector paths with.

use core::sync::atomic::{AtomicU32, Ordering};

use bloomlanes_core::{block_index, block_mask, FilterMut, FilterRef, Keys, Params};

fn view(params: Params, words: &[u32]) -> FilterRef<'_, u32> {
    FilterRef::new(params, words).expect("the caller passes the words of a valid filter")
}

/// Lookup, one byte per key.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn contains_bytes(p: Params, words: &[u32], keys: Keys<'_>, out: &mut [u8]) {
    let f = view(p, words);
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from(f.contains_hash(keys.hash(i, p.seed)));
    }
}

/// Lookup, one bit per key.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn contains_bitmap(p: Params, words: &[u32], keys: Keys<'_>, out: &mut [u64]) {
    let f = view(p, words);
    out.fill(0);
    for i in 0..keys.len() {
        out[i / 64] |= u64::from(f.contains_hash(keys.hash(i, p.seed))) << (i % 64);
    }
}

/// Insert into exclusively borrowed words.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn insert(p: Params, words: &mut [u32], keys: Keys<'_>) {
    let mut f = FilterMut::new(p, words).expect("the caller passes a valid filter");
    for i in 0..keys.len() {
        f.insert_hash(keys.hash(i, p.seed));
    }
}

/// Insert into shared words by atomic OR of the core's block mask.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn insert_atomic(p: Params, words: &[AtomicU32], keys: Keys<'_>) {
    let per = p.layout.block_u32s();
    for i in 0..keys.len() {
        let h = keys.hash(i, p.seed);
        let off = block_index(h, p.blocks) as usize * per;
        let mask = block_mask(p.layout, h);
        for (a, &m) in words[off..off + per].iter().zip(&mask[..per]) {
            if m != 0 {
                a.fetch_or(m, Ordering::Relaxed);
            }
        }
    }
}

/// Hashes every key into `out`.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn hash(keys: Keys<'_>, seed: u64, out: &mut [u64]) {
    assert_eq!(out.len(), keys.len());
    for (i, h) in out.iter_mut().enumerate() {
        *h = keys.hash(i, seed);
    }
}

/// Inserts the hashes whose block lies in the block range `first ..` that `words` holds.
///
/// # Safety
/// None (safe code; `unsafe` only to share the dispatch table's type).
pub(crate) unsafe fn insert_hashes(p: Params, first: u32, words: &mut [u32], hashes: &[u64]) {
    let per = p.layout.block_u32s();
    let sub = words.len() / per;
    for &h in hashes {
        let b = block_index(h, p.blocks).wrapping_sub(first) as usize;
        if b < sub {
            let mask = block_mask(p.layout, h);
            for (w, &m) in words[b * per..(b + 1) * per].iter_mut().zip(&mask[..per]) {
                *w |= m;
            }
        }
    }
}

/// The dispatch table of the scalar path.
pub(crate) const FNS: crate::dispatch::Fns = crate::dispatch::fns!();
