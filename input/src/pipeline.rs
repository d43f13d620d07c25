//! The streaming pipeline under every command: one reader thread cuts the input into chunks of
//! whole records, worker threads (one per core) turn each chunk into a result (keys parsed,
//! hashed, inserted or probed), and the calling thread consumes the results in input order.
//!
//! Memory is bounded: at most [`PipelineConfig::in_flight`] chunks exist at once (read, being
//! worked on, or waiting to be consumed in order), each of about [`PipelineConfig::chunk_bytes`]
//! bytes (a record longer than that grows its chunk, up to [`MAX_RECORD_BYTES`]). A chunk of a
//! memory-mapped file is a range of the map, released from the resident set once consumed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use memmap2::Mmap;

use crate::chunk::{Chunk, ChunkData, Cutter, MAX_RECORD_BYTES};
use crate::error::{Error, Location, Result};
use crate::source::{read_error, read_full, Body, Opened};

/// Sizes of the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineConfig {
    /// Worker threads (default: the cores available).
    pub threads: usize,
    /// Bytes per chunk (default 2 MiB; tests use a few bytes to cut records everywhere).
    pub chunk_bytes: usize,
    /// Chunks in existence at once (default: twice the workers plus two, at most 16).
    pub in_flight: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        PipelineConfig::with_threads(threads)
    }
}

impl PipelineConfig {
    /// The default sizes for `threads` workers.
    pub fn with_threads(threads: usize) -> PipelineConfig {
        let threads = threads.max(1);
        PipelineConfig {
            threads,
            chunk_bytes: 2 << 20,
            in_flight: (2 * threads + 2).min(16),
        }
    }

    /// These sizes with `bytes` per chunk (at least 1).
    pub fn chunk_bytes(mut self, bytes: usize) -> PipelineConfig {
        self.chunk_bytes = bytes.max(1);
        self
    }
}

/// What the reader found besides the records.
#[derive(Clone, Debug, Default)]
pub struct ReadEnd {
    /// Bytes read (decompressed), header included.
    pub bytes: u64,
    /// Warnings (a capture's truncated last record).
    pub warnings: Vec<String>,
}

enum Item<R, E> {
    Done(Chunk, R),
    Failed(u64, E),
}

/// Runs the pipeline over `input`, from byte `start` on (bytes before it, e.g. a capture's
/// file header, are skipped): `work` runs on the workers, `consume` on the calling thread in
/// input order. The first error (in input order) stops everything and is returned: the
/// reader's converted into the callers' error type `E`, theirs as they are.
pub fn run<R, S, E>(
    input: Opened,
    start: u64,
    mut cutter: Box<dyn Cutter>,
    cfg: &PipelineConfig,
    state: &(dyn Fn() -> S + Sync),
    work: &(dyn Fn(&Chunk, &mut S) -> Result<R, E> + Sync),
    consume: &mut dyn FnMut(&Chunk, R) -> Result<(), E>,
) -> Result<ReadEnd, E>
where
    R: Send,
    E: From<Error> + Send,
{
    let cancel = AtomicBool::new(false);
    let (work_tx, work_rx) = sync_channel::<Chunk>(cfg.in_flight);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = channel::<Item<R, E>>();
    // Tokens bound the chunks in existence; owned buffers travel back with them for reuse.
    let (free_tx, free_rx) = channel::<Vec<u8>>();
    for _ in 0..cfg.in_flight {
        let _ = free_tx.send(Vec::new());
    }
    let shown = input.shown.clone();
    std::thread::scope(|scope| {
        let reader_done = done_tx.clone();
        let cancel_r = &cancel;
        let reader = scope.spawn(move || {
            let r = read_chunks(
                input,
                start,
                &mut *cutter,
                cfg,
                &free_rx,
                &work_tx,
                cancel_r,
            );
            match r {
                Ok((end, seq)) => Ok((end, seq)),
                Err((seq, e)) => {
                    let _ = reader_done.send(Item::Failed(seq, E::from(e)));
                    Err(())
                }
            }
        });
        let mut workers = Vec::with_capacity(cfg.threads);
        for _ in 0..cfg.threads {
            let rx = Arc::clone(&work_rx);
            let tx = done_tx.clone();
            let cancel = &cancel;
            workers.push(scope.spawn(move || {
                let mut st = state();
                loop {
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok(chunk)) = next else { break };
                    if cancel.load(Ordering::Relaxed) {
                        continue;
                    }
                    let item = match work(&chunk, &mut st) {
                        Ok(r) => Item::Done(chunk, r),
                        Err(e) => Item::Failed(chunk.seq, e),
                    };
                    if tx.send(item).is_err() {
                        break;
                    }
                }
            }));
        }
        drop(work_rx);
        drop(done_tx);
        // Consume in order.
        let mut next = 0u64;
        let mut waiting: BTreeMap<u64, Item<R, E>> = BTreeMap::new();
        let mut result: Result<(), E> = Ok(());
        'outer: for item in done_rx.iter() {
            let seq = match &item {
                Item::Done(c, _) => c.seq,
                Item::Failed(s, _) => *s,
            };
            waiting.insert(seq, item);
            while let Some(item) = waiting.remove(&next) {
                match item {
                    Item::Done(chunk, r) => {
                        if let Err(e) = consume(&chunk, r) {
                            result = Err(e);
                            break 'outer;
                        }
                        release(chunk, &free_tx);
                    }
                    Item::Failed(_, e) => {
                        result = Err(e);
                        break 'outer;
                    }
                }
                next += 1;
            }
        }
        if result.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        drop(free_tx);
        // Drain so that the reader and workers can finish.
        drop(done_rx);
        let read = reader.join().unwrap_or(Err(()));
        // Joined, not left to the scope: the scope waits only for the closures, and a thread
        // still running its thread-local destructors when this returns looks like a leak to a
        // leak checker (and holds memory past the call). A worker's panic is passed on.
        for w in workers {
            if let Err(panic) = w.join() {
                std::panic::resume_unwind(panic);
            }
        }
        result?;
        match read {
            Ok((end, seq)) => {
                debug_assert_eq!(seq, next, "every chunk consumed");
                Ok(end)
            }
            // The reader's error was queued in order; reaching here means it was consumed.
            Err(()) => Err(Error::input(&shown, None, "input reader stopped").into()),
        }
    })
}

/// Gives a consumed chunk's buffer back (a mapped chunk's pages leave the resident set).
fn release(chunk: Chunk, free: &std::sync::mpsc::Sender<Vec<u8>>) {
    let buf = match chunk.data {
        ChunkData::Owned(mut v) => {
            if v.capacity() > 8 << 20 {
                v = Vec::new();
            }
            v
        }
        ChunkData::Mapped(map, range) => {
            drop_pages(&map, range);
            Vec::new()
        }
    };
    let _ = free.send(buf);
}

/// Drops the whole pages of `range` from this process's resident set.
pub(crate) fn drop_pages(map: &Mmap, range: std::ops::Range<usize>) {
    const PAGE: usize = 4096;
    let lo = range.start.div_ceil(PAGE) * PAGE;
    let hi = range.end / PAGE * PAGE;
    if hi > lo {
        // SAFETY: the map is a private read-only file mapping that is never written, so
        // discarding its pages loses nothing: a later read of them faults the file's bytes back
        // in. No reference into these pages outlives this call in a way that matters: the chunk
        // that covered them has been consumed, and any other chunk reading them would see the
        // same bytes again.
        let _ =
            unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, lo, hi - lo) };
    }
}

type ReadFail = (u64, Error);

/// The reader thread: cuts the input into chunks and queues them.
fn read_chunks(
    input: Opened,
    start: u64,
    cutter: &mut dyn Cutter,
    cfg: &PipelineConfig,
    free: &Receiver<Vec<u8>>,
    work: &SyncSender<Chunk>,
    cancel: &AtomicBool,
) -> std::result::Result<(ReadEnd, u64), ReadFail> {
    let shown = input.shown.clone();
    let mut end = ReadEnd::default();
    let mut seq = 0u64;
    let target = cfg.chunk_bytes;
    match input.body {
        Body::Mapped(map) => {
            let len = map.len();
            let mut pos = (start as usize).min(len);
            while pos < len {
                if cancel.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(_token) = free.recv() else { break };
                let mut want = target;
                let cut = loop {
                    let stop = (pos + want).min(len);
                    let eof = stop == len;
                    let window = &map[pos..stop];
                    let c = cutter.cut(window, pos as u64, eof).map_err(|e| (seq, e))?;
                    if c.len > 0 || eof || c.stop {
                        cutter.taken(window, c.len);
                        break c;
                    }
                    if want >= MAX_RECORD_BYTES {
                        let what = cutter.overlong(pos as u64);
                        return Err((
                            seq,
                            Error::input(&shown, Some(Location::Byte(pos as u64)), what),
                        ));
                    }
                    want = (want * 2).min(MAX_RECORD_BYTES);
                };
                if let Some(w) = cut.warning {
                    end.warnings.push(w);
                }
                if cut.len > 0 {
                    let chunk = Chunk {
                        seq,
                        offset: pos as u64,
                        data: ChunkData::Mapped(Arc::clone(&map), pos..pos + cut.len),
                        ng: cutter.ng_state(),
                    };
                    if work.send(chunk).is_err() {
                        break;
                    }
                    seq += 1;
                }
                pos += cut.len;
                if cut.stop || cut.len == 0 {
                    pos = len;
                }
            }
            end.bytes = len as u64;
        }
        Body::Stream(mut r) => {
            // Skip the header bytes.
            let mut skip = vec![0u8; start as usize];
            let got = read_full(&mut r, &mut skip).map_err(|e| (seq, read_error(&shown, e)))?;
            let mut offset = got as u64;
            let mut carry: Vec<u8> = Vec::new();
            let mut eof = got < skip.len();
            while !eof || !carry.is_empty() {
                if cancel.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(mut buf) = free.recv() else { break };
                buf.clear();
                buf.extend_from_slice(&carry);
                carry.clear();
                let mut want = target.max(buf.len() + target / 2);
                let cut = loop {
                    if !eof && buf.len() < want {
                        let old = buf.len();
                        buf.resize(want, 0);
                        let n = read_full(&mut r, &mut buf[old..])
                            .map_err(|e| (seq, read_error(&shown, e)))?;
                        buf.truncate(old + n);
                        eof = n < want - old;
                    }
                    let c = cutter.cut(&buf, offset, eof).map_err(|e| (seq, e))?;
                    if c.len > 0 || eof || c.stop {
                        cutter.taken(&buf, c.len);
                        break c;
                    }
                    if want >= MAX_RECORD_BYTES {
                        let what = cutter.overlong(offset);
                        return Err((
                            seq,
                            Error::input(&shown, Some(Location::Byte(offset)), what),
                        ));
                    }
                    want = (want * 2).min(MAX_RECORD_BYTES);
                };
                if let Some(w) = cut.warning {
                    end.warnings.push(w);
                }
                // A stop ignores the tail (counted as read); otherwise it starts the next chunk.
                let mut ignored = 0;
                if cut.stop {
                    ignored = (buf.len() - cut.len) as u64;
                    eof = true;
                } else {
                    carry.extend_from_slice(&buf[cut.len..]);
                }
                buf.truncate(cut.len);
                let len = buf.len() as u64;
                if len > 0 {
                    let chunk = Chunk {
                        seq,
                        offset,
                        data: ChunkData::Owned(buf),
                        ng: cutter.ng_state(),
                    };
                    if work.send(chunk).is_err() {
                        break;
                    }
                    seq += 1;
                }
                offset += len + ignored;
                if eof && !carry.is_empty() && cut.len == 0 {
                    break;
                }
            }
            end.bytes = offset + carry.len() as u64;
        }
    }
    Ok((end, seq))
}
