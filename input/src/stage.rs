//! What the pipeline hands its caller: batches of hashed keys ([`Batch`], with their text when
//! the [`Stage`] keeps it) and the stage that takes them on the workers; and how listed keys
//! are written for people ([`write_u64`], [`write_json_string`]).

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

/// A batch of hashed keys, with their text when the stage keeps it (see [`Stage::keep`]).
#[derive(Default)]
pub struct Batch {
    /// The keys' hashes under the filter's seed.
    pub hashes: Vec<u64>,
    /// How to show each key (only when kept).
    pub(crate) shown: Vec<Shown>,
    /// The bytes `shown` points into.
    pub(crate) arena: Vec<u8>,
}

impl Batch {
    /// The bits of key `i` when it is 8 or 4 bytes (an integer, or a typed key of that width):
    /// what the float probe rule looks at.
    pub fn key_bits(&self, i: usize) -> Option<u64> {
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

    /// The bits of key `i` of a batch whose binary u64 keys are `ints` (as [`Stage::flush`]
    /// gets them; empty when the keys are in the batch): [`Batch::key_bits`], or the integer.
    pub fn key_bits_with(&self, ints: &[u64], i: usize) -> Option<u64> {
        match ints.get(i) {
            Some(&v) => Some(v),
            None => self.key_bits(i),
        }
    }

    /// Writes key `i` of a batch whose binary u64 keys are `ints` (empty when the keys are in
    /// the batch) for people: [`Batch::write_key`], or the integer in decimal.
    pub fn write_key_with(&self, ints: &[u64], i: usize, json: bool, out: &mut Vec<u8>) {
        match ints.get(i) {
            Some(&v) => write_u64(v, json, out),
            None => self.write_key(i, json, out),
        }
    }

    /// Writes key `i` for people into `out` (JSON-quoted when `json`); no allocation for text
    /// that is valid UTF-8 or for integers.
    pub fn write_key(&self, i: usize, json: bool, out: &mut Vec<u8>) {
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
    /// What is kept of each key besides its hash (the text [`Batch::write_key`] writes).
    fn keep(&self) -> Keep {
        Keep::Nothing
    }
    /// Handles one batch: `keys` are the batch's keys (hashes, or binary u64 keys read in
    /// place); `batch` holds the text when kept (for u64 keys, `ints` are the keys).
    fn flush(
        &self,
        keys: Keys<'_>,
        batch: &Batch,
        ints: &[u64],
        out: &mut Self::Out,
    ) -> Result<(), Self::Error>;
}

/// Appends the hashes under `seed` of a batch's keys to `out`: the hashes a stage got, or those
/// of the batch's binary u64 keys (`ints`).
pub fn hashes_into(keys: Keys<'_>, ints: &[u64], seed: u64, out: &mut Vec<u64>) {
    match keys {
        Keys::Hashes(h) => out.extend_from_slice(h),
        _ => out.extend(ints.iter().map(|&v| xxh64_u64(v, seed))),
    }
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

    fn flush(&self, keys: Keys<'_>, _b: &Batch, ints: &[u64], out: &mut Vec<u64>) -> Result<(), E> {
        hashes_into(keys, ints, self.seed, out);
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
