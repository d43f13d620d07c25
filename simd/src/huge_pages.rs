//! Transparent huge pages for large arrays this crate allocates and fills itself (a retrieval
//! table's cells): a random read of a gigabyte-sized array with 4 KiB pages misses the TLB on
//! nearly every access and waits for a page walk as well as for the line; with 2 MiB pages a
//! gigabyte is 512 TLB entries. Linux only, and only where the kernel leaves the choice to the
//! program (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`); elsewhere nothing.

/// Arrays smaller than this keep their small pages (a few huge pages gain little).
pub(crate) const MIN_BYTES: usize = 32 << 20;

/// A zeroed vector of `len` words, asked to be backed by huge pages where it is large enough:
/// the memory comes zeroed from the allocator without being written (so no page is mapped
/// yet), and the advice is given before the caller's first write maps them.
pub(crate) fn zeroed_words(len: usize) -> Vec<u64> {
    let mut words = vec![0u64; len];
    advise(&mut words);
    words
}

/// Asks for huge pages behind the 2 MiB-aligned part of `words` (a table's cells before they
/// are written, or a filter's words, borrowed exclusively for an insert). Pages not yet written
/// (a new filter: the core allocates its storage zeroed without writing it) are mapped huge by
/// their first write; pages already mapped stay as they are until the kernel's background pass
/// merges them.
pub(crate) fn advise<T>(words: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = std::mem::size_of_val(words);
        if bytes < MIN_BYTES {
            return;
        }
        let start = words.as_mut_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let last = (start + bytes) & !(HUGE - 1);
        if last > first {
            // SAFETY: `[first, last)` lies inside `words`, memory this function borrows mutably
            // and that the allocator mapped for it; MADV_HUGEPAGE is advice about how to back
            // those pages and changes no byte of them. A refusal (an older kernel, huge pages
            // off) is ignored: the memory stays as it was.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = words;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_words_are_zero_and_writable() {
        for len in [0, 1, MIN_BYTES / 8 - 1, MIN_BYTES / 8 + 12_345] {
            let mut w = zeroed_words(len);
            assert_eq!(w.len(), len);
            assert!(w.iter().all(|&x| x == 0));
            if let Some(last) = w.last_mut() {
                *last = 7;
                assert_eq!(w[len - 1], 7);
            }
        }
    }
}
