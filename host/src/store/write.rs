//! Writing a filter file of any kind without a copy of the filter, through the core's streamed
//! writer ([`WriteFile`]): the payload is hashed in a first pass for the header's checksum, then
//! the header and the payload go to the writer in chunks of at most 64 KiB. Memory: the filter
//! and one chunk, never the file's size again. The bytes are the core's `to_file_bytes`
//! (`docs/FORMAT.md`; the tests compare every kind).

use std::io::{self, Write};

use bloomlanes_core::{AnyFilter, WriteFile};

/// Writes the file of `f` (any kind) to `w`, streamed from the filter's arrays.
pub fn write_any(w: &mut dyn Write, f: &AnyFilter) -> io::Result<()> {
    write_file(w, f)
}

/// Writes the file of any filter `f` to `w`, streamed from its arrays.
pub(super) fn write_file(w: &mut dyn Write, f: &impl WriteFile) -> io::Result<()> {
    f.write_file(&mut |bytes: &[u8]| w.write_all(bytes))
}

#[cfg(test)]
pub(super) mod tests {
    use bloomlanes_core::{
        CounterBits, CountingFilter, Filter, FilterKind, Layout, Params, ScalableFilter,
        SpatialFilter, WindowFilter, WindowUnit,
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
