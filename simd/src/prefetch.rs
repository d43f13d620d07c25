//! Software prefetches, decided once per call from the size of the memory a kernel probes at
//! random: none, into L1, or into L2.
//!
//! - Up to [`MIN_BYTES`] the memory lives in L2, where a prefetch costs more issue slots than
//!   the latency it hides: none.
//! - Up to [`L1_MAX_BYTES`] the lines come from L2, quickly: into L1 (`prefetcht0`).
//! - Beyond, the lines come from L3 or memory, a long trip: into L2 (`prefetcht1`). A prefetch
//!   into L1 holds one of L1's few miss buffers (about 24 on Zen 4) for the whole trip, so a
//!   kernel with more lines in flight than that (a group of 32 static keys prefetched at once;
//!   16 retrieval keys ahead, 4 lines each) stalls on them; a prefetch into L2 waits in L2's
//!   larger miss queue, and the later load finds its line one L2 hit away.
//!
//! Measured on the 2-core Zen 4 VM (BENCHMARKS.md, "Bursts of prefetches into L2"), one
//! thread, L2 against L1 as the target: static lookups and inserts at 64 MiB 1.3–2.7×,
//! prehashed keys 1.5–1.7× from 2 MiB on; with fresh keys every call, retrieval lookups
//! 1.7–2.6× on tables of 43 MB to 1 GB, spatial lookups of present keys 1.25–1.68× at 256 MiB,
//! inserts 1.02–1.16×. At 1 MiB L2 gave only −3 % to +9 %, so L1 stays the target up to there.
//! Repeating one batch of 64 Ki keys (the criterion benches' way, whose lines then sit in L3)
//! L1 was 1–8 % ahead at 16 MiB.

/// Memory up to this size is left to the hardware (it sits in L2).
pub(crate) const MIN_BYTES: usize = 512 << 10;

/// Memory up to this size (and over [`MIN_BYTES`]) is prefetched into L1; larger into L2.
pub(crate) const L1_MAX_BYTES: usize = 1 << 20;

/// Whether and where a kernel prefetches the lines it is about to touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefetch {
    /// No software prefetch.
    Off,
    /// `prefetcht0`: into L1.
    L1,
    /// `prefetcht1`: into L2.
    L2,
}

impl Prefetch {
    /// The prefetch for random accesses into `bytes` bytes of memory.
    pub(crate) fn for_bytes(bytes: u64) -> Prefetch {
        if bytes <= MIN_BYTES as u64 {
            Prefetch::Off
        } else if bytes <= L1_MAX_BYTES as u64 {
            Prefetch::L1
        } else {
            Prefetch::L2
        }
    }

    /// Whether any prefetch is issued.
    pub(crate) fn is_on(self) -> bool {
        self != Prefetch::Off
    }

    /// Prefetches the cache line that holds `p`.
    #[inline(always)]
    pub(crate) fn line<T>(self, p: *const T) {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
            let p = p.cast::<i8>();
            // SAFETY: a prefetch is a hint; it never faults, whatever the address, and needs
            // no more than SSE, which every x86_64 CPU has.
            unsafe {
                match self {
                    Prefetch::Off => {}
                    Prefetch::L1 => _mm_prefetch::<_MM_HINT_T0>(p),
                    Prefetch::L2 => _mm_prefetch::<_MM_HINT_T1>(p),
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// Prefetches every cache line of the `bytes` bytes from `p` (the address arithmetic wraps
    /// rather than assuming anything about `p`).
    #[inline(always)]
    pub(crate) fn bytes<T>(self, p: *const T, bytes: usize) {
        if self == Prefetch::Off {
            return;
        }
        let skew = (p as usize) & 63;
        let start = p.cast::<u8>().wrapping_sub(skew);
        let mut off = 0;
        while off < bytes + skew {
            self.line(start.wrapping_add(off));
            off += 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_follows_the_size() {
        let (min, l1) = (MIN_BYTES as u64, L1_MAX_BYTES as u64);
        assert_eq!(Prefetch::for_bytes(0), Prefetch::Off);
        assert_eq!(Prefetch::for_bytes(min), Prefetch::Off);
        assert_eq!(Prefetch::for_bytes(min + 1), Prefetch::L1);
        assert_eq!(Prefetch::for_bytes(l1), Prefetch::L1);
        assert_eq!(Prefetch::for_bytes(l1 + 1), Prefetch::L2);
        assert_eq!(Prefetch::for_bytes(u64::MAX), Prefetch::L2);
        assert!(!Prefetch::Off.is_on() && Prefetch::L1.is_on() && Prefetch::L2.is_on());
    }

    #[test]
    fn any_address_may_be_prefetched() {
        // Hints never fault: null, unaligned, past the end, wrapping around.
        let v = [0u8; 3];
        for pf in [Prefetch::Off, Prefetch::L1, Prefetch::L2] {
            pf.line(core::ptr::null::<u8>());
            pf.bytes(v.as_ptr().wrapping_add(1), 1 << 12);
            pf.bytes(usize::MAX as *const u8, 200);
        }
    }
}
