//! Writing a filter file of any kind without a copy of the filter: the file is seen as its
//! pieces (the kind metadata, then each array, padded to 64 bytes after every array but a static
//! image), hashed in a first pass for the header's payload checksum, then written after the
//! header in a second. Memory: the filter and a fixed buffer, never the file's size again.
//!
//! The bytes are those of the core's `to_file_bytes` (`docs/FORMAT.md`; the tests compare every
//! kind). Until the core has a streamed writer of its own, this one builds the pieces from the
//! kinds' public accessors; a kind it cannot take apart (spatial) is written through
//! `to_file_bytes`.

use std::io::{self, Write};

use bloomlanes_core::format::{Header, HEADER_LEN};
use bloomlanes_core::kind_meta::{self, pad64, ScalableMeta, META_LEN, STAGE_LEN};
use bloomlanes_core::{xxh64, AnyFilter, Filter, FilterKind, ScalableFilter};

/// Bytes converted at a time on a big-endian host.
#[cfg(target_endian = "big")]
const STEP: usize = 1 << 16;

/// A filter file as its pieces.
pub(super) struct FileParts<'a> {
    header: Header,
    /// The kind metadata (`header.meta_len` bytes).
    meta: Vec<u8>,
    /// The arrays, in file order.
    arrays: Vec<&'a [u32]>,
    /// Whether every array is followed by zeros up to a multiple of 64 bytes.
    pad: bool,
}

/// The metadata of a scalable filter as its file holds it.
pub(super) fn scalable_meta(f: &ScalableFilter) -> Vec<u8> {
    let FilterKind::Scalable { growth, tightening } = f.params().kind else {
        unreachable!("a scalable filter has the scalable kind")
    };
    let fixed = ScalableMeta {
        growth,
        tightening,
        rate: f.target_rate(),
        initial_capacity: f.stage_capacity(0),
    };
    let table: Vec<(u32, u64)> = f
        .stages()
        .iter()
        .map(|s| (s.blocks(), s.key_count().unwrap_or(0)))
        .collect();
    let mut meta = vec![0u8; pad64((META_LEN + STAGE_LEN * table.len()) as u64) as usize];
    kind_meta::scalable_meta(&fixed, &table, &mut meta);
    meta
}

impl<'a> FileParts<'a> {
    /// The pieces of a static filter.
    pub(super) fn of_static(f: &'a Filter) -> FileParts<'a> {
        FileParts {
            header: Header::new(*f.params(), f.key_count()),
            meta: Vec::new(),
            arrays: vec![f.words()],
            pad: false,
        }
    }

    /// The pieces of any filter; `None` for a kind taken whole (spatial).
    pub(super) fn of(f: &'a AnyFilter) -> Option<FileParts<'a>> {
        let with_meta = |params, keys, meta: Vec<u8>, arrays| FileParts {
            header: Header {
                params,
                keys,
                meta_len: meta.len() as u64,
            },
            meta,
            arrays,
            pad: true,
        };
        Some(match f {
            AnyFilter::Static(s) => FileParts::of_static(s),
            AnyFilter::Counting(c) => with_meta(
                *c.params(),
                c.key_count(),
                kind_meta::encode_meta(c.params().kind, None).to_vec(),
                vec![c.image_words(), c.counter_words()],
            ),
            AnyFilter::Window(w) => with_meta(
                *w.params(),
                w.key_count(),
                kind_meta::encode_meta(w.params().kind, Some(&w.state())).to_vec(),
                vec![w.words()],
            ),
            AnyFilter::Scalable(s) => with_meta(
                *s.params(),
                Some(s.key_count()),
                scalable_meta(s),
                s.stages().iter().map(Filter::words).collect(),
            ),
            AnyFilter::Spatial(_) | AnyFilter::Retrieval(_) => return None,
        })
    }

    /// Hands every byte of the payload, in order, to `each`.
    fn for_each_piece(&self, each: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        each(&self.meta)?;
        let zeros = [0u8; 64];
        for words in &self.arrays {
            let len = words.len() * 4;
            #[cfg(target_endian = "little")]
            each(bytemuck::cast_slice(words))?;
            #[cfg(target_endian = "big")]
            {
                let mut buf = Vec::with_capacity(STEP);
                for chunk in words.chunks(STEP / 4) {
                    buf.clear();
                    buf.extend(chunk.iter().flat_map(|w| w.to_le_bytes()));
                    each(&buf)?;
                }
            }
            if self.pad {
                each(&zeros[..(pad64(len as u64) as usize - len)])?;
            }
        }
        Ok(())
    }

    /// The header for a payload of `len` bytes with XXH64 `checksum` (the fields of
    /// `docs/FORMAT.md`: payload length at bytes 40..48, its checksum at 48..56, the header's
    /// own at 56..64).
    fn header_bytes(&self, len: u64, checksum: u64) -> [u8; HEADER_LEN] {
        let mut h = self.header.encode(&[]);
        h[40..48].copy_from_slice(&len.to_le_bytes());
        h[48..56].copy_from_slice(&checksum.to_le_bytes());
        let own = xxh64(&h[..56], 0);
        h[56..64].copy_from_slice(&own.to_le_bytes());
        h
    }

    /// Writes the whole file to `w`: the payload hashed first, then the header and the payload.
    pub(super) fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut hasher = xxhash_rust::xxh64::Xxh64::new(0);
        let mut len = 0u64;
        self.for_each_piece(&mut |b| {
            hasher.update(b);
            len += b.len() as u64;
            Ok(())
        })?;
        w.write_all(&self.header_bytes(len, hasher.digest()))?;
        self.for_each_piece(&mut |b| w.write_all(b))
    }
}

/// Writes the file of `f` to `w`: the payload hashed in a first pass, then the header and the
/// payload from the filter's arrays (a spatial filter through its
/// `to_file_bytes`).
pub fn write_any(w: &mut dyn Write, f: &AnyFilter) -> io::Result<()> {
    match FileParts::of(f) {
        Some(parts) => parts.write_to(w),
        None => w.write_all(&f.to_file_bytes()),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use bloomlanes_core::{
        CounterBits, CountingFilter, Layout, Params, ScalableFilter, SpatialFilter, WindowFilter,
        WindowUnit,
    };

    use super::*;

    /// One filter of every kind, each with keys in it (a scalable one over several stages).
    pub(crate) fn every_kind() -> Vec<AnyFilter> {
        let p = Params::new(Layout::L8x32, 37).with_seed(5);
        let mut s = Filter::new(p);
        let mut c = CountingFilter::counting(p, CounterBits::Four);
        let mut st = CountingFilter::stable(p, CounterBits::Eight, 3);
        let mut w = WindowFilter::new(p.with_kind(FilterKind::Window {
            generations: 3,
            unit: WindowUnit::Keys,
            span: 40,
        }))
        .unwrap();
        let mut sc = ScalableFilter::new(p, 30, 0.01, 2, 0.8).unwrap();
        let mut sp = SpatialFilter::new(p, 4, &["a", "bb"]).unwrap();
        for i in 0..300u64 {
            s.insert(&i);
            c.insert(&i);
            st.insert(&i);
            w.insert(&i);
            sc.insert(&i).unwrap();
            sp.insert(&i, 1 + (i % 2) as u32).unwrap();
        }
        assert!(sc.stages().len() > 2);
        vec![
            AnyFilter::Static(s),
            AnyFilter::Counting(c),
            AnyFilter::Counting(st),
            AnyFilter::Window(w),
            AnyFilter::Scalable(sc),
            AnyFilter::Spatial(sp),
        ]
    }

    #[test]
    fn streamed_files_are_the_cores_bytes_for_every_kind() {
        for f in every_kind() {
            let mut out = Vec::new();
            write_any(&mut out, &f).unwrap();
            assert_eq!(out, f.to_file_bytes(), "{}", f.params().kind);
            assert_eq!(AnyFilter::from_file_bytes(&out).unwrap(), f);
        }
    }
}
