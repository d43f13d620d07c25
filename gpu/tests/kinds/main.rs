//! GPU tests of the filter kinds, one test binary: the counting filter, the sliding-window
//! filter, the spatial filter and the generic cell filter, bit-identical to the core on every
//! layout and cell width, every insert and lookup path. Without a GPU every device test prints a
//! SKIP line and passes; the argument checks that need no device run everywhere.

#[path = "../common/mod.rs"]
mod common;
mod counting;
mod spatial;
mod window;

/// Little-endian u32 words of `bytes`.
pub(crate) fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
