//! Where a Python filter's bits live: an owning [`Filter`], or a `.blf` file memory-mapped
//! read-only (copied into an owning filter on the first change).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use bloomlanes_core::format::{self, Header, Verify, HEADER_LEN};
use bloomlanes_core::{Filter, FilterKind, FilterRef, FormatError, Params};
use memmap2::Mmap;

use crate::errors::Error;

/// The bits of a filter.
pub(crate) enum Storage {
    /// In memory, ours.
    Owned(Filter),
    /// A memory-mapped file, read-only; the payload starts at byte 64 (page-aligned map, so the
    /// words are 64-byte aligned).
    Mapped {
        map: Mmap,
        header: Header,
        path: PathBuf,
    },
}

/// The words of a mapped file's payload, if the host can read them in place (little-endian,
/// aligned).
fn mapped_words(map: &Mmap) -> Option<&[u32]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    bytemuck::try_cast_slice(&map[HEADER_LEN..]).ok()
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

    /// A read-only view of the words.
    pub(crate) fn view(&self) -> FilterRef<'_, u32> {
        match self {
            Storage::Owned(f) => f.as_view(),
            Storage::Mapped { map, header, .. } => {
                let words = mapped_words(map).expect("checked when the file was mapped");
                FilterRef::new(header.params, words).expect("checked when the file was mapped")
            }
        }
    }

    /// The owning filter, copying a mapped file into memory first.
    pub(crate) fn owned_mut(&mut self) -> &mut Filter {
        if let Storage::Mapped { map, header, .. } = self {
            let filter = Filter::from_image(&map[HEADER_LEN..], *header)
                .expect("checked when the file was mapped");
            *self = Storage::Owned(filter);
        }
        match self {
            Storage::Owned(f) => f,
            Storage::Mapped { .. } => unreachable!("just replaced"),
        }
    }

    /// A copy in memory.
    pub(crate) fn to_owned_filter(&self) -> Filter {
        match self {
            Storage::Owned(f) => f.clone(),
            Storage::Mapped { map, header, .. } => Filter::from_image(&map[HEADER_LEN..], *header)
                .expect("checked when the file was mapped"),
        }
    }

    /// The payload as little-endian bytes (borrowed on little-endian hosts).
    fn payload(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Storage::Mapped { map, .. } => std::borrow::Cow::Borrowed(&map[HEADER_LEN..]),
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
    pub(crate) fn file_bytes_into(&self, out: &mut [u8]) {
        let payload = self.payload();
        out[..HEADER_LEN].copy_from_slice(&self.header_bytes(&payload));
        out[HEADER_LEN..].copy_from_slice(&payload);
    }

    /// Length of the whole file.
    pub(crate) fn file_len(&self) -> usize {
        HEADER_LEN + self.params().byte_len() as usize
    }

    /// Writes the `.blf` file to `path` (through a temporary file in the same folder, renamed
    /// over `path` when complete).
    pub(crate) fn save(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::Io(e, path.display().to_string());
        let payload = self.payload();
        let header = self.header_bytes(&payload);
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".tmp{}", std::process::id()));
        let tmp = path.with_file_name(name);
        let write = || -> std::io::Result<()> {
            let mut f = std::io::BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
            f.write_all(&header)?;
            f.write_all(&payload)?;
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    /// Opens a `.blf` file: memory-mapped when `mmap` is set (and the host can read the words in
    /// place), else read into memory. `verify` checks the payload checksum (reading every page).
    pub(crate) fn load(path: &Path, mmap: bool, verify: bool) -> Result<Storage, Error> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| Error::Io(e, shown.clone());
        let how = if verify {
            Verify::Full
        } else {
            Verify::HeaderOnly
        };
        let file = File::open(path).map_err(io)?;
        if mmap {
            // SAFETY: the map is read-only. Another process truncating or rewriting the file
            // while it is mapped would change (or fault on) the bytes under us; that is the
            // documented contract of `Filter.load(mmap=True)`, as for any memory-mapped reader
            // (the CLI's included). `save` never writes in place: it renames a new file over the
            // old one, which leaves existing maps intact.
            let map = unsafe { Mmap::map(&file) }.map_err(io)?;
            let (header, _) =
                format::parse_with(&map, how).map_err(|e| Error::format_at(&shown, e))?;
            check_static(&header).map_err(|e| Error::format_at(&shown, e))?;
            if mapped_words(&map).is_some() {
                return Ok(Storage::Mapped {
                    map,
                    header,
                    path: path.to_path_buf(),
                });
            }
            let filter = Filter::from_image(&map[HEADER_LEN..], header)
                .map_err(|e| Error::format_at(&shown, e))?;
            return Ok(Storage::Owned(filter));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let (header, payload) =
            format::parse_with(&bytes, how).map_err(|e| Error::format_at(&shown, e))?;
        check_static(&header).map_err(|e| Error::format_at(&shown, e))?;
        let filter =
            Filter::from_image(payload, header).map_err(|e| Error::format_at(&shown, e))?;
        Ok(Storage::Owned(filter))
    }
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
