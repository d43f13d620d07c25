//! GPU tests of [`BorrowedBuffer`]: memory owned elsewhere (here, by another buffer standing in
//! for CuPy's) gives the same answers as our own buffers, and addresses that are not one live
//! device allocation are refused before any kernel sees them. Without a GPU: SKIP lines.

mod common;

use bloomlanes_core::{Filter, Layout, Params};
use bloomlanes_gpu::{BorrowedBuffer, DeviceBuffer, DeviceKeys, GpuError, GpuFilter};

fn filter_with(keys: &[u64]) -> Filter {
    let mut f = Filter::new(Params::new(Layout::L8x32, 4096));
    for &k in keys {
        f.insert(&k);
    }
    f
}

#[test]
fn borrowed_keys_and_answers_match_owned_buffers() {
    if !common::gpu("borrowed_keys_and_answers_match_owned_buffers") {
        return;
    }
    let present: Vec<u64> = (0..50_000u64).map(|i| i * 7 + 3).collect();
    let probe: Vec<u64> = (0..100_000u64).map(|i| i * 5 + 1).collect();
    let f = filter_with(&present);
    let g = GpuFilter::upload(&f).unwrap();
    let keys = DeviceBuffer::from_host(&probe).unwrap();
    let mut owned_out = DeviceBuffer::<u8>::zeros(probe.len()).unwrap();
    g.contains_device(DeviceKeys::U64(&keys), &mut owned_out)
        .unwrap();
    let out_owner = DeviceBuffer::<u8>::zeros(probe.len()).unwrap();
    {
        // SAFETY: both addresses are live allocations of this test, untouched by anything else
        // while the borrowed views exist; they are dropped before their owners.
        let borrowed_keys =
            unsafe { BorrowedBuffer::<u64>::new(keys.device_address(), probe.len()) }.unwrap();
        // SAFETY: as above.
        let mut borrowed_out =
            unsafe { BorrowedBuffer::<u8>::new(out_owner.device_address(), probe.len()) }.unwrap();
        g.contains_device(
            DeviceKeys::U64(borrowed_keys.buffer()),
            borrowed_out.buffer_mut(),
        )
        .unwrap();
    }
    let expected: Vec<u8> = probe.iter().map(|k| f.contains(k) as u8).collect();
    assert_eq!(owned_out.to_host().unwrap(), expected);
    // The owners still hold their memory (nothing was freed by the borrow) and the answers.
    assert_eq!(out_owner.to_host().unwrap(), expected);
    assert_eq!(keys.to_host().unwrap(), probe);

    // Insert through borrowed keys: the same bits as the core.
    let mut g2 = GpuFilter::new(*f.params()).unwrap();
    let owner = DeviceBuffer::from_host(&present).unwrap();
    {
        // SAFETY: as above.
        let b =
            unsafe { BorrowedBuffer::<u64>::new(owner.device_address(), present.len()) }.unwrap();
        g2.insert_device(DeviceKeys::U64(b.buffer())).unwrap();
    }
    assert_eq!(g2.download().unwrap().words(), f.words());
}

#[test]
fn addresses_outside_one_allocation_are_refused() {
    if !common::gpu("addresses_outside_one_allocation_are_refused") {
        return;
    }
    let owner = DeviceBuffer::<u64>::zeros(1000).unwrap();
    let base = owner.device_address();
    let refused = |r: Result<BorrowedBuffer<u64>, GpuError>, why: &str| match r {
        Err(GpuError::NotDeviceMemory(m)) => eprintln!("refused as expected ({why}): {m}"),
        other => panic!("{why}: expected NotDeviceMemory, got {other:?}"),
    };
    // SAFETY (each call below): the constructor only asks the driver about the address and
    // refuses it; no buffer is created, so nothing is ever read or written through it.
    refused(
        unsafe { BorrowedBuffer::new(base, 1001) },
        "one element too many",
    );
    refused(unsafe { BorrowedBuffer::new(base + 4, 10) }, "misaligned");
    refused(
        unsafe { BorrowedBuffer::new(0x1000, 10) },
        "not device memory",
    );
    refused(unsafe { BorrowedBuffer::new(base, 0) }, "empty");
    refused(
        unsafe { BorrowedBuffer::new(base + 8 * 999, usize::MAX / 16) },
        "length overflows",
    );
    // The last element alone is fine.
    // SAFETY: one element inside `owner`, which outlives the borrow and is not used meanwhile.
    let ok = unsafe { BorrowedBuffer::<u64>::new(base + 8 * 999, 1) };
    assert!(ok.is_ok(), "{ok:?}");
}
