//! The retrieval section of `gpu_bench`: lookups in a retrieval table of device-resident u64 keys
//! (half built keys, half absent) beside a static 8x32 filter of the same bytes looking up the
//! same keys (issue #23: retrieval lookups at least 0.5× static lookups at 1 GiB). The table is
//! built on the host by the core (single thread; the build is not what this section times).
//! Every run checks its answers: every built key is found with its value.

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Layout, Params};
use bloomlanes_gpu::{DeviceBuffer, DeviceKeys, GpuError, GpuFilter, GpuRetrieval};

use super::{human, number, time_inserts, time_with};

/// A table of 2^`RETRIEVAL_KEYS_LOG2` keys (default 27: about 1.1 GiB at 32 value and 32 check
/// bits) with `RETRIEVAL_VALUE_BITS` (default 32) and `RETRIEVAL_CHECK_BITS` (default 32); twice
/// as many lookups (the built keys, then as many absent ones).
pub fn retrieval(args: &[String], reps: usize) -> Result<(), GpuError> {
    let log2: u32 = number(args, "RETRIEVAL_KEYS_LOG2", "27");
    let v: u8 = number(args, "RETRIEVAL_VALUE_BITS", "32");
    let f: u8 = number(args, "RETRIEVAL_CHECK_BITS", "32");
    let n = 1usize << log2;
    // The bench's device key generator; the host copy feeds the core's build.
    let dev = DeviceBuffer::random_u64(2 * n, super::KEY_SEED)?;
    let keys = dev.to_host()?;
    let mask = if v == 32 { u32::MAX } else { (1u32 << v) - 1 };
    let values: Vec<u32> = keys[..n].iter().map(|&k| (k >> 17) as u32 & mask).collect();
    let started = std::time::Instant::now();
    let table = RetrievalTable::build_keys(
        Params::new(Layout::L8x64, 1),
        RetrievalSpec::new(v, f),
        &keys[..n],
        &values,
    )
    .expect("distinct random keys build");
    let build_s = started.elapsed().as_secs_f64();
    let bytes = table.shape().array_bytes();
    let g = GpuRetrieval::upload(&table)?;
    let gs = g.stream().clone();
    let mut out = DeviceBuffer::<u32>::zeros(2 * n)?;
    let mut found = DeviceBuffer::<u64>::zeros((2 * n).div_ceil(64))?;
    let get = time_with(reps, &gs, &mut (), |_| {
        g.get_device_async(DeviceKeys::U64(&dev), &mut out, &mut found, &gs)
    })?;
    let (got, hits) = (out.to_host()?, found.to_host()?);
    let present = (0..n).all(|i| hits[i / 64] >> (i % 64) & 1 == 1 && got[i] == values[i]);
    assert!(present, "a built key was not answered with its value");
    let false_hits: u64 = (n..2 * n).map(|i| hits[i / 64] >> (i % 64) & 1).sum();
    drop((out, found, g));
    let layout = Layout::L8x32;
    let blocks = (bytes / layout.block_bytes() as u64).max(1) as u32;
    let mut s = GpuFilter::new(Params::new(layout, blocks).with_seed(7))?;
    let ss = s.stream().clone();
    let built = DeviceBuffer::from_host(&keys[..n])?;
    time_inserts(1, &ss, &mut s, |s| {
        s.insert_device_async(DeviceKeys::U64(&built), &ss)
    })?;
    drop(built);
    s.release_scratch();
    let mut answers = DeviceBuffer::<u8>::zeros(2 * n)?;
    let look = time_with(reps, &ss, &mut s, |s| {
        s.contains_device_async(DeviceKeys::U64(&dev), &mut answers, &ss)
    })?;
    let rate = |ms: f64| (2 * n) as f64 / ms / 1e6;
    println!(
        "\nretrieval table: 2^{log2} u64 keys, {v} value + {f} check bits, {} ({:.2} bits per key; core build {build_s:.1} s single thread); 2^{} device lookups, half absent ({false_hits} absent keys passed the check); G/s = 10^9 lookups per second, median of {reps}\n",
        human(bytes),
        bytes as f64 * 8.0 / n as f64,
        log2 + 1
    );
    println!(
        "| table | retrieval get G/s | static 8x32 lookup G/s (same bytes) | retrieval / static |"
    );
    println!("|---|---|---|---|");
    println!(
        "| {} | {:.2} | {:.2} | {:.2} |",
        human(bytes),
        rate(get),
        rate(look),
        look / get
    );
    Ok(())
}
