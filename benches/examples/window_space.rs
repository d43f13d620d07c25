//! The sliding window's space against a static filter at the same false-positive rate (issue
//! #14): `cargo run --release -p bloomlanes-benches --example window_space -- [N]`.
//!
//! For each rate (1 %, 0.1 %, 0.01 %) and shape (4 generations of 8x32, 4 generations with the
//! layout of fewest bits, and `WindowFilter::smallest_for_keys`), a window over the last `N` keys
//! (default 2^20) is filled to its worst case (every generation full) and a static filter of
//! the window's `N` keys is sized by `math::auto_size`; both are measured over 2^21 absent keys.
//! Prints bits per key of the window, the ratio to the static filter, the expected (worst-case)
//! and measured rates, and the bytes a lookup reads.

use bloomlanes_benches::random as keys;
use bloomlanes_core::{math, Filter, FilterKind, Keys, Layout, Params, WindowFilter};
use bloomlanes_simd::Probe;

/// The fraction of `absent` that `contains` finds.
fn rate_of(absent: &[u64], contains: impl FnOnce(&[u64], &mut [u8])) -> f64 {
    let mut hits = vec![0u8; absent.len()];
    contains(absent, &mut hits);
    hits.iter().map(|&h| f64::from(h)).sum::<f64>() / absent.len() as f64
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    let probe = Probe::active();
    let absent = keys(1 << 21, 0xab5e);
    println!(
        "| rate | shape | bits/key of the window | / static | expected rate | measured rate | \
         bytes read per lookup |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for rate in [0.01, 0.001, 0.0001] {
        let (layout, blocks) = math::auto_size(n, rate).unwrap();
        let mut st = Filter::new(Params::new(layout, blocks));
        probe.par_insert(st.as_view_mut(), Keys::U64(&keys(n as usize, 1)));
        let s_bits = st.byte_len() as f64 * 8.0 / n as f64;
        let s_rate = rate_of(&absent, |a, o| {
            probe.contains(st.as_view(), Keys::U64(a), o)
        });
        println!(
            "| {rate} | static {} | {s_bits:.2} | 1 | {:.3e} | {s_rate:.3e} | {} |",
            layout.name(),
            math::false_positive_rate(layout, blocks, n),
            layout.block_bytes()
        );
        let best4 = Layout::ALL
            .into_iter()
            .min_by_key(|&l| WindowFilter::for_keys(n, 4, rate, l).unwrap().words().len())
            .unwrap();
        let shapes = [
            (
                "4 generations, 8x32",
                WindowFilter::for_keys(n, 4, rate, Layout::L8x32),
            ),
            (
                "4 generations, fewest bits",
                WindowFilter::for_keys(n, 4, rate, best4),
            ),
            ("smallest (auto)", WindowFilter::smallest_for_keys(n, rate)),
        ];
        for (name, w) in shapes {
            let mut w = w.unwrap();
            let p = *w.params();
            let FilterKind::Window {
                generations, span, ..
            } = p.kind
            else {
                unreachable!("a window")
            };
            let gens = u64::from(generations) + 1;
            // The worst case: g + 1 full generations, the current one full.
            probe.insert_window_filter(&mut w, Keys::U64(&keys((span * gens) as usize, 2)));
            let w_bits = w.words().len() as f64 * 32.0 / n as f64;
            let w_rate = rate_of(&absent, |a, o| probe.contains_window(&w, Keys::U64(a), o));
            println!(
                "| {rate} | {name}: {} × {generations} + 1 | {w_bits:.2} | {:.3} | {:.3e} | \
                 {w_rate:.3e} | {} |",
                p.layout.name(),
                w_bits / s_bits,
                math::window_false_positive_rate(p.layout, p.blocks, span, generations),
                gens as usize * p.layout.block_bytes()
            );
        }
    }
}
