//! Software prefetches, decided once per call from the size of the memory a kernel probes at
//! random and from how the kernel issues them: none, into L1, or into L2.
//!
//! - Up to [`MIN_BYTES`] the memory lives in L2, where a prefetch costs more issue slots than
//!   the latency it hides: none.
//! - A kernel that prefetches a steady stream, one key at a time a fixed number of keys ahead
//!   (the cell kinds, retrieval tables, window and scalable filters), prefetches into L1
//!   (`prefetcht0`): its few lines in flight fit L1's miss buffers, and the later load hits L1.
//! - A kernel that prefetches in bursts, a whole group of keys at once (the static bulk path's
//!   32), prefetches into L1 up to [`BURST_L1_MAX_BYTES`], where the lines come from L2 quickly,
//!   and into L2 (`prefetcht1`) beyond, where they come from L3 or memory: a burst into L1 holds
//!   all of L1's miss buffers (about 24 on Zen 4) for the whole trip and the loop stalls on
//!   them, while a burst into L2 waits in L2's larger miss queue, and the later load finds its
//!   line one L2 hit away.
//!
//! Measured on the 2-core Zen 4 VM (BENCHMARKS.md, "Bursts of prefetches into L2"), one
//! thread, L2 against L1 as the bursts' target: static lookups and inserts at 64 MiB 1.3–2.7×
//! (8x32 to 16x64); prehashed keys 1.5–1.7× from 2 MiB on; at 1 MiB only −3 % to +9 %, so
//! bursts keep L1 up to there. The streamed kernels lost 1–8 % with L2 as their target
//! (spatial lookups and inserts at 16 MiB, retrieval lookups at 10 M keys), so they keep L1.

/// Memory up to this size is left to the hardware (it sits in L2).
pub(crate) const MIN_BYTES: usize = 512 << 10;

/// Memory up to this size (and over [`MIN_BYTES`]) is prefetched in bursts into L1; larger
/// into L2.
pub(crate) const BURST_L1_MAX_BYTES: usize = 1 << 20;

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
    /// The prefetch of a kernel that streams one key at a time into `bytes` bytes of memory.
    pub(crate) fn streamed(bytes: u64) -> Prefetch {
        if bytes <= MIN_BYTES as u64 {
            Prefetch::Off
        } else {
            Prefetch::L1
        }
    }

    /// The prefetch of a kernel that prefetches a group of keys at once into `bytes` bytes of
    /// memory.
    pub(crate) fn burst(bytes: u64) -> Prefetch {
        match Prefetch::streamed(bytes) {
            Prefetch::L1 if bytes > BURST_L1_MAX_BYTES as u64 => Prefetch::L2,
            pf => pf,
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
    fn the_target_follows_the_size_and_the_kernel() {
        let (min, l1) = (MIN_BYTES as u64, BURST_L1_MAX_BYTES as u64);
        for pf in [Prefetch::streamed, Prefetch::burst] {
            assert_eq!(pf(0), Prefetch::Off);
            assert_eq!(pf(min), Prefetch::Off);
            assert_eq!(pf(min + 1), Prefetch::L1);
            assert_eq!(pf(l1), Prefetch::L1);
        }
        assert_eq!(Prefetch::streamed(l1 + 1), Prefetch::L1);
        assert_eq!(Prefetch::burst(l1 + 1), Prefetch::L2);
        assert_eq!(Prefetch::burst(u64::MAX), Prefetch::L2);
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
