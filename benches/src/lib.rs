//! The set-up every benchmark of bloomlanes shares (the criterion benches in `benches/` and the
//! measuring examples in `examples/`): random keys, sizes from the environment, the clock a
//! measurement runs on (wall time, or the calling thread's CPU time on a machine shared with
//! other jobs) and the criterion driver that picks it, the speed-of-light reference, and the
//! filters of the kinds' benchmarks filled the same way everywhere.

use std::time::{Duration, Instant};

use bloomlanes_core::{Filter, Keys, Layout, Params};
use bloomlanes_simd::Probe;
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::Criterion;

pub mod kinds;

/// Bits per key of the benchmarks' filters.
pub const BITS_PER_KEY: usize = 10;

/// One step of SplitMix64: the benchmarks' key generator.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` random keys drawn from `seed`.
pub fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n).map(|_| splitmix(&mut s)).collect()
}

/// `n` keys of `inserted` picked at random (with `seed`): present keys for lookups.
pub fn present(inserted: &[u64], n: usize, seed: u64) -> Vec<u64> {
    random(n, seed)
        .into_iter()
        .map(|r| inserted[(r % inserted.len() as u64) as usize])
        .collect()
}

/// A size in bytes: `64K`, `1M`, `1G` or a plain number.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_uppercase();
    let (num, mul) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (&s[..], 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mul)
}

/// A size from the environment variable `var`, else `default`.
///
/// # Panics
/// If the variable holds something that is not a size.
pub fn env_size(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(s) => parse_size(&s).unwrap_or_else(|| panic!("{var}={s:?} is not a size")),
        Err(_) => default,
    }
}

/// A number from the environment variable `var`, else `default`.
pub fn env_or<T: std::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The filter sizes of `BLOOMLANES_BENCH_SIZES` (comma-separated, else `default`), each a
/// multiple of 64 bytes, with their labels.
///
/// # Panics
/// On a bad size.
pub fn sizes(default: &str) -> Vec<(String, usize)> {
    let spec = std::env::var("BLOOMLANES_BENCH_SIZES").unwrap_or_else(|_| default.into());
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let bytes = parse_size(s).unwrap_or_else(|| panic!("bad size {s:?}"));
            assert!(
                bytes >= 1024 && bytes.is_multiple_of(64),
                "size {s} must be a multiple of 64 bytes, at least 1K"
            );
            (s.trim().to_string(), bytes)
        })
        .collect()
}

/// A static 8x32 filter of `bytes` bytes with `keys` inserted.
pub fn static_filter(probe: &Probe, bytes: usize, keys: &[u64]) -> Filter {
    let mut f = Filter::new(Params::new(
        Layout::L8x32,
        (bytes / Layout::L8x32.block_bytes()) as u32,
    ));
    probe.par_insert(f.as_view_mut(), Keys::U64(keys));
    f
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
#[cfg(unix)]
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, which is all
    // `clock_gettime` writes; the clock id is a constant the platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The CPU time the calling thread has used: not measurable here.
#[cfg(not(unix))]
pub fn thread_cpu_time() -> Duration {
    panic!("the thread-cpu clock needs a Unix clock")
}

/// The clock a measurement runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Wall time.
    Wall,
    /// The calling thread's CPU time: leaves out the time the thread waits for a core, for
    /// A/B comparisons on a machine shared with other jobs (one-thread operations only: the
    /// all-core ones run on other threads while this one waits).
    ThreadCpu,
}

impl Clock {
    /// The clock named by the environment variable `var` (`wall`, the default, or
    /// `thread-cpu`).
    ///
    /// # Panics
    /// On another value.
    pub fn from_env(var: &str) -> Clock {
        match std::env::var(var).as_deref() {
            Err(_) | Ok("") | Ok("wall") => Clock::Wall,
            Ok("thread-cpu") => Clock::ThreadCpu,
            Ok(other) => panic!("{var}={other:?}: expected `wall` or `thread-cpu`"),
        }
    }

    /// The time now on this clock (from an arbitrary origin).
    pub fn now(self) -> Duration {
        match self {
            Clock::Wall => {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                START.get_or_init(Instant::now).elapsed()
            }
            Clock::ThreadCpu => thread_cpu_time(),
        }
    }

    /// Seconds `run` takes on this clock.
    pub fn seconds(self, run: impl FnOnce()) -> f64 {
        let t = self.now();
        run();
        (self.now().saturating_sub(t)).as_secs_f64()
    }
}

/// Times `op` only, `iters` times, running `undo` (untimed) after each, so that every timed
/// run starts from the same filter state.
pub fn timed<S: ?Sized>(
    clock: Clock,
    iters: u64,
    state: &mut S,
    mut op: impl FnMut(&mut S),
    mut undo: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = clock.now();
        op(state);
        total += clock.now().saturating_sub(t);
        undo(state);
    }
    total
}

/// Criterion measurement by [`thread_cpu_time`]; values are nanoseconds like criterion's wall
/// time, whose formatter it borrows.
pub struct ThreadCpuTime(WallTime);

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.0.formatter()
    }
}

/// A set of criterion benchmarks, run on either clock.
pub trait Benches {
    /// Runs every benchmark with `c`, whose measurement is `clock`.
    fn run<M: Measurement<Value = Duration>>(&self, c: &mut Criterion<M>, clock: Clock);
}

/// The benchmarks' main: criterion configured for short runs (10 samples, 2 s each) and from
/// the command line, on the clock of `BLOOMLANES_BENCH_CLOCK` (`wall` or `thread-cpu`).
pub fn criterion_main(benches: impl Benches) {
    let config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    match Clock::from_env("BLOOMLANES_BENCH_CLOCK") {
        Clock::Wall => {
            let mut c = config.configure_from_args();
            benches.run(&mut c, Clock::Wall);
            c.final_summary();
        }
        Clock::ThreadCpu => {
            let mut c = config
                .with_measurement(ThreadCpuTime(WallTime))
                .configure_from_args();
            benches.run(&mut c, Clock::ThreadCpu);
            c.final_summary();
        }
    }
}

/// Random one-cache-line reads, one per key, with bloomlanes' batching: a group of 32 keys has
/// its line indices computed and prefetched while the previous group's lines are read. No hash:
/// the keys are already random, so this is what memory allows.
pub fn speed_of_light(buf: &[u64], keys: &[u64]) -> u64 {
    const G: usize = 32;
    let lines = (buf.len() / 8) as u64;
    let index = |k: u64| (((k >> 32) * lines) >> 32) as usize * 8;
    let prefetch = |i: usize| {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch never faults; `i` is in bounds anyway; SSE is baseline on x86_64.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(buf.as_ptr().add(i).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    };
    let mut acc = 0u64;
    let mut cur = [0usize; G];
    let mut next = [0usize; G];
    let groups: Vec<&[u64]> = keys.chunks(G).collect();
    for (c, &k) in cur.iter_mut().zip(groups[0]) {
        *c = index(k);
        prefetch(*c);
    }
    for g in 0..groups.len() {
        if let Some(ng) = groups.get(g + 1) {
            for (n, &k) in next.iter_mut().zip(*ng) {
                *n = index(k);
                prefetch(*n);
            }
        }
        for &i in &cur[..groups[g].len()] {
            acc = acc.wrapping_add(buf[i]);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        let cases = [
            ("64K", Some(64 << 10)),
            (" 1g", Some(1 << 30)),
            ("4096", Some(4096)),
            ("M", None),
            ("99999999999999999999G", None),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_size(text), bytes, "{text:?}");
        }
    }

    #[test]
    fn speed_of_light_reads_every_key_once() {
        let buf: Vec<u64> = (0..64).collect();
        let keys = random(100, 1);
        let want = keys
            .iter()
            .map(|&k| (((k >> 32) * 8) >> 32) * 8)
            .fold(0u64, u64::wrapping_add);
        assert_eq!(speed_of_light(&buf, &keys), want);
    }
}
