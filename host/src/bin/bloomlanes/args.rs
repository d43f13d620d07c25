//! Argument types shared by several commands: `--backend`, `--layout`, `--fpp` checks,
//! `--no-verify-payload`.

use bloomlanes_host::store::Verify;
use bloomlanes_host::{BackendChoice, Error, Layout, Result};
use clap::{Args, ValueEnum};

/// A `--backend` value.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    /// GPU for large batches when present, else SIMD, else scalar.
    Auto,
    /// Portable scalar reference path.
    Scalar,
    /// Best SIMD path of this CPU.
    Simd,
    /// CUDA GPU (an error when none is present).
    Gpu,
}

impl From<BackendArg> for BackendChoice {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Scalar => BackendChoice::Scalar,
            BackendArg::Simd => BackendChoice::Simd,
            BackendArg::Gpu => BackendChoice::Gpu,
        }
    }
}

/// A `--layout` value: `auto` (None) or a layout.
#[derive(Clone, Copy, Debug)]
pub struct LayoutArg(pub Option<Layout>);

/// Parses a `--layout` value.
pub fn parse_layout(s: &str) -> std::result::Result<LayoutArg, String> {
    if s == "auto" {
        return Ok(LayoutArg(None));
    }
    Layout::from_name(s)
        .map(|l| LayoutArg(Some(l)))
        .ok_or_else(|| format!("unknown layout {s:?} (expected auto, 8x32, 8x64, 16x32 or 16x64)"))
}

/// Checks an `--fpp` value.
pub fn check_fpp(fpp: f64) -> Result<()> {
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(Error::usage(format!(
            "--fpp {fpp} must be between 0 and 1 (exclusive)"
        )));
    }
    Ok(())
}

/// How filter files are opened (`--no-verify-payload`).
#[derive(Args, Debug)]
pub struct OpenArgs {
    /// Skip the payload checksum when opening filter files. The check reads the whole file once,
    /// which dominates a query of a few keys into a large filter (1000 keys, 4 GiB: 0.62 s
    /// instead of under 0.01 s from the page cache, 4.4 s instead of 0.2 s from disk; see
    /// BENCHMARKS.md). The header and lengths are still checked; bits damaged on disk go
    /// unnoticed.
    #[arg(long)]
    no_verify_payload: bool,
}

impl OpenArgs {
    /// How much of each filter file to check.
    pub fn verify(&self) -> Verify {
        if self.no_verify_payload {
            Verify::HeaderOnly
        } else {
            Verify::Full
        }
    }
}

/// Parses a `--seed` value: decimal or `0x` hex (with `_` separators).
pub fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().replace('_', "");
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    };
    v.map_err(|_| format!("seed {s:?} is not an unsigned 64-bit integer (decimal or 0x hex)"))
}

#[cfg(test)]
mod tests {
    use super::parse_seed;

    #[test]
    fn seeds_in_decimal_and_hex() {
        assert_eq!(parse_seed("0x10"), Ok(16));
        assert_eq!(parse_seed("16"), Ok(16));
        assert_eq!(parse_seed("0xFFFF_FFFF_FFFF_FFFF"), Ok(u64::MAX));
        assert!(parse_seed("-1").is_err() && parse_seed("0x").is_err());
    }
}
