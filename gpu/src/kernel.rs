//! The CUDA source of the kernels and the list of their entry points.
//!
//! The code lives in plain `.cu` files under `src/cuda/`, included at compile time. Only the
//! constants are generated, into a prelude of `#define`s formatted from `bloomlanes-core`: the
//! salts ([`bloomlanes_core::SALTS`]), XXH64's primes, rotations, shifts and initial accumulators
//! ([`bloomlanes_core::xxh64`]) and the [`Layout`]'s sizes, so the kernels cannot drift from the
//! CPU definition.

use std::fmt::Write;

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
/// Keys per thread of the scatter pass that also writes each hash's key index (partitioned
/// lookups and deletes): half the tile, so that the indices fit in the same shared memory.
pub const SCATTER_POS_KEYS_PER_THREAD: u32 = 8;
/// Grouped hashes per thread in flight while a counting slice kernel scans its hashes; each
/// CTA queues up to `THREADS * SLICE_KEYS_PER_THREAD` of them in shared memory (12 bytes each).
pub(crate) const SLICE_KEYS_PER_THREAD: u32 = 8;
/// The bit of a counting delete's per-key status that says the key was accepted (`BL_ACCEPTED`);
/// the low bits (one per lane, at most 16) say which counters it decremented.
pub(crate) const STATUS_ACCEPTED: u32 = 1 << 31;
/// Shared memory the bulk-reduce insert stages block masks in, per CTA.
const BULK_STAGING_BYTES: usize = 32 * 1024;

/// The `.cu` files, in the order they are concatenated after the prelude.
const CUDA_FILES: [(&str, &str); 10] = [
    ("types.cu", include_str!("cuda/types.cu")),
    ("xxh64.cu", include_str!("cuda/xxh64.cu")),
    ("block.cu", include_str!("cuda/block.cu")),
    ("keys.cu", include_str!("cuda/keys.cu")),
    ("partition.cu", include_str!("cuda/partition.cu")),
    ("lookup.cu", include_str!("cuda/lookup.cu")),
    ("counting.cu", include_str!("cuda/counting.cu")),
    ("window.cu", include_str!("cuda/window.cu")),
    ("retrieval.cu", include_str!("cuda/retrieval.cu")),
    ("util.cu", include_str!("cuda/util.cu")),
];

/// Every kernel entry point (`extern "C"` in the `.cu` files). The discriminant indexes the
/// loaded functions of a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    InsertU64,
    InsertHash,
    InsertU64Bulk,
    InsertHashBulk,
    InsertRecords,
    InsertStrings,
    ContainsU64,
    ContainsHash,
    ContainsRecords,
    ContainsStrings,
    BitmapU64,
    BitmapHash,
    BitmapRecords,
    BitmapStrings,
    HashRecords,
    HashStrings,
    PartHist,
    PartScan,
    PartScatter,
    PartScatterPos,
    ProbeBitmap,
    ProbeList,
    PositionsKeys,
    CountInsert,
    CountCheck,
    CountDelete,
    CountUndo,
    PartBounds,
    CountInsertSlices,
    CountDeleteSlices,
    WindowInsert,
    WindowContains,
    WindowBitmap,
    WindowClear,
    RetrievalGet,
    Union,
    Intersect,
    CheckOffsets,
    StatusBytes,
    StatusScatter,
    BitsToBytes,
    FillRandom,
    SpeedOfLight,
}

impl Kernel {
    /// Every kernel, in discriminant order.
    pub(crate) const ALL: [Kernel; 43] = [
        Kernel::InsertU64,
        Kernel::InsertHash,
        Kernel::InsertU64Bulk,
        Kernel::InsertHashBulk,
        Kernel::InsertRecords,
        Kernel::InsertStrings,
        Kernel::ContainsU64,
        Kernel::ContainsHash,
        Kernel::ContainsRecords,
        Kernel::ContainsStrings,
        Kernel::BitmapU64,
        Kernel::BitmapHash,
        Kernel::BitmapRecords,
        Kernel::BitmapStrings,
        Kernel::HashRecords,
        Kernel::HashStrings,
        Kernel::PartHist,
        Kernel::PartScan,
        Kernel::PartScatter,
        Kernel::PartScatterPos,
        Kernel::ProbeBitmap,
        Kernel::ProbeList,
        Kernel::PositionsKeys,
        Kernel::CountInsert,
        Kernel::CountCheck,
        Kernel::CountDelete,
        Kernel::CountUndo,
        Kernel::PartBounds,
        Kernel::CountInsertSlices,
        Kernel::CountDeleteSlices,
        Kernel::WindowInsert,
        Kernel::WindowContains,
        Kernel::WindowBitmap,
        Kernel::WindowClear,
        Kernel::RetrievalGet,
        Kernel::Union,
        Kernel::Intersect,
        Kernel::CheckOffsets,
        Kernel::StatusBytes,
        Kernel::StatusScatter,
        Kernel::BitsToBytes,
        Kernel::FillRandom,
        Kernel::SpeedOfLight,
    ];

    /// The entry point's name in the CUDA source.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Kernel::InsertU64 => "bl_insert_u64",
            Kernel::InsertHash => "bl_insert_hash",
            Kernel::InsertU64Bulk => "bl_insert_u64_bulk",
            Kernel::InsertHashBulk => "bl_insert_hash_bulk",
            Kernel::InsertRecords => "bl_insert_records",
            Kernel::InsertStrings => "bl_insert_strings",
            Kernel::ContainsU64 => "bl_contains_u64",
            Kernel::ContainsHash => "bl_contains_hash",
            Kernel::ContainsRecords => "bl_contains_records",
            Kernel::ContainsStrings => "bl_contains_strings",
            Kernel::BitmapU64 => "bl_bitmap_u64",
            Kernel::BitmapHash => "bl_bitmap_hash",
            Kernel::BitmapRecords => "bl_bitmap_records",
            Kernel::BitmapStrings => "bl_bitmap_strings",
            Kernel::HashRecords => "bl_hash_records",
            Kernel::HashStrings => "bl_hash_strings",
            Kernel::PartHist => "bl_part_hist",
            Kernel::PartScan => "bl_part_scan",
            Kernel::PartScatter => "bl_part_scatter",
            Kernel::PartScatterPos => "bl_part_scatter_pos",
            Kernel::ProbeBitmap => "bl_probe_bitmap",
            Kernel::ProbeList => "bl_probe_list",
            Kernel::PositionsKeys => "bl_positions_keys",
            Kernel::CountInsert => "bl_count_insert",
            Kernel::CountCheck => "bl_count_check",
            Kernel::CountDelete => "bl_count_delete",
            Kernel::CountUndo => "bl_count_undo",
            Kernel::PartBounds => "bl_part_bounds",
            Kernel::CountInsertSlices => "bl_count_insert_slices",
            Kernel::CountDeleteSlices => "bl_count_delete_slices",
            Kernel::WindowInsert => "bl_window_insert",
            Kernel::WindowContains => "bl_window_contains",
            Kernel::WindowBitmap => "bl_window_bitmap",
            Kernel::WindowClear => "bl_window_clear",
            Kernel::RetrievalGet => "bl_retrieval_get",
            Kernel::Union => "bl_union",
            Kernel::Intersect => "bl_intersect",
            Kernel::CheckOffsets => "bl_check_offsets",
            Kernel::StatusBytes => "bl_status_bytes",
            Kernel::StatusScatter => "bl_status_scatter",
            Kernel::BitsToBytes => "bl_bits_to_bytes",
            Kernel::FillRandom => "bl_fill_random",
            Kernel::SpeedOfLight => "bl_speed_of_light",
        }
    }
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
    define("BL_SLICE_KPT", SLICE_KEYS_PER_THREAD.to_string());
    define("BL_ACCEPTED", format!("0x{STATUS_ACCEPTED:08x}u"));
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
    s
}

/// The CUDA C source of every kernel for `layout`: the generated prelude of constants, then the
/// `.cu` files of this crate.
pub fn kernel_source(layout: Layout) -> String {
    let mut s = format!(
        "// bloomlanes kernels for layout {layout}: constants generated by bloomlanes-gpu from \
         bloomlanes-core, code from bloomlanes-gpu/src/cuda.\n"
    );
    s.push_str(&prelude(layout));
    for (name, text) in CUDA_FILES {
        let _ = writeln!(s, "// ---- {name}");
        s.push_str(text);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_is_defined_once_in_the_source() {
        let s = kernel_source(Layout::L8x32);
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}: ALL is in discriminant order");
            let entry = format!("__launch_bounds__(BL_THREADS) {}(", k.name());
            assert_eq!(s.matches(&entry).count(), 1, "{}", k.name());
        }
        assert_eq!(
            s.matches("extern \"C\" __global__").count(),
            Kernel::ALL.len(),
            "every entry point is listed in Kernel"
        );
    }

    #[test]
    fn the_kinds_kernels_have_the_signatures_their_launches_push() {
        // The launches in counting_delete.rs, window.rs, lookup.rs, hashed.rs and partition.rs
        // push their arguments in these orders and types (their SAFETY comments quote them).
        let src = kernel_source(Layout::L16x64);
        let keys = "const u64* keys, u64 n, u64 seed, int mode";
        for (k, params) in [
            (Kernel::CountInsert, format!("u32* image, u32* counters, u64 blocks, {keys}, u32 cbits")),
            (Kernel::CountCheck, format!("const u32* image, u64 blocks, {keys}, u32* status, u64* stats")),
            (
                Kernel::CountDelete,
                format!("u32* image, u32* counters, u64 blocks, {keys}, u32 cbits, u32* status, u64* stats"),
            ),
            (
                Kernel::CountUndo,
                format!("u32* image, u32* counters, u64 blocks, {keys}, u32 cbits, const u32* status"),
            ),
            (Kernel::PartBounds, "const u64* hashes, u64 n, u32 parts, u32* bounds".into()),
            (
                Kernel::CountInsertSlices,
                "u32* image, u32* counters, u64 blocks, const u64* hashes, u64 n, const u32* bounds, u32 parts, u32 cbits, u64 sb".into(),
            ),
            (
                Kernel::CountDeleteSlices,
                "u32* image, u32* counters, u64 blocks, const u64* hashes, u64 n, const u32* bounds, u32 parts, u32 cbits, u64 sb, u32* status, u64* stats".into(),
            ),
            (Kernel::HashRecords, "const u8* data, u64 width, u64 n, u64 seed, u64* out".into()),
            (
                Kernel::HashStrings,
                "const u8* data, u64 data_len, const u64* offsets, u64 base, u64 n, u64 seed, u64* out".into(),
            ),
            (
                Kernel::ProbeBitmap,
                "const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* bits".into(),
            ),
            (
                Kernel::ProbeList,
                "const u32* words, u64 blocks, const u64* hashes, const u32* pos, u64 n, u64 base, u32* list, u64 cap, u64* count".into(),
            ),
            (
                Kernel::PositionsKeys,
                format!("const u32* words, u64 blocks, {keys}, u32* list, u64 cap, u64* count"),
            ),
            (
                Kernel::PartScatterPos,
                "const u64* __restrict__ keys, u64 n, u64 seed, int mode, u32 parts, u32* __restrict__ cursor, u64* __restrict__ out, u32* __restrict__ out_pos".into(),
            ),
            (Kernel::StatusBytes, "const u32* status, u64 n, u8* out".into()),
            (Kernel::StatusScatter, "const u32* status, const u32* pos, u64 n, u8* out".into()),
            (Kernel::BitsToBytes, "const u32* bits, u64 n, u8* out".into()),
            (Kernel::WindowInsert, format!("u32* words, u64 blocks, u32 gens, u32 gen, {keys}")),
            (Kernel::WindowContains, format!("const u32* words, u64 blocks, u32 gens, {keys}, u8* out")),
            (Kernel::WindowBitmap, format!("const u32* words, u64 blocks, u32 gens, {keys}, u32* bits")),
            (Kernel::WindowClear, "u32* words, u64 blocks, u32 gens, u32 gen".into()),
            (
                Kernel::RetrievalGet,
                format!("const u64* words, u64 cseed, u32 sigma, u32 segs, u32 arity, u32 vbits, u32 fbits, {keys}, u32* values, u32* found"),
            ),
        ] {
            let signature = format!("__launch_bounds__(BL_THREADS) {}({params})", k.name());
            assert!(src.contains(&signature), "no `{signature}`");
        }
    }

    #[test]
    fn the_cuda_files_use_no_literal_constant_of_core() {
        // The hash constants must come from the prelude, never be retyped in a `.cu` file.
        let mut retyped = Vec::new();
        for p in [PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5] {
            retyped.push(format!("{p:x}"));
        }
        retyped.extend(SALTS.iter().map(|s| format!("{s:x}")));
        for (name, text) in CUDA_FILES {
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
