//! The CUDA source of the kernels and the list of their entry points.
//!
//! The code lives in plain `.cu` files under `src/cuda/`, included at compile time. Only the
//! constants are generated, into a prelude of `#define`s formatted from `bloomlanes-core`: the
//! salts ([`bloomlanes_core::SALTS`]), XXH64's primes, rotations, shifts and initial accumulators
//! ([`bloomlanes_core::xxh64`]) and the [`Layout`]'s sizes, so the kernels cannot drift from the
//! CPU definition.

use std::fmt::Write;

pub(crate) use crate::entry::Kernel;
pub use crate::entry::KernelModule;

use bloomlanes_core::retrieval::{MIX_MUL1, MIX_MUL2};
use bloomlanes_core::xxh64::{
    lane_init, short_init, AVALANCHE_SHIFTS, MERGE_ROTATES, PRIME64_1, PRIME64_2, PRIME64_3,
    PRIME64_4, PRIME64_5, ROUND_ROTATE, TAIL1_ROTATE, TAIL4_ROTATE, TAIL8_ROTATE,
};
use bloomlanes_core::{Layout, SALTS};

/// Threads per CUDA block for every kernel.
pub const THREADS: u32 = 256;
/// Keys handled by one thread of the u64 / hash kernels (independent loads in flight per thread).
pub const KEYS_PER_THREAD: u32 = 4;
/// Most partitions of the partitioned insert (sizes the shared-memory histograms).
pub const MAX_PARTITIONS: u32 = 2048;
/// Keys per thread of the partitioned insert's scatter pass: a CTA groups `THREADS *
/// SCATTER_KEYS_PER_THREAD` hashes by partition in shared memory before writing them out.
pub const SCATTER_KEYS_PER_THREAD: u32 = 16;
/// Keys per thread in flight in the partition histogram (a grid-stride loop; with many partitions
/// its shared-memory counts leave room for one CTA per SM, which must keep enough loads in flight
/// alone).
pub(crate) const HIST_KEYS_PER_THREAD: u32 = 8;
/// Most partitions one pass of the radix grouping scatters into (sizes its shared-memory bins): a
/// tile of `THREADS * SCATTER_KEYS_PER_THREAD` keys then writes runs of 16 hashes or more on
/// average.
pub(crate) const RADIX_FANOUT: u32 = 256;
/// Keys per thread of the scatter pass that also writes each hash's key index (partitioned
/// lookups and deletes): half the tile, so that the indices fit in the same shared memory.
pub const SCATTER_POS_KEYS_PER_THREAD: u32 = 8;
/// Grouped hashes per thread in flight while a counting slice kernel scans its hashes; each
/// CTA queues up to `THREADS * SLICE_KEYS_PER_THREAD` of them in shared memory (12 bytes each).
pub(crate) const SLICE_KEYS_PER_THREAD: u32 = 8;
/// The bit of a counting delete's per-key status that says the key was accepted (`BL_ACCEPTED`);
/// the low bits (one per lane, at most 16) say which counters it decremented.
pub(crate) const STATUS_ACCEPTED: u32 = 1 << 31;
/// A cell kernel's `flags`: skip the keys whose status is not accepted, and write each one's
/// status (accepted | the lanes changed), counting the cells found at 0 (`BL_STATUS_RECORD`).
pub(crate) const STATUS_RECORD: u32 = 1;
/// A cell kernel's `flags`: apply the operation to the lanes in each key's status only
/// (`BL_STATUS_LANES`; the undo of a delete).
pub(crate) const STATUS_LANES: u32 = 2;
/// Shared memory the bulk-reduce insert stages block masks in, per CTA.
const BULK_STAGING_BYTES: usize = 32 * 1024;

/// The `.cu` files every module starts with, after the prelude: the types, the hash, the block
/// arithmetic and the key kernels' thread shapes and entry-point macros (no entry points).
const COMMON_FILES: [(&str, &str); 4] = [
    ("types.cu", include_str!("cuda/types.cu")),
    ("xxh64.cu", include_str!("cuda/xxh64.cu")),
    ("block.cu", include_str!("cuda/block.cu")),
    ("keys.cu", include_str!("cuda/keys.cu")),
];
const PARTITION_CU: (&str, &str) = ("partition.cu", include_str!("cuda/partition.cu"));
const LOOKUP_CU: (&str, &str) = ("lookup.cu", include_str!("cuda/lookup.cu"));
const UTIL_CU: (&str, &str) = ("util.cu", include_str!("cuda/util.cu"));
const WINDOW_CU: (&str, &str) = ("window.cu", include_str!("cuda/window.cu"));
const CELLS_CU: (&str, &str) = ("cells.cu", include_str!("cuda/cells.cu"));
const KINDS_CU: (&str, &str) = ("kinds.cu", include_str!("cuda/kinds.cu"));
const RETRIEVAL_CU: (&str, &str) = ("retrieval.cu", include_str!("cuda/retrieval.cu"));

impl KernelModule {
    /// The module's own `.cu` files, concatenated after [`COMMON_FILES`].
    fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            KernelModule::Static => &[PARTITION_CU, LOOKUP_CU, UTIL_CU],
            KernelModule::Window => &[LOOKUP_CU, WINDOW_CU],
            KernelModule::Cells => &[CELLS_CU, KINDS_CU],
            KernelModule::Retrieval => &[RETRIEVAL_CU],
        }
    }

    /// The module's generated entry points: the key kernels and probes instantiated for its
    /// geometry, or the cell kernels of every operation (`entry.rs`).
    fn entry_points(self) -> String {
        let geometry = |what: &str, suffix: &str, geo: &str| {
            format!(
                "// ---- entry points of {what}\nBL_KEY_ENTRIES({suffix}, {geo})\n\
                 BL_PROBE_ENTRIES({suffix}, {geo})\n"
            )
        };
        match self {
            KernelModule::Static => geometry("the static image", "", "FLAT"),
            KernelModule::Window => geometry("a sliding window's generations", "_window", "GENS"),
            KernelModule::Cells => crate::entry::cell_entry_points(),
            KernelModule::Retrieval => String::new(),
        }
    }
}

/// The name of every kernel entry point the source of `module` defines, for every layout: what a
/// loaded module provides (and what the compile test looks for in the compiled image).
pub fn kernel_entry_points(module: KernelModule) -> Vec<&'static str> {
    module.kernels().map(|k| k.name()).collect()
}

/// The prelude of `#define`s for `layout`: every constant the `.cu` files use, from core.
fn prelude(layout: Layout) -> String {
    let lanes = layout.lanes();
    let mut s = String::new();
    let mut define = |name: &str, value: String| {
        let _ = writeln!(s, "#define {name} {value}");
    };
    define("BL_LANES", lanes.to_string());
    define("BL_WORD_BITS", layout.word_bits().to_string());
    define("BL_LANE_SHIFT", layout.lane_shift().to_string());
    define("BL_BLOCK_U32S", layout.block_u32s().to_string());
    define("BL_THREADS", THREADS.to_string());
    define("BL_KPT", KEYS_PER_THREAD.to_string());
    define("BL_MAXP", MAX_PARTITIONS.to_string());
    define("BL_SKPT", SCATTER_KEYS_PER_THREAD.to_string());
    define("BL_SKPT_POS", SCATTER_POS_KEYS_PER_THREAD.to_string());
    define("BL_HIST_KPT", HIST_KEYS_PER_THREAD.to_string());
    define("BL_RADIX_FANOUT", RADIX_FANOUT.to_string());
    define("BL_SLICE_KPT", SLICE_KEYS_PER_THREAD.to_string());
    define("BL_ACCEPTED", format!("0x{STATUS_ACCEPTED:08x}u"));
    define("BL_STATUS_RECORD", format!("{STATUS_RECORD}u"));
    define("BL_STATUS_LANES", format!("{STATUS_LANES}u"));
    // Shared-memory staging slots per thread of the bulk-reduce insert.
    let slots = (BULK_STAGING_BYTES / (THREADS as usize * layout.block_bytes()))
        .clamp(1, KEYS_PER_THREAD as usize);
    define("BL_SLOTS", slots.to_string());
    for (i, p) in [PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5]
        .iter()
        .enumerate()
    {
        define(&format!("BL_P{}", i + 1), format!("0x{p:016x}ull"));
    }
    define("BL_ROUND_ROTATE", ROUND_ROTATE.to_string());
    for (i, r) in MERGE_ROTATES.iter().enumerate() {
        define(&format!("BL_MERGE_ROTATE{i}"), r.to_string());
    }
    define("BL_TAIL8_ROTATE", TAIL8_ROTATE.to_string());
    define("BL_TAIL4_ROTATE", TAIL4_ROTATE.to_string());
    define("BL_TAIL1_ROTATE", TAIL1_ROTATE.to_string());
    for (i, sh) in AVALANCHE_SHIFTS.iter().enumerate() {
        define(&format!("BL_AVALANCHE_SHIFT{i}"), sh.to_string());
    }
    // The initial accumulators are `seed` plus a constant (wrapping): the constants are core's
    // values for seed 0.
    for (i, v) in lane_init(0).iter().enumerate() {
        define(&format!("BL_LANE_INIT{i}"), format!("0x{v:016x}ull"));
    }
    define("BL_SHORT_INIT", format!("0x{:016x}ull", short_init(0)));
    define("BL_MIX_MUL1", format!("0x{MIX_MUL1:016x}ull"));
    define("BL_MIX_MUL2", format!("0x{MIX_MUL2:016x}ull"));
    for (i, salt) in SALTS.iter().take(lanes).enumerate() {
        define(&format!("BL_SALT{i}"), format!("0x{salt:08x}u"));
    }
    let list: Vec<String> = (0..lanes).map(|i| format!("BL_SALT{i}")).collect();
    define("BL_SALTS", list.join(", "));
    s.push_str(&crate::entry::cell_codes());
    s
}

/// The CUDA C source of `module`'s kernels for `layout`: the generated prelude of constants, the
/// common `.cu` files, the module's own, then its generated entry points.
pub fn kernel_source(layout: Layout, module: KernelModule) -> String {
    let mut s = format!(
        "// bloomlanes kernels for layout {layout}, module {module}: constants generated by \
         bloomlanes-gpu from bloomlanes-core, code from bloomlanes-gpu/src/cuda.\n"
    );
    s.push_str(&prelude(layout));
    for (name, text) in COMMON_FILES.iter().chain(module.files()) {
        let _ = writeln!(s, "// ---- {name}");
        s.push_str(text);
    }
    s.push_str(&module.entry_points());
    s
}

/// The compiled entry points' parameters, for the tests that check what the launchers push.
#[cfg(test)]
pub(crate) mod ptx {
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use bloomlanes_core::Layout;

    use crate::{compile, KernelModule, Target};

    /// Entry points and the sizes of their parameters in bytes.
    pub(crate) type Entries = HashMap<String, Vec<u32>>;

    /// Each module's entry points in the 8x32 PTX and the sizes of their parameters in bytes;
    /// `None` (with a SKIP line) when NVRTC cannot be loaded.
    pub(crate) fn modules() -> Option<&'static [(KernelModule, Entries)]> {
        type Modules = Vec<(KernelModule, Entries)>;
        static MODULES: OnceLock<Option<Modules>> = OnceLock::new();
        MODULES
            .get_or_init(|| {
                if let Err(e) = crate::require_nvrtc() {
                    bloomlanes_testkit::skip(format_args!("the PTX parameter checks: {e}"));
                    return None;
                }
                let compiled = KernelModule::ALL.map(|m| {
                    let c = compile(Layout::L8x32, m, Target::Ptx(90))
                        .unwrap_or_else(|e| panic!("{e}"));
                    (m, parse(&String::from_utf8_lossy(&c.image)))
                });
                Some(compiled.into())
            })
            .as_deref()
    }

    /// Every entry point of the 8x32 modules' PTX and the sizes of its parameters in bytes;
    /// `None` (with a SKIP line) when NVRTC cannot be loaded.
    pub(crate) fn entries() -> Option<&'static HashMap<String, Vec<u32>>> {
        static ENTRIES: OnceLock<Option<HashMap<String, Vec<u32>>>> = OnceLock::new();
        ENTRIES
            .get_or_init(|| {
                let modules = modules()?;
                Some(modules.iter().flat_map(|(_, e)| e.clone()).collect())
            })
            .as_ref()
    }

    /// The `.entry` parameter lists of a PTX text.
    fn parse(ptx: &str) -> HashMap<String, Vec<u32>> {
        let mut out = HashMap::new();
        for part in ptx.split(".entry ").skip(1) {
            let (name, rest) = part.split_once('(').expect("an entry's parameters");
            let list = rest.split_once(')').map_or(rest, |(l, _)| l);
            let sizes = list
                .split(',')
                .filter_map(|p| p.split_whitespace().nth(1))
                .map(|ty| if ty.ends_with("64") { 8 } else { 4 })
                .collect();
            out.insert(name.trim().to_string(), sizes);
        }
        out
    }

    /// The sizes of the parameters of a C parameter list `(…)` (pointers and u64: 8 bytes; u32
    /// and int: 4).
    pub(crate) fn sizes(params: &str) -> Vec<u32> {
        params
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(|p| {
                let p = p.trim();
                if p.contains('*') || p.starts_with("u64") {
                    8
                } else {
                    assert!(p.starts_with("u32") || p.starts_with("int"), "{p}");
                    4
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Kernel;

    /// The entry points written out literally in the `.cu` files (the key kernels come from the
    /// entry-point macros, the cell kernels from `entry.rs`).
    fn literal(k: Kernel) -> bool {
        let key_kernel = k.windowed() != k || k.is_windowed();
        !key_kernel && !k.name().starts_with("bl_cells_")
    }

    #[test]
    fn every_kernel_is_defined_once_in_its_module() {
        for module in KernelModule::ALL {
            let s = kernel_source(Layout::L8x32, module);
            let mut defined = 0;
            for k in Kernel::ALL {
                let entry = format!("__launch_bounds__(BL_THREADS) {}(", k.name());
                let mine = k.module() == module;
                let want = usize::from(mine && (literal(*k) || k.name().starts_with("bl_cells_")));
                assert_eq!(s.matches(&entry).count(), want, "{module}: {}", k.name());
                defined += want;
            }
            // The key kernels: each entry-point macro body (in every module's source) spells
            // its kernels once; the static and window modules instantiate them for their
            // geometry.
            let uses: &[&str] = match module {
                KernelModule::Static => &["BL_KEY_ENTRIES(, FLAT)\n", "BL_PROBE_ENTRIES(, FLAT)\n"],
                KernelModule::Window => &[
                    "BL_KEY_ENTRIES(_window, GENS)\n",
                    "BL_PROBE_ENTRIES(_window, GENS)\n",
                ],
                KernelModule::Cells | KernelModule::Retrieval => &[],
            };
            for (body, kernels) in [
                ("#define BL_BYTE_KEY_ENTRIES(", 3),
                ("#define BL_WORD_KEY_ENTRIES(", 4),
                ("#define BL_SLICE_ENTRY(", 1),
            ] {
                assert_eq!(s.matches(body).count(), 1, "{module}: {body}");
                defined += kernels;
            }
            let probes = s.matches("#define BL_PROBE_ENTRIES(").count();
            assert_eq!(probes, uses.len() / 2, "{module}: the probes' macro");
            defined += 3 * probes;
            for use_ in uses {
                assert_eq!(s.matches(use_).count(), 1, "{module}: {use_}");
            }
            assert_eq!(
                s.matches("ENTRIES(_window, GENS)").count(),
                2 * usize::from(module == KernelModule::Window)
            );
            assert_eq!(
                s.matches("extern \"C\" __global__").count(),
                defined,
                "{module}"
            );
        }
        // Compiled, every entry point is in its module, and in no other.
        if let Some(modules) = ptx::modules() {
            for (module, ptx) in modules {
                let mut want = kernel_entry_points(*module);
                let mut got: Vec<&str> = ptx.keys().map(String::as_str).collect();
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "{module}");
            }
        }
        let all: usize = KernelModule::ALL
            .iter()
            .map(|m| kernel_entry_points(*m).len())
            .sum();
        assert_eq!(all, Kernel::ALL.len());
    }

    #[test]
    fn the_fixed_kernels_have_the_signatures_their_launches_push() {
        // The launches in cells.rs, counting_delete.rs, window.rs, lookup.rs, hashed.rs,
        // partition.rs and spatial.rs push their arguments in these orders and types (their
        // SAFETY comments quote them). The key kernels' signatures are tested in launch.rs, the
        // cell kernels' in cells.rs.
        let src: String = KernelModule::ALL
            .iter()
            .map(|m| kernel_source(Layout::L16x64, *m))
            .collect();
        let keys = "const u64* keys, u64 n, u64 seed, int mode";
        for (k, params) in [
            (Kernel::CountCheck, format!("const u32* image, u64 blocks, {keys}, u32* status, u64* stats")),
            (Kernel::PartBounds, "const u64* hashes, u64 n, u32 parts, u32* bounds".into()),
            (
                Kernel::PartHist,
                "const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ counts".into(),
            ),
            (
                Kernel::PartScan,
                "const u32* __restrict__ counts, u32 parts, u32* __restrict__ cursor,\n    u32 coarse, u32* __restrict__ coarse_cursor, u32* __restrict__ seg, u32* __restrict__ tiles".into(),
            ),
            (
                Kernel::RadixScatterKeys,
                "const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out".into(),
            ),
            (
                Kernel::RadixScatterHashes,
                "const u64* __restrict__ in, u64 n, u32 coarse, u32 fine,\n    const u32* __restrict__ seg, const u32* __restrict__ tiles, u32* __restrict__ cursor, u64* __restrict__ out".into(),
            ),
            (Kernel::HashRecords, "const u8* data, u64 width, u64 n, u64 seed, u64* out".into()),
            (
                Kernel::HashStrings,
                "const u8* data, u64 data_len, const u64* offsets, u64 base, u64 n, u64 seed, u64* out".into(),
            ),
            (
                Kernel::PartScatterPos,
                "const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos".into(),
            ),
            (Kernel::StatusBytes, "const u32* status, u64 n, u8* out".into()),
            (Kernel::StatusScatter, "const u32* status, const u32* pos, u64 n, u8* out".into()),
            (Kernel::BitsToBytes, "const u32* bits, u64 n, u8* out".into()),
            (Kernel::WindowClear, "u32* words, u64 blocks, u32 gens, u32 gen".into()),
            (
                Kernel::RetrievalGet,
                format!("const u64* words, u64 cseed, u32 sigma, u32 segs, u32 arity, u32 vbits, u32 fbits, {keys}, u32* values, u32* found"),
            ),
            (
                Kernel::CheckClasses,
                "const u32* values, u64 n, u32 classes, u64* first_bad, u64* counts".into(),
            ),
        ] {
            let signature = format!("__launch_bounds__(BL_THREADS) {}({params})", k.name());
            assert!(src.contains(&signature), "no `{signature}`");
            if let Some(ptx) = ptx::entries() {
                let flat = params.replace("\n    ", " ");
                assert_eq!(ptx.get(k.name()), Some(&ptx::sizes(&flat)), "{}", k.name());
            }
        }
        // The probes and the slice insert, in their entry-point macros (the window twin adds
        // `, u32 gens, u32 gen`).
        for (base, params) in [
            ("bl_probe_bitmap", "const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* bits"),
            ("bl_probe_list", "const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* list, u64 cap, u64* count"),
            ("bl_positions_keys", "const u32* words, u64 blocks, const u64* keys, u64 n, u64 seed, int mode, u32* list, u64 cap, u64* count"),
            ("bl_insert_slices", "u32* words, u64 blocks, const u64* hashes, u64 n, const u32* ends, u32 parts, u64 sb"),
        ] {
            let signature = format!("{base}##SUFFIX({params} BL_GEO_PARAMS_##G)");
            assert!(src.contains(&signature), "no `{signature}`");
            if let Some(ptx) = ptx::entries() {
                let window = format!("({params}, u32 gens, u32 gen)");
                assert_eq!(ptx.get(base), Some(&ptx::sizes(params)), "{base}");
                assert_eq!(ptx.get(&format!("{base}_window")), Some(&ptx::sizes(&window)));
            }
        }
        assert!(src.contains("#define BL_GEO_PARAMS_GENS , u32 gens, u32 gen\n"));
        assert!(src.contains("#define BL_GEO_PARAMS_FLAT\n"));
    }

    #[test]
    fn the_cuda_files_use_no_literal_constant_of_core() {
        // The hash constants must come from the prelude, never be retyped in a `.cu` file.
        let mut retyped = Vec::new();
        for p in [PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5] {
            retyped.push(format!("{p:x}"));
        }
        retyped.extend(SALTS.iter().map(|s| format!("{s:x}")));
        let files = COMMON_FILES
            .iter()
            .chain(KernelModule::ALL.iter().flat_map(|m| m.files()));
        for (name, text) in files {
            let lower = text.to_ascii_lowercase();
            for c in &retyped {
                assert!(!lower.contains(c.as_str()), "{name} retypes {c}");
            }
        }
    }

    #[test]
    fn initial_accumulators_are_seed_plus_the_generated_constants() {
        for seed in [0u64, 1, 0x1234_5678_9abc_def0, u64::MAX] {
            let base = lane_init(0);
            let want = lane_init(seed);
            for i in 0..4 {
                assert_eq!(
                    seed.wrapping_add(base[i]),
                    want[i],
                    "seed {seed:#x}, lane {i}"
                );
            }
            assert_eq!(seed.wrapping_add(short_init(0)), short_init(seed));
        }
    }
}
