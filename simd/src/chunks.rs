//! The output shapes of the bulk lookups (a byte, a value or a bit per key) and the chunked
//! drivers every kind shares: a batch on every core in chunks of [`crate::PAR_CHUNK`] keys, and
//! a bitmap filled from byte answers a chunk at a time.

use bloomlanes_core::Keys;
use rayon::prelude::*;

use crate::kind_entry::CHUNK;
use crate::PAR_CHUNK;

/// Panics unless `out` holds one element per key.
#[track_caller]
pub(crate) fn check_per_key(out: usize, keys: &Keys<'_>) {
    assert_eq!(out, keys.len(), "one output value per key");
}

/// Panics unless `out` holds one bitmap word per 64 keys.
#[track_caller]
pub(crate) fn check_bitmap(out: &[u64], keys: &Keys<'_>) {
    assert_eq!(
        out.len(),
        keys.len().div_ceil(64),
        "one output word per 64 keys"
    );
}

/// Runs `run(chunk, out)` on every core (rayon's current pool) over the chunks of
/// [`PAR_CHUNK`] keys of `keys`, `out`'s elements each holding `per` keys' answers (1 for bytes
/// and values, 64 for bitmap words; [`PAR_CHUNK`] is a multiple of 64).
pub(crate) fn par_chunks<T: Send>(
    keys: Keys<'_>,
    out: &mut [T],
    per: usize,
    run: impl Fn(Keys<'_>, &mut [T]) + Sync,
) {
    out.par_chunks_mut(PAR_CHUNK / per)
        .enumerate()
        .for_each(|(c, out)| {
            let start = c * PAR_CHUNK;
            run(keys.slice(start..(start + PAR_CHUNK).min(keys.len())), out);
        });
}

/// Fills the bitmap `out` (bit `i % 64` of word `i / 64` for key `i`, bits past the last key
/// cleared) from the byte answers (0 or 1) that `contains` writes for each chunk of keys.
///
/// # Panics
/// If `out.len() != keys.len().div_ceil(64)`.
pub(crate) fn bits_from_bytes(
    keys: Keys<'_>,
    out: &mut [u64],
    mut contains: impl FnMut(Keys<'_>, &mut [u8]),
) {
    check_bitmap(out, &keys);
    let mut bytes = vec![0u8; CHUNK.min(keys.len())];
    for (c, words) in out.chunks_mut(CHUNK / 64).enumerate() {
        let start = c * CHUNK;
        let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
        let bytes = &mut bytes[..chunk.len()];
        contains(chunk, bytes);
        words.fill(0);
        for (i, &b) in bytes.iter().enumerate() {
            words[i / 64] |= u64::from(b) << (i % 64);
        }
    }
}
