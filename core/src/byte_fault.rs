//! A fault in a file's bytes at a byte offset: what the capture reader (`bloomlanes-input`) and
//! the Parquet footer reader (`bloomlanes-parquet`) report, one type for both so that neither
//! repeats it.

use alloc::string::String;

/// A fault found at byte offset `offset` of a file: `byte offset OFFSET: WHAT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteFault {
    /// Byte offset of the fault in the file.
    pub offset: u64,
    /// What was wrong.
    pub what: String,
}

impl core::fmt::Display for ByteFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "byte offset {}: {}", self.offset, self.what)
    }
}

impl core::error::Error for ByteFault {}
