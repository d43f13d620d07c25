//! Sizing bloom filters for Parquet files, and the checks that every reader accepts them: Arrow
//! C++ (and from their sources Velox and ClickHouse) refuse a bitset whose length is not a power
//! of two in [32 B, 128 MiB] ("Given length of bitset is illegal"); parquet-mr caps filters at
//! 128 MiB. The split-block format itself allows any whole number of 32-byte blocks.

use bloomlanes_core::{Filter, Layout, Params, Sizing};

use crate::error::Result;

/// The smallest bitset every reader accepts.
pub const MIN_BYTES: u64 = 32;
/// The largest bitset Arrow C++ and parquet-mr accept (128 MiB).
pub const MAX_BYTES: u64 = 128 * 1024 * 1024;

/// Why readers may refuse a filter of `bytes` bytes (none: every reader takes it).
pub fn reader_warnings(bytes: u64) -> Vec<String> {
    let mut w = Vec::new();
    if !bytes.is_power_of_two() {
        w.push(format!(
            "the filter is {bytes} bytes, not a power of two: Arrow C++ (pyarrow), Velox and \
             ClickHouse refuse it (\"Given length of bitset is illegal\"); size it with --pow2"
        ));
    }
    if bytes > MAX_BYTES {
        w.push(format!(
            "the filter is {bytes} bytes, over the 128 MiB that Arrow C++ and parquet-mr accept"
        ));
    }
    w
}

/// The block count (layout 8x32) of a Parquet filter for `ndv` distinct values at rate `fpp`;
/// `pow2` rounds it up to a power of two of bytes and keeps it within [32 B, 128 MiB]. Returns
/// the blocks and, when the cap was hit, a warning with the rate reached.
pub fn blocks_for(ndv: u64, fpp: f64, pow2: bool) -> Result<(u32, Option<String>)> {
    let p = Params::for_keys(
        ndv.max(1),
        Sizing::FalsePositiveRate(fpp),
        Some(Layout::L8x32),
    )?;
    if !pow2 {
        return Ok((p.blocks, None));
    }
    let block = Layout::L8x32.block_bytes() as u64;
    let max_blocks = (MAX_BYTES / block) as u32;
    let blocks = p.blocks.checked_next_power_of_two().unwrap_or(u32::MAX);
    if blocks > max_blocks {
        let capped = Params::new(Layout::L8x32, max_blocks);
        return Ok((
            max_blocks,
            Some(format!(
                "{ndv} distinct values at rate {fpp} need {} bytes; capped at 128 MiB (the most \
                 Arrow C++ and parquet-mr read), its expected false-positive rate is {:.3e}",
                p.byte_len(),
                capped.expected_fpr(ndv)
            )),
        ));
    }
    Ok((blocks, None))
}

/// An empty Parquet filter (8x32, seed 0) of `blocks` blocks.
pub fn empty(blocks: u32) -> Filter {
    Filter::new(Params::new(Layout::L8x32, blocks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_sizes_stay_in_what_readers_accept() {
        for ndv in [1u64, 10, 1000, 123_457, 10_000_000] {
            let (b, w) = blocks_for(ndv, 0.01, true).unwrap();
            let bytes = u64::from(b) * 32;
            assert!(bytes.is_power_of_two() && (MIN_BYTES..=MAX_BYTES).contains(&bytes));
            assert!(w.is_none());
            assert!(reader_warnings(bytes).is_empty());
            assert!(Params::new(Layout::L8x32, b).expected_fpr(ndv) <= 0.01);
        }
        let (b, w) = blocks_for(2_000_000_000, 0.001, true).unwrap();
        assert_eq!(u64::from(b) * 32, MAX_BYTES);
        assert!(w.unwrap().contains("capped"));
        let (b, _) = blocks_for(1000, 0.01, false).unwrap();
        assert_eq!(
            reader_warnings(u64::from(b) * 32).len(),
            usize::from(!b.is_power_of_two())
        );
        assert_eq!(reader_warnings(3 * 32).len(), 1);
        assert_eq!(reader_warnings(2 * MAX_BYTES).len(), 1);
    }
}
