//! The Rust side of `python/bench/bench.py`: the same bulk work as the package's calls, done
//! on Rust-owned keys with the SIMD backend directly (what `benches/examples/python_baseline.rs`
//! does as a separate binary), so that the benchmark can alternate the two in one process,
//! rep by rep, on a machine whose load varies. Not part of the package's interface.

use std::time::Instant;

use bloomlanes_core::{Filter, KeyType, Keys, Params, Sizing, Strings};
use bloomlanes_simd::Probe;
use pyo3::prelude::*;

use crate::errors::Error;
use crate::ops;

/// Seconds of `par_insert` of `n` keys (u64 `0..n`, or the strings `key-{i}`) into a filter
/// sized for `n` keys at 1%, and of `par_contains` of the `n` keys shifted by `n / 2`.
#[pyfunction]
pub(crate) fn _rust_bulk_seconds(py: Python<'_>, kind: &str, n: u64) -> PyResult<(f64, f64)> {
    let strings = match kind {
        "u64" => false,
        "strings" => true,
        _ => return Err(Error::value("kind is u64 or strings").into()),
    };
    py.detach(|| {
        let params =
            Params::for_keys(n, Sizing::FalsePositiveRate(0.01), None)?.with_key_type(if strings {
                KeyType::Bytes
            } else {
                KeyType::U64
            });
        let ints: Vec<u64> = (0..n).collect();
        let queries: Vec<u64> = (n / 2..n / 2 + n).collect();
        let text = |r: std::ops::Range<u64>| {
            let mut data = Vec::new();
            let mut offsets = vec![0u64];
            for i in r {
                data.extend_from_slice(format!("key-{i}").as_bytes());
                offsets.push(data.len() as u64);
            }
            (data, offsets)
        };
        let (sd, so) = if strings {
            text(0..n)
        } else {
            (vec![], vec![0])
        };
        let (qd, qo) = if strings {
            text(n / 2..n / 2 + n)
        } else {
            (vec![], vec![0])
        };
        let (ins, look) = if strings {
            (
                Keys::Strings(Strings::new(&sd, &so)?),
                Keys::Strings(Strings::new(&qd, &qo)?),
            )
        } else {
            (Keys::U64(&ints), Keys::U64(&queries))
        };
        let mut out = vec![0u8; n as usize];
        let mut f = Filter::new(params);
        let probe = Probe::active();
        ops::in_pool(|| {
            let t = Instant::now();
            probe.par_insert(f.as_view_mut(), ins);
            let ti = t.elapsed().as_secs_f64();
            let t = Instant::now();
            probe.par_contains(f.as_view(), look, &mut out);
            Ok::<_, Error>((ti, t.elapsed().as_secs_f64()))
        })
    })
    .map_err(Into::into)
}
