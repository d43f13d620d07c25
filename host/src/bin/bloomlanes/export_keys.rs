//! `export TABLE --hdl DIR --keys FILE`: the keys a retrieval table was built from, read (as
//! `query` reads keys: `--format`, the CSV options, the table's key type) for the stimulus and
//! self-test of its exported pipeline, which the table file cannot give since it keeps no keys.
//! At most [`KEYS_READ_LIMIT`] keys are read: the stimulus looks up a few hundred.

use std::fmt;
use std::path::{Path, PathBuf};

use bloomlanes_hdl::sim::{key_hash, Key};
use bloomlanes_hdl::HdlConfig;
use bloomlanes_host::bloomlanes_core::retrieval::RetrievalTable;
use bloomlanes_host::{ops, Error, Result};
use bloomlanes_input::{one_key_type, stream_keys, BatchKeys, Collect, Keep, KeySetBuilder, Stage};
use serde_json::{json, Value};

use crate::inputs::InputArgs;
use crate::output::Warnings;

/// Most keys read from `--keys`: reading stops there (the stimulus looks up a few hundred keys,
/// so a larger file is not read to its end, nor held in memory).
pub const KEYS_READ_LIMIT: usize = 1 << 20;

/// The keys read from `--keys` for a retrieval table's design.
#[derive(Debug)]
pub struct DesignKeys {
    /// The file.
    pub path: PathBuf,
    /// The keys as the design takes them, in file order.
    pub keys: Vec<Key>,
    /// How many of them the table holds (looked up as the hardware will).
    pub found: usize,
    /// Keys read that the design cannot take (another width, longer than its maximum): left out.
    pub unfit: usize,
    /// Whether the file was read to its end (else reading stopped at [`KEYS_READ_LIMIT`]).
    pub complete: bool,
}

impl DesignKeys {
    /// What the export's JSON report says about the keys.
    pub fn json(&self) -> Value {
        json!({"path": self.path.display().to_string(), "keys": self.keys.len(),
               "found": self.found, "unfit": self.unfit, "complete": self.complete})
    }

    /// What the export's summary says about the keys, for people.
    pub fn describe(&self) -> String {
        format!(
            "its present lookups are drawn from the {} key{} read from {}{}, of which the table \
             holds {}",
            self.keys.len(),
            if self.keys.len() == 1 { "" } else { "s" },
            self.path.display(),
            if self.complete {
                String::new()
            } else {
                " (the first ones only)".to_string()
            },
            self.found
        )
    }
}

/// Why the stream of keys ended early: an input's error, or enough keys.
enum Stop {
    Read(bloomlanes_input::Error),
    Enough,
}

impl From<bloomlanes_input::Error> for Stop {
    fn from(e: bloomlanes_input::Error) -> Stop {
        Stop::Read(e)
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Read(e) => write!(f, "{e}"),
            Stop::Enough => write!(f, "read {KEYS_READ_LIMIT} keys"),
        }
    }
}

/// [`Collect`] whose consumer may stop the stream ([`Stop::Enough`]).
struct Bounded;

impl Stage for Bounded {
    type Out = KeySetBuilder;
    type Error = Stop;

    fn keep(&self) -> Keep {
        Collect.keep()
    }

    fn flush(&self, keys: BatchKeys<'_>, out: &mut KeySetBuilder) -> std::result::Result<(), Stop> {
        Collect.flush(keys, out).map_err(Stop::Read)
    }
}

/// Reads the keys of `path` (with `input`'s format and CSV options, text read as `table`'s
/// recorded key type) as the design `cfg` takes them: a file of keys of another byte form than
/// the table's is refused naming the file, keys the design cannot take are left out (with a
/// warning), and reading stops at [`KEYS_READ_LIMIT`] keys. Warns when no key was read or the
/// table holds none of them.
pub fn read_design_keys(
    path: &Path,
    input: &InputArgs,
    table: &RetrievalTable,
    cfg: &HdlConfig,
    warnings: &mut Warnings,
) -> Result<DesignKeys> {
    let table_type = table.params().key_type;
    let mut opts = input.options();
    opts.filter_key_type = Some(table_type);
    let mut read = DesignKeys {
        path: path.to_path_buf(),
        keys: Vec::new(),
        found: 0,
        unfit: 0,
        complete: true,
    };
    let mut take = |part: KeySetBuilder| -> std::result::Result<(), Stop> {
        let part = part.finish();
        for i in 0..part.len() {
            if read.keys.len() + read.unfit == KEYS_READ_LIMIT {
                return Err(Stop::Enough);
            }
            match Key::from_key_bytes(cfg, &part.key_bytes(i)) {
                Ok(k) => {
                    if table.get_hash(key_hash(cfg, &k)).is_some() {
                        read.found += 1;
                    }
                    read.keys.push(k);
                }
                Err(_) => read.unfit += 1,
            }
        }
        Ok(())
    };
    let paths = [path.to_path_buf()];
    let streamed = stream_keys(&paths, &opts, cfg.seed, &Bounded, &mut take, &mut |_| {});
    match streamed {
        Ok(summaries) => {
            for w in summaries.iter().flat_map(|s| &s.warnings) {
                warnings.warn(w.clone());
            }
            let read_type = one_key_type(&summaries)?;
            let m = ops::check_key_type(path, table_type, read_type)?;
            if let Some(note) = ops::key_type_note(table_type, read_type, m) {
                warnings.warn(format!("{}: {note}", path.display()));
            }
        }
        Err(Stop::Enough) => read.complete = false,
        Err(Stop::Read(e)) => return Err(Error::from(e)),
    }
    if read.unfit > 0 {
        warnings.warn(format!(
            "{} of the keys of {} do not fit the design's {} and are left out of its stimulus",
            read.unfit,
            path.display(),
            cfg.key
        ));
    }
    if read.keys.is_empty() {
        warnings.warn(format!(
            "no key the design takes was read from {}: the stimulus looks up random keys the \
             table finds as the present ones",
            path.display()
        ));
    } else if read.found == 0 {
        warnings.warn(format!(
            "the table holds none of the {} keys read from {}: the stimulus looks up absent keys \
             only (were they the keys it was built from?)",
            read.keys.len(),
            path.display()
        ));
    }
    Ok(read)
}
