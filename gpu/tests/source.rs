//! Tests that need no GPU: the generated source carries core's constants, and NVRTC compiles it.

mod common;

use bloomlanes_core::xxh64::{
    lane_init, short_init, AVALANCHE_SHIFTS, MERGE_ROTATES, PRIME64_1, PRIME64_2, PRIME64_3,
    PRIME64_4, PRIME64_5, ROUND_ROTATE, TAIL1_ROTATE, TAIL4_ROTATE, TAIL8_ROTATE,
};
use bloomlanes_core::{Layout, SALTS};
use bloomlanes_gpu::{
    compile_cached_in, kernel_entry_points, kernel_source, KernelModule, Target, KERNEL_CACHE_ENV,
};

/// Every (layout, module) pair: each module's source carries the whole prelude.
fn every_module() -> impl Iterator<Item = (Layout, KernelModule)> {
    Layout::ALL
        .into_iter()
        .flat_map(|l| KernelModule::ALL.map(|m| (l, m)))
}

#[test]
fn source_carries_core_constants() {
    for (layout, module) in every_module() {
        let s = kernel_source(layout, module);
        for (i, salt) in SALTS.iter().take(layout.lanes()).enumerate() {
            assert!(
                s.contains(&format!("#define BL_SALT{i} 0x{salt:08x}u")),
                "{layout}: salt {i}"
            );
        }
        assert!(!s.contains(&format!("BL_SALT{}", layout.lanes())));
        for (i, p) in [PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5]
            .iter()
            .enumerate()
        {
            assert!(s.contains(&format!("#define BL_P{} 0x{p:016x}ull", i + 1)));
        }
        // Every generated constant, as (name, value), against the prelude's lines.
        let indexed = |name: &str, values: &[String]| -> Vec<(String, String)> {
            let named = values.iter().enumerate();
            named
                .map(|(i, v)| (format!("{name}{i}"), v.clone()))
                .collect()
        };
        let text = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<String>>();
        let mut want = vec![
            ("BL_ROUND_ROTATE".to_string(), ROUND_ROTATE.to_string()),
            ("BL_TAIL8_ROTATE".into(), TAIL8_ROTATE.to_string()),
            ("BL_TAIL4_ROTATE".into(), TAIL4_ROTATE.to_string()),
            ("BL_TAIL1_ROTATE".into(), TAIL1_ROTATE.to_string()),
            (
                "BL_SHORT_INIT".into(),
                format!("0x{:016x}ull", short_init(0)),
            ),
        ];
        want.extend(indexed("BL_MERGE_ROTATE", &text(&MERGE_ROTATES)));
        want.extend(indexed("BL_AVALANCHE_SHIFT", &text(&AVALANCHE_SHIFTS)));
        let inits: Vec<String> = lane_init(0)
            .iter()
            .map(|v| format!("0x{v:016x}ull"))
            .collect();
        want.extend(indexed("BL_LANE_INIT", &inits));
        let has = |name: &str, value: String| {
            let line = format!("#define {name} {value}\n");
            assert!(s.contains(&line), "{layout}: missing {line:?}");
        };
        for (name, value) in want {
            has(&name, value);
        }
        let salts: Vec<String> = (0..layout.lanes()).map(|i| format!("BL_SALT{i}")).collect();
        has("BL_SALTS", salts.join(", "));
        // Every constant is defined once, and the hash code uses the defines, not literals.
        for name in [
            "BL_ROUND_ROTATE",
            "BL_TAIL8_ROTATE",
            "BL_P1 ",
            "BL_LANE_SHIFT ",
        ] {
            assert_eq!(s.matches(&format!("#define {name}")).count(), 1, "{name}");
        }
        for retyped in [
            "bl_rotl(acc, 31)",
            "bl_rotl(h, 27)",
            "h >> 33",
            "seed + BL_P5",
        ] {
            assert!(
                !s.contains(retyped),
                "{layout}: the source retypes {retyped:?}"
            );
        }
        assert!(s.contains(&format!("#define BL_LANES {}\n", layout.lanes())));
        assert!(s.contains(&format!("#define BL_WORD_BITS {}\n", layout.word_bits())));
        assert!(s.contains(&format!("#define BL_LANE_SHIFT {}\n", layout.lane_shift())));
        assert!(s.contains(&format!("#define BL_BLOCK_U32S {}\n", layout.block_u32s())));
    }
}

#[test]
fn the_kinds_constants_come_from_the_prelude() {
    for (layout, module) in every_module() {
        let s = kernel_source(layout, module);
        // The counting delete's accepted bit, and the scatter tile of the positions variant.
        assert_eq!(
            s.matches("#define BL_ACCEPTED 0x80000000u\n").count(),
            1,
            "{layout}"
        );
        assert_eq!(s.matches("#define BL_SKPT_POS ").count(), 1, "{layout}");
        assert!(
            !s.contains("0x80000000u;"),
            "{layout}: a retyped accepted bit"
        );
    }
}

#[test]
fn nvrtc_compiles_every_layout() {
    if !common::nvrtc() {
        common::skip("nvrtc_compiles_every_layout: NVRTC not found (pip install nvidia-cuda-nvrtc==13.0.88, or set BLOOMLANES_NVRTC)");
        return;
    }
    let (major, minor) = bloomlanes_gpu::nvrtc_version().unwrap();
    eprintln!("NVRTC {major}.{minor}");
    // The kernel cache named by BLOOMLANES_KERNEL_CACHE (filled here with the sm_90 images a
    // device run can load without compiling), else a scratch one.
    let cache = std::env::var_os(KERNEL_CACHE_ENV)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("bloomlanes-cache-{}", std::process::id()))
        });
    let builds: Vec<_> = every_module()
        .flat_map(|(l, m)| [Target::Cubin(90), Target::Ptx(90)].map(|t| (l, m, t)))
        .collect();
    // NVRTC compiles one program per thread: the builds (about 50 s one by one) on every core.
    bloomlanes_testkit::each_in_parallel(&builds, |&(layout, module, target)| {
        compiles_with_every_entry_point(&cache, layout, module, target)
    });
    let all: usize = KernelModule::ALL
        .iter()
        .map(|m| kernel_entry_points(*m).len())
        .sum();
    assert!(all >= 64, "{all} entry points");
    if std::env::var_os(KERNEL_CACHE_ENV).is_none() {
        let _ = std::fs::remove_dir_all(&cache);
    }
}

/// `module` of `layout` compiles for `target` (a second compile is a cache hit) and its image
/// holds every entry point of the module's part of the table.
fn compiles_with_every_entry_point(
    cache: &std::path::Path,
    layout: Layout,
    module: KernelModule,
    target: Target,
) {
    let what = format!("{layout} {module} {target:?}");
    let c = compile_cached_in(cache, layout, module, target).unwrap_or_else(|e| panic!("{e}"));
    let again = compile_cached_in(cache, layout, module, target).unwrap();
    assert!(
        again.image == c.image && again.log.is_empty(),
        "{what}: a cache hit"
    );
    assert!(!c.image.is_empty(), "{what}");
    if !c.log.is_empty() {
        eprintln!("{what}: {}", c.log);
    }
    // Every entry point of the module's part of the table (static: the key kernels,
    // partitioning, probes, helpers; window: their twins; cells: every cell operation's
    // update and slice kernels, the reductions, the kinds' checks) is in the image, and
    // no other: the cell width is a kernel argument, so these are all the variants.
    let entries = kernel_entry_points(module);
    if let Target::Ptx(_) = target {
        let ptx = String::from_utf8_lossy(&c.image);
        assert_eq!(ptx.matches(".entry ").count(), entries.len(), "{what}");
        for entry in &entries {
            assert!(ptx.contains(&format!(".entry {entry}(")), "{what}: {entry}");
        }
    } else {
        assert_eq!(&c.image[..4], b"\x7fELF", "{what}: CUBIN is an ELF image");
        for name in &entries {
            let sym = format!("{name}\0");
            assert!(
                c.image.windows(sym.len()).any(|w| w == sym.as_bytes()),
                "{what}: {name} missing from the CUBIN"
            );
        }
    }
}
