//! Reading a filter file of any kind into memory with one copy of it: the header and kind
//! metadata are checked by the core's parser on a map of the file (which touches only their
//! pages), an empty filter of that shape is made, and its arrays are read from the file
//! straight into place while the payload checksum is computed. Memory: the filter and a fixed
//! buffer (the whole file read first, then copied, needed twice as much).
//!
//! A kind this cannot fill in place (spatial; a scalable filter whose stages are not those its
//! sizing makes) is read whole and parsed by the core instead.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use bloomlanes_core::format::{self, Header, Verify, HEADER_LEN};
use bloomlanes_core::kind_meta::{self, pad64};
use bloomlanes_core::{
    AnyFilter, CountingFilter, Filter, FilterKind, FormatError, ScalableFilter, WindowFilter,
};
use bloomlanes_guard::GuardedMap;

use super::{changed, corrupt};
use crate::error::{Error, Result};

/// Bytes read at a time.
const STEP: usize = 8 << 20;

/// An empty filter of a file's shape, its arrays filled one after the other.
enum Shell {
    Static(Filter),
    Cells(CountingFilter),
    Window(WindowFilter),
    /// A scalable filter grown stage by stage to the file's stage table.
    Scalable(ScalableFilter, Vec<(u32, u64)>),
}

impl Shell {
    /// The empty filter for `header` and its metadata `meta` (`Ok(None)` for a kind read
    /// whole); an error naming `path` when its memory cannot be allocated.
    fn new(path: &Path, header: &Header, meta: &[u8]) -> Result<Option<Shell>> {
        let p = header.params;
        let refused = || out_of_memory(path, HEADER_LEN as u64 + header.payload_len());
        Ok(Some(match p.kind {
            FilterKind::Static => {
                let mut f = Filter::try_new(p).ok_or_else(refused)?;
                f.set_key_count(header.keys);
                Shell::Static(f)
            }
            FilterKind::Counting { .. } | FilterKind::Stable { .. } => {
                let mut f = CountingFilter::try_new(p).ok_or_else(refused)?;
                f.set_key_count(header.keys);
                Shell::Cells(f)
            }
            FilterKind::Window { .. } => {
                let mut f = WindowFilter::try_new(p).ok_or_else(refused)?;
                f.set_key_count(header.keys);
                *f.as_view_mut().parts_mut().1 = kind_meta::decode_window_state(meta);
                Shell::Window(f)
            }
            FilterKind::Scalable { .. } => {
                let (fixed, table) = kind_meta::decode_scalable(meta);
                let tightening = f64::from(fixed.tightening) / 256.0;
                let Ok(f) = ScalableFilter::new(
                    p,
                    fixed.initial_capacity,
                    fixed.rate,
                    fixed.growth,
                    tightening,
                ) else {
                    return Ok(None);
                };
                Shell::Scalable(f, table.collect())
            }
            _ => return Ok(None),
        }))
    }

    /// Runs `fill` on array `i` (file order); `Ok(false)` when the shell has no such array.
    fn with_array(
        &mut self,
        i: usize,
        fill: &mut dyn FnMut(&mut [u32]) -> Result<()>,
    ) -> Result<bool> {
        match self {
            Shell::Static(f) if i == 0 => fill(f.words_mut())?,
            Shell::Cells(f) if i < 2 => {
                let mut view = f.as_view_mut();
                let (image, cells) = view.parts_mut();
                fill(if i == 0 { image } else { cells })?;
            }
            Shell::Window(f) if i == 0 => fill(f.as_view_mut().parts_mut().0)?,
            Shell::Scalable(f, table) => {
                // The next stage, made by the sizing as inserts would: stage i-1 holds its
                // recorded keys, so a full one makes `open_stage` add stage i.
                let Some(&(blocks, keys)) = table.get(i) else {
                    return Ok(false);
                };
                let Ok((stage, _)) = f.open_stage() else {
                    return Ok(false);
                };
                if stage.blocks() != blocks {
                    return Ok(false);
                }
                stage.set_key_count(Some(keys));
                fill(stage.words_mut())?;
                if f.stages().len() != i + 1 {
                    return Ok(false);
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The filter; `None` when it is not the file's (a scalable filter whose metadata, made
    /// again from what was read, differs from the file's).
    fn finish(self, meta: &[u8]) -> Option<AnyFilter> {
        Some(match self {
            Shell::Static(f) => AnyFilter::Static(f),
            Shell::Cells(f) => AnyFilter::Counting(f),
            Shell::Window(f) => AnyFilter::Window(f),
            Shell::Scalable(f, _) => {
                if bloomlanes_core::WriteFile::file_parts(&f).meta() != meta {
                    return None;
                }
                AnyFilter::Scalable(f)
            }
        })
    }
}

/// The payload read in order, hashed as it goes.
struct Payload<'a> {
    file: &'a File,
    path: &'a Path,
    hasher: xxhash_rust::xxh64::Xxh64,
}

impl Payload<'_> {
    fn read_err(&self, e: io::Error) -> Error {
        Error::io(self.path, "read", e)
    }

    /// Reads `buf` whole from where the last read ended, and hashes it.
    fn read(&mut self, buf: &mut [u8]) -> Result<()> {
        let mut f = self.file;
        f.read_exact(buf).map_err(|e| self.read_err(e))?;
        self.hasher.update(buf);
        Ok(())
    }

    /// Reads and hashes `n` bytes that are not kept (metadata, padding).
    fn skip(&mut self, mut n: u64) -> Result<()> {
        let mut buf = [0u8; 4096];
        while n > 0 {
            let k = n.min(buf.len() as u64) as usize;
            self.read(&mut buf[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Reads an array of 32-bit little-endian words into `words`.
    fn words(&mut self, words: &mut [u32]) -> Result<()> {
        for chunk in words.chunks_mut(STEP / 4) {
            self.read(bytemuck::cast_slice_mut(chunk))?;
            #[cfg(target_endian = "big")]
            for w in chunk.iter_mut() {
                *w = u32::from_le(*w);
            }
        }
        Ok(())
    }
}

/// The array lengths in bytes of a checked file, in order.
fn array_lens(header: &Header, meta: &[u8]) -> std::result::Result<Vec<u64>, FormatError> {
    let mut lens = Vec::new();
    kind_meta::for_each_array(&header.params, meta, |len| {
        lens.push(len);
        Ok(())
    })?;
    Ok(lens)
}

/// Reads the regular file `file` (at `path`, locked for reading by the caller) as a filter of
/// any kind, fully checked: in place where the kind allows, else whole.
pub(super) fn load_regular(path: &Path, file: &File) -> Result<AnyFilter> {
    match load_in_place(path, file)? {
        Some(f) => Ok(f),
        None => load_whole(path, file),
    }
}

/// [`load_regular`] in place; `Ok(None)` where the file is to be read whole instead.
fn load_in_place(path: &Path, file: &File) -> Result<Option<AnyFilter>> {
    let map = match GuardedMap::new(file) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::OutOfMemory => return Ok(None),
        Err(e) => return Err(Error::io(path, "map", e)),
    };
    let bytes = map.bytes();
    let parsed = format::parse_with(bytes, Verify::HeaderOnly);
    map.check().map_err(|what| changed(path, what))?;
    let (header, payload) = parsed.map_err(|e| corrupt(path, e))?;
    let meta = &payload[..header.meta_len as usize];
    let lens = array_lens(&header, meta).map_err(|e| corrupt(path, e))?;
    // The stages of a scalable filter are allocated as they are read: checked here first.
    check_memory(path, HEADER_LEN as u64 + payload.len() as u64)?;
    let Some(mut shell) = Shell::new(path, &header, meta)? else {
        return Ok(None);
    };
    let mut read = Payload {
        file,
        path,
        hasher: xxhash_rust::xxh64::Xxh64::new(0),
    };
    (&*file)
        .seek(SeekFrom::Start(HEADER_LEN as u64))
        .map_err(|e| read.read_err(e))?;
    read.skip(header.meta_len)?;
    let pad = header.params.kind != FilterKind::Static;
    for (i, &len) in lens.iter().enumerate() {
        let filled = shell.with_array(i, &mut |words| {
            if words.len() as u64 * 4 != len {
                return Err(corrupt(
                    path,
                    FormatError::Metadata {
                        what: "array length",
                    },
                ));
            }
            read.words(words)
        });
        match filled {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                map.check().map_err(|what| changed(path, what))?;
                return Err(e);
            }
        }
        if pad {
            read.skip(pad64(len) - len)?;
        }
    }
    map.check().map_err(|what| changed(path, what))?;
    if read.hasher.digest() != u64::from_le_bytes(bytes[48..56].try_into().expect("8 bytes")) {
        return Err(corrupt(path, FormatError::PayloadChecksum));
    }
    Ok(shell.finish(meta))
}

/// The refusal to load a filter file of `len` bytes for want of memory.
fn out_of_memory(path: &Path, len: u64) -> Error {
    Error::input(
        path,
        None,
        format!("a filter of {len} bytes: more memory than this machine can allocate to load it"),
    )
}

/// Whether `len` bytes can be allocated now (the up-front check of [`out_of_memory`]).
fn check_memory(path: &Path, len: u64) -> Result<()> {
    let mut probe: Vec<u8> = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| probe.try_reserve_exact(n).ok())
        .ok_or_else(|| out_of_memory(path, len))
}

/// Reads `file` whole into a buffer of exactly its length and parses it.
fn load_whole(path: &Path, file: &File) -> Result<AnyFilter> {
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "read", e))?
        .len();
    let mut bytes = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| bytes.try_reserve_exact(n).ok())
        .ok_or_else(|| out_of_memory(path, len))?;
    let mut f = file;
    f.seek(SeekFrom::Start(0))
        .and_then(|_| f.take(len).read_to_end(&mut bytes))
        .map_err(|e| Error::io(path, "read", e))?;
    AnyFilter::from_file_bytes(&bytes).map_err(|e| corrupt(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(path: &Path) -> Result<AnyFilter> {
        load_regular(path, &File::open(path).unwrap())
    }

    #[test]
    fn every_kind_loads_in_place_as_the_core_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        for f in super::super::write::tests::every_kind() {
            let bytes = f.to_file_bytes();
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(load(&path).unwrap(), f, "{}", f.params().kind);
            let in_place = load_in_place(&path, &File::open(&path).unwrap()).unwrap();
            let spatial = matches!(f, AnyFilter::Spatial(_));
            assert_eq!(in_place.is_some(), !spatial, "{}", f.params().kind);
        }
    }

    /// Every single-byte change and every truncation of small files of every kind: loaded in
    /// place, each is refused exactly when the core refuses it, and accepted as the same filter.
    #[test]
    fn damaged_files_are_refused_as_the_core_refuses_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.blf");
        let mut checked = 0;
        for f in super::super::write::tests::every_kind() {
            let good = f.to_file_bytes();
            let mut variants: Vec<Vec<u8>> = (0..good.len().min(700))
                .step_by(3)
                .map(|i| {
                    let mut b = good.clone();
                    b[i] ^= 0x5a;
                    b
                })
                .collect();
            variants.extend([64, 100, good.len() - 1].map(|n| good[..n].to_vec()));
            for bytes in variants {
                std::fs::write(&path, &bytes).unwrap();
                let core = AnyFilter::from_file_bytes(&bytes);
                match (load(&path), core) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b),
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{}: in place {a:?}, core {b:?}", f.params().kind),
                }
                checked += 1;
            }
        }
        assert!(checked > 1000);
    }
}
