//! Speculative parallel cutting of a memory-mapped classic pcap file.
//!
//! A pcap file is a chain: each record's 16-byte header gives the length of its packet, and the
//! next record starts right after it. The pipeline's reader walks that chain on one thread, and
//! on a 16-core host that walk alone caps classification at about 75 M packets/s (measured on
//! the H100 machine's Xeon, 2026-11-25: 0.19–0.21 s for 15 M records of 60 bytes, prefaulted or
//! not). Here every worker takes a fixed byte range instead, *guesses* where the first record of
//! its range starts, and walks and classifies from there:
//!
//! - the guess is the first position of the range from which [`SYNC_RECORDS`] consecutive record
//!   headers are plausible (captured length from 1 to [`crate::pcap::MAX_PACKET`] and at most the
//!   original length, fractions of a second below 10^9, seconds within a week of the first
//!   record's);
//! - the range's walk goes on past its end to the first record boundary at or after it;
//! - results are consumed in order, and a range's result is used only if its guessed start is
//!   exactly where the previous range's walk ended (the first range starts at the known first
//!   record). By induction every consumed start is a true record boundary, so the records, and
//!   everything computed from them, are those of the sequential walk.
//!
//! A range whose guess does not check out (or whose walk met an implausible header) is done
//! again on the consuming thread, walking from the trusted boundary as the sequential reader
//! would. At a record the sequential reader would refuse, and near the end of the file,
//! speculation stops and returns the last trusted boundary: the caller hands the rest of the
//! file to the ordinary pipeline, which reports errors and warnings with their byte offsets as
//! always. A hostile file can make ranges run sequentially, never change an answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use memmap2::Mmap;

use crate::chunk::{Chunk, ChunkData};
use crate::error::Result;
use crate::pcap::records::{header, Plausible};
use crate::pcap::{RecordWalk, MAX_PACKET};
use crate::pipeline::{drop_pages, PipelineConfig};

/// Consecutive plausible record headers that make a guessed start.
pub const SYNC_RECORDS: usize = 16;

/// Largest range: one range's records are walked, then classified and written while they are
/// still in the core's cache (2 MiB ranges ran `classify -w` 1.6× slower in wall time than
/// 512 KiB ones on the 2-core VM, 2026-11-29; same CPU time).
const MAX_RANGE: usize = 512 << 10;

/// Consumed bytes whose pages are dropped from the map at once (each drop is an `madvise` that
/// interrupts every core running the process: one per 512 KiB range cost up to a third of a
/// second of `classify -w` on the shared 2-core VM, 2026-11-29).
const DROP_BATCH: usize = 16 << 20;

/// Ranges worked on ahead of the consumer, per worker thread.
const RANGES_PER_THREAD: usize = 4;

/// Whether speculation is worth starting: at least this many ranges past the header.
const MIN_RANGES: usize = 16;

/// The first position in `[from, to)` from which [`SYNC_RECORDS`] plausible headers chain
/// inside `b`.
fn guess_start(b: &[u8], from: usize, to: usize, p: Plausible) -> Option<usize> {
    (from..to).find(|&start| {
        let walk = RecordWalk::plausible(&b[start.min(b.len())..], usize::MAX, p);
        walk.take(SYNC_RECORDS).count() == SYNC_RECORDS
    })
}

/// The bytes of `map` a walk from `s` to the first boundary at or past `target` may read.
fn reach(b: &[u8], s: usize, target: usize) -> usize {
    (target + 16 + MAX_PACKET).min(b.len()).max(s)
}

/// One range's outcome: its guessed start, the boundary its walk ended at, and the work's result.
type Outcome<R, E> = Option<(usize, usize, Result<R, E>)>;

/// Works on the records of `map` from `start` (the first record) in parallel as described in
/// the module documentation, consuming results in input order; returns the boundary from which
/// the caller must go on sequentially (`start` if speculation did not start).
///
/// `work` gets a chunk that starts at a (guessed or trusted) record boundary, and the walk over
/// its records: it must run the walk to its end (the walk checks each header as it goes, so a
/// range's records are read once, not found first and read again). Its result is used only if
/// the walk reached the range's end (else the range is done again, or left to the caller); the
/// chunk then handed to `consume` ends where the walk ended.
pub fn pcap_ranges<R: Send, S, E: Send>(
    map: &Arc<Mmap>,
    start: usize,
    big_endian: bool,
    cfg: &PipelineConfig,
    state: &(dyn Fn() -> S + Sync),
    work: &(dyn Fn(&Chunk, &mut RecordWalk<'_>, &mut S) -> Result<R, E> + Sync),
    consume: &mut dyn FnMut(&Chunk, R) -> Result<(), E>,
) -> Result<usize, E> {
    let b: &[u8] = map;
    let range = cfg.chunk_bytes.clamp(4096, MAX_RANGE);
    // The last ranges stay with the sequential reader (it handles the end of the file).
    let stop = b.len().saturating_sub(2 * range + MAX_PACKET + 16);
    if cfg.threads < 2 || stop <= start || (stop - start) / range < MIN_RANGES {
        return Ok(start);
    }
    let Some(first) = header(b, start, big_endian) else {
        return Ok(start);
    };
    let plausible = Plausible {
        big_endian,
        ts0: first.ts_sec,
    };
    let ranges = (stop - start).div_ceil(range);
    let window = cfg.threads * RANGES_PER_THREAD;
    let ahead = Ahead {
        state: Mutex::new(AheadState {
            slots: (0..window).map(|_| None).collect(),
            consumed: 0,
            stop: false,
            panicked: false,
        }),
        done: Condvar::new(),
        room: Condvar::new(),
    };
    let taken = AtomicUsize::new(0);
    let mut own = state();
    // Range `i`, guessed and walked from its guessed start, and worked on.
    let speculate = |i: usize, st: &mut S| -> Outcome<R, E> {
        let a = start + i * range;
        let s = if i == 0 {
            Some(a)
        } else {
            guess_start(b, a, a + range, plausible)
        }?;
        let chunk = mapped_chunk(map, s, reach(b, s, a + range), 0);
        let mut walk = RecordWalk::plausible(chunk.bytes(), a + range - s, plausible);
        let r = work(&chunk, &mut walk, st);
        Some((s, s + walk.end()?, r))
    };
    std::thread::scope(|scope| {
        for _ in 0..cfg.threads {
            scope.spawn(|| {
                let _wake = WakeOnPanic(&ahead);
                let mut st = state();
                loop {
                    let i = taken.fetch_add(1, Ordering::Relaxed);
                    if i >= ranges || !ahead.wait_for_room(i, window) {
                        break;
                    }
                    ahead.put(i, window, speculate(i, &mut st));
                }
            });
        }
        // Consumed in order while the workers go on with the ranges after them; the consuming
        // thread works on the next free range itself rather than wait for range `i`.
        let consumed = (|| {
            let mut trusted = start;
            let mut dropped = start;
            let mut seq = 0u64;
            for i in 0..ranges {
                let end = start + (i + 1) * range;
                let outcome = loop {
                    if let Some(o) = ahead.take(i, window, false) {
                        break o;
                    }
                    let j = taken.load(Ordering::Relaxed);
                    let free = j < ranges && j < i + window;
                    if free
                        && (taken.compare_exchange(j, j + 1, Ordering::Relaxed, Ordering::Relaxed))
                            .is_ok()
                    {
                        ahead.put(j, window, speculate(j, &mut own));
                        continue;
                    }
                    break ahead.take(i, window, true).flatten();
                };
                let (s, e, r) = match outcome {
                    Some((s, e, r)) if s == trusted => (s, e, r),
                    _ if trusted >= end => continue, // a long record spans the whole range
                    _ => {
                        // A wrong or failed guess: this range again, from the trusted boundary.
                        let chunk = mapped_chunk(map, trusted, reach(b, trusted, end), seq);
                        let mut walk = RecordWalk::to(chunk.bytes(), end - trusted, big_endian);
                        let r = work(&chunk, &mut walk, &mut own);
                        let Some(e) = walk.end() else {
                            return Ok(trusted);
                        };
                        (trusted, trusted + e, r)
                    }
                };
                let chunk = mapped_chunk(map, s, e, seq);
                consume(&chunk, r?)?;
                if e - dropped >= DROP_BATCH {
                    drop_pages(map, dropped..e);
                    dropped = e;
                }
                seq += 1;
                trusted = e;
            }
            Ok(trusted)
        })();
        ahead.finish();
        consumed
    })
}

/// The ranges' outcomes between the workers and the consuming thread: a window of slots, range
/// `i` in slot `i % window`, which a worker fills only once range `i - window` is consumed (so
/// memory stays bounded while the consumer writes and the workers go on).
struct Ahead<R, E> {
    state: Mutex<AheadState<R, E>>,
    /// A slot was filled.
    done: Condvar,
    /// A range was consumed, or the run ended.
    room: Condvar,
}

struct AheadState<R, E> {
    slots: Vec<Option<Outcome<R, E>>>,
    /// Ranges consumed so far.
    consumed: usize,
    /// The consumer is finished (done, stopped or failed): workers take no more ranges.
    stop: bool,
    /// A worker panicked: the range it held never comes.
    panicked: bool,
}

/// Tells the consumer when its worker panics (it would otherwise wait for that range forever;
/// the panic itself reaches the caller when the scope joins the worker).
struct WakeOnPanic<'a, R, E>(&'a Ahead<R, E>);

impl<R, E> Drop for WakeOnPanic<'_, R, E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().panicked = true;
            self.0.done.notify_all();
        }
    }
}

impl<R, E> Ahead<R, E> {
    fn lock(&self) -> std::sync::MutexGuard<'_, AheadState<R, E>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until range `i` may be worked on; `false` once the consumer has finished.
    fn wait_for_room(&self, i: usize, window: usize) -> bool {
        let mut st = self.lock();
        while !st.stop && i >= st.consumed + window {
            st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        !st.stop
    }

    /// Range `i`'s outcome, for the consumer.
    fn put(&self, i: usize, window: usize, outcome: Outcome<R, E>) {
        self.lock().slots[i % window] = Some(outcome);
        self.done.notify_all();
    }

    /// Range `i`'s outcome, taken (making room for range `i + window`) once there; `None` if
    /// it is not there yet and `wait` is false. After a worker's panic: `Some(None)`, as if
    /// the guess had failed (the consumer then works on its own).
    fn take(&self, i: usize, window: usize, wait: bool) -> Option<Outcome<R, E>> {
        let mut st = self.lock();
        loop {
            if let Some(o) = st.slots[i % window].take() {
                st.consumed = i + 1;
                drop(st);
                self.room.notify_all();
                return Some(o);
            }
            if st.panicked {
                // Stop the others; the scope then rethrows the worker's panic.
                st.stop = true;
                drop(st);
                self.room.notify_all();
                return Some(None);
            }
            if !wait {
                return None;
            }
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Ends the run: workers waiting for room stop.
    fn finish(&self) {
        self.lock().stop = true;
        self.room.notify_all();
    }
}

fn mapped_chunk(map: &Arc<Mmap>, s: usize, e: usize, seq: u64) -> Chunk {
    Chunk {
        seq,
        offset: s as u64,
        data: ChunkData::Mapped(Arc::clone(map), s..e),
        ng: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Plausible = Plausible {
        big_endian: false,
        ts0: 1_700_000_000,
    };

    /// A pcap body (no file header) of records with the given packet lengths; payload bytes
    /// from `fill`.
    fn body(lens: &[usize], fill: impl Fn(usize, usize) -> u8) -> Vec<u8> {
        let mut v = Vec::new();
        for (r, &n) in lens.iter().enumerate() {
            v.extend_from_slice(&(1_700_000_000 + r as u32).to_le_bytes());
            v.extend_from_slice(&((r * 7) as u32 % 1_000_000).to_le_bytes());
            v.extend_from_slice(&(n as u32).to_le_bytes());
            v.extend_from_slice(&(n as u32).to_le_bytes());
            v.extend((0..n).map(|i| fill(r, i)));
        }
        v
    }

    #[test]
    fn guesses_find_the_true_boundaries_of_ordinary_records() {
        let lens: Vec<usize> = (0..2000).map(|i| 40 + (i * 37) % 1400).collect();
        let b = body(&lens, |r, i| (r * 31 + i * 7) as u8);
        let mut bounds = vec![0usize];
        for n in &lens {
            bounds.push(bounds.last().unwrap() + 16 + n);
        }
        for from in (0..b.len() / 2).step_by(997) {
            let g = guess_start(&b, from, from + 4096, P).expect("a start");
            let truth = *bounds.iter().find(|&&x| x >= from).unwrap();
            assert_eq!(g, truth, "from {from}");
            let e = g + RecordWalk::to(&b[g..], 5000, false).finish().unwrap();
            assert!(bounds.contains(&e) && e >= g + 5000);
        }
    }

    /// Runs `pcap_ranges` over `b` (a body after a 24-byte file header) mapped from a file, with
    /// a work function that lists each chunk's record offsets; returns the records consumed (in
    /// order) and the offset handed back.
    fn run(b: &[u8], threads: usize, range: usize) -> (Vec<usize>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let mut file = vec![0u8; 24];
        file.extend_from_slice(b);
        std::fs::write(&path, &file).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: a private read-only map of a file this test wrote and nothing else changes.
        let map = Arc::new(unsafe { Mmap::map(&f) }.unwrap());
        let cfg = PipelineConfig::with_threads(threads).chunk_bytes(range);
        let work = |c: &Chunk, walk: &mut RecordWalk<'_>, _: &mut ()| -> Result<Vec<usize>> {
            Ok(walk.map(|(at, _)| c.offset as usize + at).collect())
        };
        let mut seen = Vec::new();
        let mut next = 24usize;
        let handed = pcap_ranges(&map, 24, false, &cfg, &|| (), &work, &mut |c, v| {
            assert_eq!(c.offset as usize, next, "chunks tile the file in order");
            next = c.offset as usize + c.bytes().len();
            seen.extend(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(handed, next);
        (seen, handed)
    }

    /// Byte `i` of a payload made of fake records: a header with the first record's timestamp
    /// and a 1-byte packet, 17 bytes each.
    fn fake_header_byte(i: usize) -> u8 {
        let ts = 1_700_000_000u32.to_le_bytes();
        match i % 17 {
            j @ 0..4 => ts[j],
            8 | 12 => 1,
            16 => 0xaa,
            _ => 0,
        }
    }

    fn true_starts(lens: &[usize]) -> Vec<usize> {
        let mut v = vec![24usize];
        for n in lens {
            v.push(v.last().unwrap() + 16 + n);
        }
        v.pop();
        v
    }

    #[test]
    fn speculation_consumes_exactly_the_true_records_in_order() {
        let lens: Vec<usize> = (0..30_000).map(|i| (i * 53) % 1500).collect();
        let b = body(&lens, |r, i| (r ^ i) as u8);
        let truth = true_starts(&lens);
        let (seen, handed) = run(&b, 4, 4096);
        assert!(
            handed > b.len() / 2,
            "speculation went most of the way ({handed} of {})",
            b.len()
        );
        assert_eq!(seen[..], truth[..seen.len()]);
        assert_eq!(truth.iter().position(|&x| x >= handed), Some(seen.len()));
        // One thread: no speculation, nothing consumed.
        assert_eq!(run(&b, 1, 4096), (vec![], 24));
    }

    #[test]
    fn fake_header_chains_in_payloads_never_give_a_wrong_record() {
        let lens = vec![17 * 40; 3000];
        let b = body(&lens, |_, i| fake_header_byte(i));
        let truth = true_starts(&lens);
        let (seen, handed) = run(&b, 4, 4096);
        // Every guess is fooled; each range is done again from the trusted boundary.
        assert!(handed > b.len() / 2, "{handed} of {}", b.len());
        assert_eq!(seen[..], truth[..seen.len()], "only true records, in order");
        assert_eq!(truth.iter().position(|&x| x >= handed), Some(seen.len()));
    }

    #[test]
    fn zeroed_payload_tails_do_not_shift_guesses() {
        // Like the stream benchmark's capture: 60-byte frames whose last 20 bytes are zero.
        let lens = vec![60usize; 5000];
        let b = body(&lens, |r, i| if i >= 40 { 0 } else { (r + i) as u8 | 1 });
        let truth = true_starts(&lens);
        for from in (100..b.len() / 2).step_by(1001) {
            let g = guess_start(&b, from, from + 4096, P).unwrap();
            assert_eq!(g + 24, *truth.iter().find(|&&x| x >= from + 24).unwrap());
        }
    }

    #[test]
    fn a_record_the_reader_refuses_is_left_to_it() {
        let lens: Vec<usize> = (0..30_000).map(|i| 60 + i % 700).collect();
        let mut b = body(&lens, |r, i| (r ^ i) as u8);
        let truth = true_starts(&lens);
        // Record 20,000 claims a captured length past MAX_PACKET (the reader's error).
        let bad = truth[20_000] - 24;
        b[bad + 8..bad + 12].copy_from_slice(&(MAX_PACKET as u32 + 1).to_le_bytes());
        let (seen, handed) = run(&b, 4, 4096);
        assert!(
            handed <= truth[20_000] && handed > truth[10_000],
            "{handed}"
        );
        assert_eq!(seen[..], truth[..seen.len()]);
    }

    #[test]
    fn payloads_that_look_like_headers_can_fool_a_guess_but_not_the_check() {
        // Every payload is itself a chain of fake 16-byte headers with 0-byte packets, so a guess
        // inside a payload finds 16 plausible headers: the guess is wrong, and only the
        // start-equals-previous-end check can notice.
        let lens = vec![17 * 40; 400];
        let b = body(&lens, |_, i| fake_header_byte(i));
        let g = guess_start(&b, 100, 100 + 4096, P).unwrap();
        let truth = 16 + 680;
        assert_ne!(
            g, truth,
            "the guess lands inside a payload (the hostile case)"
        );
    }
}
