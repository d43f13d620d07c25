//! Where a Python filter's bits live: an owning [`Filter`], or a `.blf` file memory-mapped
//! read-only (copied into an owning filter on the first change).
//!
//! Files shared with other processes follow the CLI's rules (`bloomlanes_guard`): `save` holds
//! the file's write lock (`FILE.lock`) while it writes and renames, `load` a shared lock on the
//! file for as long as it is mapped, and a mapped file that another program cuts short or
//! rewrites in place is reported ([`Storage::check`]: `FileChangedError`) before anything read
//! from it is returned, never a `SIGBUS` death. Every allocation the size of a filter is
//! fallible: a refusal is a `MemoryError`, never an abort.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bloomlanes_core::format::{self, Header, Verify, HEADER_LEN};
use bloomlanes_core::{Filter, FilterKind, FilterRef, FormatError, Params};
use bloomlanes_guard::{Busy, GuardedMap, LockError, Wait, WriteLock};

use crate::errors::Error;

/// What a lock wait calls between tries: gives up (with the error) on a pending interrupt.
pub(crate) type Waiting<'a> = &'a mut dyn FnMut(&Busy) -> io::Result<()>;

/// The bits of a filter.
pub(crate) enum Storage {
    /// In memory, ours.
    Owned(Filter),
    /// A memory-mapped file, read-only; the payload starts at byte 64 (page-aligned map, so the
    /// words are 64-byte aligned).
    Mapped {
        map: GuardedMap,
        header: Header,
        path: PathBuf,
    },
}

/// The words of a mapped file's payload, if the host can read them in place (little-endian,
/// aligned).
fn mapped_words(map: &GuardedMap) -> Option<&[u32]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    bytemuck::try_cast_slice(&map.bytes()[HEADER_LEN..]).ok()
}

/// An empty filter with `params`, or a `MemoryError` when its bits cannot be allocated.
pub(crate) fn try_filter(params: Params) -> Result<Filter, Error> {
    Filter::try_new(params).ok_or_else(|| {
        Error::Memory(format!(
            "a filter of {} bytes ({} blocks of layout {}): more memory than can be allocated",
            params.byte_len(),
            params.blocks,
            params.layout
        ))
    })
}

/// A filter from a byte image and its header, allocated fallibly ([`try_filter`]).
fn try_from_image(image: &[u8], header: Header) -> Result<Filter, Error> {
    let expected = header.payload_len();
    if image.len() as u64 != expected {
        return Err(FormatError::PayloadLength {
            expected,
            found: image.len() as u64,
        }
        .into());
    }
    let mut f = try_filter(header.params)?;
    f.set_key_count(header.keys);
    for (w, b) in f.words_mut().iter_mut().zip(image.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(f)
}

/// A copy of `f`, allocated fallibly.
fn try_copy(f: &Filter) -> Result<Filter, Error> {
    let mut out = try_filter(*f.params())?;
    out.words_mut().copy_from_slice(f.words());
    out.set_key_count(f.key_count());
    Ok(out)
}

/// A static filter from the bytes of a whole `.blf` file, fully checked.
pub(crate) fn filter_from_file_bytes(bytes: &[u8]) -> Result<Filter, Error> {
    let (header, payload) = format::parse(bytes)?;
    check_static(&header)?;
    try_from_image(payload, header)
}

/// Writes `chunks` to `path` through a temporary file in the same folder, synced, then renamed
/// over `path` once complete and `check` passes (else removed): readers see the old file or the
/// new one, never a part. The caller holds `path`'s write lock.
pub(crate) fn write_replacing(
    path: &Path,
    chunks: &[&[u8]],
    check: impl FnOnce() -> Result<(), Error>,
) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Io(e, path.display().to_string());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let write = || -> Result<(), Error> {
        let mut f = std::io::BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        for chunk in chunks {
            f.write_all(chunk).map_err(io)?;
        }
        f.into_inner()
            .map_err(|e| io(e.into_error()))?
            .sync_all()
            .map_err(io)?;
        check()?;
        std::fs::rename(&tmp, path).map_err(io)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Opens `path` under a shared lock (held while the file stays open); returns it and its
/// length.
pub(crate) fn open_shared(
    path: &Path,
    wait: Wait,
    waiting: Waiting<'_>,
) -> Result<(File, u64), Error> {
    let io = |e: std::io::Error| Error::Io(e, path.display().to_string());
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    // A folder opens for reading on Linux, then fails to map with ENODEV ("No such device").
    if meta.is_dir() {
        return Err(io(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory, not a filter file",
        )));
    }
    bloomlanes_guard::read_lock(&file, path, wait, waiting).map_err(lock_error)?;
    let len = file.metadata().map_err(io)?.len();
    Ok((file, len))
}

/// The bytes of `path` (`len` of them expected); a refused allocation is a `MemoryError`.
pub(crate) fn read_whole(path: &Path, len: u64) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| match e.kind() {
        io::ErrorKind::OutOfMemory => Error::Memory(format!(
            "{}: {len} bytes: more memory than can be allocated to read it",
            path.display()
        )),
        _ => Error::Io(e, path.display().to_string()),
    })
}

/// The error of a lock not taken on `path`.
pub(crate) fn lock_error(e: LockError) -> Error {
    match e {
        LockError::Busy(busy) => Error::Busy(format!(
            "{busy}; not waiting for it (wait=False): try again once it is done"
        )),
        LockError::Io { path, source, .. } => Error::Io(source, path.display().to_string()),
    }
}

impl Storage {
    /// The filter's parameters.
    pub(crate) fn params(&self) -> Params {
        match self {
            Storage::Owned(f) => *f.params(),
            Storage::Mapped { header, .. } => header.params,
        }
    }

    /// The recorded key count.
    pub(crate) fn key_count(&self) -> Option<u64> {
        match self {
            Storage::Owned(f) => f.key_count(),
            Storage::Mapped { header, .. } => header.keys,
        }
    }

    /// The path of a mapped file.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Storage::Owned(_) => None,
            Storage::Mapped { path, .. } => Some(path),
        }
    }

    /// A read-only view of the words. What is read from a mapped file's view is used only
    /// after [`Storage::check`] says the file is whole.
    pub(crate) fn view(&self) -> FilterRef<'_, u32> {
        match self {
            Storage::Owned(f) => f.as_view(),
            Storage::Mapped { map, header, .. } => {
                let words = mapped_words(map).expect("checked when the file was mapped");
                FilterRef::new(header.params, words).expect("checked when the file was mapped")
            }
        }
    }

    /// `Ok` unless this is a mapped file that changed since it was mapped (cut short: a read
    /// past its new end read zeros; or written to): `FileChangedError` naming it.
    pub(crate) fn check(&self) -> Result<(), Error> {
        match self {
            Storage::Owned(_) => Ok(()),
            Storage::Mapped { map, path, .. } => map.check().map_err(|what| changed(path, what)),
        }
    }

    /// The owning filter, copying a mapped file into memory first.
    pub(crate) fn owned_mut(&mut self) -> Result<&mut Filter, Error> {
        if let Storage::Mapped { map, header, .. } = self {
            let filter = try_from_image(&map.bytes()[HEADER_LEN..], *header)?;
            self.check()?;
            *self = Storage::Owned(filter);
        }
        match self {
            Storage::Owned(f) => Ok(f),
            Storage::Mapped { .. } => unreachable!("just replaced"),
        }
    }

    /// A copy in memory.
    pub(crate) fn to_owned_filter(&self) -> Result<Filter, Error> {
        let f = match self {
            Storage::Owned(f) => try_copy(f)?,
            Storage::Mapped { map, header, .. } => {
                try_from_image(&map.bytes()[HEADER_LEN..], *header)?
            }
        };
        self.check()?;
        Ok(f)
    }

    /// The payload as little-endian bytes (borrowed on little-endian hosts).
    fn payload(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Storage::Mapped { map, .. } => std::borrow::Cow::Borrowed(&map.bytes()[HEADER_LEN..]),
            Storage::Owned(f) if cfg!(target_endian = "little") => {
                std::borrow::Cow::Borrowed(bytemuck::cast_slice(f.words()))
            }
            Storage::Owned(f) => std::borrow::Cow::Owned(f.to_image()),
        }
    }

    /// The file header (format version 2) for the current bits.
    fn header_bytes(&self, payload: &[u8]) -> [u8; HEADER_LEN] {
        Header::new(self.params(), self.key_count()).encode(payload)
    }

    /// The whole `.blf` file, as the CLI writes it.
    pub(crate) fn file_bytes_into(&self, out: &mut [u8]) -> Result<(), Error> {
        let payload = self.payload();
        out[..HEADER_LEN].copy_from_slice(&self.header_bytes(&payload));
        out[HEADER_LEN..].copy_from_slice(&payload);
        self.check()
    }

    /// Length of the whole file.
    pub(crate) fn file_len(&self) -> usize {
        HEADER_LEN + self.params().byte_len() as usize
    }

    /// Writes the `.blf` file to `path` as [`Storage::write_file`] does, holding `path`'s write
    /// lock meanwhile.
    pub(crate) fn save(&self, path: &Path, wait: Wait, waiting: Waiting<'_>) -> Result<(), Error> {
        let _lock = WriteLock::acquire(path, wait, waiting).map_err(lock_error)?;
        self.write_file(path)
    }

    /// Writes the `.blf` file to `path` ([`write_replacing`]); the caller holds `path`'s write
    /// lock. A mapped source that changed meanwhile is not saved.
    pub(crate) fn write_file(&self, path: &Path) -> Result<(), Error> {
        let payload = self.payload();
        let header = self.header_bytes(&payload);
        write_replacing(path, &[&header, &payload], || self.check())
    }

    /// Opens a `.blf` file under a shared lock: memory-mapped when `mmap` is set (and the host
    /// can read the words in place; the lock then lasts as long as the map), else read into
    /// memory. `verify` checks the payload checksum (reading every page).
    pub(crate) fn load(
        path: &Path,
        mmap: bool,
        verify: bool,
        wait: Wait,
        waiting: Waiting<'_>,
    ) -> Result<Storage, Error> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| Error::Io(e, shown.clone());
        let how = if verify {
            Verify::Full
        } else {
            Verify::HeaderOnly
        };
        let (file, len) = open_shared(path, wait, waiting)?;
        if mmap && len > 0 {
            match GuardedMap::new(&file) {
                Ok(map) => return Storage::from_map(map, path, how),
                // Too many maps guarded at once: this one is read instead.
                Err(e) if e.kind() == io::ErrorKind::OutOfMemory => {}
                Err(e) => return Err(io(e)),
            }
        }
        let bytes = read_whole(path, len)?;
        let (header, payload) =
            format::parse_with(&bytes, how).map_err(|e| Error::format_at(&shown, e))?;
        check_static(&header).map_err(|e| Error::format_at(&shown, e))?;
        Ok(Storage::Owned(try_from_image(payload, header)?))
    }

    /// A mapped, checked file.
    fn from_map(map: GuardedMap, path: &Path, how: Verify) -> Result<Storage, Error> {
        let shown = path.display().to_string();
        let parsed = format::parse_with(map.bytes(), how);
        // A file cut short while its checksum was read is reported as that.
        map.check().map_err(|what| changed(path, what))?;
        let (header, _) = parsed.map_err(|e| Error::format_at(&shown, e))?;
        check_static(&header).map_err(|e| Error::format_at(&shown, e))?;
        if mapped_words(&map).is_none() {
            let filter = try_from_image(&map.bytes()[HEADER_LEN..], header)?;
            map.check().map_err(|what| changed(path, what))?;
            return Ok(Storage::Owned(filter));
        }
        Ok(Storage::Mapped {
            map,
            header,
            path: path.to_path_buf(),
        })
    }
}

/// The error of the mapped file `path` changed underneath: `FileChangedError` naming it.
fn changed(path: &Path, what: bloomlanes_guard::Changed) -> Error {
    Error::Changed(format!(
        "{}: {what}; nothing read from it is used (bloomlanes replaces a filter by renaming a \
         new file over it; another program rewrote this one in place)",
        path.display()
    ))
}

/// Only static filters are supported by this package.
fn check_static(header: &Header) -> Result<(), FormatError> {
    if header.params.kind == FilterKind::Static {
        Ok(())
    } else {
        Err(FormatError::WrongKind {
            expected: "static",
            found: header.params.kind.name(),
        })
    }
}
