//! `peers`: bloomlanes and the Rust peers (`sbbf-rs-safe`, `parquet`'s `Sbbf`, `fastbloom`) on
//! the keys and method of the C++ peer drivers in `benches/peers/` (`pf_driver` for
//! tum-db/partitioned-filters, `sbf_driver` for libSBF), printing the same CSV rows, so that
//! `benches/peers/run.py` can put every implementation into one table.
//!
//! ```text
//! peers --header
//! peers static  --impl bloomlanes|sbbf-rs-safe|parquet|fastbloom --keys N --bytes B
//!               [--expected-keys N] [--threads 1] [--reps 5] [--lookups L] [--fpr-keys M]
//!               [--clock wall|cpu]
//! peers spatial --keys N --classes C [--cells-per-key 8] [--cell-bits 4]
//!               [--backend scalar|simd] [--threads 1] [--reps 5] [--lookups L] [--clock ...]
//! ```
//!
//! Keys (as in the C++ drivers): build keys = splitmix64 from state 1; absent keys = splitmix64
//! from state 2; lookups = L/2 present keys (key `j*n/(L/2)`) and L/2 absent ones, shuffled by
//! splitmix64 from state 3; extra false-positive probes = splitmix64 from state 4.
//!
//! A build rep allocates a zeroed filter of `--bytes` and inserts the N keys (as partitioned-
//! filters' `construct`); a lookup rep counts the positives among the L lookups. `--clock cpu`
//! times the calling thread's CPU time (one thread only: for a machine shared with other jobs).

mod spatial;
mod statics;

use bloomlanes_benches::{parse_size, random, splitmix, Clock};

/// The lookup batch: `l/2` present keys spread over `keys`, `l - l/2` absent ones, shuffled;
/// with each entry's index into `keys` (or `None` for an absent key).
pub fn lookups(keys: &[u64], l: usize) -> (Vec<u64>, Vec<Option<usize>>) {
    let half = l / 2;
    let mut look: Vec<u64> = (0..half)
        .map(|j| keys[present_index(keys.len(), half, j)])
        .collect();
    let mut from: Vec<Option<usize>> = (0..half)
        .map(|j| Some(present_index(keys.len(), half, j)))
        .collect();
    look.extend(random(l - half, 2));
    from.extend(std::iter::repeat_n(None, l - half));
    let mut s = 3u64;
    for i in (2..=l).rev() {
        let r = (splitmix(&mut s) % i as u64) as usize;
        look.swap(i - 1, r);
        from.swap(i - 1, r);
    }
    (look, from)
}

/// The index of the `j`-th of `half` present lookups among `n` keys.
pub fn present_index(n: usize, half: usize, j: usize) -> usize {
    ((j as u128 * n as u128) / half as u128) as usize
}

/// The command line, flag by flag.
pub struct Args {
    rest: Vec<String>,
}

impl Args {
    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        let i = self.rest.iter().position(|a| a == name)?;
        match self.rest.get(i + 1) {
            Some(v) => Some(v.as_str()),
            None => fail(&format!("{name} needs a value")),
        }
    }

    /// `--name` as a size (digits, then K, M or G), or `default`.
    pub fn size(&self, name: &str, default: usize) -> usize {
        self.get(name).map_or(default, |s| {
            parse_size(s).unwrap_or_else(|| {
                fail(&format!(
                    "{name}: cannot read {s:?} as a size (digits, then K, M or G)"
                ))
            })
        })
    }

    /// `--clock`: wall time, or the calling thread's CPU time (one thread only).
    pub fn clock(&self, threads: usize) -> Clock {
        match self.get("--clock") {
            None | Some("wall") => Clock::Wall,
            Some("cpu") if threads <= 1 => Clock::ThreadCpu,
            Some("cpu") => fail("--clock cpu times one thread only"),
            Some(c) => fail(&format!("--clock is wall or cpu, not {c}")),
        }
    }
}

/// The name of `clock` in a row's notes.
pub fn clock_name(clock: Clock) -> &'static str {
    match clock {
        Clock::Wall => "wall-clock",
        Clock::ThreadCpu => "cpu-clock",
    }
}

/// Exits with status 2 and a message naming the problem.
pub fn fail(msg: &str) -> ! {
    eprintln!("peers: {msg}");
    std::process::exit(2)
}

/// Median, smallest and largest of the rates.
pub fn summarize(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Runs `f` on a pool of `threads` threads (rayon), or on this thread for 1.
pub fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    if threads <= 1 {
        return f();
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot start {threads} threads: {e}")))
        .install(f)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        fail("give --header, static or spatial (see the source's first lines)");
    };
    let args = Args {
        rest: argv[1..].to_vec(),
    };
    match cmd.as_str() {
        "--header" => println!(
            "implementation,op,filter_bytes,keys,threads,mkeys_s_median,mkeys_s_min,mkeys_s_max,\
             fpr_measured,fpr_probes,notes"
        ),
        "static" => statics::run(&args),
        "spatial" => spatial::run(&args),
        c => fail(&format!(
            "unknown command {c} (--header, static or spatial)"
        )),
    }
}
