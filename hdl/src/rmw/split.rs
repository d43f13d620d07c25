//! How a forwarding flag's address compare splits over two stages (behind registered banks):
//! the lower bits in the flag's own stage, the upper ones a stage before in two-bit pieces.

/// How an early forwarding compare of `aw`-bit addresses splits: the lower bits compared in
/// the flag's own stage, and the number of two-bit pieces of the upper ones compared a stage
/// before (one LUT4 each, the first with the valid bit: a LUT5). The flag's stage ANDs the
/// pieces and the lower compare, at most 16 inputs (two LUT4 levels): half the bits low where
/// that fits.
pub(super) fn early_split(aw: u32) -> (u32, u32) {
    early_split_within(aw, 16)
}

/// [`early_split`] with the flag's stage reading at most `inputs` bits.
pub(super) fn early_split_within(aw: u32, inputs: u32) -> (u32, u32) {
    let pieces = |lo: u32| (aw - lo).div_ceil(2);
    let lo = (0..=aw / 2)
        .rev()
        .find(|&lo| 2 * lo + pieces(lo) <= inputs)
        .unwrap_or(0);
    (lo, pieces(lo).max(1))
}
