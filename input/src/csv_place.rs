//! Where a CSV record really starts: its line and byte offset, counted from the bytes.
//!
//! The `csv` crate reports a record's position before it skips the terminator bytes left over
//! from the record before it, so its figures are wrong in two common cases (both open upstream):
//! with CRLF line endings every record after the first is placed on the line before, one byte
//! early (BurntSushi/rust-csv#395), and the first record after a blank line is placed on the
//! blank line (#208). A Windows export then made every error name the wrong line. The crate's
//! byte offset is still at or just before the record's first byte, with only `\r` and `\n` in
//! between, so the record's start is found by skipping those, and its line by counting the
//! newlines before it.

use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

/// The record start at or after `reported` in `bytes` (the crate's byte offset into them):
/// `(line, byte)`, the 1-based line within `bytes` and the 0-based offset. For an error path:
/// it counts the newlines from the start of `bytes`.
pub(crate) fn place_in(bytes: &[u8], reported: u64) -> (u64, u64) {
    let start = skip_terminators(bytes, reported as usize);
    let lines = memchr::memchr_iter(b'\n', &bytes[..start]).count() as u64;
    (lines + 1, start as u64)
}

/// The first byte at or after `at` (at most `bytes.len()`) that is not `\r` or `\n`.
fn skip_terminators(bytes: &[u8], at: usize) -> usize {
    let at = at.min(bytes.len());
    at + bytes[at..]
        .iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count()
}

/// The bytes a [`Recorder`] has passed on and the places not yet asked for: bytes from
/// absolute offset `base`, `newlines` of them before `base`.
#[derive(Default)]
struct Recording {
    bytes: Vec<u8>,
    /// How many of `bytes` lie before the last place asked for (dropped when they grow).
    done: usize,
    base: u64,
    newlines: u64,
}

/// A reader that keeps what it passes on until the records in it are placed, so that a
/// streamed CSV input (standard input, a compressed file) is placed as exactly as a mapped
/// one. It holds the bytes between the last record placed and the CSV reader's read-ahead.
pub(crate) struct Recorder<R> {
    inner: R,
    recording: Rc<RefCell<Recording>>,
}

/// Places the records of the input a [`Recorder`] reads, in order.
pub(crate) struct Places {
    recording: Rc<RefCell<Recording>>,
}

/// A recording reader over `inner` and the placer of its records.
pub(crate) fn recorded<R: Read>(inner: R) -> (Recorder<R>, Places) {
    let recording = Rc::new(RefCell::new(Recording::default()));
    (
        Recorder {
            inner,
            recording: Rc::clone(&recording),
        },
        Places { recording },
    )
}

impl<R: Read> Read for Recorder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.recording
            .borrow_mut()
            .bytes
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Places {
    /// The place of the record the CSV reader reports at absolute byte `reported`, which must
    /// not lie before the last place asked for: `(line, byte)`, 1-based and 0-based over the
    /// whole input. The bytes before it are let go.
    pub(crate) fn place(&self, reported: u64) -> (u64, u64) {
        let mut r = self.recording.borrow_mut();
        let r = &mut *r;
        let rel = (reported.saturating_sub(r.base) as usize).max(r.done);
        let start = skip_terminators(&r.bytes, rel);
        r.newlines += memchr::memchr_iter(b'\n', &r.bytes[r.done..start]).count() as u64;
        r.done = start;
        // Dropped once the placed bytes are half the recording: a move of each byte at most
        // once, whatever the record lengths.
        if r.done > 4096 && 2 * r.done >= r.bytes.len() {
            r.bytes.drain(..r.done);
            r.base += r.done as u64;
            r.done = 0;
        }
        (r.newlines + 1, r.base + r.done as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records' (line, byte offset) places.
    type At = Vec<(u64, u64)>;

    /// Each record's first line and byte, as a reader of the text would count them.
    fn expected(text: &[u8]) -> At {
        let mut out = Vec::new();
        let mut line = 1;
        let mut at_start = true;
        for (i, &b) in text.iter().enumerate() {
            if b == b'\n' {
                line += 1;
                at_start = true;
            } else if b != b'\r' && at_start {
                out.push((line, i as u64));
                at_start = false;
            }
        }
        out
    }

    /// The places of every record of `text` by the crate's reports: with the bytes at hand,
    /// and through a recorder fed `step` bytes at a time.
    fn placed(text: &[u8], step: usize) -> (At, At) {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let (reader, places) = recorded(Trickle(text, step));
        let mut rdr = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(reader);
        let (mut direct, mut streamed) = (Vec::new(), Vec::new());
        let mut rec = ::csv::ByteRecord::new();
        while rdr.read_byte_record(&mut rec).unwrap() {
            let b = rec.position().unwrap().byte();
            direct.push(place_in(text, b));
            streamed.push(places.place(b));
        }
        (direct, streamed)
    }

    #[test]
    fn records_are_placed_on_their_own_line_with_crlf_and_blank_lines() {
        let texts: [&[u8]; 4] = [
            b"ip,action\r\n10.0.0.1,allow\r\n10.0.0.x,deny\r\n",
            b"ip,action\n10.0.0.1,allow\n\n\n10.0.0.x,deny",
            b"a,b\r\n\r\n1,2\r\n3,4\n\r\n5,6",
            b"\n\nk,v\n1,2\n",
        ];
        for text in texts {
            for step in [1, 3, 8192] {
                let (direct, streamed) = placed(text, step);
                assert_eq!(
                    direct,
                    expected(text),
                    "{:?}",
                    String::from_utf8_lossy(text)
                );
                assert_eq!(streamed, expected(text), "step {step}");
            }
        }
    }

    /// The crate alone misplaces them (the reason for this module): if it stops, this test
    /// says so and the module can go.
    #[test]
    fn the_csv_crate_alone_misplaces_crlf_records() {
        let text = b"ip,action\r\n10.0.0.1,allow\r\n";
        let mut rdr = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(&text[..]);
        let mut rec = ::csv::ByteRecord::new();
        rdr.read_byte_record(&mut rec).unwrap();
        rdr.read_byte_record(&mut rec).unwrap();
        let p = rec.position().unwrap();
        assert_eq!((p.line(), p.byte()), (1, 10));
        assert_eq!(place_in(text, p.byte()), (2, 11));
    }

    /// Long inputs keep only a bounded recording, and places stay exact across the drops.
    #[test]
    fn a_long_stream_is_placed_exactly_past_the_drops() {
        let mut text = Vec::new();
        for i in 0..20_000 {
            let eol: &[u8] = if i % 3 == 0 { b"\r\n" } else { b"\n" };
            text.extend_from_slice(format!("key{i},{}", i % 7).as_bytes());
            text.extend_from_slice(eol);
            if i % 101 == 0 {
                text.extend_from_slice(b"\n");
            }
        }
        let (direct, streamed) = placed(&text, 4096);
        assert_eq!(streamed, expected(&text));
        assert_eq!(direct, streamed);
    }
}
