//! The spatial section of `gpu_bench`: a spatial filter's inserts (one class per batch, one per
//! key) and class lookups beside a static filter of the same image (the same blocks: the
//! spatial filter is that image plus one cell per bit), for each size, layout, cell width and
//! insert path. Every run checks its answers (every inserted key has a class) so that a wrong
//! kernel cannot post a fast figure.

use bloomlanes_core::{Layout, Params};
use bloomlanes_gpu::{
    DeviceBuffer, DeviceKeys, GpuError, GpuFilter, GpuSpatialFilter, InsertKernel, LookupKernel,
};

use super::{human, number, setting, size_list, time_inserts, time_with};

/// The insert paths measured: (name, insert kernel, shared-memory slices).
const PATHS: [(&str, InsertKernel, bool); 2] = [
    ("direct", InsertKernel::BulkReduce, true),
    ("partitioned slices", InsertKernel::Partitioned, true),
];

/// Spatial filters whose image is `SPATIAL_SIZES` (default `1M,256M,2G`) with
/// `SPATIAL_BITS`-bit cells (default `4,8,16`) and 5 classes: 2^`SPATIAL_KEYS_LOG2` device
/// keys (default 28) inserted in one class and with a class each, then looked up (their classes
/// into u32s, directly and partitioned); the static filter of the same image inserts and looks
/// up the same keys. `class / static` is the better class lookup over the static lookup. As
/// many absent keys (another random set) are looked up too, directly, beside the static
/// filter's lookup of them: a class lookup reads the image first and stops there for most of
/// them, so `absent / static` is that pass's share of the static rate.
pub fn spatial(args: &[String], reps: usize, layouts: &[Layout]) -> Result<(), GpuError> {
    let sizes: Vec<u64> = size_list(args, "SPATIAL_SIZES", "1M,256M,2G");
    let widths: Vec<u32> = setting(args, "SPATIAL_BITS", "4,8,16")
        .split(',')
        .map(|b| b.trim().parse().expect("cell bits"))
        .collect();
    let log2: u32 = number(args, "SPATIAL_KEYS_LOG2", "28");
    let m = 1usize << log2;
    let keys = DeviceBuffer::random_u64(m, super::KEY_SEED)?;
    let absent = DeviceBuffer::random_u64(m, !super::KEY_SEED)?;
    let classes: Vec<u32> = (0..m).map(|i| (i % 5) as u32 + 1).collect();
    let classes = DeviceBuffer::from_host(&classes)?;
    let mut out = DeviceBuffer::<u32>::zeros(m)?;
    let mut present = DeviceBuffer::<u8>::zeros(m)?;
    println!(
        "\nspatial filter: 2^{log2} device keys, 5 classes; G/s = 10^9 keys per second, median of {reps}; static = a static filter of the same image\n"
    );
    println!("| image | layout | cells | bits | path | insert, one class G/s | insert, class per key G/s | classes direct G/s | classes partitioned G/s | static insert G/s | static lookup G/s | class / static | absent: classes G/s | absent: static G/s | absent / static |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let rate = |ms: f64| m as f64 / ms / 1e6;
    for &size in &sizes {
        for &layout in layouts {
            let blocks = (size / layout.block_bytes() as u64).max(1) as u32;
            let params = Params::new(layout, blocks).with_seed(7);
            let (static_insert, static_lookup, static_absent) = {
                let mut g = GpuFilter::new(params)?;
                let gs = g.stream().clone();
                let ins = time_inserts(reps, &gs, &mut g, |g| {
                    g.insert_device_async(DeviceKeys::U64(&keys), &gs)
                })?;
                g.release_scratch();
                let look = time_with(reps, &gs, &mut g, |g| {
                    g.contains_device_async(DeviceKeys::U64(&keys), &mut present, &gs)
                })?;
                assert!(present.to_host()?.iter().take(1 << 20).all(|&b| b == 1));
                let look_absent = time_with(reps, &gs, &mut g, |g| {
                    g.contains_device_async(DeviceKeys::U64(&absent), &mut present, &gs)
                })?;
                (rate(ins), rate(look), rate(look_absent))
            };
            for &bits in &widths {
                let mut g = GpuSpatialFilter::new(params, bits, &["a", "b", "c", "d", "e"])?;
                let gs = g.stream().clone();
                for (name, kernel, shared) in PATHS {
                    g.set_insert_kernel(kernel);
                    g.set_shared_slices(shared);
                    let one = time_inserts(reps, &gs, &mut g, |g| {
                        g.insert_device_async(DeviceKeys::U64(&keys), 3, &gs)
                    })?;
                    // A class per key: the insert checks (and counts) the classes on the
                    // device first, and waits for them; the time is the whole call.
                    let per_key = time_inserts(reps, &gs, &mut g, |g| {
                        g.insert_device_classes(DeviceKeys::U64(&keys), &classes)
                    })?;
                    let mut lookups = [0.0; 2];
                    for (slot, lookup) in [LookupKernel::Direct, LookupKernel::Partitioned]
                        .into_iter()
                        .enumerate()
                    {
                        g.set_lookup_kernel(lookup);
                        let ms = time_with(reps, &gs, &mut g, |g| {
                            g.classes_device_async(DeviceKeys::U64(&keys), &mut out, &gs)
                        })?;
                        assert!(
                            out.to_host()?
                                .iter()
                                .take(1 << 20)
                                .all(|&c| (1..=5).contains(&c)),
                            "a class lookup lost an inserted key"
                        );
                        lookups[slot] = rate(ms);
                    }
                    g.set_lookup_kernel(LookupKernel::Direct);
                    let ms = time_with(reps, &gs, &mut g, |g| {
                        g.classes_device_async(DeviceKeys::U64(&absent), &mut out, &gs)
                    })?;
                    let emerged = out
                        .to_host()?
                        .iter()
                        .take(1 << 20)
                        .filter(|&&c| c > 0)
                        .count();
                    assert!(
                        emerged < 1 << 18,
                        "{emerged} of 2^20 absent keys have a class"
                    );
                    let absent_rate = rate(ms);
                    g.release_scratch();
                    let best = lookups[0].max(lookups[1]);
                    println!(
                        "| {} | {layout} | {} | {bits} | {name} | {:.2} | {:.2} | {:.2} | {:.2} | {static_insert:.2} | {static_lookup:.2} | {:.3} | {absent_rate:.2} | {static_absent:.2} | {:.3} |",
                        human(size),
                        human(g.cell_bytes()),
                        rate(one),
                        rate(per_key),
                        lookups[0],
                        lookups[1],
                        best / static_lookup,
                        absent_rate / static_absent
                    );
                }
            }
        }
    }
    Ok(())
}
