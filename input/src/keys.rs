//! Turning a chunk of whole records into keys (the parse and hash stages of the pipeline): lines,
//! decimal integers, text flow keys, a CSV column, binary u64 words, or the flow keys of the
//! packets of a capture. Keys are hashed as soon as they are parsed, in batches handed to a
//! [`Stage`] (insert, probe, count); the key text is kept only when the stage lists keys.
//!
//! The hook for other key forms is [`FieldParser`]: a function from a field's bytes (a line, a
//! CSV field) to the key's bytes.

use std::fmt;
use std::sync::Arc;

use bloomlanes_core::{xxh64, xxh64_u64, KeyType, Keys};

use crate::chunk::Chunk;
use crate::pcap::{self, Flow, NgBlock, IPV6_TUPLE_LEN};

/// What a [`FieldParser`] made of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// The key is the field's bytes as they are.
    Field,
    /// The key is the bytes the parser wrote into its output buffer.
    Written,
    /// The key is this integer (hashed as its 8 little-endian bytes).
    U64(u64),
    /// No key in this field (e.g. an empty line).
    Skip,
}

/// The function type of a [`FieldParser`]: the field's bytes in, the key out (its bytes written
/// into the buffer when it answers [`Parsed::Written`]; the buffer arrives empty), or why the
/// field is not a key.
pub type FieldFn = dyn Fn(&[u8], &mut Vec<u8>) -> Result<Parsed, String> + Send + Sync;

/// A per-field key parser plugged into the pipeline: each line (or CSV field) goes through it and
/// what it returns is hashed. Formats use their own (decimal integers, text flow keys); a typed
/// key reader sets one through [`InputOptions::field_parser`](crate::InputOptions).
#[derive(Clone)]
pub struct FieldParser {
    name: &'static str,
    f: Arc<FieldFn>,
    /// The key type it parses (typed keys are shown in their type's text form).
    key_type: Option<KeyType>,
}

impl FieldParser {
    /// A parser named `name` (for messages).
    pub fn new(
        name: &'static str,
        f: impl Fn(&[u8], &mut Vec<u8>) -> Result<Parsed, String> + Send + Sync + 'static,
    ) -> FieldParser {
        FieldParser {
            name,
            f: Arc::new(f),
            key_type: None,
        }
    }

    /// Keys of type `key_type` written as text (see [`crate::key_text`]): hashed as the type's
    /// Parquet plain encoding, shown in the type's canonical text form; a blank field has no
    /// key.
    pub fn typed(key_type: KeyType) -> FieldParser {
        let mut p = FieldParser::new("typed", move |f, out| {
            if f.iter().all(u8::is_ascii_whitespace) {
                return Ok(Parsed::Skip);
            }
            crate::key_text::parse_into(key_type, f, out).map_err(|e| e.to_string())?;
            Ok(Parsed::Written)
        });
        p.key_type = Some(key_type);
        p
    }

    /// The key type of a [`FieldParser::typed`] parser.
    pub fn key_type(&self) -> Option<KeyType> {
        self.key_type
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Parses one field.
    pub fn parse(&self, field: &[u8], out: &mut Vec<u8>) -> Result<Parsed, String> {
        (self.f)(field, out)
    }

    /// Unsigned integers, decimal or `0x` hex, `_` separators allowed, surrounding blanks
    /// ignored; an empty field has no key.
    pub fn decimal() -> FieldParser {
        FieldParser::new("decimal", |f, _| {
            parse_decimal(f).map_err(|e| {
                let t = f.trim_ascii();
                let negative = t.len() > 1
                    && t[0] == b'-'
                    && t[1..].iter().all(|c| c.is_ascii_digit() || *c == b'_');
                if negative {
                    format!("{e} (a negative number: give --key-type i64)")
                } else {
                    e
                }
            })
        })
    }

    /// Flow keys as text (`10.0.0.1:1234>10.0.0.2:80/tcp`, see
    /// [`pcap::parse_flow_text`]); an empty field has no key.
    pub fn flow_text() -> FieldParser {
        FieldParser::new("flow", |f, out| {
            if f.iter().all(u8::is_ascii_whitespace) {
                return Ok(Parsed::Skip);
            }
            let mut key = [0u8; IPV6_TUPLE_LEN];
            let n = pcap::parse_flow_text(f, &mut key)
                .map_err(|e| format!("{} is not a flow key: {e}", shorten(f)))?;
            out.extend_from_slice(&key[..n]);
            Ok(Parsed::Written)
        })
    }
}

impl fmt::Debug for FieldParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FieldParser").field(&self.name).finish()
    }
}

/// At most this many bytes of an offending field are echoed in a message.
pub const ECHO_BYTES: usize = 64;

/// A field for an error message: quoted, cut to [`ECHO_BYTES`] bytes with its length said.
pub fn shorten(field: &[u8]) -> String {
    if field.len() <= ECHO_BYTES {
        format!("{:?}", String::from_utf8_lossy(field))
    } else {
        let mut cut = ECHO_BYTES;
        while cut > 0 && (field[cut] & 0xc0) == 0x80 {
            cut -= 1; // do not split a UTF-8 sequence
        }
        format!(
            "{:?}… ({} bytes)",
            String::from_utf8_lossy(&field[..cut]),
            field.len()
        )
    }
}

fn parse_decimal(field: &[u8]) -> Result<Parsed, String> {
    let t = field.trim_ascii();
    if t.is_empty() {
        return Ok(Parsed::Skip);
    }
    let bad = || format!("{} is not an unsigned 64-bit integer", shorten(t));
    let (digits, radix) = match t {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16u64),
        _ => (t, 10u64),
    };
    let mut v: u64 = 0;
    let mut any = false;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'f' if radix == 16 => u64::from(c - b'a' + 10),
            b'A'..=b'F' if radix == 16 => u64::from(c - b'A' + 10),
            b'_' => continue,
            _ => return Err(bad()),
        };
        any = true;
        v = v
            .checked_mul(radix)
            .and_then(|v| v.checked_add(d))
            .ok_or_else(bad)?;
    }
    if !any {
        return Err(bad());
    }
    Ok(Parsed::U64(v))
}

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
    /// What is kept of each key in [`Batch::shown`].
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

/// How a worker turns a chunk into keys.
#[derive(Clone, Debug)]
pub(crate) enum ChunkParser {
    /// One key per line; `field` parses it (none: the line's bytes; empty lines skipped).
    Lines {
        /// The line parser.
        field: Option<FieldParser>,
    },
    /// One CSV column.
    Csv {
        /// Field delimiter.
        delimiter: u8,
        /// The file's first record is a header (skipped in chunk 0).
        header: bool,
        /// The column (0-based).
        column: usize,
        /// Fields every record must have.
        fields: usize,
        /// The field parser.
        field: Option<FieldParser>,
    },
    /// Binary little-endian u64 keys.
    U64,
    /// Classic pcap packet records.
    Pcap {
        /// Header fields are big-endian.
        big_endian: bool,
        /// The link type.
        linktype: u32,
    },
    /// pcapng blocks.
    Pcapng,
}

/// A fault found by a worker, located relative to its chunk.
#[derive(Debug)]
pub(crate) struct Fault {
    /// 1-based line within the chunk, for line formats.
    pub line: Option<u64>,
    /// Byte offset in the input.
    pub byte: u64,
    /// What was wrong.
    pub what: String,
}

/// Counts of one chunk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChunkCounts {
    /// Keys produced.
    pub keys: u64,
    /// Newlines in the chunk (line formats), to number the lines of later chunks.
    pub lines: u64,
    /// Records skipped (packets that are not IP or are cut short).
    pub skipped: u64,
}

/// Keys per batch handed to a stage.
pub(crate) const BATCH: usize = 4096;

/// A worker's reusable buffers.
#[derive(Default)]
pub(crate) struct Scratch {
    batch: Batch,
    field: Vec<u8>,
}

struct Feed<'s, S: Stage> {
    stage: &'s S,
    seed: u64,
    keep: Keep,
    scratch: &'s mut Scratch,
    out: S::Out,
    keys: u64,
}

impl<S: Stage> Feed<'_, S> {
    #[inline]
    fn push_hash(&mut self, h: u64) -> Result<(), S::Error> {
        self.scratch.batch.hashes.push(h);
        self.keys += 1;
        if self.scratch.batch.hashes.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    #[inline]
    fn bytes(&mut self, key: &[u8], tuple: bool) -> Result<(), S::Error> {
        if self.keep != Keep::Nothing {
            let b = &mut self.scratch.batch;
            let a = b.arena.len() as u32;
            b.arena.extend_from_slice(key);
            let e = b.arena.len() as u32;
            b.shown.push(if tuple {
                Shown::Tuple(a, e)
            } else {
                Shown::Text(a, e)
            });
        }
        self.push_hash(xxh64(key, self.seed))
    }

    /// A parsed key whose text (when kept) is `text`.
    #[inline]
    fn written(&mut self, key_len: usize, text: &[u8], tuple: bool) -> Result<(), S::Error> {
        if self.keep != Keep::Nothing {
            let b = &mut self.scratch.batch;
            let a = b.arena.len() as u32;
            let bytes = self.keep == Keep::Bytes;
            if bytes {
                b.arena.extend_from_slice(&self.scratch.field[..key_len]);
            } else {
                b.arena.extend_from_slice(text);
            }
            let e = b.arena.len() as u32;
            b.shown.push(if bytes && tuple {
                Shown::Tuple(a, e)
            } else {
                Shown::Text(a, e)
            });
        }
        let h = xxh64(&self.scratch.field[..key_len], self.seed);
        self.push_hash(h)
    }

    /// A typed key of `key_len` bytes (in the field buffer): its bytes are kept to be shown.
    #[inline]
    fn typed(&mut self, key_len: usize, t: KeyType) -> Result<(), S::Error> {
        if self.keep != Keep::Nothing {
            let b = &mut self.scratch.batch;
            let a = b.arena.len() as u32;
            b.arena.extend_from_slice(&self.scratch.field[..key_len]);
            let e = b.arena.len() as u32;
            b.shown.push(Shown::Typed(a, e, t));
        }
        let h = xxh64(&self.scratch.field[..key_len], self.seed);
        self.push_hash(h)
    }

    #[inline]
    fn int(&mut self, v: u64) -> Result<(), S::Error> {
        if self.keep != Keep::Nothing {
            self.scratch.batch.shown.push(Shown::Int(v));
        }
        self.push_hash(xxh64_u64(v, self.seed))
    }

    fn flush(&mut self) -> Result<(), S::Error> {
        let b = &mut self.scratch.batch;
        if !b.hashes.is_empty() {
            self.stage
                .flush(Keys::Hashes(&b.hashes), b, &[], &mut self.out)?;
        }
        b.hashes.clear();
        b.shown.clear();
        b.arena.clear();
        Ok(())
    }

    /// One field through the parser (or as it is).
    #[inline]
    fn field(&mut self, parser: Option<&FieldParser>, f: &[u8]) -> Result<(), String> {
        let Some(p) = parser else {
            return self.bytes(f, false).map_err(|e| e.to_string());
        };
        self.scratch.field.clear();
        let mut buf = std::mem::take(&mut self.scratch.field);
        let r = p.parse(f, &mut buf);
        let n = buf.len();
        self.scratch.field = buf;
        let r = match r? {
            Parsed::Field => self.bytes(f, false),
            // The flow parser writes flow keys (shown as 5-tuples when their bytes are kept).
            Parsed::Written => match p.key_type() {
                Some(t) => self.typed(n, t),
                None => self.written(n, f, p.name() == "flow"),
            },
            Parsed::U64(v) => self.int(v),
            Parsed::Skip => Ok(()),
        };
        r.map_err(|e| e.to_string())
    }
}

/// Error from a stage inside a parse loop, carried out as a fault.
fn stage_fault<E>(e: E) -> StageOrFault<E> {
    StageOrFault::Stage(e)
}

/// Either a stage failure (an engine error) or a fault in the input.
#[derive(Debug)]
pub(crate) enum StageOrFault<E> {
    /// The stage failed.
    Stage(E),
    /// The input is malformed.
    Fault(Fault),
}

/// Parses `chunk` with `parser`, hashing keys under `seed` and handing them to `stage` in
/// batches; returns the stage's result and the chunk's counts.
pub(crate) fn parse_chunk<S: Stage>(
    parser: &ChunkParser,
    chunk: &Chunk,
    seed: u64,
    stage: &S,
    scratch: &mut Scratch,
) -> Result<(S::Out, ChunkCounts), StageOrFault<S::Error>> {
    let keep = stage.keep();
    let mut feed = Feed {
        stage,
        seed,
        keep,
        scratch,
        out: S::Out::default(),
        keys: 0,
    };
    let bytes = chunk.bytes();
    let mut counts = ChunkCounts::default();
    match parser {
        ChunkParser::Lines { field } => {
            let mut start = 0usize;
            let mut line = 0u64;
            let mut ends = memchr::memchr_iter(b'\n', bytes);
            while start < bytes.len() {
                let end = ends.next().unwrap_or(bytes.len());
                line += 1;
                let mut l = &bytes[start..end];
                if let [rest @ .., b'\r'] = l {
                    l = rest;
                }
                if field.is_none() {
                    if !l.is_empty() {
                        feed.bytes(l, false).map_err(stage_fault)?;
                    }
                } else if let Err(what) = feed.field(field.as_ref(), l) {
                    return Err(StageOrFault::Fault(Fault {
                        line: Some(line),
                        byte: chunk.offset + start as u64,
                        what,
                    }));
                }
                start = end + 1;
            }
            // Newlines: one per line but an unterminated last one.
            counts.lines = line - u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
        }
        ChunkParser::Csv {
            delimiter,
            header,
            column,
            fields,
            field,
        } => {
            counts.lines = memchr::memchr_iter(b'\n', bytes).count() as u64;
            let mut rdr = ::csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(*delimiter)
                .flexible(true)
                .from_reader(bytes);
            let mut rec = ::csv::ByteRecord::new();
            let mut first = chunk.seq == 0 && *header;
            loop {
                let fault = |line: u64, byte: u64, what: String| {
                    StageOrFault::Fault(Fault {
                        line: Some(line),
                        byte: chunk.offset + byte,
                        what,
                    })
                };
                match rdr.read_byte_record(&mut rec) {
                    Ok(false) => break,
                    Ok(true) => {}
                    Err(e) => {
                        let (l, b) = e.position().map_or((1, 0), |p| (p.line(), p.byte()));
                        return Err(fault(l, b, format!("malformed CSV: {e}")));
                    }
                }
                let (l, b) = rec.position().map_or((1, 0), |p| (p.line(), p.byte()));
                if rec.len() != *fields {
                    return Err(fault(
                        l,
                        b,
                        format!(
                            "malformed CSV: record has {} fields, but the first record has {fields}",
                            rec.len()
                        ),
                    ));
                }
                if std::mem::take(&mut first) {
                    continue;
                }
                let f = rec
                    .get(*column)
                    .expect("the column index was checked against the first record");
                if let Err(what) = feed.field(field.as_ref(), f) {
                    return Err(fault(l, b, what));
                }
            }
        }
        ChunkParser::U64 => {
            let words: Vec<u64>;
            // A mapped chunk at a multiple of 8 is aligned; a copy is made otherwise.
            let ints: &[u64] = match bytemuck::try_cast_slice::<u8, u64>(bytes) {
                Ok(w) if cfg!(target_endian = "little") => w,
                _ => {
                    words = bytes
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                        .collect();
                    &words
                }
            };
            let empty = Batch::default();
            for part in ints.chunks(BATCH * 4) {
                stage
                    .flush(Keys::U64(part), &empty, part, &mut feed.out)
                    .map_err(stage_fault)?;
            }
            feed.keys = ints.len() as u64;
        }
        ChunkParser::Pcap {
            big_endian,
            linktype,
        } => {
            let mut key = [0u8; IPV6_TUPLE_LEN];
            let mut r = Ok(());
            pcap::for_each_record(bytes, *big_endian, |_, _, frame| {
                if r.is_err() {
                    return;
                }
                match pcap::flow_key(*linktype, frame, &mut key) {
                    Flow::Key(n) => r = feed.bytes(&key[..n], true),
                    _ => counts.skipped += 1,
                }
            });
            r.map_err(stage_fault)?;
        }
        ChunkParser::Pcapng => {
            let mut st = chunk.ng_state();
            let mut key = [0u8; IPV6_TUPLE_LEN];
            let mut r = Ok(());
            let _ = pcap::walk_blocks(bytes, &mut st, &mut |_, blk| {
                if let (NgBlock::Packet(p), true) = (blk, r.is_ok()) {
                    match pcap::flow_key(p.linktype, p.frame, &mut key) {
                        Flow::Key(n) => r = feed.bytes(&key[..n], true),
                        _ => counts.skipped += 1,
                    }
                }
            });
            r.map_err(stage_fault)?;
        }
    }
    feed.flush().map_err(stage_fault)?;
    counts.keys = feed.keys;
    Ok((feed.out, counts))
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

    #[test]
    fn decimal_fields() {
        assert_eq!(parse_decimal(b" 42\t"), Ok(Parsed::U64(42)));
        assert_eq!(parse_decimal(b"0xff_ff"), Ok(Parsed::U64(0xffff)));
        assert_eq!(parse_decimal(b"1_000"), Ok(Parsed::U64(1000)));
        assert_eq!(parse_decimal(b""), Ok(Parsed::Skip));
        assert!(parse_decimal(b"18446744073709551616").is_err());
        assert!(parse_decimal(b"0x").is_err());
        assert!(parse_decimal(b"-1").is_err());
        let long = vec![b'7'; 1000];
        let mut l = long.clone();
        l.push(b'x');
        let e = parse_decimal(&l).unwrap_err();
        assert!(e.len() < 200 && e.contains("(1001 bytes)"), "{e}");
    }
}
