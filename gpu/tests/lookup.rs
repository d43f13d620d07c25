//! GPU tests of the lookups of issue #17: direct and partitioned lookups into bytes, a bitmap or
//! the list of maybe-present positions, identical to the core on every layout and key form.
//! Without a GPU every test prints a SKIP line and passes.

mod common;

use bloomlanes_core::{Filter, Keys, Layout, Params, Records, Strings};
use bloomlanes_gpu::{
    DeviceBuffer, DeviceKeys, GpuFilter, GpuStream, LookupAuto, LookupKernel, LookupOutput,
    LookupPath,
};
use common::{answers, assert_bitmap, byte_keys, some_present};
use rand::Rng;

fn core_answers(f: &Filter, keys: Keys<'_>) -> Vec<u8> {
    answers(keys, f.seed(), |h| f.contains_hash(h))
}

/// Checks all three outputs of `g.lookup_device` for `keys` (already on the device as `dk`)
/// against the core's answers, and that the path taken is `path`.
fn check_outputs(g: &mut GpuFilter, dk: DeviceKeys<'_>, want: &[u8], path: LookupPath, what: &str) {
    let n = want.len();
    let mut bytes = DeviceBuffer::<u8>::from_host(&vec![7u8; n]).unwrap();
    assert_eq!(
        g.lookup_device(dk, LookupOutput::Bytes(&mut bytes))
            .unwrap(),
        path,
        "{what}: path"
    );
    assert_eq!(bytes.to_host().unwrap(), want, "{what}: bytes");
    let mut bits = DeviceBuffer::<u64>::from_host(&vec![u64::MAX; n.div_ceil(64)]).unwrap();
    g.lookup_device(dk, LookupOutput::Bitmap(&mut bits))
        .unwrap();
    assert_bitmap(&bits.to_host().unwrap(), want, what);
    // The screening form, asynchronously on another stream, then through the synchronous call.
    let mut list = DeviceBuffer::<u32>::from_host(&vec![u32::MAX; n.max(1)]).unwrap();
    let mut count = DeviceBuffer::<u64>::from_host(&[12345]).unwrap();
    let s = GpuStream::new().unwrap();
    g.lookup_device_async(
        dk,
        LookupOutput::Positions {
            list: &mut list,
            count: &mut count,
        },
        &s,
    )
    .unwrap();
    s.synchronize().unwrap();
    let found = count.to_host().unwrap()[0] as usize;
    let mut got: Vec<u32> = list.to_host().unwrap()[..found].to_vec();
    got.sort_unstable();
    let expected: Vec<u32> = (0..n as u32).filter(|&i| want[i as usize] == 1).collect();
    assert_eq!(got, expected, "{what}: positions");
    assert_eq!(
        g.positions_device(dk, &mut list).unwrap(),
        expected.len(),
        "{what}: count"
    );
}

#[test]
fn lookups_every_layout_output_and_path_match_core() {
    common::on_every_layout(
        "lookups_every_layout_output_and_path_match_core",
        21,
        |r, layout| {
            for blocks in [1u32, 3, 1000, 65_537] {
                let seed = r.gen::<u64>();
                let params = Params::new(layout, blocks).with_seed(seed);
                let mut f = Filter::new(params);
                let present: Vec<u64> = (0..20_000).map(|_| r.gen()).collect();
                for &k in &present {
                    f.insert(&k);
                }
                let mut g = GpuFilter::upload(&f).unwrap();
                // Odd lengths, across scatter tiles (2048 keys with positions) and chunks.
                for len in [0usize, 1, 63, 65, 2047, 2049, 20_011] {
                    let keys = some_present(r, &present, len, 3);
                    let dk = DeviceBuffer::from_host(&keys).unwrap();
                    let want = core_answers(&f, Keys::U64(&keys));
                    let what = format!("{layout} {blocks} blocks, {len} keys");
                    // Direct; partitioned with the default partitions; partitioned with 7-block
                    // partitions and scratch chunks of 1000 keys (several chunks per batch); the most
                    // partitions (a 1-byte target).
                    g.set_lookup_kernel(LookupKernel::Direct);
                    check_outputs(
                        &mut g,
                        DeviceKeys::U64(&dk),
                        &want,
                        LookupPath::Direct,
                        &what,
                    );
                    g.set_lookup_kernel(LookupKernel::Partitioned);
                    for (part_bytes, scratch) in [
                        (0u64, usize::MAX),
                        (7 * layout.block_bytes() as u64, 1000),
                        (1, 4096),
                    ] {
                        g.set_partition_bytes(part_bytes);
                        g.set_scratch_keys(scratch);
                        g.release_scratch();
                        let what =
                            format!("{what}, partitions of {part_bytes} B, scratch {scratch}");
                        check_outputs(
                            &mut g,
                            DeviceKeys::U64(&dk),
                            &want,
                            LookupPath::Partitioned,
                            &what,
                        );
                    }
                    g.set_partition_bytes(0);
                    g.set_scratch_keys(usize::MAX);
                }
            }
        },
    );
}

#[test]
fn partitioned_lookups_take_every_key_form() {
    common::on_every_layout(
        "partitioned_lookups_take_every_key_form",
        22,
        |r, layout| {
            let params = Params::new(layout, 4097).with_seed(42);
            let mut f = Filter::new(params);
            let hashes: Vec<u64> = (0..3001).map(|_| r.gen()).collect();
            let (rec, data, offsets) = byte_keys(r, 1500);
            let records = Keys::Records(Records::new(&rec, 13).unwrap());
            let strings = Keys::Strings(Strings::new(&data, &offsets).unwrap());
            for keys in [Keys::Hashes(&hashes), records, strings] {
                let half = keys.slice(0..keys.len() / 2);
                for i in 0..half.len() {
                    f.insert_hash(half.hash(i, f.seed()));
                }
            }
            let mut g = GpuFilter::upload(&f).unwrap();
            g.set_lookup_kernel(LookupKernel::Partitioned);
            g.set_partition_bytes(16 * layout.block_bytes() as u64);
            let dh = DeviceBuffer::from_host(&hashes).unwrap();
            let dr = DeviceBuffer::from_host(&rec).unwrap();
            let dd = DeviceBuffer::from_host(&data).unwrap();
            let doff = DeviceBuffer::from_host(&offsets).unwrap();
            let forms = [
                (DeviceKeys::Hashes(&dh), Keys::Hashes(&hashes)),
                (
                    DeviceKeys::Records {
                        data: &dr,
                        width: 13,
                    },
                    records,
                ),
                (
                    DeviceKeys::Strings {
                        data: &dd,
                        offsets: &doff,
                    },
                    strings,
                ),
            ];
            for (dk, hk) in forms {
                let want = core_answers(&f, hk);
                let what = format!("{layout} {}", dk.len());
                check_outputs(&mut g, dk, &want, LookupPath::Partitioned, &what);
            }
        },
    );
}

#[test]
fn auto_lookup_partitions_past_l2_and_stays_direct_below() {
    let Some(mut r) = common::gpu_rng("auto_lookup_partitions_past_l2_and_stays_direct_below", 23)
    else {
        return;
    };
    let layout = Layout::L8x32;
    let probe = GpuFilter::new(Params::new(layout, 1)).unwrap();
    let l2 = probe.l2_bytes().max(32 << 20);
    // A filter of 2 × L2 and a batch of 2^22 keys: ≤ 64 filter bytes per key when L2 ≤ 128 MiB.
    let blocks = (2 * l2 / layout.block_bytes() as u64) as u32;
    let params = Params::new(layout, blocks).with_seed(5);
    let mut f = Filter::new(params);
    let present: Vec<u64> = (0..1 << 20).map(|_| r.gen()).collect();
    for &k in &present {
        f.insert(&k);
    }
    let mut g = GpuFilter::upload(&f).unwrap();
    assert_eq!(g.lookup_kernel(), LookupKernel::Auto);
    let n = 1usize << 22;
    let rule = g.lookup_auto();
    assert_eq!(
        g.lookup_partitioned_for(n),
        rule.partitions(g.byte_len(), g.l2_bytes(), n)
    );
    assert!(!g.lookup_partitioned_for(n - 1), "fewer keys than min_keys");
    let keys = some_present(&mut r, &present, n, 2);
    let dk = DeviceBuffer::from_host(&keys).unwrap();
    let want = core_answers(&f, Keys::U64(&keys));
    let path = if g.lookup_partitioned_for(n) {
        LookupPath::Partitioned
    } else {
        LookupPath::Direct
    };
    check_outputs(&mut g, DeviceKeys::U64(&dk), &want, path, "auto, 2 × L2");
    // A rule that never partitions.
    g.set_lookup_auto(LookupAuto {
        min_keys: usize::MAX,
        ..LookupAuto::default()
    });
    check_outputs(
        &mut g,
        DeviceKeys::U64(&dk),
        &want,
        LookupPath::Direct,
        "auto, never",
    );
}
