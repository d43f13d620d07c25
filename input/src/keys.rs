//! Turning a chunk of whole records into keys (the parse and hash stages of the pipeline): lines,
//! decimal integers, text flow keys, a CSV column, binary u64 words, or the flow keys of the
//! packets of a capture. Keys are hashed as soon as they are parsed, in batches handed to a
//! [`Stage`] (insert, probe, count); the key text is kept only when the stage lists keys.
//!
//! The hook for other key forms is [`FieldParser`]: a function from a field's bytes (a line, a
//! CSV field) to the key's bytes ([`crate::field`]).

use bloomlanes_core::{xxh64, xxh64_u64, KeyType};

use crate::chunk::Chunk;
use crate::csv_place::place_in;
use crate::field::{FieldParser, Parsed};
use crate::lines::{for_each_line, spans_fit, SpanHasher};
use crate::pcap::{self, Flow, NgBlock, IPV6_TUPLE_LEN};
use crate::stage::{Batch, BatchKeys, Keep, Shown, Stage};

/// How a worker turns a chunk into keys.
#[derive(Clone, Debug)]
pub(crate) enum ChunkParser {
    /// One key per line; `field` parses it (none: the line's bytes; empty lines skipped).
    Lines {
        /// The line parser.
        field: Option<FieldParser>,
        /// How lines taken as they are get hashed, a batch at a time.
        hasher: SpanHasher,
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
    /// The lines of `bytes` taken as they are (a `\r` before the newline dropped, empty lines
    /// skipped), their places gathered a batch at a time on the stack and hashed together by
    /// `hasher`. Returns the number of lines.
    fn plain_lines(&mut self, bytes: &[u8], hasher: SpanHasher) -> Result<u64, S::Error> {
        let mut spans = [0u64; BATCH];
        let mut n = 0usize;
        let lines = for_each_line(bytes, |start, end| -> Result<(), S::Error> {
            let end = end - usize::from(end > start && bytes[end - 1] == b'\r');
            if end > start {
                spans[n] = start as u64 | ((end - start) as u64) << 32;
                n += 1;
                if n == BATCH {
                    self.hashed(bytes, &spans, hasher)?;
                    n = 0;
                }
            }
            Ok(())
        })?;
        self.hashed(bytes, &spans[..n], hasher)?;
        Ok(lines)
    }

    /// Hashes the keys at `spans` of `bytes` and hands them to the stage.
    fn hashed(&mut self, bytes: &[u8], spans: &[u64], hasher: SpanHasher) -> Result<(), S::Error> {
        if spans.is_empty() {
            return Ok(());
        }
        hasher(bytes, spans, self.seed, &mut self.scratch.batch.hashes);
        self.keys += spans.len() as u64;
        self.flush()
    }

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
            self.stage.flush(BatchKeys::hashed(b), &mut self.out)?;
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
        &ChunkParser::Lines {
            field: None,
            hasher,
        } if keep == Keep::Nothing && spans_fit(bytes) => {
            // Only the hashes are wanted: the lines' places are gathered a batch at a time and
            // hashed together (by the caller's span hasher when it brings one).
            let lines = feed.plain_lines(bytes, hasher).map_err(stage_fault)?;
            counts.lines = lines - u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
        }
        ChunkParser::Lines { field, .. } => {
            let mut line = 0u64;
            let lines = for_each_line(bytes, |start, end| {
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
                Ok(())
            })?;
            // Newlines: one per line but an unterminated last one.
            counts.lines = lines - u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
        }
        ChunkParser::Csv {
            delimiter,
            header,
            column,
            fields,
            field,
        } => {
            counts.lines = memchr::memchr_iter(b'\n', bytes).count() as u64;
            // The crate drops a byte order mark that starts its input. Only the input's start
            // has a mark to drop; a later chunk that starts with those bytes (U+FEFF in a key)
            // is handed over one byte first, which the crate does not take for a mark.
            let keep = usize::from(chunk.seq != 0 && bytes.starts_with(b"\xef\xbb\xbf"));
            let (lead, rest) = bytes.split_at(keep);
            let mut rdr = ::csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(*delimiter)
                .flexible(true)
                .from_reader(std::io::Read::chain(lead, rest));
            let mut rec = ::csv::ByteRecord::new();
            let mut first = chunk.seq == 0 && *header;
            loop {
                // The crate's position, placed from the bytes (`csv_place`: the crate's own
                // line is wrong after CRLF endings and blank lines).
                let fault = |reported: u64, what: String| {
                    let (line, byte) = place_in(bytes, reported);
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
                        let b = e.position().map_or(0, ::csv::Position::byte);
                        return Err(fault(b, format!("malformed CSV: {e}")));
                    }
                }
                let b = rec.position().map_or(0, ::csv::Position::byte);
                if rec.len() != *fields {
                    return Err(fault(
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
                    return Err(fault(b, what));
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
                    .flush(BatchKeys::binary(part, &empty), &mut feed.out)
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
