//! The retrieval lookup kernel: compiled by NVRTC (no GPU needed), and on a GPU answering exactly
//! as the core for present and absent keys, every key form, and the golden tables.

mod common;

use bloomlanes_core::golden;
use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{Keys, Layout, Params};
use bloomlanes_gpu::{
    compile, kernel_source, DeviceBuffer, DeviceKeys, GpuRetrieval, KernelModule, Target,
};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn the_retrieval_kernel_carries_cores_mixing_constants_and_compiles() {
    use bloomlanes_core::retrieval::{MIX_MUL1, MIX_MUL2};
    let s = kernel_source(Layout::L8x32, KernelModule::Retrieval);
    assert!(s.contains(&format!("#define BL_MIX_MUL1 0x{MIX_MUL1:016x}ull\n")));
    assert!(s.contains(&format!("#define BL_MIX_MUL2 0x{MIX_MUL2:016x}ull\n")));
    let body = &s[s
        .find("// ---- retrieval.cu")
        .expect("retrieval.cu is compiled")..];
    for c in [MIX_MUL1, MIX_MUL2] {
        assert!(
            !body.contains(&format!("{c:x}")),
            "retrieval.cu retypes {c:#x}"
        );
    }
    if !common::nvrtc() {
        common::skip("the_retrieval_kernel_compiles: NVRTC not found (pip install nvidia-cuda-nvrtc==13.0.88, or set BLOOMLANES_NVRTC)");
        return;
    }
    for target in [Target::Ptx(90), Target::Cubin(90)] {
        let c = compile(Layout::L8x64, KernelModule::Retrieval, target)
            .unwrap_or_else(|e| panic!("{e}"));
        let name = b"bl_retrieval_get";
        assert!(
            c.image.windows(name.len()).any(|w| w == name),
            "{target:?}: bl_retrieval_get missing"
        );
    }
}

#[test]
fn gpu_lookups_match_the_core() {
    if !common::gpu("gpu_lookups_match_the_core") {
        return;
    }
    for (n, v, f, arity) in [
        (100_000, 8, 8, 4),
        (50_000, 32, 32, 4),
        (3000, 13, 0, 3),
        (1, 1, 4, 4),
    ] {
        let mut s = n as u64;
        let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
        let mask = ((1u64 << v) - 1) as u32;
        let values: Vec<u32> = keys.iter().map(|&k| k as u32 & mask).collect();
        let base = Params::new(Layout::L8x64, 1).with_seed(5);
        let spec = RetrievalSpec::new(v, f).with_arity(arity);
        let t = RetrievalTable::build_keys(base, spec, &keys, &values).unwrap();
        let g = GpuRetrieval::upload(&t).unwrap();
        let mut probes = keys.clone();
        probes.extend((0..n + 77).map(|_| splitmix(&mut s)));
        let hashes: Vec<u64> = probes.iter().map(|k| t.params().hash_key(k)).collect();
        let mut want_v = vec![0u32; hashes.len()];
        let mut want_f = vec![0u64; hashes.len().div_ceil(64)];
        t.get_hashes(&hashes, &mut want_v, &mut want_f);
        for form in [Keys::U64(&probes), Keys::Hashes(&hashes)] {
            let mut got_v = vec![9u32; probes.len()];
            let mut got_f = vec![u64::MAX; probes.len().div_ceil(64)];
            g.get(form, &mut got_v, &mut got_f).unwrap();
            assert_eq!(got_v, want_v, "n = {n}, v = {v}, f = {f}");
            assert_eq!(got_f, want_f, "n = {n}, v = {v}, f = {f}");
        }
        // Device-resident keys, with outputs longer than needed.
        let dev = DeviceBuffer::from_host(&probes).unwrap();
        let mut dv = DeviceBuffer::<u32>::zeros(probes.len() + 5).unwrap();
        let mut df = DeviceBuffer::<u64>::zeros(probes.len().div_ceil(64) + 1).unwrap();
        g.get_device(DeviceKeys::U64(&dev), &mut dv, &mut df)
            .unwrap();
        assert_eq!(&dv.to_host().unwrap()[..probes.len()], &want_v[..]);
        assert_eq!(&df.to_host().unwrap()[..want_f.len()], &want_f[..]);
        // Outputs too short are refused.
        let mut short = DeviceBuffer::<u32>::zeros(probes.len() - 1).unwrap();
        assert!(g
            .get_device(DeviceKeys::U64(&dev), &mut short, &mut df)
            .is_err());
    }
}

#[test]
fn gpu_lookups_answer_the_golden_tables() {
    if !common::gpu("gpu_lookups_answer_the_golden_tables") {
        return;
    }
    for v in golden::retrieval_vectors() {
        let keys: Vec<u64> = (0..v.keys).collect();
        let values: Vec<u32> = keys
            .iter()
            .map(|&k| golden::retrieval_value(k, v.shape.value_bits))
            .collect();
        let spec =
            RetrievalSpec::new(v.shape.value_bits, v.shape.check_bits).with_arity(v.shape.arity);
        let t = RetrievalTable::build_keys(Params::new(Layout::L8x64, 1), spec, &keys, &values)
            .unwrap();
        assert_eq!(*t.shape(), v.shape, "the golden table rebuilds");
        let g = GpuRetrieval::upload(&t).unwrap();
        let mut got_v = vec![0u32; keys.len()];
        let mut got_f = vec![0u64; keys.len().div_ceil(64)];
        g.get(Keys::U64(&keys), &mut got_v, &mut got_f).unwrap();
        assert_eq!(got_v, values, "{:?}", v.shape);
    }
}
