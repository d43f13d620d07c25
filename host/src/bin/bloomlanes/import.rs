//! `bloomlanes import`: a Parquet bloom filter (of a `.parquet` column chunk, or bare) into a
//! filter file; with `--row-group all`, the filters of every row group of a column (into a
//! directory, one file each, or merged into one filter when their sizes agree).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bloomlanes_host::{store, Error, Filter, Result};
use bloomlanes_parquet::ColumnSelector;
use clap::Args;
use serde_json::json;

use crate::output::{check_output, emit, say, Warnings};
use crate::Ctx;

/// Arguments of `import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A .parquet file, or a bare Parquet bloom filter (Thrift header + bitset).
    source: PathBuf,
    /// The filter file to write (with --row-group all: a directory, unless --merge; "-":
    /// standard output, the report then goes to standard error).
    #[arg(short, long)]
    output: PathBuf,
    /// Column path (a.b.c), leaf name or 0-based index [default: the first column with a bloom filter].
    #[arg(long)]
    column: Option<String>,
    /// Row group (0-based), or "all": every row group's filter, written as `DIR/N.blf`
    /// (or merged with --merge).
    #[arg(long, default_value = "0", value_name = "N|all")]
    row_group: String,
    /// With --row-group all: OR the row groups' filters into one filter file. Filters larger than
    /// the smallest are folded to its block count first (a writer such as DuckDB gives its last
    /// row group half the blocks); each block count must be a multiple of the smallest. The
    /// union's false-positive rate is reported.
    #[arg(long)]
    merge: bool,
}

/// Runs `import`.
pub fn run(ctx: &Ctx, a: ImportArgs) -> Result<ExitCode> {
    if a.row_group == "all" {
        return import_all(ctx, &a);
    }
    if a.merge {
        return Err(Error::usage("--merge goes with --row-group all"));
    }
    let row_group = a.row_group.parse::<usize>().map_err(|_| {
        Error::usage(format!(
            "--row-group {:?}: expected a number or \"all\"",
            a.row_group
        ))
    })?;
    let sel = ColumnSelector {
        column: a.column.clone(),
        row_group,
    };
    check_output(&a.output)?;
    let imp = bloomlanes_parquet::import(&a.source, &sel)?;
    store::save_filter(&a.output, &imp.filter)?;
    let f: &Filter = &imp.filter;
    if ctx.json {
        emit(&json!({
            "source": a.source.display().to_string(),
            "output": a.output.display().to_string(),
            "column": imp.column,
            "physical_type": imp.physical_type,
            "key_type": imp.key_type.to_string(),
            "row_group": imp.row_group,
            "layout": f.layout().name(),
            "blocks": f.blocks(),
            "bytes": f.byte_len(),
            "fill_ratio": f.fill_ratio(),
            "estimated_keys": f.estimated_keys(),
        }))?;
    } else {
        let from = match (&imp.column, imp.row_group) {
            (Some(c), Some(g)) => format!(
                "column {c} ({}, keys {}) of row group {g} of {}",
                imp.physical_type.as_deref().unwrap_or("?"),
                imp.key_type,
                a.source.display()
            ),
            _ => a.source.display().to_string(),
        };
        say(&format!(
            "imported the bloom filter of {from} into {}: {} blocks, {} bytes, fill ratio {:.4}",
            a.output.display(),
            f.blocks(),
            f.byte_len(),
            f.fill_ratio()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn import_all(ctx: &Ctx, a: &ImportArgs) -> Result<ExitCode> {
    let column = a
        .column
        .as_deref()
        .ok_or_else(|| Error::usage("--row-group all needs --column"))?;
    let (leaf, filters) = bloomlanes_parquet::import_row_groups(&a.source, column)?;
    let mut warnings = Warnings::default();
    let missing: Vec<usize> = (0..filters.len())
        .filter(|&g| filters[g].is_none())
        .collect();
    if !missing.is_empty() {
        warnings.warn(format!(
            "row group(s) {missing:?} of {} have no bloom filter for column {}",
            a.source.display(),
            leaf.path
        ));
    }
    let present: Vec<(usize, &Filter)> = filters
        .iter()
        .enumerate()
        .filter_map(|(g, f)| f.as_ref().map(|f| (g, f)))
        .collect();
    if present.is_empty() {
        return Err(Error::input(
            &a.source,
            None,
            format!("no row group has a bloom filter for column {}", leaf.path),
        ));
    }
    let written: Vec<(Option<usize>, PathBuf, u64)>;
    let mut union_fpr = None;
    let mut merged_blocks = None;
    let mut removed: Vec<String> = Vec::new();
    // Row groups folded to the smallest block count before the merge: (row group, blocks).
    let mut folds: Vec<(usize, u32)> = Vec::new();
    if a.merge {
        if !missing.is_empty() {
            return Err(Error::input(
                &a.source,
                None,
                "--merge: a merged filter would answer \"absent\" for keys of the row groups without a filter",
            ));
        }
        let (g0, f0) = present
            .iter()
            .min_by_key(|(_, f)| f.blocks())
            .expect("one or more");
        let blocks = f0.blocks();
        let mut acc: Option<Filter> = None;
        for (g, f) in &present {
            let at_size = if f.blocks() == blocks {
                (*f).clone()
            } else {
                folds.push((*g, f.blocks()));
                f.folded(blocks).map_err(|_| {
                    Error::usage(format!(
                        "--merge: row group {g}'s filter has {} blocks and row group {g0}'s {}: \
                         filters merge only when one block count is a multiple of the other; \
                         import them into a directory instead (drop --merge)",
                        f.blocks(),
                        blocks
                    ))
                })?
            };
            match acc.as_mut() {
                None => acc = Some(at_size),
                Some(acc) => acc
                    .union_with(&at_size)
                    .map_err(|e| Error::input(&a.source, None, format!("--merge: {e}")))?,
            }
        }
        let acc = acc.expect("one or more");
        let fpr = acc.as_view().fpr_from_bits();
        union_fpr = Some(fpr);
        store::save_filter(&a.output, &acc)?;
        written = vec![(None, a.output.clone(), acc.byte_len() as u64)];
        merged_blocks = Some(acc.blocks());
    } else {
        make_dir(&a.output)?;
        written = present
            .iter()
            .map(|(g, f)| {
                let p = a.output.join(format!("{g}.blf"));
                store::save_filter(&p, f).map(|()| (Some(*g), p, f.byte_len() as u64))
            })
            .collect::<Result<_>>()?;
        removed = remove_stale_groups(&a.output, &written)?;
    }
    if ctx.json {
        emit(&json!({
            "source": a.source.display().to_string(),
            "output": a.output.display().to_string(),
            "column": leaf.path,
            "physical_type": leaf.physical.to_string(),
            "key_type": leaf.key_type.map(|t| t.to_string()),
            "row_groups": filters.len(),
            "merged": a.merge,
            "union_fpr_from_bits": union_fpr,
            "blocks": merged_blocks,
            "folded": folds.iter().map(|(g, from)| json!({
                "row_group": g, "from_blocks": from, "to_blocks": merged_blocks,
            })).collect::<Vec<_>>(),
            "removed_stale": removed,
            "files": written.iter().map(|(g, p, b)| json!({"row_group": g, "file": p.display().to_string(), "bytes": b})).collect::<Vec<_>>(),
            "warnings": warnings.json(),
        }))?;
    } else {
        let stale = if removed.is_empty() {
            String::new()
        } else {
            format!(
                "; removed {} left by an earlier import: {}",
                removed.len(),
                removed.join(", ")
            )
        };
        let out = a.output.display();
        let (verb, into) = match union_fpr {
            Some(fpr) => (
                "merged",
                format!(
                    "{out}: {} blocks{}, false-positive rate from its bits {fpr:.3e}",
                    merged_blocks.unwrap_or(0),
                    folds
                        .iter()
                        .map(|(g, from)| format!(
                            " (folded row group {g} {from} → {} blocks)",
                            merged_blocks.unwrap_or(0)
                        ))
                        .collect::<String>()
                ),
            ),
            None => ("imported", format!("{out}/<row group>.blf")),
        };
        say(&format!(
            "{verb} the bloom filters of {} row groups of column {} ({}) of {} into {into}{stale}",
            present.len(),
            leaf.path,
            leaf.physical,
            a.source.display(),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes from `dir` the files named as this import names its own (`<row group>.blf`) that it
/// did not write now: left by an earlier import of a file with more row groups, or of a row
/// group that has no filter any more, they would be taken for this file's. Nothing else in
/// `dir` is touched. Returns the names removed.
fn remove_stale_groups(
    dir: &Path,
    written: &[(Option<usize>, PathBuf, u64)],
) -> Result<Vec<String>> {
    let ours = |name: &str| {
        name.strip_suffix(".blf")
            .is_some_and(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
    };
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "read the directory", e))?;
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && ours(&name) && !written.iter().any(|(_, p, _)| *p == path) {
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, "remove", e))?;
            removed.push(name);
        }
    }
    removed.sort();
    Ok(removed)
}

fn make_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::usage(format!(
            "--row-group all writes one file per row group: {} is not a directory (add --merge for one filter)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create the directory", e))
}
