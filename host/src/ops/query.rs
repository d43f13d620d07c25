//! Probing a batch of keys against a filter file.

use bloomlanes_core::{Bitmap, HashId};

use crate::backend::{self, BackendChoice};
use crate::bulk::{self, Progress};
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::store::FilterFile;

/// The answers of a query.
#[derive(Clone, Debug)]
pub struct QueryResult {
    /// One bit per key, in input order: set if the key may be present.
    pub answers: Bitmap,
    /// Number of keys that may be present.
    pub matches: u64,
    /// The backend that answered.
    pub backend: String,
}

/// Checks that the keys of this host can be probed against `filter`: its hash must be one the
/// host computes (not caller-supplied hashes).
pub fn check_hashable(filter: &FilterFile) -> Result<()> {
    if filter.params().hash == HashId::Prehashed {
        return Err(Error::input(
            filter.path(),
            None,
            "this filter stores caller-supplied hashes (hash id 0); its keys cannot be hashed here",
        ));
    }
    Ok(())
}

/// Probes `keys` against `filter` with the chosen backend.
pub fn query(filter: &FilterFile, keys: &KeySet, choice: BackendChoice) -> Result<QueryResult> {
    query_with_progress(filter, keys, choice, &mut |_| {})
}

/// [`query`], reporting progress to `progress` (see [`bulk`]).
pub fn query_with_progress(
    filter: &FilterFile,
    keys: &KeySet,
    choice: BackendChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<QueryResult> {
    check_hashable(filter)?;
    filter.advise_lookups(keys.len());
    let engine = backend::select(choice, keys.len())?;
    let answers = bulk::contains(&*engine, filter.view(), keys.keys(), progress)?;
    Ok(QueryResult {
        matches: answers.count_ones(),
        answers,
        backend: engine.name(),
    })
}
