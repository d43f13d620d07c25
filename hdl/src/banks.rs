//! Bank files: every lane's bank of cells as a `$readmemh` file (loaded by `LOAD_BANKS = 1`),
//! one hex cell per line, entry `block × W + bit` first to last, after a `//` comment line.
//! They are written from anything that holds cells in bank order ([`Cells`]: a static filter's
//! bits, a counting filter's counters, a spatial filter's classes, or cell arrays) and read back
//! as cell arrays.

use std::path::{Path, PathBuf};

use bloomlanes_core::counting::counter;
use bloomlanes_core::{CountingFilter, Filter, SpatialFilter};

use crate::cell::cell_index;
use crate::pipeline::PipelineConfig;
use crate::rmw::code::CellCode;
use crate::{CellSpec, HdlConfig, HdlError, KeyMode};

/// Cells in bank order: what a design's banks hold.
pub trait Cells {
    /// The cell at entry `entry` (`block × W + bit`) of lane `lane`'s bank (cells of up to 64
    /// bits: a retrieval table's).
    fn cell(&self, lane: usize, entry: u64) -> u64;
}

impl Cells for Filter {
    fn cell(&self, lane: usize, entry: u64) -> u64 {
        let k = cell_index(
            self.layout().lanes(),
            self.layout().word_bits(),
            lane,
            entry,
        );
        u64::from(self.words()[(k / 32) as usize] >> (k % 32) & 1)
    }
}

impl Cells for CountingFilter {
    fn cell(&self, lane: usize, entry: u64) -> u64 {
        let p = self.params();
        let k = cell_index(p.layout.lanes(), p.layout.word_bits(), lane, entry);
        u64::from(counter(self.counter_words(), self.counter_bits(), k))
    }
}

/// A spatial filter's classes, from core's cell packing of its width.
impl Cells for SpatialFilter {
    fn cell(&self, lane: usize, entry: u64) -> u64 {
        let p = self.params();
        let k = cell_index(p.layout.lanes(), p.layout.word_bits(), lane, entry);
        u64::from(bloomlanes_core::cell::cell(
            self.cell_words(),
            self.cell_bits(),
            k,
        ))
    }
}

/// Cell arrays: `banks[lane][entry]`.
impl Cells for [Vec<u32>] {
    fn cell(&self, lane: usize, entry: u64) -> u64 {
        u64::from(self[lane][entry as usize])
    }
}

/// The file name of lane `lane`'s bank for top module `top`.
pub fn bank_file_name(top: &str, lane: usize) -> String {
    format!("{top}_bank{lane:02}.hex")
}

/// Lane `lane`'s bank of `src`: `depth` cells, entry 0 first.
pub fn bank_cells(src: &(impl Cells + ?Sized), lane: usize, depth: u64) -> Vec<u64> {
    (0..depth).map(|e| src.cell(lane, e)).collect()
}

/// Writes the banks of `src` for the design `cfg` into `dir` (created if needed), one file per
/// lane named like [`bank_file_name`], each cell in the banks' form (a spatial design of 4-bit
/// classes with registered banks: a Gray code, see the header of its Verilog); returns the
/// paths.
pub fn write_cell_bank_files(
    cfg: &PipelineConfig,
    src: &(impl Cells + ?Sized),
    dir: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let (depth, lanes) = cfg.bank_shape();
    let digits = cfg.cells.hex_digits();
    // A thermometer design's banks hold each class in its Gray form (`rmw::code`).
    let code = CellCode::of_config(cfg);
    let b = &cfg.base;
    let mut paths = Vec::new();
    for lane in 0..lanes {
        let mut text = String::with_capacity(depth as usize * (digits + 1) + 96);
        text.push_str(&format!(
            "// bloomlanes bank {lane}: {depth} cells of {} bit(s), {}\n",
            cfg.cells.bits,
            if cfg.retrieval.is_some() {
                "entry = (segment / a)*L + cell mod L"
            } else {
                "entry = block*W + bit"
            }
        ));
        for e in 0..depth {
            text.push_str(&format!("{:0digits$x}\n", code.bank_of(src.cell(lane, e))));
        }
        let path = dir.join(bank_file_name(&b.top_name, lane));
        std::fs::write(&path, text)?;
        paths.push(path);
    }
    Ok(paths)
}

/// Reads the bank files of `cfg`'s top module from `dir` (as [`write_cell_bank_files`] writes
/// them, or as a simulator's `$writememh` dumps them: `//` comments and blank lines are skipped)
/// into cell arrays, each entry turned back from the banks' form into its cell. A fault (a cell
/// above the maximum, an address directive, too many or too few entries) names the file and
/// line.
pub fn read_cell_bank_files(cfg: &PipelineConfig, dir: &Path) -> Result<Vec<Vec<u32>>, HdlError> {
    cfg.validate()?;
    let (depth, lanes) = cfg.bank_shape();
    let max = cfg.cells.max();
    let code = CellCode::of_config(cfg);
    let mut banks = Vec::new();
    for lane in 0..lanes {
        let path = dir.join(bank_file_name(&cfg.base.top_name, lane));
        let text = std::fs::read_to_string(&path).map_err(|e| {
            HdlError::Io(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))
        })?;
        let mut bank = Vec::with_capacity(depth as usize);
        for (i, line) in text.lines().enumerate() {
            let body = line.split("//").next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let bad =
                |why: String| HdlError::Mismatch(format!("{}:{}: {why}", path.display(), i + 1));
            if body.starts_with('@') {
                return Err(bad(format!(
                    "address directive {body:?}: only one cell per line, in order, is read"
                )));
            }
            let value = u32::from_str_radix(body, 16)
                .ok()
                .filter(|v| *v <= max)
                .ok_or_else(|| {
                    bad(format!(
                        "{body:?} is not a hex cell of {} bit(s) (0 to {max})",
                        cfg.cells.bits
                    ))
                })?;
            if bank.len() as u64 == depth {
                return Err(bad(format!("more than the bank's {depth} entries")));
            }
            bank.push(code.class_of(u64::from(value)) as u32);
        }
        if bank.len() as u64 != depth {
            return Err(HdlError::Mismatch(format!(
                "{}: {} entries; the design's banks have {depth}",
                path.display(),
                bank.len()
            )));
        }
        banks.push(bank);
    }
    Ok(banks)
}

/// The bits of lane `lane`'s bank of `filter`: entry `block × W + bit` is bit `bit` of lane
/// `lane` of block `block`.
pub fn bank_bits(filter: &Filter, lane: usize) -> Vec<bool> {
    let depth = u64::from(filter.blocks()) * u64::from(filter.layout().word_bits());
    (0..depth).map(|e| filter.cell(lane, e) == 1).collect()
}

/// Writes `filter` as one `$readmemh` file per bank (lane) into `dir`, named like
/// [`bank_file_name`] for top module `bloomlanes`; returns the paths. Use
/// [`write_bank_files_for`] for another top module name.
pub fn write_bank_files(filter: &Filter, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    write_bank_files_for(filter, dir, "bloomlanes")
}

/// Like [`write_bank_files`], for top module `top`.
pub fn write_bank_files_for(
    filter: &Filter,
    dir: &Path,
    top: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let mut base = HdlConfig::for_filter(filter, KeyMode::Prehashed);
    base.top_name = top.to_string();
    write_cell_bank_files(&PipelineConfig::new(base, CellSpec::STATIC), filter, dir)
}

/// Writes zero-filled bank files (an empty filter) for `cfg` into `dir`.
pub fn write_empty_bank_files(cfg: &HdlConfig, dir: &Path) -> Result<Vec<PathBuf>, HdlError> {
    let pc = PipelineConfig::new(cfg.clone(), CellSpec::STATIC);
    pc.validate()?;
    let (depth, lanes) = pc.bank_shape();
    let empty = vec![vec![0u32; depth as usize]; lanes];
    Ok(write_cell_bank_files(&pc, empty.as_slice(), dir)?)
}
