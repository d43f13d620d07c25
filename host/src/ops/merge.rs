//! Combining compatible filters: union (OR) or intersection (AND), checked by the core's one
//! compatibility rule ([`Params::check_compatible`](bloomlanes_core::Params::check_compatible)),
//! except that block counts may differ when each is a multiple of the smallest: the larger
//! filters are folded to the smallest block count first ([`bloomlanes_core::fold`]), which gives
//! the same bytes as building them at that size.

use std::path::PathBuf;

use bloomlanes_core::fold;
use bloomlanes_core::{AnyFilter, Filter, MergeError};

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

/// One input folded to fewer blocks before the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The input's file.
    pub path: PathBuf,
    /// Its block count.
    pub from: u32,
    /// The block count it was folded to (the merged filter's).
    pub to: u32,
}

/// A merged filter, with the inputs at its block count (folded where they were larger).
#[derive(Debug)]
pub struct Merged {
    /// The merged filter. Its key count, for a union, is the sum of the inputs' recorded
    /// counts, or unknown when an input has none (see [`fold::merged_key_count`]); for an
    /// intersection it is unknown.
    pub filter: Filter,
    /// The inputs, in order, at the merged filter's block count.
    pub inputs: Vec<Filter>,
    /// The inputs that were folded.
    pub folds: Vec<Fold>,
}

/// Merges filters (at least two; all must share layout, hash, seed and kind, and every block
/// count must be a multiple of the smallest).
pub fn merge(files: &[FilterFile], op: MergeOp) -> Result<Merged> {
    let (first, rest) = files
        .split_first()
        .filter(|(_, rest)| !rest.is_empty())
        .ok_or_else(|| Error::usage("merge needs at least two filters"))?;
    let refuse = |a: &FilterFile, b: &FilterFile, source: MergeError| Error::Merge {
        first: a.path().to_path_buf(),
        other: b.path().to_path_buf(),
        source,
    };
    for f in rest {
        fold::check_mergeable(first.params(), f.params()).map_err(|e| refuse(first, f, e))?;
    }
    let smallest = files
        .iter()
        .min_by_key(|f| f.params().blocks)
        .expect("two or more");
    let blocks = smallest.params().blocks;
    let mut inputs = Vec::with_capacity(files.len());
    let mut folds = Vec::new();
    for f in files {
        let filter = f.to_filter();
        if filter.blocks() == blocks {
            inputs.push(filter);
            continue;
        }
        inputs.push(filter.folded(blocks).map_err(|e| refuse(smallest, f, e))?);
        folds.push(Fold {
            path: f.path().to_path_buf(),
            from: filter.blocks(),
            to: blocks,
        });
    }
    let mut acc = inputs[0].clone();
    for (f, other) in rest.iter().zip(&inputs[1..]) {
        match op {
            MergeOp::Union => acc.union_with(other),
            MergeOp::Intersection => acc.intersect_with(other),
        }
        .map_err(|e| refuse(first, f, e))?;
    }
    for f in files {
        f.check_unchanged()?;
    }
    Ok(Merged {
        filter: acc,
        inputs,
        folds,
    })
}

/// Merges spatial or counting filters (at least two, all of one kind; `files` pairs each with
/// its path; a static filter or another kind among them is refused) by union, the larger ones folded to the smallest block count first: each cell the
/// larger class (spatial; the same classes in the same order are needed) or the sum of
/// counters stuck at their maximum (counting), the bytes of inserting every key of every
/// input into one filter. Returns the merged filter and the inputs that were folded.
///
/// # Errors
/// [`Error::Usage`] for an intersection or fewer than two filters, [`Error::Merge`] for
/// filters that do not merge (another kind, other classes or parameters, a stable filter).
pub fn merge_cells(files: &[(PathBuf, AnyFilter)], op: MergeOp) -> Result<(AnyFilter, Vec<Fold>)> {
    let ((first_path, first), rest) = files
        .split_first()
        .filter(|(_, rest)| !rest.is_empty())
        .ok_or_else(|| Error::usage("merge needs at least two filters"))?;
    let kind = first.params().kind.name();
    if op == MergeOp::Intersection {
        return Err(Error::usage(format!(
            "{} is a {kind} filter: {kind} filters merge by union only (an intersection of \
             classes or counts has no filter that answers it)",
            first_path.display()
        )));
    }
    let refuse = |other: &PathBuf, source: MergeError| Error::Merge {
        first: first_path.clone(),
        other: other.clone(),
        source,
    };
    let mut acc = first.clone();
    for (path, f) in rest {
        acc = match (&acc, f) {
            (AnyFilter::Spatial(a), AnyFilter::Spatial(b)) => {
                a.union_folding(b).map(AnyFilter::Spatial)
            }
            (AnyFilter::Counting(a), AnyFilter::Counting(b)) => {
                a.union_folding(b).map(AnyFilter::Counting)
            }
            (a, b) => Err(match (a, b) {
                (AnyFilter::Static(_) | AnyFilter::Spatial(_), _)
                | (AnyFilter::Counting(_), AnyFilter::Static(_) | AnyFilter::Spatial(_)) => {
                    MergeError::Kind(a.params().kind, b.params().kind)
                }
                (AnyFilter::Counting(_), _) => MergeError::Unmergeable(b.params().kind),
                _ => MergeError::Unmergeable(a.params().kind),
            }),
        }
        .map_err(|e| refuse(path, e))?;
    }
    let blocks = acc.params().blocks;
    let folds = files
        .iter()
        .filter(|(_, f)| f.params().blocks != blocks)
        .map(|(path, f)| Fold {
            path: path.clone(),
            from: f.params().blocks,
            to: blocks,
        })
        .collect();
    Ok((acc, folds))
}
