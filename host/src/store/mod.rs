//! Filter files on disk: memory-mapped for reading (other files read with a bound), written
//! through [`outfile`] so that a crash never leaves a half-written filter or a temporary file.
//!
//! Files shared between processes: a writer holds the file's write lock for its whole
//! read-modify-write ([`lock::lock_output`]; [`outfile::AtomicFile`] takes it for every output),
//! a reader a shared lock on the file it reads ([`lock::read_lock`]). A mapped file that another
//! program truncates or rewrites in place is reported ([`FilterFile::check_unchanged`],
//! [`Error::Changed`]), never a `SIGBUS` death. Memory: a filter of any kind is written from its
//! arrays ([`write_any`]) and read into them ([`load_any`]), never held twice.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// How much of a filter file [`FilterFile::open_with`] checks (the core's [`format::Verify`]).
pub use bloomlanes_core::format::Verify;
use bloomlanes_core::format::{self, HEADER_LEN};
use bloomlanes_core::{AnyFilter, Filter, FilterRef, Header, Key, Params, Stats};
use bloomlanes_guard::GuardedMap;

use crate::error::{Error, Result};
use crate::outfile;

pub mod lock;
mod read;
mod write;

pub use write::write_any;

enum Data {
    /// The file mapped into memory; the payload is viewed in place.
    Mapped(GuardedMap),
    /// A copy (the payload could not be viewed as aligned native words).
    Owned(Filter),
}

/// A filter file opened for reading: checked (magic, version, checksums, lengths) and, where the
/// platform allows, used straight from a read-only memory map without copying.
pub struct FilterFile {
    path: PathBuf,
    header: Header,
    data: Data,
    /// Whether the payload checksum was checked.
    payload_verified: bool,
}

impl std::fmt::Debug for FilterFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterFile")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

fn corrupt(path: &Path, source: format::FormatError) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        source,
    }
}

fn changed(path: &Path, what: bloomlanes_guard::Changed) -> Error {
    Error::Changed {
        path: path.to_path_buf(),
        what,
    }
}

/// Refuses what cannot hold a filter file: folders, character devices (`/dev/zero` would be
/// read forever), sockets. Regular files, pipes and block devices may.
fn check_readable_kind(path: &Path, t: &std::fs::FileType) -> Result<()> {
    let what = if t.is_dir() {
        "a directory"
    } else {
        match special_kind(t) {
            Some(what) => what,
            None => return Ok(()),
        }
    };
    Err(Error::input(
        path,
        None,
        format!("is {what}, not a filter file"),
    ))
}

#[cfg(unix)]
fn special_kind(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_char_device() {
        Some("a character device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> Option<&'static str> {
    None
}

/// Refuses a file of another kind than static (counting, window, scalable).
fn check_static(path: &Path, header: &Header) -> Result<()> {
    if header.params.kind != bloomlanes_core::FilterKind::Static {
        let e = format::FormatError::WrongKind {
            expected: "static",
            found: header.params.kind.name(),
        };
        return Err(corrupt(path, e));
    }
    Ok(())
}

/// Reads a filter file from a stream, never more than its header says the file holds plus one
/// byte (so that trailing bytes are still reported): an endless stream (a pipe fed forever) ends
/// with an error once the header is read or its bound is passed, and memory grows only with the
/// bytes that actually arrive.
pub fn read_bounded(path: &Path, mut stream: impl Read) -> Result<Vec<u8>> {
    let err = |e| Error::io(path, "read", e);
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    (&mut stream)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() < HEADER_LEN {
        return Ok(bytes); // the parser names the truncation
    }
    let needed = match format::parse_with(&bytes, Verify::HeaderOnly) {
        Err(format::FormatError::Truncated { needed, .. }) => needed,
        Err(e) => return Err(corrupt(path, e)),
        Ok(_) => HEADER_LEN as u64,
    };
    stream
        .take(needed - HEADER_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    Ok(bytes)
}

impl FilterFile {
    /// Opens and checks the filter file at `path`, its payload checksum included (reading every
    /// page of the file once: see [`FilterFile::open_with`]).
    pub fn open(path: &Path) -> Result<FilterFile> {
        FilterFile::open_with(path, Verify::Full)
    }

    /// Opens and checks the filter file at `path`; with [`Verify::HeaderOnly`], everything but
    /// the payload checksum (the header, its checksum, the lengths), so that opening a
    /// multi-gigabyte file reads one page instead of all of them, and bits damaged on disk go
    /// unnoticed. [`FilterFile::payload_verified`] tells which was done.
    ///
    /// A regular file is memory-mapped, under a shared lock ([`lock::read_lock`]) held while
    /// it is open; another program that truncates or rewrites it meanwhile is reported by
    /// [`FilterFile::check_unchanged`]. A pipe (FIFO, `<(…)`) or block device is read, but
    /// never more than its header says a filter holds plus one byte; a folder, character device
    /// (`/dev/zero`) or socket is refused.
    pub fn open_with(path: &Path, verify: Verify) -> Result<FilterFile> {
        // Decided before opening: opening a device may have effects of its own.
        if let Ok(m) = std::fs::metadata(path) {
            check_readable_kind(path, &m.file_type())?;
        }
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, "read", e))?;
        check_readable_kind(path, &meta.file_type())?;
        if !meta.is_file() || meta.len() < HEADER_LEN as u64 {
            // A stream, or too short to map usefully (an empty file cannot be mapped): read it
            // with a bound, so that the error names the truncation or fault.
            let bytes = read_bounded(path, &file)?;
            return FilterFile::from_bytes(path, &bytes, verify);
        }
        lock::read_lock(&file, path)?;
        let map = match GuardedMap::new(&file) {
            Ok(m) => m,
            // Too many maps guarded at once: this one is read instead.
            Err(e) if e.kind() == io::ErrorKind::OutOfMemory => {
                let bytes = read_bounded(path, &file)?;
                return FilterFile::from_bytes(path, &bytes, verify);
            }
            Err(e) => return Err(Error::io(path, "map", e)),
        };
        // The checksum reads the file front to back: ask for read-ahead while it runs.
        #[cfg(unix)]
        if verify == Verify::Full {
            let _ = map.mmap().advise(memmap2::Advice::Sequential);
        }
        let parsed = format::parse_with(map.bytes(), verify);
        map.check().map_err(|what| changed(path, what))?;
        let header = parsed.map_err(|e| corrupt(path, e))?.0;
        #[cfg(unix)]
        if verify == Verify::Full {
            let _ = map.mmap().advise(memmap2::Advice::Normal);
        }
        check_static(path, &header)?;
        let aligned = cfg!(target_endian = "little")
            && bytemuck::try_cast_slice::<u8, u32>(&map.bytes()[HEADER_LEN..]).is_ok();
        let data = if aligned {
            Data::Mapped(map)
        } else {
            let f = Filter::from_image(&map.bytes()[HEADER_LEN..], header)
                .map_err(|e| corrupt(path, e))?;
            map.check().map_err(|what| changed(path, what))?;
            Data::Owned(f)
        };
        Ok(FilterFile {
            path: path.to_path_buf(),
            header,
            data,
            payload_verified: verify == Verify::Full,
        })
    }

    /// A filter file read into memory (`bytes`: the whole file).
    fn from_bytes(path: &Path, bytes: &[u8], verify: Verify) -> Result<FilterFile> {
        let (header, payload) = format::parse_with(bytes, verify).map_err(|e| corrupt(path, e))?;
        check_static(path, &header)?;
        let f = Filter::from_image(payload, header).map_err(|e| corrupt(path, e))?;
        Ok(FilterFile {
            path: path.to_path_buf(),
            header,
            data: Data::Owned(f),
            payload_verified: verify == Verify::Full,
        })
    }

    /// `Ok` while the mapped file is as it was opened; [`Error::Changed`] once another program
    /// has cut it short (a read past its end then faulted and read zeros) or written to it.
    /// Callers check after computing answers from the file and before they use them.
    pub fn check_unchanged(&self) -> Result<()> {
        match &self.data {
            Data::Mapped(map) => map.check().map_err(|what| changed(&self.path, what)),
            Data::Owned(_) => Ok(()),
        }
    }

    /// Whether the payload checksum was checked when the file was opened ([`Verify::Full`]).
    pub fn payload_verified(&self) -> bool {
        self.payload_verified
    }

    /// Tells the system that `keys` lookups follow, so that a memory-mapped file not yet in the
    /// page cache is read as they need it. Few lookups into a large file (fewer than one per 8
    /// pages) touch pages at random: read-ahead (megabytes per page fault) would read far more
    /// than they need, so it is turned off (`MADV_RANDOM`). A hint only; answers never change.
    pub fn advise_lookups(&self, keys: usize) {
        #[cfg(unix)]
        if let Data::Mapped(map) = &self.data {
            const PAGE: u64 = 4096;
            if (keys as u64).saturating_mul(8) < map.bytes().len() as u64 / PAGE {
                let _ = map.mmap().advise(memmap2::Advice::Random);
            }
        }
        #[cfg(not(unix))]
        let _ = keys;
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header: the filter's [`Params`] and recorded key count.
    pub fn header(&self) -> Header {
        self.header
    }

    /// The filter's parameters (layout, blocks, seed, hash).
    pub fn params(&self) -> &Params {
        &self.header.params
    }

    /// Whether the bits are used in place from a memory map (no copy was made).
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, Data::Mapped(_))
    }

    /// The bits as the byte image's 32-bit little-endian words.
    pub fn words(&self) -> &[u32] {
        match &self.data {
            Data::Mapped(m) => bytemuck::cast_slice(&m.bytes()[HEADER_LEN..]),
            Data::Owned(f) => f.words(),
        }
    }

    /// A borrowed view for the backends.
    pub fn view(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.header.params, self.words()).expect("a checked file has whole blocks")
    }

    /// An owned copy of the filter (for merging or modifying).
    pub fn to_filter(&self) -> Filter {
        match &self.data {
            Data::Owned(f) => f.clone(),
            Data::Mapped(m) => Filter::from_image(&m.bytes()[HEADER_LEN..], self.header)
                .expect("a checked file has the payload its header describes"),
        }
    }

    /// Whether a key may be present: a string, byte string or number (see [`Key`]).
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.view().contains(key)
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.view().count_ones()
    }

    /// The filter's statistics (the core's formulas, see [`Stats`]).
    pub fn stats(&self) -> Stats {
        let view = self.view();
        Stats::new(self.header.params, self.header.keys, view.count_ones())
            .with_fpr_from_bits(view.fpr_from_bits())
    }
}

/// Writes an output: `write` fills it (buffered) and it appears at `path` only once complete
/// and on disk, replacing any file there in one step; on any failure, or if the process is
/// killed, the old file (or no file) stays as it was and nothing is left behind. `path` may be
/// `-` for standard output, or a symbolic link (the file it names is replaced); a folder, FIFO
/// or device is refused. See [`outfile`] for the details.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    if outfile::Destination::of(path)? == outfile::Destination::Stdout {
        return outfile::write_stdout(write);
    }
    let mut file = outfile::AtomicFile::create(path)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 20, &mut file);
        write(&mut w).map_err(|e| Error::io(path, "write", e))?;
        w.flush().map_err(|e| Error::io(path, "write", e))?;
    }
    file.commit()
}

/// Writes `bytes` to `path` as [`write_atomic_with`] does.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Saves `filter` to `path` in the bloomlanes file format, as [`write_atomic_with`] does
/// (under the file's write lock; written from the filter's words, without a copy).
pub fn save_filter(path: &Path, filter: &Filter) -> Result<()> {
    write_atomic_with(path, |w| write::write_file(w, filter))
}

/// Loads a whole filter file of any kind (static, counting, stable, window, scalable) into
/// memory, fully checked (checksums included). A regular file is read under a shared lock
/// straight into the filter's arrays (memory: the filter, not the file twice);
/// a pipe or block device is read with the bound of [`read_bounded`]; a folder, character
/// device or socket is refused.
pub fn load_any(path: &Path) -> Result<AnyFilter> {
    if let Ok(m) = std::fs::metadata(path) {
        check_readable_kind(path, &m.file_type())?;
    }
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, "read", e))?;
    check_readable_kind(path, &meta.file_type())?;
    if meta.is_file() && meta.len() >= HEADER_LEN as u64 {
        lock::read_lock(&file, path)?;
        return read::load_regular(path, &file);
    }
    let bytes = read_bounded(path, &file)?;
    AnyFilter::from_file_bytes(&bytes).map_err(|e| corrupt(path, e))
}

/// Saves a filter of any kind to `path` in the bloomlanes file format, as
/// [`write_atomic_with`] does (complete or absent, never half-written; under the file's write
/// lock; written from the filter's arrays, without a copy: see [`write_any`]).
pub fn save_any(path: &Path, filter: &AnyFilter) -> Result<()> {
    write_atomic_with(path, |w| write_any(w, filter))
}

/// Whether `e` is the refusal of [`FilterFile::open`] to open a filter of another kind than
/// static (open it with [`load_any`] instead).
pub fn is_other_kind(e: &Error) -> bool {
    matches!(
        e,
        Error::Format {
            source: format::FormatError::WrongKind {
                expected: "static",
                ..
            },
            ..
        }
    )
}

/// Loads a whole filter into memory (for merging).
pub fn load_filter(path: &Path) -> Result<Filter> {
    Ok(FilterFile::open(path)?.to_filter())
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use bloomlanes_core::{FormatError, Layout, Params};

    use super::*;

    #[test]
    fn saved_filters_open_mapped_and_answer_alike() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        let mut f = Filter::new(Params::new(Layout::L16x32, 50).with_seed(3));
        for k in ["a", "b", "c"] {
            f.insert(k);
        }
        save_filter(&path, &f).unwrap();
        let file = FilterFile::open(&path).unwrap();
        assert!(file.is_mapped());
        assert_eq!(*file.params(), *f.params());
        assert!(["a", "b", "c"].iter().all(|k| file.contains(k)));
        // A hint only: the answers stay.
        file.advise_lookups(1);
        file.advise_lookups(usize::MAX);
        assert!(["a", "b", "c"].iter().all(|k| file.contains(k)));
        assert_eq!(file.stats(), f.stats());
        assert_eq!(file.to_filter(), f);
        assert_eq!(load_filter(&path).unwrap(), f);
    }

    #[test]
    fn skipping_the_payload_check_opens_damaged_bits_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        let mut f = Filter::new(Params::new(Layout::L8x32, 64));
        f.insert("a");
        let mut bytes = f.to_file_bytes();
        let full = {
            std::fs::write(&path, &bytes).unwrap();
            FilterFile::open(&path).unwrap()
        };
        assert!(full.payload_verified());
        bytes[HEADER_LEN + 5] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        assert!(FilterFile::open(&path).is_err());
        let quick = FilterFile::open_with(&path, Verify::HeaderOnly).unwrap();
        assert!(quick.is_mapped() && !quick.payload_verified());
        assert_eq!(quick.count_ones(), f.count_ones() + 1);
        // The header is still checked.
        bytes[20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(FilterFile::open_with(&path, Verify::HeaderOnly).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn character_devices_are_refused_and_pipes_read_with_a_bound() {
        let e = FilterFile::open(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = crate::outfile::tests::make_fifo(dir.path());
        let mut f = Filter::new(Params::new(Layout::L16x32, 9).with_seed(4));
        f.insert("x");
        let good = f.to_file_bytes();
        let feed = |bytes: Vec<u8>, forever: bool| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                let _ = w.write_all(&bytes);
                // An endless stream: the reader must stop on its own (then this write fails).
                while forever && w.write_all(&[0; 4096]).is_ok() {}
            })
        };
        // A whole filter through a pipe.
        let writer = feed(good.clone(), false);
        let read = FilterFile::open(&fifo).unwrap();
        writer.join().unwrap();
        assert!(!read.is_mapped() && read.contains("x"));
        assert_eq!(read.to_filter(), f);
        // A filter followed by an endless stream: at most one byte past it is read.
        let writer = feed(good.clone(), true);
        let e = FilterFile::open(&fifo).unwrap_err();
        writer.join().unwrap();
        assert!(
            matches!(
                e,
                Error::Format {
                    source: format::FormatError::TrailingBytes(1),
                    ..
                }
            ),
            "{e}"
        );
        // Endless zeros: refused on the header.
        let writer = feed(Vec::new(), true);
        let e = FilterFile::open(&fifo).unwrap_err();
        writer.join().unwrap();
        assert!(e.to_string().contains("magic"), "{e}");
        // The bound alone, on an in-memory endless stream.
        let mut endless = std::io::Cursor::new(good.clone()).chain(std::io::repeat(1));
        let bytes = read_bounded(Path::new("s"), &mut endless).unwrap();
        assert_eq!(bytes.len(), good.len() + 1);
    }

    #[test]
    fn damaged_files_are_format_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        let mut bytes = Filter::new(Params::new(Layout::L8x32, 4)).to_file_bytes();
        bytes[100] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = FilterFile::open(&path).unwrap_err();
        assert!(e.to_string().contains("f.blf"), "{e}");
        assert_eq!(
            e.source().and_then(|s| s.downcast_ref::<FormatError>()),
            Some(&FormatError::PayloadChecksum)
        );
        std::fs::write(&path, &bytes[..10]).unwrap();
        assert!(matches!(
            FilterFile::open(&path),
            Err(Error::Format {
                source: FormatError::Truncated { .. },
                ..
            })
        ));
    }
}
