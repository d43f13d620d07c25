//! Shared test helpers: finding NVRTC and the GPU, skipping visibly when absent.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The `nvidia/cu13/lib` folder of the `nvidia-cuda-nvrtc` wheel, if python3 can find it.
fn pip_nvrtc_dir() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.join("libnvrtc.so.13").exists().then_some(p)
}

/// Makes NVRTC usable: `BLOOMLANES_NVRTC`, the library path, or the pip wheel. `false` = absent.
pub fn nvrtc() -> bool {
    if bloomlanes_gpu::require_nvrtc().is_ok() {
        return true;
    }
    if let Some(dir) = pip_nvrtc_dir() {
        if bloomlanes_gpu::preload_nvrtc(&dir).is_ok() {
            return bloomlanes_gpu::require_nvrtc().is_ok();
        }
    }
    false
}

/// The workspace's one visible `SKIP:` line.
pub use bloomlanes_testkit::skip;

/// Whether a GPU (and NVRTC) is usable; prints a SKIP line for `test` when not.
pub fn gpu(test: &str) -> bool {
    match bloomlanes_gpu::probe() {
        Err(e) => {
            skip(format_args!("{test}: no GPU ({e})"));
            false
        }
        Ok(_) if !nvrtc() => {
            skip(format_args!(
                "{test}: NVRTC not found (set BLOOMLANES_NVRTC)"
            ));
            false
        }
        Ok(_) => true,
    }
}

/// The tests' random numbers.
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    use rand::SeedableRng;
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// `answer(hash of key i)` as one byte per key (what the core answers for `keys`).
pub fn answers(
    keys: bloomlanes_core::Keys<'_>,
    seed: u64,
    answer: impl Fn(u64) -> bool,
) -> Vec<u8> {
    (0..keys.len())
        .map(|i| u8::from(answer(keys.hash(i, seed))))
        .collect()
}

/// Checks a packed bitmap of answers (bit `i % 64` of word `i / 64`) against one byte per key,
/// and that the bits past the last key in its word are zero.
pub fn assert_bitmap(bits: &[u64], want: &[u8], what: &str) {
    for (i, &w) in want.iter().enumerate() {
        assert_eq!(
            (bits[i / 64] >> (i % 64)) & 1,
            u64::from(w),
            "{what}: bit {i}"
        );
    }
    if !want.len().is_multiple_of(64) {
        assert_eq!(
            bits[want.len() / 64] >> (want.len() % 64),
            0,
            "{what}: tail bits"
        );
    }
}

/// `n` keys drawn from `present` one in `every` (the others random), for lookups that find
/// some.
pub fn some_present(r: &mut impl rand::Rng, present: &[u64], n: usize, every: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            if i % every == 0 {
                present[i % present.len()]
            } else {
                r.gen()
            }
        })
        .collect()
}

/// Byte keys of every form the kernels hash: 999 records of 13 bytes (IPv4 5-tuples) and
/// `strings` strings of every length 0 to 80 (every XXH64 path), as `(records, string bytes,
/// string offsets)`.
pub fn byte_keys(r: &mut impl rand::Rng, strings: usize) -> (Vec<u8>, Vec<u8>, Vec<u64>) {
    let rec: Vec<u8> = (0..13 * 999).map(|_| r.gen()).collect();
    let mut data = Vec::new();
    let mut offsets = vec![0u64];
    for i in 0..strings {
        data.extend((0..i % 81).map(|_| r.gen::<u8>()));
        offsets.push(data.len() as u64);
    }
    (rec, data, offsets)
}

/// [`gpu`] and the test's random numbers: `None` (with a SKIP line for `test`) without a GPU.
pub fn gpu_rng(test: &str, seed: u64) -> Option<rand::rngs::StdRng> {
    gpu(test).then(|| rng(seed))
}

/// Runs `body(random numbers, layout)` for every layout when a GPU is present; without one,
/// prints a SKIP line for `test` and runs nothing.
pub fn on_every_layout(
    test: &str,
    seed: u64,
    mut body: impl FnMut(&mut rand::rngs::StdRng, bloomlanes_core::Layout),
) {
    if let Some(mut r) = gpu_rng(test, seed) {
        for layout in bloomlanes_core::Layout::ALL {
            body(&mut r, layout);
        }
    }
}

/// Runs `body(random numbers)` when a GPU is present; without one, prints a SKIP line for
/// `test` and runs nothing.
pub fn with_gpu(test: &str, seed: u64, body: impl FnOnce(&mut rand::rngs::StdRng)) {
    if let Some(mut r) = gpu_rng(test, seed) {
        body(&mut r);
    }
}

/// The lines of core's golden vectors (`bloomlanes_core::golden::VECTORS`) of `kind`, each as
/// its layout, blocks, seed and the fields after them.
pub fn golden(kind: &str) -> Vec<(bloomlanes_core::Layout, u32, u64, Vec<String>)> {
    bloomlanes_core::golden::VECTORS
        .lines()
        .filter(|l| l.split(' ').next() == Some(kind))
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (
                bloomlanes_core::Layout::from_name(f[1]).unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4..].iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect()
}

/// [`golden`]`(kind)`, checked to hold `count` lines, when a GPU is present; none (with a SKIP
/// line for `test`) without one.
pub fn gpu_golden(
    test: &str,
    kind: &str,
    count: usize,
) -> Vec<(bloomlanes_core::Layout, u32, u64, Vec<String>)> {
    let lines = golden(kind);
    assert_eq!(lines.len(), count, "golden lines of {kind}");
    if gpu(test) {
        lines
    } else {
        Vec::new()
    }
}

/// Every static lookup path of `g`'s image against `want` (one byte per key of `keys`): host
/// keys into bytes and a bitmap, device keys into bytes and a bitmap, and through
/// `lookup_device` directly and partitioned (7-block partitions) into bytes, a bitmap and the
/// list of positions.
pub fn check_image_lookups(
    g: &mut bloomlanes_gpu::GpuImage,
    keys: &[u64],
    want: &[u8],
    what: &str,
) {
    use bloomlanes_core::Keys;
    use bloomlanes_gpu::{DeviceBuffer, DeviceKeys, GpuStream, LookupKernel, LookupOutput};
    let n = keys.len();
    let mut got = vec![9u8; n];
    g.contains(Keys::U64(keys), &mut got).unwrap();
    assert_eq!(got, want, "{what}: host lookups");
    let mut host_bits = vec![u64::MAX; n.div_ceil(64)];
    g.contains_bitmap(Keys::U64(keys), &mut host_bits).unwrap();
    assert_bitmap(&host_bits, want, &format!("{what}: host bitmap"));
    let dk = DeviceBuffer::from_host(keys).unwrap();
    let mut out = DeviceBuffer::<u8>::zeros(n).unwrap();
    g.contains_device(DeviceKeys::U64(&dk), &mut out).unwrap();
    assert_eq!(out.to_host().unwrap(), want, "{what}: device lookups");
    let mut bits = DeviceBuffer::<u64>::from_host(&vec![u64::MAX; n.div_ceil(64)]).unwrap();
    let s = GpuStream::new().unwrap();
    g.contains_bitmap_device_async(DeviceKeys::U64(&dk), &mut bits, &s)
        .unwrap();
    s.synchronize().unwrap();
    assert_bitmap(
        &bits.to_host().unwrap(),
        want,
        &format!("{what}: device bitmap"),
    );
    let seven_blocks = 7 * g.layout().block_bytes() as u64;
    g.set_partition_bytes(seven_blocks);
    for kernel in [LookupKernel::Direct, LookupKernel::Partitioned] {
        g.set_lookup_kernel(kernel);
        let mut bytes = DeviceBuffer::<u8>::from_host(&vec![5u8; n]).unwrap();
        g.lookup_device(DeviceKeys::U64(&dk), LookupOutput::Bytes(&mut bytes))
            .unwrap();
        assert_eq!(bytes.to_host().unwrap(), want, "{what}: {kernel:?} bytes");
        g.lookup_device(DeviceKeys::U64(&dk), LookupOutput::Bitmap(&mut bits))
            .unwrap();
        assert_bitmap(
            &bits.to_host().unwrap(),
            want,
            &format!("{what}: {kernel:?}"),
        );
        let mut list = DeviceBuffer::<u32>::zeros(n.max(1)).unwrap();
        let found = g.positions_device(DeviceKeys::U64(&dk), &mut list).unwrap();
        let mut positions: Vec<u32> = list.to_host().unwrap()[..found].to_vec();
        positions.sort_unstable();
        let expected: Vec<u32> = (0..n as u32).filter(|&i| want[i as usize] == 1).collect();
        assert_eq!(positions, expected, "{what}: {kernel:?} positions");
    }
    g.set_partition_bytes(0);
    g.set_lookup_kernel(LookupKernel::Auto);
}
