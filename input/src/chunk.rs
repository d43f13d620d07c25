//! Cutting an input into chunks of whole records: each format's `Cutter` says how long the
//! longest prefix of whole records in a window is, so that no record is split between two
//! chunks (lines at a newline, binary u64 keys at a multiple of 8 bytes, CSV records at a newline
//! outside quotes, packets at their record boundaries).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::error::{Error, Location, Result};
use crate::pcap::{self, NgState};

/// The longest record (a line, a CSV record, a packet) accepted: 64 MiB. A longer one is an
/// error naming where it starts, so that a file without newlines (or `/dev/zero`) is never read
/// without bound.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// The bytes of one chunk.
pub(crate) enum ChunkData {
    /// A range of a memory-mapped file.
    Mapped(Arc<Mmap>, std::ops::Range<usize>),
    /// A buffer read from a stream.
    Owned(Vec<u8>),
}

/// A run of whole records, with where it sits in the input.
pub struct Chunk {
    /// Position in the input: 0, 1, 2 …
    pub seq: u64,
    /// Byte offset of its first byte in the (decompressed) input.
    pub offset: u64,
    pub(crate) data: ChunkData,
    /// pcapng: the section and interfaces in force at the chunk's first block.
    pub(crate) ng: Option<Arc<NgState>>,
}

impl Chunk {
    /// The chunk's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            ChunkData::Mapped(m, r) => &m[r.clone()],
            ChunkData::Owned(v) => v,
        }
    }

    /// pcapng: the section state (byte order, interfaces) in force at the chunk's first block,
    /// to walk its blocks with [`pcap::walk_blocks`]; a fresh state for other formats.
    pub fn ng_state(&self) -> NgState {
        self.ng.as_deref().cloned().unwrap_or_default()
    }
}

/// What a cutter found in a window.
#[derive(Debug, Default)]
pub struct Cut {
    /// Bytes of whole records at the window's start (0: none complete yet).
    pub len: usize,
    /// The rest of the input is to be ignored (a capture's truncated last record).
    pub stop: bool,
    /// A warning to print (e.g. why the rest was ignored).
    pub warning: Option<String>,
}

/// Finds record boundaries; one per input, fed windows in order.
pub trait Cutter: Send {
    /// The longest prefix of whole records of `window`, which starts at input offset `offset`;
    /// `eof`: the window holds the rest of the input. A window with no whole record and not at
    /// the end gives `len == 0` and is offered again, longer.
    fn cut(&mut self, window: &[u8], offset: u64, eof: bool) -> Result<Cut>;

    /// Called after a cut of `len` bytes was taken (sequential formats update their state).
    fn taken(&mut self, window: &[u8], len: usize) {
        let _ = (window, len);
    }

    /// pcapng: the state in force at the next chunk's start.
    fn ng_state(&self) -> Option<Arc<NgState>> {
        None
    }

    /// Why a window of [`MAX_RECORD_BYTES`] holds no whole record (for the error).
    fn overlong(&self, offset: u64) -> String {
        format!(
            "a record starting at byte offset {offset} is longer than {} MiB (the longest accepted)",
            MAX_RECORD_BYTES >> 20
        )
    }
}

/// Newline-terminated records (text lines, decimal integers, text flow keys).
pub(crate) struct LineCutter;

impl Cutter for LineCutter {
    fn cut(&mut self, window: &[u8], _offset: u64, eof: bool) -> Result<Cut> {
        let len = if eof {
            window.len()
        } else {
            memchr::memrchr(b'\n', window).map_or(0, |i| i + 1)
        };
        Ok(Cut {
            len,
            ..Cut::default()
        })
    }

    fn overlong(&self, offset: u64) -> String {
        format!(
            "a line starting at byte offset {offset} is longer than {} MiB (the longest accepted); is this a text file?",
            MAX_RECORD_BYTES >> 20
        )
    }
}

/// Binary little-endian u64 keys.
pub(crate) struct U64Cutter {
    pub shown: PathBuf,
}

impl Cutter for U64Cutter {
    fn cut(&mut self, window: &[u8], offset: u64, eof: bool) -> Result<Cut> {
        let len = window.len() / 8 * 8;
        if eof && len != window.len() {
            let rem = window.len() - len;
            return Err(Error::input(
                &self.shown,
                Some(Location::Byte(offset + len as u64)),
                format!(
                    "{} bytes is not a whole number of 8-byte little-endian u64 keys ({rem} bytes left over)",
                    offset + window.len() as u64
                ),
            ));
        }
        Ok(Cut {
            len,
            ..Cut::default()
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CsvState {
    FieldStart,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

/// CSV records: a newline ends a record unless it is inside a quoted field. Quotes open a field
/// only at its start, and `""` inside a quoted field is a quote, as the `csv` crate reads them.
pub(crate) struct CsvCutter {
    pub shown: PathBuf,
    pub delimiter: u8,
    /// Newlines before the current window.
    lines_before: u64,
    /// Where the last quote still open was opened (offset within the window).
    open_at: Option<usize>,
    open_line: u64,
    window_offset: u64,
}

impl CsvCutter {
    /// A cutter for `delimiter`-separated records.
    pub fn new(shown: &Path, delimiter: u8) -> CsvCutter {
        CsvCutter {
            shown: shown.to_path_buf(),
            delimiter,
            lines_before: 0,
            open_at: None,
            open_line: 0,
            window_offset: 0,
        }
    }

    /// Scans `w` from a record start; returns the end of the last whole record and the state at
    /// the end of the window.
    fn scan(&mut self, w: &[u8]) -> (usize, CsvState) {
        let (d, q) = (self.delimiter, b'"');
        let mut st = CsvState::FieldStart;
        let mut last_end = 0;
        let mut i = 0;
        self.open_at = None;
        while i < w.len() {
            match st {
                CsvState::FieldStart | CsvState::QuoteInQuoted => {
                    let b = w[i];
                    let was_start = st == CsvState::FieldStart;
                    st = if b == q {
                        if was_start {
                            self.open_at = Some(i);
                        }
                        CsvState::Quoted
                    } else if b == d {
                        CsvState::FieldStart
                    } else if b == b'\n' {
                        last_end = i + 1;
                        CsvState::FieldStart
                    } else if b == b'\r' {
                        CsvState::FieldStart
                    } else {
                        CsvState::Unquoted
                    };
                    i += 1;
                }
                // A lone `\r` ends a record too, as the `csv` crate reads `\r`, `\n` and `\r\n`:
                // a quote after it opens a field.
                CsvState::Unquoted => match memchr::memchr3(d, b'\n', b'\r', &w[i..]) {
                    Some(k) => {
                        i += k;
                        if w[i] == b'\n' {
                            last_end = i + 1;
                        }
                        st = CsvState::FieldStart;
                        i += 1;
                    }
                    None => i = w.len(),
                },
                CsvState::Quoted => match memchr::memchr(q, &w[i..]) {
                    Some(k) => {
                        i += k + 1;
                        st = CsvState::QuoteInQuoted;
                    }
                    None => i = w.len(),
                },
            }
        }
        (last_end, st)
    }
}

impl Cutter for CsvCutter {
    fn cut(&mut self, window: &[u8], offset: u64, eof: bool) -> Result<Cut> {
        self.window_offset = offset;
        let (end, st) = self.scan(window);
        if eof {
            if st == CsvState::Quoted {
                let at = self.open_at.unwrap_or(0);
                let line = self.lines_before
                    + memchr::memchr_iter(b'\n', &window[..at]).count() as u64
                    + 1;
                return Err(Error::input(
                    &self.shown,
                    Some(Location::LineByte(line, offset + at as u64)),
                    "malformed CSV: a quoted field opened here is never closed (unterminated quote)",
                ));
            }
            return Ok(Cut {
                len: window.len(),
                ..Cut::default()
            });
        }
        if st == CsvState::Quoted {
            if let Some(at) = self.open_at {
                self.open_line = self.lines_before
                    + memchr::memchr_iter(b'\n', &window[..at]).count() as u64
                    + 1;
            }
        }
        Ok(Cut {
            len: end,
            ..Cut::default()
        })
    }

    fn taken(&mut self, window: &[u8], len: usize) {
        self.lines_before += memchr::memchr_iter(b'\n', &window[..len]).count() as u64;
    }

    fn overlong(&self, offset: u64) -> String {
        match self.open_at {
            Some(at) => format!(
                "a CSV record starting at byte offset {offset} is longer than {} MiB: the quote opened at line {} (byte offset {}) is never closed (unterminated quote)",
                MAX_RECORD_BYTES >> 20,
                self.open_line,
                self.window_offset + at as u64
            ),
            None => format!(
                "a CSV record starting at byte offset {offset} is longer than {} MiB (the longest accepted)",
                MAX_RECORD_BYTES >> 20
            ),
        }
    }
}

/// Classic pcap packet records (after the 24-byte file header).
pub(crate) struct PcapCutter {
    pub shown: PathBuf,
    pub big_endian: bool,
}

impl Cutter for PcapCutter {
    fn cut(&mut self, window: &[u8], offset: u64, eof: bool) -> Result<Cut> {
        let walked = pcap::walk_records(window, self.big_endian);
        capture_cut(&self.shown, "packet record", window, offset, walked, eof)
    }
}

/// A capture's cut of the whole records (`what`: "packet record" or "pcapng block") that a
/// walk of `window` found: its length, or the fault it met as an error; at the end of the
/// input, a cut-short last record stops the input with a warning naming its byte offset
/// (ignored, as tcpdump does).
fn capture_cut(
    shown: &Path,
    what: &str,
    window: &[u8],
    offset: u64,
    (len, fault): (usize, Option<pcap::PcapError>),
    eof: bool,
) -> Result<Cut> {
    if let Some(f) = fault {
        return Err(capture_error(shown, offset, f));
    }
    let mut cut = Cut {
        len,
        ..Cut::default()
    };
    if eof && len < window.len() {
        cut.stop = true;
        cut.warning = Some(format!(
            "{}: byte offset {}: the last {what} is cut short ({} bytes left); ignored, as tcpdump does",
            shown.display(),
            offset + len as u64,
            window.len() - len
        ));
    }
    Ok(cut)
}

/// pcapng blocks.
pub(crate) struct PcapngCutter {
    pub shown: PathBuf,
    state: NgState,
    pending: NgState,
    snapshot: Arc<NgState>,
}

impl PcapngCutter {
    /// A cutter at the start of a pcapng file.
    pub fn new(shown: &Path) -> PcapngCutter {
        PcapngCutter {
            shown: shown.to_path_buf(),
            state: NgState::default(),
            pending: NgState::default(),
            snapshot: Arc::new(NgState::default()),
        }
    }
}

impl Cutter for PcapngCutter {
    fn cut(&mut self, window: &[u8], offset: u64, eof: bool) -> Result<Cut> {
        let mut st = self.state.clone();
        let walked = pcap::walk_blocks(window, &mut st, &mut |_, _| {});
        // Only whole blocks change the state: `st` is the state after the cut.
        self.pending = st;
        capture_cut(&self.shown, "pcapng block", window, offset, walked, eof)
    }

    fn taken(&mut self, _window: &[u8], _len: usize) {
        self.snapshot = Arc::new(std::mem::take(&mut self.state));
        self.state = self.pending.clone();
    }

    fn ng_state(&self) -> Option<Arc<NgState>> {
        Some(self.snapshot.clone())
    }
}

/// A capture fault at `base + f.offset` as an input error.
pub(crate) fn capture_error(shown: &Path, base: u64, f: pcap::PcapError) -> Error {
    let at = base + f.offset;
    Error::input_with(
        shown,
        Some(Location::Byte(at)),
        format!("unreadable capture: {}", f.what),
        pcap::PcapError {
            offset: at,
            what: f.what,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cuts_outside_quotes_only() {
        let mut c = CsvCutter::new(Path::new("t.csv"), b',');
        let w = b"a,\"x\ny\"\nb,c\nd,\"e";
        let cut = c.cut(w, 0, false).unwrap();
        assert_eq!(&w[..cut.len], b"a,\"x\ny\"\nb,c\n");
        let e = c.cut(w, 0, true).unwrap_err().to_string();
        assert!(e.contains("line 4 (byte offset 14)"), "{e}");
        assert!(e.contains("unterminated quote"), "{e}");
        // A quote inside an unquoted field is data, and "" inside quotes is a quote.
        let mut c = CsvCutter::new(Path::new("t.csv"), b',');
        let w = b"ab\"c,d\n\"x\"\"\ny\",z\n";
        assert_eq!(c.cut(w, 0, true).unwrap().len, w.len());
        assert_eq!(c.cut(w, 0, false).unwrap().len, w.len());
        // After a lone \r (a record's end for the csv crate) a quote opens a field, so the
        // newline inside it does not end a record (found by the text_inputs fuzz target).
        let mut c = CsvCutter::new(Path::new("t.csv"), b',');
        let w = b"na\r\"\n3l\n";
        assert_eq!(c.cut(w, 0, false).unwrap().len, 0);
        let e = c.cut(w, 0, true).unwrap_err().to_string();
        assert!(e.contains("unterminated quote"), "{e}");
    }

    #[test]
    fn lines_and_u64() {
        let mut l = LineCutter;
        assert_eq!(l.cut(b"ab\ncd", 0, false).unwrap().len, 3);
        assert_eq!(l.cut(b"ab\ncd", 0, true).unwrap().len, 5);
        assert_eq!(l.cut(b"abcd", 0, false).unwrap().len, 0);
        let mut u = U64Cutter {
            shown: "k.u64".into(),
        };
        assert_eq!(u.cut(&[0; 20], 0, false).unwrap().len, 16);
        let e = u.cut(&[0; 20], 8, true).unwrap_err().to_string();
        assert!(
            e.contains("byte offset 24") && e.contains("4 bytes left over"),
            "{e}"
        );
    }
}
