//! Writing a whole filter file of any kind, once (behind `alloc`).
//!
//! Every owning filter describes its file as [`FileParts`]: the header's fields, the kind
//! metadata (a few bytes to a few KiB) and borrowed word arrays (the image, counters, cells,
//! generations or stages, each as the filter holds it). From that one description
//! [`FileParts::to_bytes`] assembles the file in one buffer (what `to_file_bytes` returns), and
//! [`FileParts::write`] streams it through a caller's sink with O(1) extra memory: a first pass
//! hashes the payload (XXH64, streamed), then the header and the payload go to the sink in chunks
//! of at most [`WRITE_CHUNK`] bytes, so a multi-GiB filter reaches its file without a second copy.

use alloc::vec::Vec;

use crate::format::{Header, HEADER_LEN};
use crate::kind::FilterKind;
use crate::kind_meta::pad64;
use crate::params::Params;
use crate::xxh64::{xxh64, Xxh64};

/// The most bytes [`FileParts::write`] hands its sink at once.
pub const WRITE_CHUNK: usize = 1 << 16;

const ZEROS: [u8; 64] = [0; 64];

/// What a filter's file holds: the header's parameters and key count, the kind metadata (a
/// multiple of 64 bytes; none for a static filter) and the arrays that follow it, each written
/// as little-endian words and (except a static image) followed by zeros up to a multiple of 64
/// bytes (`docs/FORMAT.md` §5 and §9).
#[derive(Clone, Debug)]
pub struct FileParts<'a> {
    params: Params,
    keys: Option<u64>,
    meta: Vec<u8>,
    arrays: Vec<&'a [u32]>,
    packed: Option<Packed<'a>>,
}

/// A bit-packed array held as 64-bit words (a retrieval table's cells): its first `bytes` bytes
/// in little-endian order are written, then zeros up to a multiple of 64 bytes.
#[derive(Clone, Copy, Debug)]
struct Packed<'a> {
    words: &'a [u64],
    bytes: u64,
}

impl<'a> FileParts<'a> {
    /// The parts of a file of `params` and `keys` with kind metadata `meta` (padded here to a
    /// multiple of 64 bytes) and `arrays`.
    pub(crate) fn new(
        params: Params,
        keys: Option<u64>,
        mut meta: Vec<u8>,
        arrays: Vec<&'a [u32]>,
    ) -> FileParts<'a> {
        meta.resize(pad64(meta.len() as u64) as usize, 0);
        FileParts {
            params,
            keys,
            meta,
            arrays,
            packed: None,
        }
    }

    /// The parts of a file whose one array is bit-packed in `words`, of which the first `bytes`
    /// bytes (at most `words.len() * 8`) are the array.
    pub(crate) fn packed(
        params: Params,
        keys: Option<u64>,
        meta: Vec<u8>,
        words: &'a [u64],
        bytes: u64,
    ) -> FileParts<'a> {
        debug_assert!(bytes <= words.len() as u64 * 8);
        let mut parts = FileParts::new(params, keys, meta, Vec::new());
        parts.packed = Some(Packed { words, bytes });
        parts
    }

    /// Whether each array is followed by zeros up to a multiple of 64 bytes (every kind but
    /// static).
    fn padded(&self) -> bool {
        self.params.kind != FilterKind::Static
    }

    /// Bytes of array `words` in the payload, padding included.
    fn array_len(&self, words: &[u32]) -> u64 {
        let len = words.len() as u64 * 4;
        if self.padded() {
            pad64(len)
        } else {
            len
        }
    }

    /// The kind metadata, padded to a multiple of 64 bytes (empty for a static filter).
    pub fn meta(&self) -> &[u8] {
        &self.meta
    }

    /// The payload's length: metadata and arrays.
    pub fn payload_len(&self) -> u64 {
        let arrays: u64 = self.arrays.iter().map(|a| self.array_len(a)).sum();
        let packed = self.packed.map_or(0, |p| pad64(p.bytes));
        self.meta.len() as u64 + arrays + packed
    }

    /// The file's length: header and payload.
    pub fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.payload_len()
    }

    fn header(&self) -> Header {
        Header {
            params: self.params,
            keys: self.keys,
            meta_len: self.meta.len() as u64,
        }
    }

    /// The whole file in one buffer of its exact length: the payload is written in place, then
    /// the header is filled in before it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.file_len() as usize);
        out.resize(HEADER_LEN, 0);
        self.payload(&mut |bytes: &[u8]| {
            out.extend_from_slice(bytes);
            Ok::<(), core::convert::Infallible>(())
        })
        .unwrap_or_else(|never| match never {});
        let header = self.header().encode_parts(
            (out.len() - HEADER_LEN) as u64,
            xxh64(&out[HEADER_LEN..], 0),
        );
        out[..HEADER_LEN].copy_from_slice(&header);
        out
    }

    /// Streams the whole file through `sink` in chunks of at most [`WRITE_CHUNK`] bytes: the
    /// same bytes as [`FileParts::to_bytes`], with no buffer beyond one chunk. The payload is
    /// read twice (hashed, then written). The first error of `sink` stops the writing and is
    /// returned.
    pub fn write<E>(&self, sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let mut hash = Xxh64::new(0);
        self.payload(&mut |bytes: &[u8]| {
            hash.update(bytes);
            Ok::<(), core::convert::Infallible>(())
        })
        .unwrap_or_else(|never| match never {});
        sink(
            &self
                .header()
                .encode_parts(self.payload_len(), hash.digest()),
        )?;
        self.payload(sink)
    }

    /// Hands the payload to `sink`, in order, in chunks of at most [`WRITE_CHUNK`] bytes.
    fn payload<E>(&self, sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        for chunk in self.meta.chunks(WRITE_CHUNK) {
            sink(chunk)?;
        }
        for words in &self.arrays {
            le_chunks(words, sink)?;
            let pad = (self.array_len(words) - words.len() as u64 * 4) as usize;
            if pad > 0 {
                sink(&ZEROS[..pad])?;
            }
        }
        if let Some(p) = self.packed {
            packed_chunks(p, sink)?;
            let pad = (pad64(p.bytes) - p.bytes) as usize;
            if pad > 0 {
                sink(&ZEROS[..pad])?;
            }
        }
        Ok(())
    }
}

/// Hands the first `p.bytes` little-endian bytes of `p.words` to `sink` in chunks of at most
/// [`WRITE_CHUNK`] bytes, converted through a buffer of 4 KiB (the same on either byte order).
fn packed_chunks<E>(p: Packed<'_>, sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
    let mut buf = [0u8; 4096];
    let mut left = p.bytes as usize;
    for part in p.words.chunks(buf.len() / 8) {
        if left == 0 {
            break;
        }
        for (b, w) in buf.chunks_exact_mut(8).zip(part) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        let n = left.min(part.len() * 8);
        sink(&buf[..n])?;
        left -= n;
    }
    Ok(())
}

/// Hands `words` as little-endian bytes to `sink` in chunks of at most [`WRITE_CHUNK`] bytes
/// (on a little-endian machine the words' own bytes, without a copy).
#[cfg(target_endian = "little")]
fn le_chunks<E>(words: &[u32], sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
    let bytes: &[u8] = bytemuck::cast_slice(words);
    bytes.chunks(WRITE_CHUNK).try_for_each(sink)
}

/// Hands `words` as little-endian bytes to `sink`, converted through a buffer of 4 KiB.
#[cfg(target_endian = "big")]
fn le_chunks<E>(words: &[u32], sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
    let mut buf = [0u8; 4096];
    for part in words.chunks(buf.len() / 4) {
        for (b, w) in buf.chunks_exact_mut(4).zip(part) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        sink(&buf[..part.len() * 4])?;
    }
    Ok(())
}

/// A filter that can be written as a file: every owning kind and [`AnyFilter`](crate::AnyFilter).
pub trait WriteFile {
    /// What the filter's file holds (borrowed from the filter).
    fn file_parts(&self) -> FileParts<'_>;

    /// Streams the whole file (byte for byte what `to_file_bytes` returns) through `sink` in
    /// chunks of at most [`WRITE_CHUNK`] bytes, with no second copy of the filter: a host
    /// writes a filter of any size to disk with O(1) extra memory. The first error of `sink`
    /// stops the writing and is returned.
    fn write_file<E>(&self, sink: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        self.file_parts().write(sink)
    }

    /// The length of the file in bytes.
    fn file_len(&self) -> u64 {
        self.file_parts().file_len()
    }
}
