//! The retrieval lookup kernel on the CPU: `bl_retrieval_get` over tables of every cell width
//! shape that matters to its reads (cells inside one word, cells that cross into the next, 64-bit
//! cells, arity 3 and 4, with and without check bits), for u64 keys and hashes, present and
//! absent, against the core's `get_hashes`.

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Layout, Params};
use bloomlanes_gpu::KernelModule;
use rand::{Rng, SeedableRng};

use super::{ctas, hashes, Arg, Emulators, Job, KEYS_PER_THREAD, THREADS};

#[test]
fn retrieval_lookups_equal_the_core_when_run_on_the_cpu() {
    let Some(emus) = Emulators::new("retrieval_lookups_equal_the_core", "retrieval") else {
        return;
    };
    // The module has no layout of its own: any layout's source holds the same kernel.
    let emu = emus.build(Layout::L8x64, KernelModule::Retrieval);
    let mut r = rand::rngs::StdRng::seed_from_u64(0x7e7);
    // (value bits, check bits, arity): cells of 16, 20, 64, 1, 27 and 32 bits.
    for (v, f, arity) in [
        (8, 8, 4),
        (12, 8, 3),
        (32, 32, 4),
        (1, 0, 3),
        (20, 7, 4),
        (32, 0, 3),
    ] {
        let n = r.gen_range(500..3000);
        let keys: Vec<u64> = (0..n).map(|_| r.gen()).collect();
        let mask = ((1u64 << v) - 1) as u32;
        let values: Vec<u32> = keys.iter().map(|_| r.gen::<u32>() & mask).collect();
        let base = Params::new(Layout::L8x64, 1).with_seed(r.gen());
        let spec = RetrievalSpec::new(v, f).with_arity(arity);
        let t = RetrievalTable::build_keys(base, spec, &keys, &values).unwrap();
        let mut probes = keys.clone();
        probes.extend((0..n).map(|_| r.gen::<u64>()));
        let seed = t.params().seed;
        let hs = hashes(&probes, 0, seed);
        let mut want_v = vec![0u32; probes.len()];
        let mut want_f = vec![0u64; probes.len().div_ceil(64)];
        t.get_hashes(&hs, &mut want_v, &mut want_f);
        for (mode, input) in [(0u64, &probes), (1, &hs)] {
            let s = t.shape();
            let mut j = Job::default();
            let words = j.buffer(t.words());
            let keys_arg = j.buffer(input);
            let got_v = j.buffer(&vec![u32::MAX; probes.len()]);
            let got_f = j.buffer(&vec![u64::MAX; probes.len().div_ceil(64)]);
            let n = probes.len() as u64;
            j.launch(
                "bl_retrieval_get",
                ctas(n, THREADS * KEYS_PER_THREAD),
                0,
                &[
                    words,
                    Arg::Val(s.seed),
                    Arg::Val(u64::from(s.segment_bits)),
                    Arg::Val(u64::from(s.segment_count)),
                    Arg::Val(u64::from(s.arity)),
                    Arg::Val(u64::from(s.value_bits)),
                    Arg::Val(u64::from(s.check_bits)),
                    keys_arg,
                    Arg::Val(n),
                    Arg::Val(seed),
                    Arg::Val(mode),
                    got_v,
                    got_f,
                ],
            );
            let out = emu.run(&j);
            let what = format!("v = {v}, f = {f}, arity {arity}, mode {mode}");
            assert_eq!(out.get::<u32>(got_v), want_v, "values, {what}");
            assert_eq!(out.get::<u64>(got_f), want_f, "found, {what}");
            assert!(want_f.iter().any(|&w| w != 0), "{what}: no key found");
        }
    }
}
