//! The sections of `gpu_bench` for issues #14 and #17: counting-filter inserts, deletes and
//! lookups; sliding-window inserts and lookups; partitioned lookups into bytes, bitmaps and
//! positions against the direct lookup and the speed-of-light kernel, and the batch size from
//! which partitioning pays. Every section checks its answers (all present keys found, every
//! present key deleted) so that a wrong kernel cannot post a fast figure.

use bloomlanes_core::{CounterBits, FilterKind, Layout, Params, WindowUnit};
use bloomlanes_gpu::{
    DeviceBuffer, DeviceKeys, GpuCountingFilter, GpuError, GpuFilter, GpuStream, GpuWindowFilter,
    InsertKernel, LookupKernel, LookupOutput, LookupPath,
};

use super::{
    human, median, number, parse_size, setting, size_list, time_inserts, time_ms, time_with,
};

/// Seed of the keys that are never inserted.
const ABSENT_SEED: u64 = 0xab5e;

/// Counting filters of `COUNTING_SIZES` bytes of counters (default 2G), 4- and 8-bit counters:
/// insert, lookup and delete of `COUNTING_KEYS_LOG2` device keys (default 28), direct,
/// partitioned with compare-and-swap on the counter words and partitioned with shared-memory
/// slices (the default).
pub fn counting(args: &[String], reps: usize, layouts: &[Layout]) -> Result<(), GpuError> {
    let sizes: Vec<u64> = size_list(args, "COUNTING_SIZES", "2G");
    let log2: u32 = number(args, "COUNTING_KEYS_LOG2", "28");
    let m = 1usize << log2;
    let keys = DeviceBuffer::random_u64(m, super::KEY_SEED)?;
    let mut out = DeviceBuffer::<u8>::zeros(m)?;
    println!(
        "\ncounting filter: 2^{log2} device keys inserted, looked up and deleted; G ops/s = 10^9 keys per second; median of {reps}\n"
    );
    println!("| counters | image | layout | bits | path | insert G/s | lookup G/s | delete G/s | partitions |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &size in &sizes {
        for &layout in layouts {
            for bits in [CounterBits::Four, CounterBits::Eight] {
                let per_block = layout.block_bytes() as u64 * u64::from(bits.bits());
                let blocks = (size / per_block).max(1) as u32;
                let params = Params::new(layout, blocks)
                    .with_seed(7)
                    .with_kind(FilterKind::Counting { counter_bits: bits });
                let mut g = GpuCountingFilter::new(params)?;
                let gs = g.stream().clone();
                for (name, kernel, lookup, shared) in [
                    (
                        "direct",
                        InsertKernel::BulkReduce,
                        LookupKernel::Direct,
                        true,
                    ),
                    (
                        "partitioned CAS",
                        InsertKernel::Partitioned,
                        LookupKernel::Partitioned,
                        false,
                    ),
                    (
                        "partitioned slices",
                        InsertKernel::Partitioned,
                        LookupKernel::Partitioned,
                        true,
                    ),
                ] {
                    g.set_insert_kernel(kernel);
                    g.set_lookup_kernel(lookup);
                    g.set_shared_slices(shared);
                    let (mut ins, mut look, mut del) = (Vec::new(), Vec::new(), Vec::new());
                    for _ in 0..reps {
                        g.clear()?;
                        let t = gs.timer()?;
                        g.insert_device_async(DeviceKeys::U64(&keys), &gs)?;
                        ins.push(f64::from(t.stop()?));
                        let t = gs.timer()?;
                        g.lookup_device_async(
                            DeviceKeys::U64(&keys),
                            LookupOutput::Bytes(&mut out),
                            &gs,
                        )?;
                        look.push(f64::from(t.stop()?));
                        assert!(
                            out.to_host()?.iter().take(1 << 20).all(|&b| b == 1),
                            "a counting lookup missed an inserted key"
                        );
                        let t = gs.timer()?;
                        let rep = g.remove_device(DeviceKeys::U64(&keys), None)?;
                        del.push(f64::from(t.stop()?));
                        assert_eq!(rep.deleted, m as u64, "a present key was refused");
                        if rep.retries > 0 {
                            eprintln!("note: {name} delete: {} attempts undone", rep.retries);
                        }
                    }
                    let rate = |v: Vec<f64>| m as f64 / median(v) / 1e6;
                    println!(
                        "| {} | {} | {layout} | {} | {name} | {:.2} | {:.2} | {:.2} | {} |",
                        human(g.counter_bytes()),
                        human(g.image_bytes()),
                        bits.bits(),
                        rate(ins),
                        rate(look),
                        rate(del),
                        g.batch_partitions()
                    );
                }
            }
        }
    }
    Ok(())
}

/// A window of `WINDOW_G` generations (default 4) of `WINDOW_GEN_BYTES` each (default 512M) and
/// spans of 2^`WINDOW_SPAN_LOG2` keys (default 26): inserts of 2^`WINDOW_KEYS_LOG2` device keys
/// (default 28, so the batch rotates) and lookups of the same keys.
pub fn window(args: &[String], reps: usize, layouts: &[Layout]) -> Result<(), GpuError> {
    let gen_bytes = parse_size(&setting(args, "WINDOW_GEN_BYTES", "512M"));
    let g: u16 = number(args, "WINDOW_G", "4");
    let span = 1u64
        << setting(args, "WINDOW_SPAN_LOG2", "26")
            .parse::<u32>()
            .unwrap();
    let log2: u32 = number(args, "WINDOW_KEYS_LOG2", "28");
    let m = 1usize << log2;
    let keys = DeviceBuffer::random_u64(m, super::KEY_SEED)?;
    let mut out = DeviceBuffer::<u8>::zeros(m)?;
    println!(
        "\nsliding window: {g} + 1 generations of {}, spans of {span} keys; 2^{log2} device keys inserted then looked up; median of {reps}\n",
        human(gen_bytes)
    );
    println!("| layout | bytes in all | insert G/s | lookup G/s | found |");
    println!("|---|---|---|---|---|");
    for &layout in layouts {
        let blocks = (gen_bytes / layout.block_bytes() as u64).max(1) as u32;
        let params = Params::new(layout, blocks)
            .with_seed(7)
            .with_kind(FilterKind::Window {
                generations: g,
                unit: WindowUnit::Keys,
                span,
            });
        let mut w = GpuWindowFilter::new(params)?;
        let ws = w.stream().clone();
        let ins = time_inserts(reps, &ws, &mut w, |w| {
            w.insert_device_async(DeviceKeys::U64(&keys), &ws)
        })?;
        let look = time_with(reps, &ws, &mut w, |w| {
            w.contains_device_async(DeviceKeys::U64(&keys), &mut out, &ws)
        })?;
        // The last g × span keys are always found.
        let answers = out.to_host()?;
        let window = (u64::from(g) * span).min(m as u64) as usize;
        assert!(
            answers[m - window..].iter().all(|&b| b == 1),
            "a key inside the window was missed"
        );
        let found = answers.iter().filter(|&&b| b == 1).count() as f64 / m as f64;
        println!(
            "| {layout} | {} | {:.2} | {:.2} | {found:.3} |",
            human(w.byte_len()),
            m as f64 / ins / 1e6,
            m as f64 / look / 1e6,
        );
    }
    Ok(())
}

/// Partitioned lookups at `LOOKUP_SIZES` (default 2G) with 2^`LOOKUP_KEYS_LOG2` device keys
/// (default 28): direct and partitioned into bytes, bitmap and positions, present and absent
/// keys, against the speed-of-light kernel; then `LOOKUP_SWEEP` (default 20..28: batch sizes
/// 2^20, 2^22, …) for the batch size from which partitioning pays, with Auto's choice, and
/// `LOOKUP_PART_SWEEP` (default `8M,16M,24M,32M,48M`) for the partition size (lookups only read
/// the filter, so partitions larger than the inserts' L2 / 3 may pay: fewer partitions make
/// longer scatter runs).
pub fn lookups(args: &[String], reps: usize, layouts: &[Layout]) -> Result<(), GpuError> {
    let sizes: Vec<u64> = size_list(args, "LOOKUP_SIZES", "2G");
    let log2: u32 = number(args, "LOOKUP_KEYS_LOG2", "28");
    let sweep: Vec<u32> = {
        let s = setting(args, "LOOKUP_SWEEP", "20..28");
        let (a, b) = s.split_once("..").unwrap_or(("0", "0"));
        let (a, b): (u32, u32) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
        (a..=b.min(log2)).step_by(2).filter(|&x| x > 0).collect()
    };
    let part_sweep: Vec<u64> = size_list(args, "LOOKUP_PART_SWEEP", "8M,16M,24M,32M,48M");
    let m = 1usize << log2;
    let present = DeviceBuffer::random_u64(m, super::KEY_SEED)?;
    let absent = DeviceBuffer::random_u64(m, ABSENT_SEED)?;
    let mut bytes = DeviceBuffer::<u8>::zeros(m)?;
    let mut bits = DeviceBuffer::<u64>::zeros(m.div_ceil(64))?;
    let mut list = DeviceBuffer::<u32>::zeros(m)?;
    let mut count = DeviceBuffer::<u64>::zeros(1)?;
    let stream = GpuStream::new()?;
    println!(
        "\nlookups of 2^{log2} device keys: direct and partitioned, into bytes, a bitmap or the maybe-present positions; G/s, median of {reps}; SoL = bl_speed_of_light at the same size\n"
    );
    println!("| filter | layout | keys | SoL | direct bytes | direct bitmap | part. bytes | part. bitmap | part. positions | part. bitmap / SoL | partitions |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &size in &sizes {
        let sol = {
            let buf = DeviceBuffer::<u64>::zeros((size / 8) as usize)?;
            let ms = time_ms(reps, &stream, || {
                GpuFilter::speed_of_light_async(&buf, &present, &mut bytes, &stream)
            })?;
            m as f64 / ms / 1e6
        };
        for &layout in layouts {
            let blocks = (size / layout.block_bytes() as u64) as u32;
            let mut g = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
            g.insert_device(DeviceKeys::U64(&present))?;
            g.release_scratch();
            let gs = g.stream().clone();
            for (which, keys) in [("present", &present), ("absent", &absent)] {
                let mut cells = Vec::new();
                for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
                    g.set_lookup_kernel(kernel);
                    let outs: Vec<&str> = match kernel {
                        LookupKernel::Direct => vec!["bytes", "bitmap"],
                        _ => vec!["bytes", "bitmap", "positions"],
                    };
                    for o in outs {
                        let mut run = || -> Result<LookupPath, GpuError> {
                            let out = match o {
                                "bytes" => LookupOutput::Bytes(&mut bytes),
                                "bitmap" => LookupOutput::Bitmap(&mut bits),
                                _ => LookupOutput::Positions {
                                    list: &mut list,
                                    count: &mut count,
                                },
                            };
                            g.lookup_device_async(DeviceKeys::U64(keys), out, &gs)
                        };
                        run()?; // allocates the scratch
                        let t = time_ms(reps, &gs, || run().map(|_| ()))?;
                        cells.push(m as f64 / t / 1e6);
                    }
                }
                // Sanity: present keys are all found, in every output.
                if which == "present" {
                    assert!(bytes.to_host()?.iter().take(1 << 20).all(|&b| b == 1));
                    assert_eq!(count.to_host()?[0], m as u64, "positions of present keys");
                }
                println!(
                    "| {} | {layout} | {which} | {sol:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {} |",
                    human(size),
                    cells[0],
                    cells[1],
                    cells[2],
                    cells[3],
                    cells[4],
                    cells[3] / sol,
                    g.partitions()
                );
            }
            if layout == layouts[0] && !sweep.is_empty() {
                Sweeps {
                    g: &mut g,
                    bits: &mut bits,
                    reps,
                }
                .batches(&sweep)?;
            }
            if layout == layouts[0] && !part_sweep.is_empty() {
                Sweeps {
                    g: &mut g,
                    bits: &mut bits,
                    reps,
                }
                .partitions(&present, &part_sweep)?;
            }
            g.release_scratch();
        }
    }
    Ok(())
}

/// The sweeps of bitmap lookups into `g`: into `bits`, each rate the median of `reps` runs.
struct Sweeps<'a> {
    g: &'a mut GpuFilter,
    bits: &'a mut DeviceBuffer<u64>,
    reps: usize,
}

impl Sweeps<'_> {
    /// Direct against partitioned bitmap lookups for batches of 2^`s` keys, and what Auto picks.
    fn batches(&mut self, sweep: &[u32]) -> Result<(), GpuError> {
        let (g, bits, reps) = (&mut *self.g, &mut *self.bits, self.reps);
        println!(
            "\nbatch size from which partitioned lookups pay, {} {} filter, bitmap output: G/s\n",
            human(g.byte_len()),
            g.layout()
        );
        println!("| keys | direct | partitioned | partitioned / direct | auto picks |");
        println!("|---|---|---|---|---|");
        for &s in sweep {
            let n = 1usize << s;
            let part = DeviceBuffer::random_u64(n, super::KEY_SEED)?;
            let mut rates = Vec::new();
            for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
                g.set_lookup_kernel(kernel);
                rates.push(bitmap_rate(g, &part, bits, reps)?);
            }
            g.set_lookup_kernel(LookupKernel::Auto);
            let auto = if g.lookup_partitioned_for(n) {
                "partitioned"
            } else {
                "direct"
            };
            println!(
                "| 2^{s} | {:.2} | {:.2} | {:.2} | {auto} |",
                rates[0],
                rates[1],
                rates[1] / rates[0]
            );
        }
        Ok(())
    }

    /// Partitioned bitmap lookups of all `keys` for several partition sizes.
    fn partitions(&mut self, keys: &DeviceBuffer<u64>, sizes: &[u64]) -> Result<(), GpuError> {
        let (g, bits, reps) = (&mut *self.g, &mut *self.bits, self.reps);
        println!(
        "\npartitioned lookups by partition size, {} {} filter, 2^{} keys, bitmap output: G/s (partitions)\n",
        human(g.byte_len()),
        g.layout(),
        keys.len().trailing_zeros()
    );
        let head: Vec<String> = sizes.iter().map(|&p| human(p)).collect();
        println!("| {} |", head.join(" | "));
        println!("|{}", "---|".repeat(sizes.len()));
        g.set_lookup_kernel(LookupKernel::Partitioned);
        let mut cells = Vec::new();
        for &p in sizes {
            g.set_partition_bytes(p);
            let rate = bitmap_rate(g, keys, bits, reps)?;
            cells.push(format!("{rate:.2} ({})", g.partitions()));
        }
        println!("| {} |", cells.join(" | "));
        g.set_partition_bytes(0);
        Ok(())
    }
}

/// G lookups/s of `keys` into a bitmap with `g`'s settings: one run untimed (it allocates the
/// scratch), then the median of `reps`.
fn bitmap_rate(
    g: &mut GpuFilter,
    keys: &DeviceBuffer<u64>,
    bits: &mut DeviceBuffer<u64>,
    reps: usize,
) -> Result<f64, GpuError> {
    let gs = g.stream().clone();
    g.lookup_device(DeviceKeys::U64(keys), LookupOutput::Bitmap(bits))?;
    let t = time_ms(reps, &gs, || {
        g.lookup_device_async(DeviceKeys::U64(keys), LookupOutput::Bitmap(bits), &gs)
            .map(|_| ())
    })?;
    Ok(keys.len() as f64 / t / 1e6)
}
