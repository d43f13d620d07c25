//! Streams handed on in input order to the calling thread: for the inserts and deletes that
//! must run in order (a window rotates, a scalable filter fills its stages one after another, a
//! delete names the first keys it refused). The pipeline's workers parse and hash
//! ([`crate::input::pipeline`]); their chunks are joined into batches of [`ORDERED_BATCH`]
//! keys, so that the bulk operations get batches large enough for their partitioned paths.
//! Nothing is held whole.

use std::path::PathBuf;

use bloomlanes_core::{AnyFilter, KeyType, Keys};

use crate::backend::Backend;
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::input::{
    self, write_u64, BatchKeys, HashStage, InputOptions, InputSummary, Keep, Stage,
};

/// Keys per call of an ordered stream's consumer ([`stream_hashes`]): the pipeline's chunks are
/// joined up to this many (16 MiB of hashes), so that bulk inserts and deletes get batches
/// large enough for their partitioned paths (a counting filter's delete ran at half the rate
/// with the pipeline's chunks).
pub const ORDERED_BATCH: usize = 1 << 21;

/// Streams the keys of `paths` (parsed as `opts` says, text as the filter's `filter_type`
/// unless told otherwise) and hands their hashes with `seed` to `each`, in batches of
/// [`ORDERED_BATCH`] keys (the last one shorter) in input order, on the calling thread: for the filters whose inserts must run in order (a
/// window rotates, a scalable filter fills its stages one after another). The workers parse
/// and hash; nothing is held whole. Keys of another byte form than `filter_type` are refused
/// before any is handed on. Returns what each input gave and the key type they were read as.
pub fn stream_hashes(
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    filter_type: KeyType,
    each: &mut dyn FnMut(&[u64]) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<InputSummary>, KeyType)> {
    let mut opts = opts.clone();
    opts.filter_key_type.get_or_insert(filter_type);
    let stage = HashStage::<Error>::new(seed);
    let mut pending: Vec<u64> = Vec::new();
    let inputs = input::stream_keys(
        paths,
        &opts,
        seed,
        &stage,
        &mut |h: Vec<u64>| {
            if pending.is_empty() {
                pending = h;
            } else {
                pending.extend_from_slice(&h);
            }
            if pending.len() >= ORDERED_BATCH {
                each(&pending)?;
                pending.clear();
            }
            Ok(())
        },
        &mut input::reporting(Doing::Insert, progress),
    )?;
    if !pending.is_empty() {
        each(&pending)?;
    }
    let key_type = input::one_key_type(&inputs)?;
    Ok((inputs, key_type))
}

/// Streams the keys of `paths` into `filter` with `engine`, in input order and in batches
/// ([`stream_hashes`] and [`crate::kinds::ops::insert`]; a time window takes them as seen at
/// `now`). Returns what each input gave and the key type they were read as.
pub fn insert_streamed(
    engine: &dyn Backend,
    filter: &mut AnyFilter,
    paths: &[PathBuf],
    opts: &InputOptions,
    now: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<InputSummary>, KeyType)> {
    let (seed, filter_type) = (filter.params().seed, filter.params().key_type);
    stream_hashes(
        paths,
        opts,
        seed,
        filter_type,
        &mut |hashes| {
            crate::kinds::ops::insert(engine, filter, Keys::Hashes(hashes), Some(now), &mut |_| {})
        },
        progress,
    )
}

/// The text of key `i` of a chunk, as `query` lists it.
pub type KeyText<'a> = dyn Fn(usize) -> String + 'a;

/// A chunk's hashes, with what it takes to show any of its keys later: binary integers as
/// they are (formatted only when shown), other keys' texts.
#[derive(Debug, Default)]
struct ShownChunk {
    hashes: Vec<u64>,
    ints: Vec<u64>,
    text: Vec<u8>,
    ends: Vec<u32>,
}

impl ShownChunk {
    /// Turns binary integers into their texts (so that chunks of both forms can be joined).
    fn ints_as_text(&mut self) {
        for &v in &self.ints {
            write_u64(v, false, &mut self.text);
            self.ends.push(self.text.len() as u32);
        }
        self.ints.clear();
    }

    /// Appends the keys of `other`.
    fn append(&mut self, mut other: ShownChunk) {
        if self.hashes.is_empty() {
            *self = other;
            return;
        }
        self.hashes.extend_from_slice(&other.hashes);
        if !self.ints.is_empty() && !other.ints.is_empty() {
            self.ints.extend_from_slice(&other.ints);
            return;
        }
        self.ints_as_text();
        other.ints_as_text();
        let base = self.text.len() as u32;
        self.text.extend_from_slice(&other.text);
        self.ends.extend(other.ends.iter().map(|&e| base + e));
    }

    /// Key `i` as `query` lists it.
    fn shown(&self, i: usize) -> String {
        if !self.ints.is_empty() {
            let mut t = Vec::new();
            write_u64(self.ints[i], false, &mut t);
            return String::from_utf8_lossy(&t).into_owned();
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        String::from_utf8_lossy(&self.text[start..self.ends[i] as usize]).into_owned()
    }
}

/// Hashes chunks of keys on the workers and keeps what shows them.
struct ShownStage {
    seed: u64,
}

impl Stage for ShownStage {
    type Out = ShownChunk;
    type Error = Error;

    fn keep(&self) -> Keep {
        Keep::Text
    }

    fn flush(&self, keys: BatchKeys<'_>, out: &mut ShownChunk) -> Result<()> {
        keys.hashes_into(self.seed, &mut out.hashes);
        if keys.ints().is_empty() {
            for i in 0..keys.len() {
                keys.write_key(i, false, &mut out.text);
                out.ends.push(out.text.len() as u32);
            }
        } else {
            out.ints.extend_from_slice(keys.ints());
        }
        Ok(())
    }
}

/// Streams the keys of `paths` like [`stream_hashes`] and hands `each`, batch after batch
/// in input order on the calling thread, their hashes and a way to write key `i`'s text as a
/// query lists it (for reports that name some keys, such as the keys a delete did not find).
/// Returns what each input gave and the key type they were read as.
pub fn stream_hashes_with_text(
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    filter_type: KeyType,
    each: &mut dyn FnMut(&[u64], &KeyText<'_>) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<InputSummary>, KeyType)> {
    let mut opts = opts.clone();
    opts.filter_key_type.get_or_insert(filter_type);
    let mut pending = ShownChunk::default();
    let inputs = input::stream_keys(
        paths,
        &opts,
        seed,
        &ShownStage { seed },
        &mut |c: ShownChunk| {
            pending.append(c);
            if pending.hashes.len() < ORDERED_BATCH {
                return Ok(());
            }
            let batch = std::mem::take(&mut pending);
            each(&batch.hashes, &|i| batch.shown(i))
        },
        &mut input::reporting(Doing::Insert, progress),
    )?;
    if !pending.hashes.is_empty() {
        each(&pending.hashes, &|i| pending.shown(i))?;
    }
    let key_type = input::one_key_type(&inputs)?;
    Ok((inputs, key_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[u64]) -> ShownChunk {
        ShownChunk {
            hashes: v.to_vec(),
            ints: v.to_vec(),
            ..ShownChunk::default()
        }
    }

    fn texts(v: &[&str]) -> ShownChunk {
        let mut c = ShownChunk::default();
        for t in v {
            c.hashes.push(t.len() as u64);
            c.text.extend_from_slice(t.as_bytes());
            c.ends.push(c.text.len() as u32);
        }
        c
    }

    fn all(c: &ShownChunk) -> Vec<String> {
        (0..c.hashes.len()).map(|i| c.shown(i)).collect()
    }

    /// Joined chunks show every key as it was, integers and texts in any order.
    #[test]
    fn joined_chunks_show_their_keys() {
        let mut c = ShownChunk::default();
        c.append(ints(&[7, 8]));
        c.append(ints(&[9]));
        assert_eq!(all(&c), ["7", "8", "9"]);
        c.append(texts(&["ab", "", "cde"]));
        c.append(ints(&[10]));
        c.append(texts(&["f"]));
        assert_eq!(all(&c), ["7", "8", "9", "ab", "", "cde", "10", "f"]);
        assert_eq!(c.hashes.len(), 8);
    }
}
