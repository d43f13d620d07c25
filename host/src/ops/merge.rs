//! Combining compatible filters: union (OR) or intersection (AND), checked by the core's one
//! compatibility rule ([`Params::check_compatible`](bloomlanes_core::Params::check_compatible)).

use bloomlanes_core::Filter;

use crate::error::{Error, Result};
use crate::store::FilterFile;

/// How `merge` combines filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MergeOp {
    /// OR: the filter of the union of the key sets.
    #[default]
    Union,
    /// AND: answers "maybe" only where every filter does.
    Intersection,
}

impl MergeOp {
    /// The name used on the command line: `union`, `intersection`.
    pub fn name(self) -> &'static str {
        match self {
            MergeOp::Union => "union",
            MergeOp::Intersection => "intersection",
        }
    }
}

/// Merges filters (at least two; all must share layout, block count, hash and seed).
pub fn merge(filters: &[FilterFile], op: MergeOp) -> Result<Filter> {
    let (first, rest) = filters
        .split_first()
        .filter(|(_, rest)| !rest.is_empty())
        .ok_or_else(|| Error::usage("merge needs at least two filters"))?;
    let mut acc = first.to_filter();
    for f in rest {
        let other = f.to_filter();
        match op {
            MergeOp::Union => acc.union_with(&other),
            MergeOp::Intersection => acc.intersect_with(&other),
        }
        .map_err(|source| Error::Merge {
            first: first.path().to_path_buf(),
            other: f.path().to_path_buf(),
            source,
        })?;
    }
    for f in filters {
        f.check_unchanged()?;
    }
    Ok(acc)
}
