//! One walk over the records of a classic pcap body: each record's place and bytes, in order,
//! checked as it is read. Speculation ([`crate::speculate`]) finds a range's records with it and
//! hands the same walk to the caller's work, so that each record header is read once: the walk
//! that finds the record boundaries is the walk that classifies the packets.

use super::{Endian, MAX_PACKET};

/// A record header's fields in the file's byte order.
pub(crate) struct Header {
    pub(crate) ts_sec: u32,
    pub(crate) ts_frac: u32,
    pub(crate) incl: usize,
    pub(crate) orig: usize,
}

/// The record header at `at` of `b`, if 16 bytes are there.
#[inline]
pub(crate) fn header(b: &[u8], at: usize, big_endian: bool) -> Option<Header> {
    let h: &[u8; 16] = b.get(at..at.checked_add(16)?)?.try_into().ok()?;
    let word = |o: usize| Endian(big_endian).u32(h, o);
    Some(Header {
        ts_sec: word(0),
        ts_frac: word(4),
        incl: word(8) as usize,
        orig: word(12) as usize,
    })
}

/// Timestamps further than this from the first record's make a header implausible (a week).
const TS_SPREAD: u32 = 7 * 86_400;

/// What a record header of this capture looks like: a speculative guess must chain
/// [`crate::speculate::SYNC_RECORDS`] of these (real headers fail it only on odd captures, which
/// then just run sequentially).
#[derive(Clone, Copy)]
pub(crate) struct Plausible {
    pub(crate) big_endian: bool,
    /// The first record's timestamp (seconds).
    pub(crate) ts0: u32,
}

impl Plausible {
    #[inline]
    pub(crate) fn ok(&self, h: &Header) -> bool {
        // No empty records: 16 zero bytes (padding, a zeroed payload) read as one, and would
        // chain a guess into the true records a few bytes early.
        h.incl > 0
            && h.incl <= MAX_PACKET
            && h.incl <= h.orig
            && h.orig <= 1 << 20
            && h.ts_frac < 1_000_000_000
            && h.ts_sec.abs_diff(self.ts0) <= TS_SPREAD
    }
}

/// The records of a classic pcap body from its first byte, as `(offset, record)` (the record
/// with its 16-byte header; its frame is `&record[16..]`), up to the first record boundary at
/// or past a target. A record that is cut short by the end of the bytes, or whose header the
/// walk's check refuses, ends the walk without it; [`RecordWalk::end`] then says that the target
/// was not reached.
pub struct RecordWalk<'a> {
    bytes: &'a [u8],
    at: usize,
    target: usize,
    big_endian: bool,
    /// `None`: what the sequential reader accepts (captured length up to [`MAX_PACKET`]).
    plausible: Option<Plausible>,
}

impl<'a> RecordWalk<'a> {
    /// Every whole record of `bytes` as the sequential reader cuts them
    /// ([`super::for_each_record`]): a captured length past [`MAX_PACKET`] or a cut-short
    /// record ends the walk.
    pub fn new(bytes: &'a [u8], big_endian: bool) -> RecordWalk<'a> {
        Self::to(bytes, bytes.len(), big_endian)
    }

    /// The records of `bytes` up to the first boundary at or past `target`, as the sequential
    /// reader accepts them.
    pub(crate) fn to(bytes: &'a [u8], target: usize, big_endian: bool) -> RecordWalk<'a> {
        RecordWalk {
            bytes,
            at: 0,
            target,
            big_endian,
            plausible: None,
        }
    }

    /// The records of `bytes` up to the first boundary at or past `target`, each header
    /// [`Plausible`] (a speculative walk from a guessed start).
    pub(crate) fn plausible(bytes: &'a [u8], target: usize, p: Plausible) -> RecordWalk<'a> {
        RecordWalk {
            plausible: Some(p),
            ..Self::to(bytes, target, p.big_endian)
        }
    }

    /// The bytes walked.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The boundary the walk ended at, when it reached its target (`None`: a record was cut
    /// short or refused before it, or the walk has not been run to its end).
    pub fn end(&self) -> Option<usize> {
        (self.at >= self.target).then_some(self.at)
    }

    /// Runs the walk to its end, ignoring the records ([`RecordWalk::end`] then says where).
    #[cfg(test)]
    pub(crate) fn finish(mut self) -> Option<usize> {
        for _ in self.by_ref() {}
        self.end()
    }
}

impl<'a> Iterator for RecordWalk<'a> {
    type Item = (usize, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let at = self.at;
        if at >= self.target {
            return None;
        }
        prefetch(self.bytes, at + PREFETCH_AHEAD);
        let h = header(self.bytes, at, self.big_endian)?;
        let ok = match &self.plausible {
            Some(p) => p.ok(&h),
            None => h.incl <= MAX_PACKET,
        };
        if !ok {
            return None;
        }
        let rec = self.bytes.get(at..at + 16 + h.incl)?;
        self.at = at + rec.len();
        Some((at, rec))
    }
}

/// How far ahead of its record the walk asks for the capture's bytes: each header's place
/// depends on the one before, so without a hint every cache line the walk reaches first is a
/// wait for memory.
const PREFETCH_AHEAD: usize = 1024;

/// Asks the CPU to bring the cache line of `b[at]` in (nothing when `at` is past the end).
#[inline(always)]
fn prefetch(b: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < b.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `b[at]` is in bounds (checked above), and a prefetch reads nothing the
        // program sees: it only moves a line of mapped memory toward the core.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().add(at).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records with the given packet lengths (little-endian, plausible timestamps).
    fn body(lens: &[u32]) -> Vec<u8> {
        let mut v = Vec::new();
        for (r, &n) in lens.iter().enumerate() {
            for w in [1_700_000_000 + r as u32, 7, n, n] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v.extend((0..n).map(|i| (i as u8) ^ (r as u8)));
        }
        v
    }

    #[test]
    fn a_whole_walk_yields_every_whole_record_and_stops_at_a_cut_one() {
        let lens = [60, 0, 1500, 7, 300];
        let b = body(&lens);
        // Each record's offset and end, from the lengths written.
        let mut bounds = Vec::new();
        let mut at = 0;
        for &n in &lens {
            bounds.push((at, at + 16 + n as usize));
            at += 16 + n as usize;
        }
        for cut in [b.len(), b.len() - 1, b.len() - 300, 17, 0] {
            let want: Vec<_> = (bounds.iter().take_while(|&&(_, end)| end <= cut))
                .map(|&(at, end)| (at, &b[at..end]))
                .collect();
            let got: Vec<_> = RecordWalk::new(&b[..cut], false).collect();
            assert_eq!(got, want, "cut at {cut}");
            let mut each = Vec::new();
            super::super::for_each_record(&b[..cut], false, |at, rec, _| each.push((at, rec)));
            assert_eq!(each, want, "for_each_record, cut at {cut}");
        }
    }

    #[test]
    fn the_walk_stops_at_the_first_boundary_past_its_target_and_says_where() {
        let b = body(&[60, 60, 60, 60]);
        let mut w = RecordWalk::to(&b, 80, false);
        assert_eq!(w.end(), None, "not run yet");
        assert_eq!(w.by_ref().map(|(at, _)| at).collect::<Vec<_>>(), [0, 76]);
        assert_eq!(w.end(), Some(152));
        // A captured length past MAX_PACKET ends the walk short of its target.
        let mut bad = b.clone();
        bad[76 + 8..76 + 12].copy_from_slice(&(MAX_PACKET as u32 + 1).to_le_bytes());
        assert_eq!(RecordWalk::to(&bad, 200, false).finish(), None);
        assert_eq!(RecordWalk::to(&bad, 70, false).finish(), Some(76));
        // A plausible walk also refuses an empty record or a timestamp far from the first.
        let p = Plausible {
            big_endian: false,
            ts0: 1_700_000_000,
        };
        assert_eq!(RecordWalk::plausible(&b, 300, p).finish(), Some(304));
        let far = Plausible { ts0: 1, ..p };
        assert_eq!(RecordWalk::plausible(&b, 300, far).finish(), None);
        let empty = body(&[60, 0, 60]);
        assert_eq!(RecordWalk::to(&empty, 150, false).finish(), Some(168));
        assert_eq!(RecordWalk::plausible(&empty, 150, p).finish(), None);
    }
}
