//! Writing split-block bloom filters into a `.parquet` file (feature `parquet`): the filters and
//! the new footer computed by `bloomlanes-parquet` (values decoded with the `parquet` crate and
//! hashed as the file's physical type), the file written atomically through [`store`].

use std::path::Path;

pub use bloomlanes_parquet::add_filters::{Added, ColumnSpec};

use crate::error::Result;
use crate::store;

/// Adds (or replaces) bloom filters for `columns` in every row group of `input`, writing the
/// result to `output` (atomically: a temporary file renamed into place; `-` is standard
/// output). `pow2` sizes every filter to a power of two in [32 B, 128 MiB] (what every reader
/// accepts).
pub fn add_filters(
    input: &Path,
    output: &Path,
    columns: &[ColumnSpec],
    pow2: bool,
) -> Result<Vec<Added>> {
    let mut rewrite = bloomlanes_parquet::add_filters::add_filters(input, columns, pow2)?;
    store::write_atomic_with(output, |w| rewrite.write_to(w))?;
    Ok(rewrite.added)
}
