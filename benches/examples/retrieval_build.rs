//! One timed build of a retrieval table, printing wall time and this process's CPU time, so that
//! build rates can be read on a shared machine (criterion's wall clock counts the other
//! processes' share): `cargo run --release -p bloomlanes-benches --example retrieval_build --
//! MKEYS V F ARITY core|simd|xorf`.

use std::time::Instant;

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{xxh64_u64, Layout, Params};
use bloomlanes_simd::Probe;

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize| {
        a.get(i)
            .unwrap_or_else(|| panic!("usage: MKEYS V F ARITY core|simd"))
    };
    let n = (arg(1).parse::<f64>().unwrap() * 1e6) as u64;
    let (v, f, arity): (u8, u8, u8) = (
        arg(2).parse().unwrap(),
        arg(3).parse().unwrap(),
        arg(4).parse().unwrap(),
    );
    let hashes: Vec<u64> = (0..n).map(|i| xxh64_u64(i, 3)).collect();
    let mask = ((1u64 << v) - 1) as u32;
    let values: Vec<u32> = hashes.iter().map(|&h| (h >> 7) as u32 & mask).collect();
    let spec = RetrievalSpec::new(v, f).with_arity(arity);
    let base = Params::new(Layout::L8x64, 1);
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let t = match arg(5).as_str() {
        "core" => RetrievalTable::build(base, spec, &hashes, &values),
        "simd" => Probe::active().build_retrieval(base, spec, &hashes, &values),
        _ => {
            // The peer: xorf's BinaryFuse16 (3-wise, 16-bit fingerprints) from the same keys.
            let f = xorf::BinaryFuse16::try_from(&hashes[..]).unwrap();
            let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
            println!(
                "{n} keys xorf BinaryFuse16: wall {wall:.2} s ({:.2} M keys/s), CPU {cpu:.2} s ({:.2} M keys/s per CPU-second), {:.3} bits/key",
                n as f64 / wall / 1e6,
                n as f64 / cpu / 1e6,
                f.fingerprints.len() as f64 * 16.0 / n as f64
            );
            return;
        }
    }
    .unwrap();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    println!(
        "{} keys v={v} f={f} {arity}-wise {}: wall {wall:.2} s ({:.2} M keys/s), CPU {cpu:.2} s ({:.2} M keys/s per CPU-second), x{:.4} of v+f",
        n,
        arg(5),
        n as f64 / wall / 1e6,
        n as f64 / cpu / 1e6,
        t.bits_per_key().unwrap_or(0.0) / f64::from(v + f)
    );
}
