//! What the pipeline hands its caller: batches of keys ([`BatchKeys`]: their hashes, or binary
//! u64 keys read in place, with their text when the [`Stage`] keeps it) and the stage that takes
//! them on the workers; and how listed keys are written for people ([`write_u64`],
//! [`write_json_string`]).

use std::fmt;
use std::marker::PhantomData;

use bloomlanes_core::{xxh64_u64, KeyType, Keys};

use crate::pcap;

/// How a key is written back for people.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shown {
    /// Text: `arena[start..end]`.
    Text(u32, u32),
    /// A flow key: `arena[start..end]` formatted as a 5-tuple.
    Tuple(u32, u32),
    /// An integer.
    Int(u64),
    /// A typed key: its bytes `arena[start..end]`, shown in its type's text form.
    Typed(u32, u32, KeyType),
}

/// A batch of hashed keys being filled by a worker, with their text when the stage keeps it
/// (see [`Stage::keep`]).
#[derive(Default)]
pub(crate) struct Batch {
    /// The keys' hashes under the filter's seed.
    pub(crate) hashes: Vec<u64>,
    /// How to show each key (only when kept).
    pub(crate) shown: Vec<Shown>,
    /// The bytes `shown` points into.
    pub(crate) arena: Vec<u8>,
}

impl Batch {
    /// The bits of key `i` when it is 8 or 4 bytes (an integer, or a typed key of that width):
    /// what the float probe rule looks at.
    fn key_bits(&self, i: usize) -> Option<u64> {
        match *self.shown.get(i)? {
            Shown::Int(v) => Some(v),
            Shown::Typed(a, b, _) => {
                let k = &self.arena[a as usize..b as usize];
                match k.len() {
                    8 => Some(u64::from_le_bytes(k.try_into().ok()?)),
                    4 => Some(u64::from(u32::from_le_bytes(k.try_into().ok()?))),
                    _ => None,
                }
            }
            Shown::Text(..) | Shown::Tuple(..) => None,
        }
    }

    /// Writes key `i` for people into `out` (JSON-quoted when `json`); no allocation for text
    /// that is valid UTF-8 or for integers.
    fn write_key(&self, i: usize, json: bool, out: &mut Vec<u8>) {
        let text = match self.shown[i] {
            Shown::Text(a, b) => String::from_utf8_lossy(&self.arena[a as usize..b as usize]),
            Shown::Tuple(a, b) => pcap::format_tuple(&self.arena[a as usize..b as usize]).into(),
            Shown::Int(v) => return write_u64(v, json, out),
            Shown::Typed(a, b, t) => {
                crate::key_text::display(t, &self.arena[a as usize..b as usize]).into()
            }
        };
        if json {
            write_json_string(&text, out);
        } else {
            out.extend_from_slice(text.as_bytes());
        }
    }
}

/// The keys of one batch as a [`Stage`] gets them: their hashes under the filter's seed, or
/// binary u64 keys read in place (the stage hashes those), with what the stage keeps of each.
#[derive(Clone, Copy)]
pub struct BatchKeys<'a> {
    keys: Keys<'a>,
    batch: &'a Batch,
    ints: &'a [u64],
}

impl<'a> BatchKeys<'a> {
    /// The hashed keys of `batch`.
    #[inline]
    pub(crate) fn hashed(batch: &'a Batch) -> BatchKeys<'a> {
        BatchKeys {
            keys: Keys::Hashes(&batch.hashes),
            batch,
            ints: &[],
        }
    }

    /// Binary keys `ints`, read in place (`empty`: a batch with nothing kept).
    pub(crate) fn binary(ints: &'a [u64], empty: &'a Batch) -> BatchKeys<'a> {
        BatchKeys {
            keys: Keys::U64(ints),
            batch: empty,
            ints,
        }
    }

    /// The keys for a backend: [`Keys::Hashes`], or [`Keys::U64`] for binary keys.
    #[inline]
    pub fn keys(&self) -> Keys<'a> {
        self.keys
    }

    /// The binary u64 keys (empty when the keys came hashed from text or captures).
    #[inline]
    pub fn ints(&self) -> &'a [u64] {
        self.ints
    }

    /// How many keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bits of key `i` when it is 8 or 4 bytes (a binary key, an integer, or a typed key of
    /// that width; kept keys only): what the float lookup rule looks at.
    #[inline]
    pub fn key_bits(&self, i: usize) -> Option<u64> {
        match self.ints.get(i) {
            Some(&v) => Some(v),
            None => self.batch.key_bits(i),
        }
    }

    /// Writes key `i` for people into `out` (JSON-quoted when `json`; kept keys, or binary keys
    /// in decimal); no allocation for text that is valid UTF-8 or for integers.
    pub fn write_key(&self, i: usize, json: bool, out: &mut Vec<u8>) {
        match self.ints.get(i) {
            Some(&v) => write_u64(v, json, out),
            None => self.batch.write_key(i, json, out),
        }
    }

    /// Appends the keys' hashes under `seed` to `out` (binary keys are hashed here).
    pub fn hashes_into(&self, seed: u64, out: &mut Vec<u64>) {
        match self.keys {
            Keys::Hashes(h) => out.extend_from_slice(h),
            _ => out.extend(self.ints.iter().map(|&v| xxh64_u64(v, seed))),
        }
    }

    /// The batch's kept keys (for the stages of this crate).
    pub(crate) fn batch(&self) -> &'a Batch {
        self.batch
    }
}

/// Writes `v` in decimal (quoted when `json`: listed keys are JSON strings).
pub fn write_u64(v: u64, json: bool, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut v = v;
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if json {
        out.push(b'"');
    }
    out.extend_from_slice(&buf[at..]);
    if json {
        out.push(b'"');
    }
}

/// Writes `s` as a JSON string (runs that need no escape are copied whole).
pub fn write_json_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => br#"\""#,
            b'\\' => br"\\",
            b'\n' => br"\n",
            b'\r' => br"\r",
            b'\t' => br"\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(format!("\\u{c:04x}").as_bytes());
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// What a stage keeps of each key besides its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Nothing.
    Nothing,
    /// The key as people read it (the field's text; integers; flow keys as 5-tuples).
    Text,
    /// The key's bytes (what is hashed; integers as integers).
    Bytes,
}

/// What a stage does with each batch of keys (on a worker thread): the caller's part of the
/// pipeline (insert into a filter, probe it, count, collect).
pub trait Stage: Sync {
    /// Per-chunk result, handed to the consumer in input order.
    type Out: Send + Default;
    /// The stage's error (the caller's own error type: the pipeline's errors convert into it,
    /// and the stage's come back unchanged).
    type Error: From<crate::Error> + Send + fmt::Display;
    /// What is kept of each key besides its hash (what [`BatchKeys::write_key`] writes).
    fn keep(&self) -> Keep {
        Keep::Nothing
    }
    /// Handles one batch of keys, adding to the chunk's result `out`.
    fn flush(&self, keys: BatchKeys<'_>, out: &mut Self::Out) -> Result<(), Self::Error>;
}

/// A stage that hashes each chunk's keys under its seed on the workers and hands on their
/// hashes, in input order, for a caller that inserts or probes them on its own thread. `E` is
/// the caller's error type (this stage itself never fails).
pub struct HashStage<E = crate::Error> {
    seed: u64,
    error: PhantomData<fn() -> E>,
}

impl<E> HashStage<E> {
    /// Hashes under `seed` (the filter's).
    pub fn new(seed: u64) -> HashStage<E> {
        HashStage {
            seed,
            error: PhantomData,
        }
    }
}

impl<E: From<crate::Error> + Send + fmt::Display> Stage for HashStage<E> {
    type Out = Vec<u64>;
    type Error = E;

    fn flush(&self, keys: BatchKeys<'_>, out: &mut Vec<u64>) -> Result<(), E> {
        keys.hashes_into(self.seed, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_escape_what_json_needs() {
        let mut out = Vec::new();
        write_json_string("a\"b\\c\nd\u{1}é", &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), r#""a\"b\\c\nd\u0001é""#);
        let mut out = Vec::new();
        write_u64(0, false, &mut out);
        write_u64(u64::MAX, true, &mut out);
        assert_eq!(out, b"0\"18446744073709551615\"");
    }
}
