//! GPU benchmark: lookups and inserts per second for several filter sizes with keys already on the
//! device, the speed-of-light lookup kernel and the pinned host-to-device copy rate in the same
//! run, and end to end from pinned host memory. Device time from CUDA events; median of reps.
//!
//! Configuration (arguments `KEY=VALUE` or environment variables `BENCH_KEY`):
//! - `SIZES` filter sizes, default `1M,256M,2G,8G` (suffixes K, M, G are powers of two)
//! - `KEYS_LOG2` device-resident keys, default 30
//! - `E2E_KEYS_LOG2` keys streamed from pinned host memory, default 28
//! - `LAYOUTS` default `8x32,8x64,16x32,16x64`
//! - `REPS` default 5
//! - `CHUNK_LOG2` keys per streamed chunk, default 22
//! - `E2E_INSERT` insert kernel end to end: `bulk` (default) or `atomic`
//! - `SCRATCH_LOG2` scratch cap of the partitioned insert in hashes, default 32 (the batch)
//! - `PART_SWEEP` partition sizes tried for 8x32 at filters past L2, default `4M,8M,16M,24M,32M`
//!   (empty to skip)
//! - `SECTIONS` which tables to print, default `static,counting,spatial,window,lookup,e2e`; also
//!   `insert` (issue #25): every insert path of device keys by name beside `auto`, and every
//!   lookup path, at `INSERT_SIZES` (default `1M,256M,2G,8G,32G,64G`; each needs its size plus
//!   25 bytes per key of device memory, skipped if the device has less), `INSERT_LAYOUTS`
//!   (default `8x32`), `INSERT_KEYS_LOG2` (default 28), and the radix insert by
//!   `INSERT_PART_SWEEP` partition sizes past L2 (default `2M,8M`)
//! - counting filters (issue #14): `COUNTING_SIZES` bytes of counters, default `2G`;
//!   `COUNTING_KEYS_LOG2`, default 28
//! - spatial filters: `SPATIAL_SIZES` bytes of image, default `1M,256M,2G`; `SPATIAL_BITS` cell
//!   widths, default `4,8,16`; `SPATIAL_KEYS_LOG2`, default 28 (beside a static filter of the
//!   same image; the target: class lookups at 0.8× the static lookup at 2 GiB)
//! - retrieval tables (section `retrieval`, not in the default list): a table of
//!   2^`RETRIEVAL_KEYS_LOG2` keys (default 27) of `RETRIEVAL_VALUE_BITS` + `RETRIEVAL_CHECK_BITS`
//!   (default 32 + 32) beside a static 8x32 filter of the same bytes
//! - sliding windows: `WINDOW_GEN_BYTES` per generation, default `512M`; `WINDOW_G` default 4;
//!   `WINDOW_SPAN_LOG2` default 26; `WINDOW_KEYS_LOG2` default 28
//! - partitioned lookups (issue #17): `LOOKUP_SIZES` default `2G`; `LOOKUP_KEYS_LOG2` default 28;
//!   `LOOKUP_SWEEP` batch sizes `A..B` (log2, every other), default `20..28` (empty to skip);
//!   `LOOKUP_PART_SWEEP` partition sizes, default `8M,16M,24M,32M,48M` (empty to skip)
//! - `KIND_LAYOUTS` layouts of the counting, spatial, window and lookup tables, default `8x32`
//!
//! Built with `cargo bench -p bloomlanes-gpu --no-run` (the binary is the `gpu_bench-…` file it
//! names under `target/release/deps`), it runs without cargo: `gpu_bench SECTIONS=spatial`.
//! NVRTC is found as the library does (`BLOOMLANES_NVRTC`), and `BLOOMLANES_KERNEL_CACHE`
//! names compiled kernels to load instead of compiling them.
//!
//! The partitioned insert's scratch is sized to the batch by default (`SCRATCH_LOG2=32`: one
//! sweep of the filter per batch); `SCRATCH_LOG2=28` reproduces the earlier 2 GiB chunks.

use std::time::Instant;

use bloomlanes_core::{Layout, Params};
use bloomlanes_gpu::{
    probe, DeviceBuffer, DeviceKeys, GpuError, GpuFilter, GpuStream, InsertKernel, PinnedBuffer,
};

#[path = "gpu_bench/insert.rs"]
mod insert;
#[path = "gpu_bench/kinds.rs"]
mod kinds;
#[path = "gpu_bench/retrieval.rs"]
mod retrieval;
#[path = "gpu_bench/spatial.rs"]
mod spatial;

/// Seed of the device-resident keys.
const KEY_SEED: u64 = 0x5eed;

fn setting(args: &[String], key: &str, default: &str) -> String {
    for a in args {
        if let Some(v) = a.strip_prefix(&format!("{key}=")) {
            return v.to_string();
        }
    }
    std::env::var(format!("BENCH_{key}")).unwrap_or_else(|_| default.to_string())
}

/// The setting `key` as a list of sizes (`SIZES`-style: `1M,2G`; empty entries skipped).
fn size_list(args: &[String], key: &str, default: &str) -> Vec<u64> {
    setting(args, key, default)
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_size)
        .collect()
}

/// The setting `key` as a number.
fn number<T: std::str::FromStr>(args: &[String], key: &str, default: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    setting(args, key, default).parse().expect(key)
}

fn parse_size(s: &str) -> u64 {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K') | Some('k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().expect("size") * mul
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median device milliseconds of `reps` runs of `f(t)` on `stream`, each after `before(t)`
/// (untimed: e.g. clearing the filter `t`).
fn time_on<T>(
    reps: usize,
    stream: &GpuStream,
    t: &mut T,
    mut before: impl FnMut(&mut T) -> Result<(), GpuError>,
    mut f: impl FnMut(&mut T) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    let mut v = Vec::new();
    for _ in 0..reps {
        before(t)?;
        stream.synchronize()?;
        let timer = stream.timer()?;
        f(t)?;
        v.push(f64::from(timer.stop()?));
    }
    Ok(median(v))
}

/// The filters whose inserts are timed from empty.
trait Clear {
    fn clear_all(&mut self) -> Result<(), GpuError>;
}

impl Clear for GpuFilter {
    fn clear_all(&mut self) -> Result<(), GpuError> {
        self.clear()
    }
}

impl Clear for bloomlanes_gpu::GpuWindowFilter {
    fn clear_all(&mut self) -> Result<(), GpuError> {
        self.clear()
    }
}

impl Clear for bloomlanes_gpu::GpuSpatialFilter {
    fn clear_all(&mut self) -> Result<(), GpuError> {
        self.clear()
    }
}

/// Median device milliseconds of `reps` runs of `insert(g)` on `stream`, each into `g` emptied
/// first (untimed).
fn time_inserts<G: Clear>(
    reps: usize,
    stream: &GpuStream,
    g: &mut G,
    insert: impl FnMut(&mut G) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    time_on(reps, stream, g, |g| g.clear_all(), insert)
}

/// Median device milliseconds of `reps` runs of `f(t)` on `stream`.
fn time_with<T>(
    reps: usize,
    stream: &GpuStream,
    t: &mut T,
    f: impl FnMut(&mut T) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    time_on(reps, stream, t, |_| Ok(()), f)
}

/// Median device milliseconds of `reps` runs of `f` on `stream`.
fn time_ms(
    reps: usize,
    stream: &GpuStream,
    mut f: impl FnMut() -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    time_on(reps, stream, &mut (), |_| Ok(()), |_| f())
}

/// The partitioned insert of 8x32 filters past L2 in detail: the time of its phases for one
/// scratch-sized chunk (partition = histogram + scan + scatter; insert of the grouped hashes)
/// against the bulk-reduce insert of the same keys, then the whole insert of every key for
/// several partition sizes.
fn partition_details(
    sizes: &[u64],
    keys: &DeviceBuffer<u64>,
    reps: usize,
    sweep: &[u64],
    scratch_log2: u32,
) -> Result<(), GpuError> {
    let layout = Layout::L8x32;
    let n = keys.len();
    let l2 = GpuFilter::new(Params::new(layout, 1).with_seed(7))?.l2_bytes();
    let big: Vec<u64> = sizes.iter().copied().filter(|&s| s > l2).collect();
    if big.is_empty() || n == 0 {
        return Ok(());
    }
    let m = n.min(1 << scratch_log2);
    println!(
        "\npartitioned insert, {layout}, phases for the first 2^{} keys (one scratch chunk); device ms, median of {reps}\n",
        m.trailing_zeros()
    );
    println!("| filter | partitions | partition ms | insert grouped ms | total ms | G/s | bulk reduce insert ms | bulk reduce G/s |");
    println!("|---|---|---|---|---|---|---|---|");
    // The first m keys of `keys` (key i depends only on the seed and i).
    let first = DeviceBuffer::random_u64(m, KEY_SEED)?;
    let mut grouped = DeviceBuffer::<u64>::zeros(m)?;
    for &size in &big {
        let blocks = (size / layout.block_bytes() as u64) as u32;
        let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
        let gs = g.stream().clone();
        let part_ms = time_ms(reps, &gs, || {
            g.partition_device_async(DeviceKeys::U64(&first), &mut grouped, &gs)
        })?;
        let ins = |g: &mut GpuFilter, k: DeviceKeys<'_>| {
            time_on(
                reps,
                &gs,
                g,
                |g| g.clear(),
                |g| g.insert_device_async(k, &gs),
            )
        };
        g.set_insert_kernel(InsertKernel::BulkReduce);
        let grouped_ms = ins(&mut g, DeviceKeys::Hashes(&grouped))?;
        let direct_ms = ins(&mut g, DeviceKeys::U64(&first))?;
        let total = part_ms + grouped_ms;
        println!(
            "| {} | {} | {part_ms:.2} | {grouped_ms:.2} | {total:.2} | {:.2} | {direct_ms:.2} | {:.2} |",
            human(size),
            g.partitions(),
            m as f64 / total / 1e6,
            m as f64 / direct_ms / 1e6,
        );
    }
    drop(grouped);
    drop(first);
    if sweep.is_empty() {
        return Ok(());
    }
    println!(
        "\npartitioned insert, {layout}, all 2^{} keys, by partition size: G/s (partitions)\n",
        n.trailing_zeros()
    );
    let head: Vec<String> = sweep.iter().map(|&p| human(p)).collect();
    println!("| filter | {} |", head.join(" | "));
    println!("|---|{}", "---|".repeat(sweep.len()));
    for &size in &big {
        let blocks = (size / layout.block_bytes() as u64) as u32;
        let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
        g.set_insert_kernel(InsertKernel::Partitioned);
        g.set_scratch_keys(1 << scratch_log2);
        let gs = g.stream().clone();
        let mut cells = Vec::new();
        for &p in sweep {
            g.set_partition_bytes(p);
            g.insert_device(DeviceKeys::U64(keys))?;
            let ms = time_inserts(reps, &gs, &mut g, |g| {
                g.insert_device_async(DeviceKeys::U64(keys), &gs)
            })?;
            cells.push(format!("{:.2} ({})", n as f64 / ms / 1e6, g.partitions()));
        }
        println!("| {} | {} |", human(size), cells.join(" | "));
    }
    Ok(())
}

/// The static filter's tables: inserts (atomics, bulk reduce, partitioned) and lookups for each
/// size and layout against the speed of light, then the partitioned insert in detail.
#[allow(clippy::too_many_arguments)]
fn static_tables(
    sizes: &[u64],
    layouts: &[Layout],
    n: usize,
    reps: usize,
    sweep: &[u64],
    scratch_log2: u32,
    stream: &GpuStream,
) -> Result<(), GpuError> {
    let keys = DeviceBuffer::random_u64(n, KEY_SEED)?;
    let mut out = DeviceBuffer::<u8>::zeros(n)?;
    println!(
        "| filter | layout | insert G/s (atomics) | insert G/s (bulk reduce) | insert G/s (partitioned) | partitions | auto picks | lookup G/s | speed of light G/s | lookup / SoL |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut sol_by_size = Vec::new();
    for &size in sizes {
        // Speed of light: one random 32-byte read from a buffer of the same size per key.
        let sol = {
            let buf = DeviceBuffer::<u64>::zeros((size / 8) as usize)?;
            let ms = time_ms(reps, stream, || {
                GpuFilter::speed_of_light_async(&buf, &keys, &mut out, stream)
            })?;
            n as f64 / ms / 1e6
        };
        sol_by_size.push((size, sol));
        for &layout in layouts {
            let blocks = (size / layout.block_bytes() as u64) as u32;
            let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
            let gs = g.stream().clone();
            g.set_scratch_keys(1 << scratch_log2);
            let auto = g.insert_plan(n).kernel.name();
            // [atomics, bulk reduce, partitioned]; the partitioned insert allocates its scratch
            // buffer on first use, so it runs once untimed first.
            let mut ins = [0.0; 3];
            for (slot, kernel) in [
                (1, InsertKernel::BulkReduce),
                (0, InsertKernel::Atomic),
                (2, InsertKernel::Partitioned),
            ] {
                g.set_insert_kernel(kernel);
                if kernel == InsertKernel::Partitioned {
                    g.insert_device(DeviceKeys::U64(&keys))?;
                }
                let ms = time_inserts(reps, &gs, &mut g, |g| {
                    g.insert_device_async(DeviceKeys::U64(&keys), &gs)
                })?;
                ins[slot] = n as f64 / ms / 1e6;
            }
            let parts = g.partitions();
            g.release_scratch();
            let ms = time_ms(reps, &gs, || {
                g.contains_device_async(DeviceKeys::U64(&keys), &mut out, &gs)
            })?;
            let look = n as f64 / ms / 1e6;
            // Sanity: every inserted key is found.
            let sample = out.to_host()?;
            assert!(
                sample.iter().take(1 << 20).all(|&b| b == 1),
                "lookup missed an inserted key"
            );
            println!(
                "| {} | {layout} | {:.2} | {:.2} | {:.2} | {parts} | {auto} | {look:.2} | {sol:.2} | {:.3} |",
                human(size),
                ins[0],
                ins[1],
                ins[2],
                look / sol
            );
        }
    }
    partition_details(sizes, &keys, reps, sweep, scratch_log2)?;
    Ok(())
}

fn main() -> Result<(), GpuError> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.contains('='))
        .collect();
    let sizes: Vec<u64> = size_list(&args, "SIZES", "1M,256M,2G,8G");
    let keys_log2: u32 = number(&args, "KEYS_LOG2", "30");
    let e2e_log2: u32 = number(&args, "E2E_KEYS_LOG2", "28");
    let reps: usize = number(&args, "REPS", "5");
    let chunk_log2: u32 = number(&args, "CHUNK_LOG2", "22");
    let scratch_log2: u32 = number(&args, "SCRATCH_LOG2", "32");
    let sections = setting(
        &args,
        "SECTIONS",
        "static,counting,spatial,window,lookup,e2e",
    );
    let section = |name: &str| sections.split(',').any(|s| s.trim() == name);
    let sweep: Vec<u64> = size_list(&args, "PART_SWEEP", "4M,8M,16M,24M,32M");
    let layouts: Vec<Layout> = setting(&args, "LAYOUTS", "8x32,8x64,16x32,16x64")
        .split(',')
        .map(|n| Layout::from_name(n.trim()).expect("layout"))
        .collect();

    let dev = match probe() {
        Ok(d) => d,
        Err(e) => {
            println!("SKIP: gpu_bench: {e}");
            return Ok(());
        }
    };
    if let Err(e) = bloomlanes_gpu::require_nvrtc() {
        println!("SKIP: gpu_bench: {e}");
        return Ok(());
    }
    let (nv_major, nv_minor) = bloomlanes_gpu::nvrtc_version()?;
    println!(
        "device: {} ({} GiB, sm_{}{}), NVRTC {nv_major}.{nv_minor}",
        dev.name,
        dev.memory_bytes >> 30,
        dev.compute_capability.0,
        dev.compute_capability.1
    );
    let n = 1usize << keys_log2;
    println!(
        "keys on device: 2^{keys_log2} random u64; reps {reps}, median; G/s = 10^9 keys per second\n"
    );
    let stream = GpuStream::new()?;
    if section("static") {
        static_tables(&sizes, &layouts, n, reps, &sweep, scratch_log2, &stream)?;
    }
    if section("insert") {
        insert::inserts(&args, reps, dev.memory_bytes)?;
    }
    let layouts_kinds: Vec<Layout> = setting(&args, "KIND_LAYOUTS", "8x32")
        .split(',')
        .map(|n| Layout::from_name(n.trim()).expect("layout"))
        .collect();
    if section("counting") {
        kinds::counting(&args, reps, &layouts_kinds)?;
    }
    if section("spatial") {
        spatial::spatial(&args, reps, &layouts_kinds)?;
    }
    if section("retrieval") {
        retrieval::retrieval(&args, reps)?;
    }
    if section("window") {
        kinds::window(&args, reps, &layouts_kinds)?;
    }
    if section("lookup") {
        kinds::lookups(&args, reps, &layouts_kinds)?;
    }
    if !section("e2e") {
        return Ok(());
    }

    // End to end from pinned host memory.
    let m = 1usize << e2e_log2;
    println!("\nend to end from pinned host memory: 2^{e2e_log2} u64 keys, chunks of 2^{chunk_log2}, 3 streams");
    let mut host_keys = PinnedBuffer::<u64>::zeros(m)?;
    {
        let dk = DeviceBuffer::random_u64(m, 0xe2e)?;
        let v = dk.to_host()?;
        host_keys.copy_from_slice(&v);
    }
    let mut host_out = PinnedBuffer::<u8>::zeros(m)?;
    let mut dev_keys = DeviceBuffer::<u64>::zeros(m)?;
    let h2d_ms = time_ms(reps, &stream, || {
        dev_keys.copy_from_pinned(&host_keys, &stream)
    })?;
    let h2d_gbs = (m * 8) as f64 / h2d_ms / 1e6;
    let h2d_keys = m as f64 / h2d_ms / 1e6;
    println!("H2D pinned copy: {h2d_gbs:.1} GB/s = {h2d_keys:.2} G keys/s\n");
    drop(dev_keys);
    println!("| filter | layout | op | G keys/s | GB/s of keys | / H2D rate |");
    println!("|---|---|---|---|---|---|");
    for &size in sizes.iter().filter(|&&s| s == 2 << 30 || sizes.len() == 1) {
        for &layout in &layouts {
            let blocks = (size / layout.block_bytes() as u64) as u32;
            let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
            g.set_chunk_keys(1 << chunk_log2);
            if setting(&args, "E2E_INSERT", "bulk") == "atomic" {
                g.set_insert_kernel(InsertKernel::Atomic);
            }
            let mut t = Vec::new();
            for _ in 0..reps {
                g.clear()?;
                let s = Instant::now();
                g.insert_pinned(&host_keys)?;
                t.push(s.elapsed().as_secs_f64());
            }
            let ins = m as f64 / median(t) / 1e9;
            let mut t = Vec::new();
            for _ in 0..reps {
                let s = Instant::now();
                g.contains_pinned(&host_keys, &mut host_out)?;
                t.push(s.elapsed().as_secs_f64());
            }
            assert!(
                host_out.iter().all(|&b| b == 1),
                "end-to-end lookup missed a key"
            );
            let look = m as f64 / median(t) / 1e9;
            for (op, r) in [("insert", ins), ("lookup", look)] {
                println!(
                    "| {} | {layout} | {op} | {r:.2} | {:.1} | {:.3} |",
                    human(size),
                    r * 8.0,
                    r / h2d_keys
                );
            }
        }
    }
    Ok(())
}
