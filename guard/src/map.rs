//! [`GuardedMap`]: a read-only map that reports its file changing instead of dying of it.

use std::fmt;
use std::fs::File;
use std::io;

use memmap2::Mmap;

/// How a mapped file changed since it was mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changed {
    /// A read past the file's new end faulted (the file was truncated or replaced in place);
    /// the bytes read there were zeros.
    Faulted,
    /// Its length is no longer the length mapped.
    Resized {
        /// Bytes when mapped.
        was: u64,
        /// Bytes now.
        now: u64,
    },
    /// It was written to (its modification time moved).
    Modified,
}

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Changed::Faulted => write!(
                f,
                "the file was cut short while it was being read (a read past its new end \
                 faulted)"
            ),
            Changed::Resized { was, now } => write!(
                f,
                "the file changed size while it was being read ({was} bytes when opened, {now} \
                 now)"
            ),
            Changed::Modified => write!(f, "the file was written to while it was being read"),
        }
    }
}

impl std::error::Error for Changed {}

/// What identifies a file's contents at one moment: its length and modification time. Not its
/// change time: removing the file's name (a new file renamed over it) changes that too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: (i64, i64),
}

#[cfg(unix)]
fn stamp(file: &File) -> io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata()?;
    Ok(Stamp {
        len: m.len(),
        modified: (m.mtime(), m.mtime_nsec()),
    })
}

#[cfg(not(unix))]
fn stamp(file: &File) -> io::Result<Stamp> {
    Ok(Stamp {
        len: file.metadata()?.len(),
        modified: (0, 0),
    })
}

/// A whole file mapped read-only, with its file kept open (a [`read_lock`](crate::read_lock)
/// taken on it lasts as long as the map). A fault in the map is answered with zeros and
/// recorded (see the [crate docs](crate)); [`GuardedMap::check`] reports it, or a change of
/// the file's length or times since it was mapped.
#[derive(Debug)]
pub struct GuardedMap {
    /// Declared first: unmapped after its slot is freed (in `Drop`) and before the file closes.
    map: Mmap,
    file: File,
    slot: Option<usize>,
    at_open: Stamp,
}

impl GuardedMap {
    /// Maps `file` whole (keeping a duplicate of its descriptor, which shares its locks).
    /// Fails as `mmap` does (an empty file cannot be mapped), and with
    /// [`io::ErrorKind::OutOfMemory`] when too many maps are guarded already: the caller reads
    /// the file instead.
    pub fn new(file: &File) -> io::Result<GuardedMap> {
        let file = file.try_clone()?;
        let at_open = stamp(&file)?;
        // SAFETY: the map is read-only and private. Another process may truncate or rewrite
        // the file while it is mapped: a fault is then turned into zeros by the handler this
        // map registers with (before anything reads it), and reported by `check`, which
        // every caller runs before it trusts what it read.
        let map = unsafe { Mmap::map(&file) }?;
        #[cfg(unix)]
        let slot = if map.is_empty() {
            None
        } else {
            Some(
                crate::sigbus::register(map.as_ptr() as usize, map.len())
                    .ok_or(io::ErrorKind::OutOfMemory)?,
            )
        };
        #[cfg(not(unix))]
        let slot = None;
        Ok(GuardedMap {
            map,
            file,
            slot,
            at_open,
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The map itself (for `advise`).
    pub fn mmap(&self) -> &Mmap {
        &self.map
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// `Ok` while the file is as it was mapped: no fault was answered in the map, and its
    /// length and modification time are those it had. A file replaced by renaming
    /// another over its name is not changed: the map still holds the old one, whole.
    pub fn check(&self) -> Result<(), Changed> {
        #[cfg(unix)]
        if self.slot.is_some_and(crate::sigbus::damaged) {
            return Err(Changed::Faulted);
        }
        let Ok(now) = stamp(&self.file) else {
            return Ok(()); // an open file's metadata does not go away
        };
        if now.len != self.at_open.len {
            return Err(Changed::Resized {
                was: self.at_open.len,
                now: now.len,
            });
        }
        if now != self.at_open {
            return Err(Changed::Modified);
        }
        Ok(())
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(i) = self.slot {
            crate::sigbus::unregister(i);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_truncated_file_reads_zeros_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let map = GuardedMap::new(&File::open(&path).unwrap()).unwrap();
        assert_eq!(map.check(), Ok(()));
        assert_eq!(map.bytes()[500_000], 7);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(64)
            .unwrap();
        // Past the new end: a SIGBUS without the guard.
        let sum: u64 = map.bytes().iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 64 * 7);
        assert_eq!(map.check(), Err(Changed::Faulted));
        assert_eq!(map.bytes()[10], 7);
    }

    #[test]
    fn rewritten_files_are_reported_and_renamed_over_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [1u8; 4096]).unwrap();
        let map = GuardedMap::new(&File::open(&path).unwrap()).unwrap();
        let other = dir.path().join("g");
        std::fs::write(&other, [2u8; 100]).unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(map.check(), Ok(()));
        assert_eq!(map.bytes()[4095], 1);
        drop(map);
        let map = GuardedMap::new(&File::open(&path).unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut f = File::options().write(true).open(&path).unwrap();
        f.write_all(&[3]).unwrap();
        assert_eq!(map.check(), Err(Changed::Modified));
        f.write_all(&[3; 200]).unwrap();
        assert_eq!(map.check(), Err(Changed::Resized { was: 100, now: 201 }));
    }
}
