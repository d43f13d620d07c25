//! The `insert` section of `gpu_bench` (issue #25): every insert path of device-resident u64 keys
//! by name beside `auto`, at sizes from 1 MiB to 64 GiB, with the cost model's estimate of each
//! path; then every lookup path beside `auto`; then the radix insert by partition size past L2.
//! Every insert is checked (all keys found afterwards) so that a wrong kernel cannot post a fast
//! figure, and every size whose buffers the device cannot hold prints a SKIP row instead.
//!
//! Device memory per size `F` with `n` keys, at its peak: the filter `F`, the keys `8 n`, the
//! answers `n`, and the larger scratch of a grouping path (`16 n` for two radix levels; the
//! partitioned lookups' `12 n` comes after it is released): `F + 25 n`, at the defaults (2^28
//! keys) `F` + 6.25 GiB, 70.25 GiB at 64 GiB; a size is skipped unless that and 2 GiB more fit
//! in the device's memory.

use bloomlanes_core::{Layout, Params};
use bloomlanes_gpu::{
    DeviceBuffer, DeviceKeys, GpuError, GpuFilter, GpuStream, InsertKernel, LookupKernel,
    LookupOutput,
};

use super::{human, number, setting, size_list, time_inserts, time_with};

/// Bytes of device memory a size needs besides the filter, per key (see the module docs).
const BYTES_PER_KEY: u64 = 8 + 1 + 16;
/// Device memory left free for the driver and the kernels' images.
const MARGIN_BYTES: u64 = 2 << 30;

/// The paths timed, in print order: every path by name, then `auto`.
const PATHS: [InsertKernel; 6] = [
    InsertKernel::Atomic,
    InsertKernel::BulkReduce,
    InsertKernel::Partitioned,
    InsertKernel::Radix,
    InsertKernel::Sliced,
    InsertKernel::Auto,
];

/// `INSERT_SIZES` (default `1M,256M,2G,8G,32G,64G`) of `INSERT_LAYOUTS` (default `8x32`) with
/// 2^`INSERT_KEYS_LOG2` device keys (default 28); `INSERT_PART_SWEEP` partition sizes of the radix
/// insert past L2 (default `2M,8M`, empty to skip).
pub fn inserts(args: &[String], reps: usize, memory_bytes: u64) -> Result<(), GpuError> {
    let sizes = size_list(args, "INSERT_SIZES", "1M,256M,2G,8G,32G,64G");
    let layouts: Vec<Layout> = setting(args, "INSERT_LAYOUTS", "8x32")
        .split(',')
        .map(|n| Layout::from_name(n.trim()).expect("layout"))
        .collect();
    let log2: u32 = number(args, "INSERT_KEYS_LOG2", "28");
    let sweep = size_list(args, "INSERT_PART_SWEEP", "2M,8M");
    let n = 1usize << log2;
    let keys = DeviceBuffer::random_u64(n, super::KEY_SEED)?;
    let mut out = DeviceBuffer::<u8>::zeros(n)?;
    println!(
        "\ninsert paths (issue #25): 2^{log2} device keys; G keys/s, median of {reps}; est = the cost model's estimate; auto / best = auto's rate over the fastest path's\n"
    );
    let names: Vec<&str> = PATHS.iter().map(|k| k.name()).collect();
    println!(
        "| filter | layout | {} | auto picks | best | auto / best | radix plan | est {} |",
        names.join(" | "),
        names[..5].join(" | est ")
    );
    println!("|---|---|{}", "---|".repeat(2 * PATHS.len() + 3));
    let (mut lookups, mut sweeps) = (Vec::new(), Vec::new());
    for &size in &sizes {
        let need = size + n as u64 * BYTES_PER_KEY + MARGIN_BYTES;
        for &layout in &layouts {
            if need > memory_bytes {
                println!(
                    "| {} | {layout} | SKIP: needs {} of {} |",
                    human(size),
                    human(need),
                    human(memory_bytes)
                );
                continue;
            }
            let blocks = (size / layout.block_bytes() as u64) as u32;
            let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
            let k = &keys;
            match row(Size::of(&mut g, k, &mut out, reps)) {
                Ok(line) => println!("| {} | {layout} | {line} |", human(size)),
                Err(e @ GpuError::OutOfMemory { .. }) => {
                    // No lookup row or sweep either: they need the same memory.
                    println!("| {} | {layout} | SKIP: {e} |", human(size));
                    continue;
                }
                Err(e) => return Err(e),
            }
            let line = lookup_row(Size::of(&mut g, k, &mut out, reps))?;
            lookups.push((size, layout, line));
            if size > 2 * g.l2_bytes() && !sweep.is_empty() {
                sweeps.push((size, layout, part_sweep(&mut g, &keys, reps, &sweep)?));
            }
        }
    }
    println!("\nlookup paths: the same keys, bytes out; G keys/s, median of {reps}\n");
    println!("| filter | layout | direct | partitioned | auto | auto picks | auto / best |");
    println!("|---|---|---|---|---|---|---|");
    for (size, layout, line) in lookups {
        println!("| {} | {layout} | {line} |", human(size));
    }
    println!("\nradix insert by partition size past L2: G keys/s (coarse × fine partitions)\n");
    for (size, layout, line) in sweeps {
        println!("- {} {layout}: {line}", human(size));
    }
    Ok(())
}

/// G keys/s of `run` on `g` under each of `settings` (applied by `set`): one untimed run (it
/// allocates a grouping path's scratch), then the median of `reps` timed ones (inserts into the
/// filter emptied first), then a check that every key is found (`lookups`: in the run's own
/// answers in `out`; inserts: by a direct lookup); the scratch is released after each setting.
#[allow(clippy::too_many_arguments)]
fn rates<K: Copy + std::fmt::Debug>(
    g: &mut GpuFilter,
    keys: &DeviceBuffer<u64>,
    out: &mut DeviceBuffer<u8>,
    reps: usize,
    settings: &[K],
    lookups: bool,
    set: impl Fn(&mut GpuFilter, K),
    mut run: impl FnMut(&mut GpuFilter, &mut DeviceBuffer<u8>, &GpuStream) -> Result<(), GpuError>,
) -> Result<Vec<f64>, GpuError> {
    let gs = g.stream().clone();
    let mut rates = Vec::new();
    for &k in settings {
        set(g, k);
        run(g, out, &gs)?;
        gs.synchronize()?;
        let ms = if lookups {
            time_with(reps, &gs, g, |g| run(g, out, &gs))?
        } else {
            let ms = time_inserts(reps, &gs, g, |g| run(g, out, &gs))?;
            g.contains_device(DeviceKeys::U64(keys), out)?;
            ms
        };
        gs.synchronize()?;
        assert!(
            out.to_host()?.iter().all(|&b| b == 1),
            "{k:?}: an inserted key is not found"
        );
        g.release_scratch();
        rates.push(keys.len() as f64 / ms / 1e6);
    }
    Ok(rates)
}

/// One size's filter and what its rows run on.
struct Size<'a> {
    g: &'a mut GpuFilter,
    keys: &'a DeviceBuffer<u64>,
    out: &'a mut DeviceBuffer<u8>,
    reps: usize,
}

impl<'a> Size<'a> {
    fn of(
        g: &'a mut GpuFilter,
        keys: &'a DeviceBuffer<u64>,
        out: &'a mut DeviceBuffer<u8>,
        reps: usize,
    ) -> Size<'a> {
        Size { g, keys, out, reps }
    }
}

/// One size's insert row: each path's rate, what `auto` picked and how far from the best, the
/// radix plan, the estimates.
fn row(s: Size<'_>) -> Result<String, GpuError> {
    let Size { g, keys, out, reps } = s;
    let n = keys.len();
    let set = |g: &mut GpuFilter, k| g.set_insert_kernel(k);
    let insert = |g: &mut GpuFilter, _: &mut DeviceBuffer<u8>, gs: &GpuStream| {
        g.insert_device_async(DeviceKeys::U64(keys), gs)
    };
    let rates = rates(g, keys, out, reps, &PATHS, false, set, insert)?;
    g.set_insert_kernel(InsertKernel::Auto);
    let auto = g.insert_plan(n);
    let (best, best_rate) = PATHS[..5]
        .iter()
        .zip(&rates)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("paths");
    let radix = g.insert_plan_with(InsertKernel::Radix, n);
    let est: Vec<String> = PATHS[..5]
        .iter()
        .map(|&k| {
            format!(
                "{:.2}",
                n as f64 / g.insert_plan_with(k, n).estimate_ms / 1e6
            )
        })
        .collect();
    let cells: Vec<String> = rates.iter().map(|r| format!("{r:.2}")).collect();
    Ok(format!(
        "{} | {} | {} | {:.3} | {} × {} | {}",
        cells.join(" | "),
        auto.kernel.name(),
        best.name(),
        rates[5] / best_rate,
        radix.coarse.max(1),
        radix.fine(),
        est.join(" | ")
    ))
}

/// One size's lookup row: direct, partitioned and auto into bytes.
fn lookup_row(s: Size<'_>) -> Result<String, GpuError> {
    let Size { g, keys, out, reps } = s;
    let n = keys.len();
    let kernels = [
        LookupKernel::Direct,
        LookupKernel::Partitioned,
        LookupKernel::Auto,
    ];
    let set = |g: &mut GpuFilter, k| g.set_lookup_kernel(k);
    let lookup = |g: &mut GpuFilter, out: &mut DeviceBuffer<u8>, gs: &GpuStream| {
        let answers = LookupOutput::Bytes(out);
        g.lookup_device_async(DeviceKeys::U64(keys), answers, gs)
            .map(|_| ())
    };
    let rates = rates(g, keys, out, reps, &kernels, true, set, lookup)?;
    let picks = if g.lookup_partitioned_for(n) {
        "partitioned"
    } else {
        "direct"
    };
    Ok(format!(
        "{:.2} | {:.2} | {:.2} | {picks} | {:.3}",
        rates[0],
        rates[1],
        rates[2],
        rates[2] / rates[0].max(rates[1])
    ))
}

/// The radix insert of `keys` by partition size: `G/s (coarse × fine)` for each of `sizes`.
fn part_sweep(
    g: &mut GpuFilter,
    keys: &DeviceBuffer<u64>,
    reps: usize,
    sizes: &[u64],
) -> Result<String, GpuError> {
    let n = keys.len();
    let gs = g.stream().clone();
    g.set_insert_kernel(InsertKernel::Radix);
    let mut cells = Vec::new();
    for &p in sizes {
        g.set_partition_bytes(p);
        g.insert_device(DeviceKeys::U64(keys))?;
        let ms = time_inserts(reps, &gs, g, |g| {
            g.insert_device_async(DeviceKeys::U64(keys), &gs)
        })?;
        let plan = g.insert_plan(n);
        cells.push(format!(
            "{}: {:.2} ({} × {})",
            human(p),
            n as f64 / ms / 1e6,
            plan.coarse.max(1),
            plan.fine()
        ));
    }
    g.set_partition_bytes(0);
    g.release_scratch();
    Ok(cells.join(", "))
}
