//! The first pass of a partitioned operation: hash a range of the batch and scatter the hashes
//! by partition (filter block range), in input order within each partition.
//!
//! One [`Scatter`] holds one producer's hashes. Each partition has a write-combining buffer of
//! one cache line (8 hashes); a full buffer is copied as one line into the partition's current
//! page (with non-temporal stores when the scratch is larger than half the L2, so the line is
//! written without being read first), and pages are chained per partition in the order
//! they were filled. The last, partial line of each partition stays in its buffer. Nothing needs
//! a histogram first: the batch is read and hashed once.

use bloomlanes_core::Keys;

use crate::Fns;

/// Hashes per cache line.
pub(crate) const LINE: usize = 8;

/// No page (the end of a chain).
const NONE: u32 = u32::MAX;

/// Keys hashed per call of the hashing kernel.
const HASH_STEP: usize = 256;

/// A buffer of whole cache lines of 8 hashes, each starting at a 64-byte boundary (so that a
/// line is written with full-line non-temporal stores).
pub(crate) struct Lines {
    buf: Vec<u64>,
    /// The index of the first word at a 64-byte boundary.
    base: usize,
}

impl Lines {
    /// `lines` zeroed lines. The memory comes from `vec![0; _]`, i.e. the allocator's zeroed
    /// pages, so lines never written are never touched.
    pub(crate) fn zeroed(lines: usize) -> Lines {
        let buf = vec![0u64; lines * LINE + LINE - 1];
        // `u64` is 8-aligned, so the address modulo 64 is a multiple of 8 and `base < LINE`.
        let base = (64 - buf.as_ptr() as usize % 64) % 64 / 8;
        Lines { buf, base }
    }

    /// How many lines the buffer holds.
    pub(crate) fn len(&self) -> usize {
        (self.buf.len() - self.base) / LINE
    }

    /// Makes room for at least `lines` lines (their contents are then unspecified): keeps the
    /// memory if it is large enough, else allocates zeroed lines anew.
    fn ensure(&mut self, lines: usize) {
        if self.len() < lines {
            *self = Lines::zeroed(lines);
        }
    }

    /// The bytes of memory held.
    fn bytes(&self) -> usize {
        self.buf.len() * 8
    }

    /// The `count` hashes from line `line` on.
    pub(crate) fn words(&self, line: usize, count: usize) -> &[u64] {
        let at = self.base + line * LINE;
        &self.buf[at..at + count]
    }
}

/// Writes `src` to `dst` with non-temporal stores (a whole line: no read for ownership) if
/// `dst` is 16-byte aligned (the lines of a [`Lines`] buffer are 64-byte aligned), else with
/// plain stores.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stream_line(dst: &mut [u64; LINE], src: &[u64; LINE]) {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    if !(dst.as_ptr() as usize).is_multiple_of(16) {
        *dst = *src;
        return;
    }
    let (d, s) = (
        dst.as_mut_ptr().cast::<__m128i>(),
        src.as_ptr().cast::<__m128i>(),
    );
    // SAFETY: SSE2 is baseline on x86_64. `src` is 64 readable bytes (unaligned loads), `dst`
    // 64 writable bytes, exclusively borrowed, at a 16-byte boundary (checked above) as
    // `_mm_stream_si128` needs. The stores are weakly ordered: `fence` runs before any other
    // thread reads them.
    unsafe {
        for i in 0..4 {
            _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i)));
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn stream_line(dst: &mut [u64; LINE], src: &[u64; LINE]) {
    *dst = *src;
}

/// Orders the non-temporal stores of [`stream_line`] before every later store of this thread
/// (their readers synchronise with a later store: the end of the task, seen by rayon).
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` needs SSE, baseline on x86_64; it only orders stores.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
}

/// The partition of a hash: its block `((hash >> 32) × blocks) >> 32` (the core's
/// `block_index`) shifted right by the partition's block bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PartOf {
    pub(crate) blocks: u64,
    /// `log2(blocks per partition)`, at most 32.
    pub(crate) bits: u32,
}

impl PartOf {
    #[inline(always)]
    pub(crate) fn of(self, hash: u64) -> usize {
        ((((hash >> 32) * self.blocks) >> 32) >> self.bits) as usize
    }
}

/// The page chains of the partitions, borrowed apart from the rest of a [`Scatter`].
struct Chains<'a> {
    head: &'a mut [u32],
    tail: &'a mut [u32],
    next: &'a mut [u32],
    used: &'a mut usize,
}

impl Chains<'_> {
    /// Chains a new page to partition `p`.
    ///
    /// # Panics
    /// If every page is taken (more keys than the scratch was made for).
    #[cold]
    #[inline(never)]
    fn new_page(&mut self, p: usize) {
        let page = *self.used;
        assert!(
            page < self.next.len(),
            "partition scratch overflow: more keys than the scratch was made for"
        );
        *self.used += 1;
        match self.tail[p] {
            NONE => self.head[p] = page as u32,
            t => self.next[t as usize] = page as u32,
        }
        self.next[page] = NONE;
        self.tail[p] = page as u32;
    }
}

/// The scatter loop of [`Scatter`], on borrowed slices (so that the compiler keeps their
/// addresses in registers): `wc` and `pages` start at their 64-byte boundaries.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn push<const IDS: bool>(
    part_of: PartOf,
    page_lines: usize,
    stream: bool,
    hashes: &[u64],
    ids: &mut [u16],
    counts: &mut [u32],
    wc: &mut [u64],
    chains: &mut Chains<'_>,
    pages: &mut [u64],
) {
    for (i, &h) in hashes.iter().enumerate() {
        let p = part_of.of(h);
        if IDS {
            ids[i] = p as u16;
        }
        let c = counts[p] as usize;
        counts[p] = c as u32 + 1;
        wc[p * LINE + c % LINE] = h;
        if c % LINE == LINE - 1 {
            // Line `c / 8` of the partition is full: to its slot in the current page, or the
            // first slot of a new one.
            let slot = (c / LINE) & (page_lines - 1);
            if slot == 0 {
                chains.new_page(p);
            }
            let to = (chains.tail[p] as usize * page_lines + slot) * LINE;
            let src: &[u64; LINE] = wc[p * LINE..p * LINE + LINE].try_into().expect("a line");
            let dst: &mut [u64; LINE] = (&mut pages[to..to + LINE]).try_into().expect("a line");
            if stream {
                stream_line(dst, src);
            } else {
                *dst = *src;
            }
        }
    }
}

/// One producer's hashes, scattered by partition.
pub(crate) struct Scatter {
    part_of: PartOf,
    /// Lines per page (a power of two).
    page_lines: usize,
    /// Non-temporal copies of full lines.
    stream: bool,
    /// Hashes of each partition so far.
    counts: Vec<u32>,
    /// One write-combining line per partition.
    wc: Lines,
    /// Each partition's first and last page, or `NONE`.
    head: Vec<u32>,
    tail: Vec<u32>,
    /// The next page of each page's partition, or `NONE` (as long as the pages can be).
    next: Vec<u32>,
    /// Pages handed out so far.
    used: usize,
    pages: Lines,
}

impl Scatter {
    /// Scratch for up to `keys` hashes in `parts` partitions.
    pub(crate) fn new(part_of: PartOf, parts: usize, keys: usize, stream: bool) -> Scatter {
        let mut s = Scatter {
            part_of,
            page_lines: 1,
            stream,
            counts: Vec::new(),
            wc: Lines::zeroed(0),
            head: Vec::new(),
            tail: Vec::new(),
            next: Vec::new(),
            used: 0,
            pages: Lines::zeroed(0),
        };
        s.prepare(part_of, parts, keys, stream);
        s
    }

    /// Makes the scratch ready for up to `keys` hashes in `parts` partitions, empty, keeping
    /// its memory where it is large enough (memory touched once need not be faulted in again).
    pub(crate) fn prepare(&mut self, part_of: PartOf, parts: usize, keys: usize, stream: bool) {
        // Pages about as large as a partition's share of the keys (1 … 64 lines), so that the
        // partly filled last page of each partition wastes at most about the keys' own size.
        let per_part_lines = keys / parts.max(1) / LINE;
        let page_lines = per_part_lines.next_power_of_two().clamp(1, 64);
        // Each partition fills `⌊c / 8⌋` lines in `⌈⌊c / 8⌋ / page_lines⌉` pages, at most
        // `keys / (8 page_lines) + parts` pages over all partitions.
        let max_pages = keys / (LINE * page_lines) + parts;
        self.part_of = part_of;
        self.page_lines = page_lines;
        self.stream = stream;
        self.counts.clear();
        self.counts.resize(parts, 0);
        self.head.clear();
        self.head.resize(parts, NONE);
        self.tail.clear();
        self.tail.resize(parts, NONE);
        self.next.clear();
        self.next.resize(max_pages, NONE);
        self.used = 0;
        self.wc.ensure(parts);
        self.pages.ensure(max_pages * page_lines);
    }

    /// Forgets the hashes (keeps the memory).
    pub(crate) fn clear(&mut self) {
        self.counts.fill(0);
        self.head.fill(NONE);
        self.tail.fill(NONE);
        self.used = 0;
    }

    /// The bytes of memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.wc.bytes()
            + self.pages.bytes()
            + self.next.capacity() * 4
            + self.counts.capacity() * 12
    }

    /// How many hashes partition `p` holds.
    pub(crate) fn count(&self, p: usize) -> usize {
        self.counts[p] as usize
    }

    /// Hashes every key of `keys` with `fns` and scatters the hashes; with `ids`, also writes
    /// each key's partition to `ids[i]` (`ids.len() == keys.len()`, at most 2^16 partitions).
    ///
    /// # Panics
    /// If there are more keys than the scratch was made for.
    pub(crate) fn push_keys(
        &mut self,
        fns: &Fns,
        keys: Keys<'_>,
        seed: u64,
        mut ids: Option<&mut [u16]>,
    ) {
        let mut buf = [0u64; HASH_STEP];
        let n = keys.len();
        let mut at = 0;
        while at < n {
            let m = (n - at).min(HASH_STEP);
            // SAFETY: `fns` is the table of an available path (the caller's `Probe`); hashing
            // reads only the keys and writes `buf[..m]`, `m` keys long.
            unsafe { (fns.hash)(keys.slice(at..at + m), seed, &mut buf[..m]) };
            match ids.as_deref_mut() {
                Some(ids) => self.push::<true>(&buf[..m], &mut ids[at..at + m]),
                None => self.push::<false>(&buf[..m], &mut []),
            }
            at += m;
        }
        if self.stream {
            fence();
        }
    }

    /// Scatters `hashes` (and, if `IDS`, writes their partitions to `ids`).
    #[inline(always)]
    fn push<const IDS: bool>(&mut self, hashes: &[u64], ids: &mut [u16]) {
        let wc_base = self.wc.base;
        let pages_base = self.pages.base;
        let mut chains = Chains {
            head: &mut self.head,
            tail: &mut self.tail,
            next: &mut self.next,
            used: &mut self.used,
        };
        push::<IDS>(
            self.part_of,
            self.page_lines,
            self.stream,
            hashes,
            ids,
            &mut self.counts,
            &mut self.wc.buf[wc_base..],
            &mut chains,
            &mut self.pages.buf[pages_base..],
        );
    }

    /// Calls `f` on the hashes of partition `p` in input order, a run of whole lines (one page or
    /// less) at a time, then the partial last line.
    pub(crate) fn for_each_run(&self, p: usize, mut f: impl FnMut(&[u64])) {
        let count = self.count(p);
        let mut lines = count / LINE;
        let mut page = self.head[p];
        while lines > 0 {
            let take = lines.min(self.page_lines);
            f(self
                .pages
                .words(page as usize * self.page_lines, take * LINE));
            lines -= take;
            page = self.next[page as usize];
        }
        let rest = count % LINE;
        if rest > 0 {
            f(self.wc.words(p, rest));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes of partition `p`, in input order.
    fn of_partition(hashes: &[u64], part_of: PartOf, p: usize) -> Vec<u64> {
        hashes
            .iter()
            .copied()
            .filter(|&h| part_of.of(h) == p)
            .collect()
    }

    fn gather(s: &Scatter, p: usize) -> Vec<u64> {
        let mut v = Vec::new();
        s.for_each_run(p, |run| v.extend_from_slice(run));
        v
    }

    #[test]
    fn lines_start_at_64_byte_boundaries() {
        for n in [1, 2, 7, 100] {
            let l = Lines::zeroed(n);
            assert_eq!(l.len(), n);
            assert_eq!(l.words(0, 8).as_ptr() as usize % 64, 0);
            assert_eq!(l.words(n - 1, 8).as_ptr() as usize % 64, 0);
        }
    }

    /// One scratch made ready again for other shapes (more and fewer partitions and keys,
    /// streamed or not) holds exactly each shape's hashes, nothing of the earlier ones.
    #[test]
    fn a_prepared_scratch_forgets_earlier_shapes() {
        let fns = crate::Probe::new(crate::SimdPath::Scalar).unwrap().fns;
        let blocks = 64u64;
        let mut s = Scatter::new(PartOf { blocks, bits: 0 }, 64, 5000, true);
        for (bits, keys, stream) in [
            (0, 5000, true),
            (3, 100, false),
            (1, 3001, true),
            (5, 7, false),
            (0, 4000, false),
        ] {
            let part_of = PartOf { blocks, bits };
            let parts = (blocks as usize).div_ceil(1 << bits);
            s.prepare(part_of, parts, keys, stream);
            let hashes: Vec<u64> = (0..keys as u64)
                .map(|i| (i + 1).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (bits as u64))
                .collect();
            s.push_keys(fns, Keys::Hashes(&hashes), 0, None);
            for p in 0..parts {
                let want = of_partition(&hashes, part_of, p);
                assert_eq!(gather(&s, p), want, "partition {p} of {parts}, {keys} keys");
            }
        }
    }

    #[test]
    fn every_partition_keeps_its_hashes_in_input_order() {
        let fns = crate::Probe::new(crate::SimdPath::Scalar).unwrap().fns;
        for (parts, keys, stream) in [
            (1, 0, false),
            (3, 1000, true),
            (16, 777, false),
            (5, 9, true),
        ] {
            let blocks = 40u64;
            let bits = (blocks as usize)
                .div_ceil(parts)
                .next_power_of_two()
                .trailing_zeros();
            let part_of = PartOf { blocks, bits };
            let parts = (blocks as usize).div_ceil(1 << bits);
            let hashes: Vec<u64> = (0..keys as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 7))
                .collect();
            let mut s = Scatter::new(part_of, parts, keys, stream);
            for round in 0..2 {
                s.clear();
                let mut ids = vec![0u16; keys];
                s.push_keys(fns, Keys::Hashes(&hashes), 0, Some(&mut ids));
                for p in 0..parts {
                    let want = of_partition(&hashes, part_of, p);
                    assert_eq!(gather(&s, p), want, "partition {p}, round {round}");
                    assert_eq!(s.count(p), want.len());
                }
                for (&h, &id) in hashes.iter().zip(&ids) {
                    assert_eq!(id as usize, part_of.of(h));
                }
            }
        }
    }
}
