//! The bulk operations over [`Part`]s, run without the GIL on the SIMD backend and every core of
//! the package's thread pool.
//!
//! Keys go straight to the SIMD kernels when the backend has a form for them (`u64`-wide keys as
//! [`Keys::U64`], fixed-width bytes as [`Keys::Records`], strings with 64-bit offsets as
//! [`Keys::Strings`]). Other runs (4-byte keys: u32, i32, f32, dates; strings with Arrow's 32-bit
//! offsets; runs with nulls) are hashed here in cache-sized chunks (core's scalar XXH64, or a
//! 4-byte XXH64 without length branches) and handed to the backend as [`Keys::Hashes`]. Float lookups then apply core's ±0 / NaN rule
//! ([`bloomlanes_core::key::float_probes`]).

use std::sync::{Arc, Mutex, RwLock};

use bloomlanes_core::{xxh64, xxh64_u64, FilterMut, FilterRef, KeyType, Keys, Records, Strings};
use bloomlanes_simd::Probe;
use rayon::prelude::*;

use crate::errors::Error;
use crate::input::{Part, Values};

/// The pool the bulk operations run in: `None` is rayon's global pool (every core).
static POOL: RwLock<Option<Arc<rayon::ThreadPool>>> = RwLock::new(None);

/// Runs the bulk operations on `threads` threads from now on (0: every core).
pub(crate) fn set_threads(threads: usize) -> Result<(), Error> {
    let pool = if threads == 0 {
        None
    } else {
        Some(Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("bloomlanes-{i}"))
                .build()
                .map_err(|e| Error::value(format!("cannot start {threads} threads: {e}")))?,
        ))
    };
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = pool;
    Ok(())
}

/// Number of threads the bulk operations use.
pub(crate) fn threads() -> usize {
    let pool = POOL.read().unwrap_or_else(|e| e.into_inner()).clone();
    pool.map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
}

/// Runs `f` in the package's pool.
pub(crate) fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    Threads::Package.install(f)
}

/// The most threads one call may ask for (`threads=`).
pub(crate) const MAX_CALL_THREADS: usize = 1024;

/// The pools made for per-call thread counts, kept for later calls (a Spark or Dask task calls
/// with the same count again and again; starting threads each time would cost more than a
/// small batch of keys).
static CALL_POOLS: Mutex<Vec<Arc<rayon::ThreadPool>>> = Mutex::new(Vec::new());

/// Where one call's bulk work runs: the package's setting ([`set_threads`]) or its own count.
pub(crate) enum Threads {
    /// The package's pool.
    Package,
    /// Every core (rayon's global pool).
    Every,
    /// A pool of a given number of threads.
    Pool(Arc<rayon::ThreadPool>),
}

impl Threads {
    /// How many threads a call on these runs on.
    pub(crate) fn count(&self) -> usize {
        match self {
            Threads::Package => threads(),
            Threads::Every => rayon::current_num_threads(),
            Threads::Pool(p) => p.current_num_threads(),
        }
    }

    /// The pool for a call's `threads=` argument: `None` follows the package's setting, 0 is
    /// every core, `n` is `n` threads (at most [`MAX_CALL_THREADS`]).
    pub(crate) fn of(threads: Option<i64>) -> Result<Threads, Error> {
        let Some(t) = threads else {
            return Ok(Threads::Package);
        };
        let n = usize::try_from(t)
            .ok()
            .filter(|&n| n <= MAX_CALL_THREADS)
            .ok_or_else(|| {
                Error::value(format!(
                    "threads={t}: give 0 (every core) or a number of threads from 1 to \
                     {MAX_CALL_THREADS} (None: the package's setting, see set_threads)"
                ))
            })?;
        if n == 0 {
            return Ok(Threads::Every);
        }
        let mut pools = CALL_POOLS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pools.iter().find(|p| p.current_num_threads() == n) {
            return Ok(Threads::Pool(p.clone()));
        }
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(move |i| format!("bloomlanes-{n}-{i}"))
                .build()
                .map_err(|e| Error::value(format!("cannot start {n} threads: {e}")))?,
        );
        pools.push(pool.clone());
        Ok(Threads::Pool(pool))
    }

    /// Runs `f` on these threads (its parallel iterators use them).
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self {
            Threads::Package => {
                let pool = POOL.read().unwrap_or_else(|e| e.into_inner()).clone();
                match pool {
                    Some(p) => p.install(f),
                    None => f(),
                }
            }
            Threads::Every => f(),
            Threads::Pool(p) => p.install(f),
        }
    }
}

/// Keys hashed per task of the chunked paths (their hashes stay in L2).
const HASH_CHUNK: usize = 16 * 1024;
/// Keys hashed before each parallel insert of the chunked path.
const INSERT_CHUNK: usize = 1 << 16;

/// Checks the offsets of a run of strings with 32-bit offsets: non-negative, non-decreasing
/// (the last one ends the data by construction).
fn check_offsets32(offsets: &[i32]) -> Result<(), Error> {
    let mut prev = 0i32;
    for (index, &o) in offsets.iter().enumerate() {
        if o < prev {
            return Err(Error::value(format!(
                "string offset {index} ({o}) is out of order or past the end of the data"
            )));
        }
        prev = o;
    }
    Ok(())
}

/// Validates a part (string offsets) and returns its backend form when the SIMD kernels take it
/// as it is (no nulls; u64-wide keys, 4-byte keys on little-endian hosts, fixed-width bytes,
/// strings with 64-bit offsets). `None`: hash it here in chunks.
pub(crate) fn prepare<'a>(part: &Part<'a>) -> Result<Option<Keys<'a>>, Error> {
    let keys = match part.values {
        Values::Str32(_, o) => {
            check_offsets32(o)?;
            None
        }
        Values::Str64(d, o) => Some(Keys::Strings(Strings::new(d, o)?)),
        Values::U64(k) => Some(Keys::U64(k)),
        Values::Records(d, w) => Some(Keys::Records(Records::new(d, w)?)),
        // 4-byte keys: hashed here by `xxh64_4` (faster than the kernels' generic record hash).
        Values::U32(_) | Values::Days64(_) => None,
        Values::Hashes(h, _) => Some(Keys::Hashes(h)),
    };
    Ok(keys.filter(|_| part.nulls.is_none()))
}

/// XXH64 of the 4 little-endian bytes of `v` (equal to `xxh64(&v.to_le_bytes(), seed)`; the
/// general function's steps for a 4-byte input, without its length branches).
#[inline(always)]
fn xxh64_4(v: u32, seed: u64) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    const P5: u64 = 0x27D4_EB2F_1656_67C5;
    let mut h = seed.wrapping_add(P5).wrapping_add(4);
    h ^= u64::from(v).wrapping_mul(P1);
    h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

/// `out[j] = hash of key start + j` (nulls hash like any key; callers mask them).
fn hash_into(values: &Values<'_>, start: usize, seed: u64, out: &mut [u64]) {
    let range = start..start + out.len();
    match *values {
        Values::U64(k) => {
            for (h, &x) in out.iter_mut().zip(&k[range]) {
                *h = xxh64_u64(x, seed);
            }
        }
        Values::U32(k) => {
            for (h, &x) in out.iter_mut().zip(&k[range]) {
                *h = xxh64_4(x, seed);
            }
        }
        Values::Days64(k) => {
            // Range-checked at extraction: every value fits an i32.
            for (h, &x) in out.iter_mut().zip(&k[range]) {
                *h = xxh64_4(x as i32 as u32, seed);
            }
        }
        Values::Records(d, w) => {
            for (j, h) in out.iter_mut().enumerate() {
                let i = start + j;
                *h = xxh64(&d[i * w..(i + 1) * w], seed);
            }
        }
        Values::Str32(d, o) => {
            for (j, h) in out.iter_mut().enumerate() {
                let i = start + j;
                *h = xxh64(&d[o[i] as usize..o[i + 1] as usize], seed);
            }
        }
        Values::Str64(d, o) => {
            for (j, h) in out.iter_mut().enumerate() {
                let i = start + j;
                *h = xxh64(&d[o[i] as usize..o[i + 1] as usize], seed);
            }
        }
        // Of this seed (`check_seed`).
        Values::Hashes(h, _) => out.copy_from_slice(&h[range]),
    }
}

/// An error if `part` holds hashes made with another seed than `seed` (the filter's).
fn check_seed(part: &Part<'_>, seed: u64) -> Result<(), Error> {
    match part.values {
        Values::Hashes(_, s) if s != seed => Err(Error::value(format!(
            "keys hashed with seed {s} cannot go into a filter of seed {seed}"
        ))),
        _ => Ok(()),
    }
}

/// Inserts the keys of `part`; returns how many (nulls are skipped).
pub(crate) fn insert(
    probe: &Probe,
    mut filter: FilterMut<'_, u32>,
    part: &Part<'_>,
) -> Result<u64, Error> {
    let n = part.values.len();
    check_seed(part, filter.params().seed)?;
    if let Some(keys) = prepare(part)? {
        probe.par_insert(filter, keys);
        return Ok(n as u64);
    }
    let seed = filter.params().seed;
    let mut buf = vec![0u64; n.min(INSERT_CHUNK)];
    let mut inserted = 0u64;
    let mut start = 0;
    while start < n {
        let len = (n - start).min(INSERT_CHUNK);
        let buf = &mut buf[..len];
        buf.par_chunks_mut(HASH_CHUNK)
            .enumerate()
            .for_each(|(t, out)| {
                hash_into(&part.values, start + t * HASH_CHUNK, seed, out);
            });
        let kept = match part.nulls {
            None => len,
            Some(valid) => {
                let mut m = 0;
                for j in 0..len {
                    if valid.is_valid(start + j) {
                        buf[m] = buf[j];
                        m += 1;
                    }
                }
                m
            }
        };
        probe.par_insert(filter.reborrow(), Keys::Hashes(&buf[..kept]));
        inserted += kept as u64;
        start += len;
    }
    Ok(inserted)
}

/// Looks up the keys of `part`: `out[i]` is 1 if key `i` may be present (0 for nulls).
/// `key_type` is the type of the keys (floats get the ±0 / NaN rule).
pub(crate) fn contains(
    probe: &Probe,
    filter: FilterRef<'_, u32>,
    part: &Part<'_>,
    key_type: KeyType,
    out: &mut [u8],
) -> Result<(), Error> {
    check_seed(part, filter.params().seed)?;
    if let Some(keys) = prepare(part)? {
        probe.par_contains(filter, keys, out);
    } else {
        let seed = filter.params().seed;
        out.par_chunks_mut(HASH_CHUNK)
            .enumerate()
            .for_each(|(t, out)| {
                let start = t * HASH_CHUNK;
                let mut buf = vec![0u64; out.len()];
                hash_into(&part.values, start, seed, &mut buf);
                probe.contains(filter, Keys::Hashes(&buf), out);
            });
    }
    float_rule(filter, part, key_type, out);
    if let Some(valid) = part.nulls {
        out.par_chunks_mut(HASH_CHUNK)
            .enumerate()
            .for_each(|(t, out)| {
                let start = t * HASH_CHUNK;
                for (j, o) in out.iter_mut().enumerate() {
                    if !valid.is_valid(start + j) {
                        *o = 0;
                    }
                }
            });
    }
    Ok(())
}

/// Core's float lookup rule: a query for ±0 finds either zero, a NaN query always answers
/// "maybe" (writers hash raw bits, and NaN payloads and the sign of zero vary).
fn float_rule(filter: FilterRef<'_, u32>, part: &Part<'_>, key_type: KeyType, out: &mut [u8]) {
    let seed = filter.params().seed;
    match (key_type, part.values) {
        (KeyType::F64, Values::U64(bits)) => {
            let zero = filter.contains_hash(xxh64_u64(0.0f64.to_bits(), seed))
                || filter.contains_hash(xxh64_u64((-0.0f64).to_bits(), seed));
            apply_float_rule(out, bits, zero, f64::from_bits);
        }
        (KeyType::F32, Values::U32(bits)) => {
            let h = |x: f32| xxh64(&x.to_bits().to_le_bytes(), seed);
            let zero = filter.contains_hash(h(0.0)) || filter.contains_hash(h(-0.0));
            // Widening keeps NaN a NaN and zero a zero.
            apply_float_rule(out, bits, zero, |b| f64::from(f32::from_bits(b)));
        }
        _ => {}
    }
}

/// [`float_rule`]'s pass over the answers: a NaN key answers 1 and a zero key (either sign)
/// answers `zero`; `value` reads a key's raw bits as a float.
fn apply_float_rule<B: Copy + Sync>(
    out: &mut [u8],
    bits: &[B],
    zero: bool,
    value: impl Fn(B) -> f64 + Sync,
) {
    out.par_chunks_mut(HASH_CHUNK)
        .zip(bits.par_chunks(HASH_CHUNK))
        .for_each(|(out, bits)| {
            for (o, &b) in out.iter_mut().zip(bits) {
                let x = value(b);
                if x.is_nan() {
                    *o = 1;
                } else if x == 0.0 {
                    *o = u8::from(zero);
                }
            }
        });
}

/// Whether [`contains_bitmap_direct`] can answer `part` (no nulls, no float rule, a kernel form).
pub(crate) fn bitmap_direct(part: &Part<'_>, key_type: KeyType) -> bool {
    let direct = match part.values {
        Values::U64(_) | Values::Records(..) | Values::Str64(..) | Values::Hashes(..) => true,
        Values::U32(_) | Values::Str32(..) | Values::Days64(_) => false,
    };
    direct && part.nulls.is_none() && !matches!(key_type, KeyType::F32 | KeyType::F64)
}

/// Looks up `part` straight into a bitmap (bit `i % 64` of word `i / 64`); only for parts that
/// [`bitmap_direct`] accepts.
pub(crate) fn contains_bitmap_direct(
    probe: &Probe,
    filter: FilterRef<'_, u32>,
    part: &Part<'_>,
    out: &mut [u64],
) -> Result<(), Error> {
    check_seed(part, filter.params().seed)?;
    let keys = prepare(part)?.ok_or_else(|| Error::value("no direct bitmap form"))?;
    probe.par_contains_bitmap(filter, keys, out);
    Ok(())
}

/// Packs answers (one byte, 0 or 1, per key) into bitmap words.
pub(crate) fn pack(bytes: &[u8], out: &mut [u64]) {
    out.par_iter_mut()
        .zip(bytes.par_chunks(64))
        .for_each(|(w, chunk)| {
            *w = chunk
                .iter()
                .enumerate()
                .fold(0u64, |acc, (j, &b)| acc | u64::from(b & 1) << j);
        });
}

/// Each part with the index of its first key in the concatenated input.
pub(crate) fn part_starts<'p, 'a>(
    parts: &'p [Part<'a>],
) -> impl Iterator<Item = (usize, &'p Part<'a>)> {
    parts.iter().scan(0, |start, p| {
        let here = *start;
        *start += p.values.len();
        Some((here, p))
    })
}

/// A part's keys as the SIMD backend takes them: in place where [`prepare`] allows, else their
/// hashes computed here ([`hashes`]).
pub(crate) enum BackendKeys<'a> {
    /// The keys themselves.
    Direct(Keys<'a>),
    /// Their hashes.
    Hashed(Vec<u64>),
}

impl BackendKeys<'_> {
    /// The keys in the backend's form.
    pub(crate) fn keys(&self) -> Keys<'_> {
        match self {
            BackendKeys::Direct(k) => *k,
            BackendKeys::Hashed(h) => Keys::Hashes(h),
        }
    }
}

/// The backend form of `part`'s keys for a filter hashing with `seed` (nulls included: callers
/// mask or refuse them).
pub(crate) fn backend_keys<'a>(part: &Part<'a>, seed: u64) -> Result<BackendKeys<'a>, Error> {
    check_seed(part, seed)?;
    match prepare(part)? {
        Some(keys) => Ok(BackendKeys::Direct(keys)),
        None => Ok(BackendKeys::Hashed(hashes(part, seed)?)),
    }
}

/// The hash of every key of `part` with `seed` (nulls included), on every core.
pub(crate) fn hashes(part: &Part<'_>, seed: u64) -> Result<Vec<u64>, Error> {
    // Checks the string offsets (hash_into slices by them) and the seed of hashes.
    prepare(part)?;
    check_seed(part, seed)?;
    let mut out = vec![0u64; part.values.len()];
    out.par_chunks_mut(HASH_CHUNK)
        .enumerate()
        .for_each(|(t, out)| hash_into(&part.values, t * HASH_CHUNK, seed, out));
    Ok(out)
}
