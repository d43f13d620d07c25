//! A filter file of any kind, opened for `query` and `stats`: a static file memory-mapped as
//! before, any other kind read whole (and always checked whole).

use std::path::Path;

use bloomlanes_host::bloomlanes_core::HashId;
use bloomlanes_host::store::{self, Verify};
use bloomlanes_host::{AnyFilter, Error, FilterFile, Params, Result};

/// A filter file of any kind.
pub enum Opened {
    /// A static filter, memory-mapped.
    Static(FilterFile),
    /// A counting, stable, window or scalable filter, in memory.
    Kind(AnyFilter),
}

impl Opened {
    /// Opens `path`: a static filter as [`FilterFile::open_with`] does, any other kind with
    /// [`store::load_any`] (the payload checksum is then always checked).
    pub fn open(path: &Path, verify: Verify) -> Result<Opened> {
        match FilterFile::open_with(path, verify) {
            Ok(f) => Ok(Opened::Static(f)),
            Err(e) if store::is_other_kind(&e) => Ok(Opened::Kind(store::load_any(path)?)),
            Err(e) => Err(e),
        }
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        match self {
            Opened::Static(f) => f.params(),
            Opened::Kind(f) => f.params(),
        }
    }

    /// Refuses a filter of caller-supplied hashes: its keys cannot be hashed here.
    pub fn check_hashable(&self, path: &Path) -> Result<()> {
        Opened::check_params_hashable(self.params(), path)
    }

    /// [`Opened::check_hashable`] of a filter with `params`, read from `path`.
    pub fn check_params_hashable(params: &Params, path: &Path) -> Result<()> {
        if params.hash == HashId::Prehashed {
            return Err(Error::input(
                path,
                None,
                "this filter stores caller-supplied hashes (hash id 0); its keys cannot be hashed \
                 here",
            ));
        }
        Ok(())
    }
}
