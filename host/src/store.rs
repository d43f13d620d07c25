//! Filter files on disk: memory-mapped for reading, written through a temporary file in the same
//! directory that is renamed into place, so a crash never leaves a half-written filter.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bloomlanes_core::format::{self, HEADER_LEN};
use bloomlanes_core::{Filter, FilterRef, Header, Key, Params, Stats};
use memmap2::Mmap;

use crate::error::{Error, Result};

enum Data {
    /// The file mapped into memory; the payload is viewed in place.
    Mapped(Mmap),
    /// A copy (the payload could not be viewed as aligned native words).
    Owned(Filter),
}

/// A filter file opened for reading: checked (magic, version, checksums, lengths) and, where the
/// platform allows, used straight from a read-only memory map without copying.
pub struct FilterFile {
    path: PathBuf,
    header: Header,
    data: Data,
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

impl FilterFile {
    /// Opens and checks the filter file at `path`.
    pub fn open(path: &Path) -> Result<FilterFile> {
        if path.is_dir() {
            return Err(Error::input(
                path,
                None,
                "is a directory, not a filter file",
            ));
        }
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(path, "read", e))?
            .len();
        if len < HEADER_LEN as u64 {
            // Too short to map usefully (and an empty file cannot be mapped), or not a regular
            // file (a pipe, /dev/zero): read a copy, bounded by the length its header states, so
            // the error names the truncation and nothing is read without bound.
            let bytes = read_bounded(&file).map_err(|e| Error::io(path, "read", e))?;
            let f = Filter::from_file_bytes(&bytes).map_err(|e| corrupt(path, e))?;
            return Ok(FilterFile {
                path: path.to_path_buf(),
                header: f.header(),
                data: Data::Owned(f),
            });
        }
        // SAFETY: the map is read-only and private to this process. This tool never modifies a
        // filter file in place (it writes a temporary file and renames it), so the mapped bytes
        // do not change under us unless another program truncates or rewrites the file while it
        // is open, which is outside this tool's contract (as for every mmap-based reader).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, "map", e))?;
        let header = format::parse(&map).map_err(|e| corrupt(path, e))?.0;
        if header.params.kind != bloomlanes_core::FilterKind::Static {
            let e = bloomlanes_core::FormatError::WrongKind {
                expected: "static",
                found: header.params.kind.name(),
            };
            return Err(corrupt(path, e));
        }
        let aligned = cfg!(target_endian = "little")
            && bytemuck::try_cast_slice::<u8, u32>(&map[HEADER_LEN..]).is_ok();
        let data = if aligned {
            Data::Mapped(map)
        } else {
            let f = Filter::from_file_bytes(&map).map_err(|e| corrupt(path, e))?;
            Data::Owned(f)
        };
        Ok(FilterFile {
            path: path.to_path_buf(),
            header,
            data,
        })
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
            Data::Mapped(m) => bytemuck::cast_slice(&m[HEADER_LEN..]),
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
            Data::Mapped(m) => Filter::from_image(&m[HEADER_LEN..], self.header)
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
        let mut s = Stats::new(self.header.params, self.header.keys, view.count_ones());
        s.fpr_from_bits = Some(view.fpr_from_bits());
        s
    }
}

/// Reads a filter file that cannot be mapped: its header, then at most the payload the header
/// states (plus one byte, to tell trailing bytes), however long the source would go on.
fn read_bounded(file: &File) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(HEADER_LEN as u64).read_to_end(&mut bytes)?;
    if bytes.len() < HEADER_LEN {
        return Ok(bytes);
    }
    let needed = match format::parse_with(&bytes, format::Verify::HeaderOnly) {
        Err(format::FormatError::Truncated { needed, .. }) => needed,
        _ => return Ok(bytes), // a bad header (or an empty payload): the parser names it
    };
    file.take(needed - HEADER_LEN as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes a file atomically: `write` fills a temporary file in the same directory, which is
/// flushed to disk and renamed over `path` only when everything succeeded.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(Error::input(
            path,
            None,
            "is a directory; give a file name to write",
        ));
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".bloomlanes-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io(path, "create a temporary file beside", e))?;
    {
        let mut w = io::BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(|e| Error::io(path, "write", e))?;
        w.flush().map_err(|e| Error::io(path, "write", e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(path, "sync", e))?;
    tmp.persist(path)
        .map_err(|e| Error::io(path, "rename the temporary file to", e.error))?;
    Ok(())
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Saves `filter` to `path` in the bloomlanes file format, atomically.
pub fn save_filter(path: &Path, filter: &Filter) -> Result<()> {
    let image = filter.to_image();
    let header = filter.header().encode(&image);
    write_atomic_with(path, |w| {
        w.write_all(&header)?;
        w.write_all(&image)
    })
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
        assert_eq!(file.stats(), f.stats());
        assert_eq!(file.to_filter(), f);
        assert_eq!(load_filter(&path).unwrap(), f);
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
