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

/// Merges spatial or counting filters (at least two, all of one kind, each with its path) by
/// union, in place into the first, the larger ones folded to the smallest block count first:
/// each cell the larger class (spatial; the same classes in the same order are needed) or the
/// sum of counters stuck at their maximum (counting), the bytes of inserting every key of every
/// input into one filter. Returns the merged filter and the inputs that were folded.
///
/// # Errors
/// [`Error::Merge`] for filters that do not merge with the first (another kind or width, other
/// classes or parameters, a stable filter), checked before anything else; then
/// [`Error::Usage`] for an intersection, or fewer than two filters.
pub fn merge_cells(
    files: Vec<(PathBuf, AnyFilter)>,
    op: MergeOp,
) -> Result<(AnyFilter, Vec<Fold>)> {
    if files.len() < 2 {
        return Err(Error::usage("merge needs at least two filters"));
    }
    let first_path = files[0].0.clone();
    let refuse = |other: &PathBuf, source: MergeError| Error::Merge {
        first: first_path.clone(),
        other: other.clone(),
        source,
    };
    let first = &files[0].1;
    let mut blocks = first.params().blocks;
    for (path, f) in &files[1..] {
        blocks = mergeable(first, f)
            .map_err(|e| refuse(path, e))?
            .min(blocks);
    }
    if op == MergeOp::Intersection {
        let kind = first.params().kind.name();
        return Err(Error::usage(format!(
            "{} and the others are {kind} filters, which merge by union only (an intersection \
             of classes or counts has no filter that answers it)",
            files[0].0.display()
        )));
    }
    let folds = files
        .iter()
        .filter(|(_, f)| f.params().blocks != blocks)
        .map(|(path, f)| Fold {
            path: path.clone(),
            from: f.params().blocks,
            to: blocks,
        })
        .collect();
    let mut files = files.into_iter();
    let (_, mut acc) = files.next().expect("two or more");
    if acc.params().blocks != blocks {
        acc = folded(&acc, blocks).map_err(|e| refuse(&first_path, e))?;
    }
    for (path, f) in files {
        let f = if f.params().blocks == blocks {
            f
        } else {
            folded(&f, blocks).map_err(|e| refuse(&path, e))?
        };
        match (&mut acc, &f) {
            (AnyFilter::Spatial(a), AnyFilter::Spatial(b)) => a.union_with(b),
            (AnyFilter::Counting(a), AnyFilter::Counting(b)) => a.union_with(b),
            _ => unreachable!("checked by `mergeable`"),
        }
        .map_err(|e| refuse(&path, e))?;
    }
    Ok((acc, folds))
}

/// Whether `b` merges with `a` (both spatial with the same classes, or both counting, with
/// parameters that pass [`fold::check_mergeable`]): the block count they merge at.
fn mergeable(a: &AnyFilter, b: &AnyFilter) -> std::result::Result<u32, MergeError> {
    let (pa, pb) = (a.params(), b.params());
    match (a, b) {
        (AnyFilter::Spatial(x), AnyFilter::Spatial(y)) if x.class_names() != y.class_names() => {
            Err(MergeError::Classes)
        }
        (AnyFilter::Spatial(_), AnyFilter::Spatial(_))
        | (AnyFilter::Counting(_), AnyFilter::Counting(_)) => {
            if bloomlanes_core::fold::CellMerge::of(pa.kind).is_none() {
                return Err(MergeError::Unmergeable(pa.kind));
            }
            fold::check_mergeable(pa, pb)
        }
        (AnyFilter::Spatial(_) | AnyFilter::Counting(_), _) => {
            Err(MergeError::Kind(pa.kind, pb.kind))
        }
        _ => Err(MergeError::Unmergeable(pa.kind)),
    }
}

/// A spatial or counting filter folded to `blocks` blocks.
fn folded(f: &AnyFilter, blocks: u32) -> std::result::Result<AnyFilter, MergeError> {
    match f {
        AnyFilter::Spatial(s) => s.folded(blocks).map(AnyFilter::Spatial),
        AnyFilter::Counting(c) => c.folded(blocks).map(AnyFilter::Counting),
        other => Err(MergeError::Unmergeable(other.params().kind)),
    }
}
