//! Counter banks of a counting design as `$readmemh` files: a software
//! [`CountingFilter`] written as one file per lane (loaded by `LOAD_BANKS = 1`), and bank files
//! (or counters read back from the hardware) read into a [`CountingFilter`] again.
//!
//! Entry `block × W + bit` of lane `i`'s bank is core's counter `(block × L + i) × W + bit`
//! (see [`bloomlanes_core::counting`]); a file has one hex counter per line (1 digit for 4-bit
//! counters, 2 for 8-bit ones) after a `//` comment line.

use std::path::{Path, PathBuf};

use bloomlanes_core::counting::set_counter;
use bloomlanes_core::CountingFilter;

use crate::banks::{bank_cells, read_cell_bank_files, write_cell_bank_files};
use crate::cell::cell_index;
use crate::counting::CountingConfig;
use crate::HdlError;

/// The counters of lane `lane`'s bank of `filter`, entry `block × W + bit` first to last.
pub fn counting_bank_entries(filter: &CountingFilter, lane: usize) -> Vec<u8> {
    let p = filter.params();
    let depth = u64::from(p.blocks) * u64::from(p.layout.word_bits());
    bank_cells(filter, lane, depth)
        .into_iter()
        .map(|c| c as u8)
        .collect()
}

/// Writes `filter`'s counters as one `$readmemh` file per lane into `dir`, named like
/// [`crate::bank_file_name`] for top module `top`; returns the paths.
pub fn write_counting_bank_files(
    filter: &CountingFilter,
    dir: &Path,
    top: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let mut cfg = CountingConfig::for_filter(filter, crate::KeyMode::Prehashed);
    cfg.base.top_name = top.to_string();
    write_cell_bank_files(&cfg.pipeline(), filter, dir)
}

/// A counting filter of `cfg`'s shape holding `banks[lane][entry]` (one list of `z × W`
/// counters per lane); the key count is unknown. Refuses a wrong number of lanes or entries
/// and a counter above the maximum.
pub fn counting_filter_from_banks(
    cfg: &CountingConfig,
    banks: &[Vec<u8>],
) -> Result<CountingFilter, HdlError> {
    cfg.validate()?;
    let b = &cfg.base;
    let mut filter = CountingFilter::counting(cfg.pipeline().params(), cfg.counter_bits);
    let depth = b.bank_entries();
    let max = cfg.counter_bits.max();
    if banks.len() != b.layout.lanes() {
        return Err(HdlError::Mismatch(format!(
            "{} counter banks for a layout of {} lanes",
            banks.len(),
            b.layout.lanes()
        )));
    }
    {
        let mut view = filter.as_view_mut();
        let (image, counters) = view.parts_mut();
        for (lane, bank) in banks.iter().enumerate() {
            if bank.len() as u64 != depth {
                return Err(HdlError::Mismatch(format!(
                    "counter bank {lane} has {} entries; the design's banks have {depth}",
                    bank.len()
                )));
            }
            for (e, &value) in bank.iter().enumerate() {
                if u32::from(value) > max {
                    return Err(HdlError::Mismatch(format!(
                        "counter bank {lane} entry {e} is {value}, above the {}-bit maximum {max}",
                        cfg.entry_bits()
                    )));
                }
                let k = cell_index(b.layout.lanes(), b.layout.word_bits(), lane, e as u64);
                set_counter(counters, cfg.counter_bits, k, u32::from(value));
                if value > 0 {
                    image[(k / 32) as usize] |= 1 << (k % 32);
                }
            }
        }
    }
    filter.set_key_count(None);
    Ok(filter)
}

/// Reads the bank files of `cfg`'s top module from `dir` (as [`write_counting_bank_files`]
/// writes them, or as a simulator's `$writememh` dumps them) into a counting filter. A fault
/// names the file and line.
pub fn read_counting_bank_files(
    cfg: &CountingConfig,
    dir: &Path,
) -> Result<CountingFilter, HdlError> {
    let banks: Vec<Vec<u8>> = read_cell_bank_files(&cfg.pipeline(), dir)?
        .into_iter()
        .map(|b| b.into_iter().map(|c| c as u8).collect())
        .collect();
    counting_filter_from_banks(cfg, &banks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bank_file_name, HdlConfig, KeyMode};
    use bloomlanes_core::{CounterBits, Layout, Params};

    #[test]
    fn bank_files_round_trip_a_filter_with_saturated_counters() {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            let mut base = HdlConfig::new(Layout::L8x32, 3, KeyMode::Prehashed, 77);
            base.top_name = format!("cbanks{}", bits.bits());
            let cfg = CountingConfig::new(base, bits);
            let params = Params::new(Layout::L8x32, 3).with_seed(77);
            let mut f = CountingFilter::counting(params, bits);
            for i in 0..40u64 {
                f.insert_hash(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            }
            for _ in 0..300 {
                f.insert_hash(12345);
            }
            assert!(f.saturated() > 0);
            let dir = crate::sim::fresh_dir("cbanks").unwrap();
            write_counting_bank_files(&f, &dir, &cfg.base.top_name).unwrap();
            let back = read_counting_bank_files(&cfg, &dir).unwrap();
            assert_eq!(back.counter_words(), f.counter_words());
            assert_eq!(back.image_words(), f.image_words());
            // A counter above the maximum is refused with its file and line.
            let p = dir.join(bank_file_name(&cfg.base.top_name, 2));
            let mut text = std::fs::read_to_string(&p).unwrap();
            text.push_str("1ff\n");
            std::fs::write(&p, text).unwrap();
            let err = read_counting_bank_files(&cfg, &dir)
                .unwrap_err()
                .to_string();
            assert!(err.contains("bank02.hex:98"), "{err}");
            std::fs::remove_dir_all(dir).ok();
        }
    }
}
