//! The kernels' entry points: one table of their names ([`Kernel`]), the cell operations the cell
//! kernels are instantiated for ([`CellOp`]), and the cell entry points generated from that table
//! into the source ([`cell_entry_points`]), so that the launcher and the source cannot disagree.

use std::fmt::Write;

use bloomlanes_core::{CellReduce, CellUpdate};

/// Defines [`Kernel`] from one table: `ALL` in discriminant order, each entry point's name and
/// the module it is compiled in. Entries under `geometry` are key kernels of the static module
/// with a sliding-window twin (`<name>_window`, the same template instantiated for `BlGens`, see
/// `cuda/block.cu`) in the window module; the other groups name their module and have no twin.
macro_rules! entry_points {
    (
        geometry { $($g:ident / $w:ident = $gname:literal,)* }
        $($module:ident { $($f:ident = $fname:literal,)* })*
    ) => {
        /// Every kernel entry point (`extern "C"` in the source). The discriminant indexes the
        /// loaded functions of a module.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Kernel {
            $($g, $w,)*
            $($($f,)*)*
        }

        impl Kernel {
            /// Every kernel, in discriminant order.
            pub(crate) const ALL: &'static [Kernel] =
                &[$(Kernel::$g, Kernel::$w,)* $($(Kernel::$f,)*)*];

            /// The entry point's name in the source.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Kernel::$g => $gname, Kernel::$w => concat!($gname, "_window"),)*
                    $($(Kernel::$f => $fname,)*)*
                }
            }

            /// The module whose source defines this entry point.
            pub(crate) const fn module(self) -> KernelModule {
                match self {
                    $(Kernel::$g => KernelModule::Static, Kernel::$w => KernelModule::Window,)*
                    $($(Kernel::$f => KernelModule::$module,)*)*
                }
            }

            /// The twin of a static image's key kernel for a sliding window's generations, which
            /// takes `(…, u32 gens, u32 gen)` after the static kernel's parameters; a kernel
            /// without a twin is itself.
            pub(crate) const fn windowed(self) -> Kernel {
                match self {
                    $(Kernel::$g => Kernel::$w,)*
                    other => other,
                }
            }

            /// Whether this is a window twin.
            #[cfg(test)]
            pub(crate) const fn is_windowed(self) -> bool {
                matches!(self, $(Kernel::$w)|*)
            }
        }
    };
}

/// The separately compiled parts of a layout's kernels. A layout's [`KernelModule::Static`]
/// module is compiled (or read from the kernel cache) when the first filter of that layout is
/// made; the others when the first filter of a kind that needs them is made (cell filters,
/// sliding windows, retrieval tables), so that a static filter's start-up pays only for what it
/// runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelModule {
    /// The static filter's kernels: inserts and lookups of every key form, partitioning, the
    /// partitioned lookups' probes, set operations and the layout-free helpers.
    Static,
    /// The sliding window's twins of the key kernels and probes, and the generation clear.
    Window,
    /// The cell algebra's kernels (every update and reduction, both shapes) and the cell
    /// kinds' checks.
    Cells,
    /// The retrieval tables' lookup (layout-free: the module of any layout serves).
    Retrieval,
}

impl KernelModule {
    /// Every module, in the order of their indices.
    pub const ALL: [KernelModule; 4] = [
        KernelModule::Static,
        KernelModule::Window,
        KernelModule::Cells,
        KernelModule::Retrieval,
    ];

    /// The module's short name (in kernel-cache file names and messages).
    pub const fn name(self) -> &'static str {
        match self {
            KernelModule::Static => "static",
            KernelModule::Window => "window",
            KernelModule::Cells => "cells",
            KernelModule::Retrieval => "retrieval",
        }
    }

    /// The module's index in [`KernelModule::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// The kernels this module defines.
    pub(crate) fn kernels(self) -> impl Iterator<Item = Kernel> {
        Kernel::ALL
            .iter()
            .copied()
            .filter(move |k| k.module() == self)
    }
}

impl std::fmt::Display for KernelModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

entry_points! {
    geometry {
        InsertU64 / InsertU64Window = "bl_insert_u64",
        InsertHash / InsertHashWindow = "bl_insert_hash",
        InsertU64Bulk / InsertU64BulkWindow = "bl_insert_u64_bulk",
        InsertHashBulk / InsertHashBulkWindow = "bl_insert_hash_bulk",
        InsertRecords / InsertRecordsWindow = "bl_insert_records",
        InsertStrings / InsertStringsWindow = "bl_insert_strings",
        ContainsU64 / ContainsU64Window = "bl_contains_u64",
        ContainsHash / ContainsHashWindow = "bl_contains_hash",
        ContainsRecords / ContainsRecordsWindow = "bl_contains_records",
        ContainsStrings / ContainsStringsWindow = "bl_contains_strings",
        BitmapU64 / BitmapU64Window = "bl_bitmap_u64",
        BitmapHash / BitmapHashWindow = "bl_bitmap_hash",
        BitmapRecords / BitmapRecordsWindow = "bl_bitmap_records",
        BitmapStrings / BitmapStringsWindow = "bl_bitmap_strings",
        ProbeBitmap / ProbeBitmapWindow = "bl_probe_bitmap",
        ProbeList / ProbeListWindow = "bl_probe_list",
        PositionsKeys / PositionsKeysWindow = "bl_positions_keys",
        InsertSlices / InsertSlicesWindow = "bl_insert_slices",
    }
    Static {
        HashRecords = "bl_hash_records",
        HashStrings = "bl_hash_strings",
        PartHist = "bl_part_hist",
        PartScan = "bl_part_scan",
        PartScatter = "bl_part_scatter",
        PartScatterPos = "bl_part_scatter_pos",
        RadixScatterKeys = "bl_radix_scatter_keys",
        RadixScatterHashes = "bl_radix_scatter_hashes",
        PartBounds = "bl_part_bounds",
        Union = "bl_union",
        Intersect = "bl_intersect",
        CheckOffsets = "bl_check_offsets",
        BitsToBytes = "bl_bits_to_bytes",
        FillRandom = "bl_fill_random",
        SpeedOfLight = "bl_speed_of_light",
    }
    Cells {
        CountCheck = "bl_count_check",
        CellsUpdateSet = "bl_cells_update_set",
        CellsUpdateIncrement = "bl_cells_update_inc",
        CellsUpdateDecrement = "bl_cells_update_dec",
        CellsUpdateDecay = "bl_cells_update_decay",
        CellsUpdateMax = "bl_cells_update_max",
        CellsSlicesSet = "bl_cells_slices_set",
        CellsSlicesIncrement = "bl_cells_slices_inc",
        CellsSlicesDecrement = "bl_cells_slices_dec",
        CellsSlicesDecay = "bl_cells_slices_decay",
        CellsSlicesMax = "bl_cells_slices_max",
        CellsReduceAll = "bl_cells_reduce_all",
        CellsReduceMin = "bl_cells_reduce_min",
        CheckClasses = "bl_check_classes",
        StatusBytes = "bl_status_bytes",
        StatusScatter = "bl_status_scatter",
    }
    Window {
        WindowClear = "bl_window_clear",
    }
    Retrieval {
        RetrievalGet = "bl_retrieval_get",
    }
}

/// A cell operation the cell kernels are instantiated for: core's [`CellUpdate`] without its
/// operand (see `cuda/cells.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CellOp {
    Set,
    Increment,
    Decrement,
    Decay,
    Max,
}

impl CellOp {
    /// Every operation, in the order of their codes.
    pub(crate) const ALL: [CellOp; 5] = [
        CellOp::Set,
        CellOp::Increment,
        CellOp::Decrement,
        CellOp::Decay,
        CellOp::Max,
    ];

    /// The operation of a core update and its operand (0 for the operations without one).
    pub(crate) const fn of(update: CellUpdate) -> (CellOp, u32) {
        match update {
            CellUpdate::Set => (CellOp::Set, 0),
            CellUpdate::Increment => (CellOp::Increment, 0),
            CellUpdate::Decrement => (CellOp::Decrement, 0),
            CellUpdate::Decay => (CellOp::Decay, 0),
            CellUpdate::Max(v) => (CellOp::Max, v),
        }
    }

    /// The prelude's name of the operation's code.
    pub(crate) const fn define(self) -> &'static str {
        match self {
            CellOp::Set => "BL_OP_SET",
            CellOp::Increment => "BL_OP_INC",
            CellOp::Decrement => "BL_OP_DEC",
            CellOp::Decay => "BL_OP_DECAY",
            CellOp::Max => "BL_OP_MAX",
        }
    }

    /// The direct (and partitioned) shape's kernel of this operation.
    pub(crate) const fn update_kernel(self) -> Kernel {
        match self {
            CellOp::Set => Kernel::CellsUpdateSet,
            CellOp::Increment => Kernel::CellsUpdateIncrement,
            CellOp::Decrement => Kernel::CellsUpdateDecrement,
            CellOp::Decay => Kernel::CellsUpdateDecay,
            CellOp::Max => Kernel::CellsUpdateMax,
        }
    }

    /// The shared-memory slice shape's kernel of this operation.
    pub(crate) const fn slices_kernel(self) -> Kernel {
        match self {
            CellOp::Set => Kernel::CellsSlicesSet,
            CellOp::Increment => Kernel::CellsSlicesIncrement,
            CellOp::Decrement => Kernel::CellsSlicesDecrement,
            CellOp::Decay => Kernel::CellsSlicesDecay,
            CellOp::Max => Kernel::CellsSlicesMax,
        }
    }
}

/// The prelude's name of a reduction's code.
pub(crate) const fn reduce_define(reduce: CellReduce) -> &'static str {
    match reduce {
        CellReduce::AllNonZero => "BL_RED_ALL",
        CellReduce::Min => "BL_RED_MIN",
    }
}

/// The kernel of a reduction.
pub(crate) const fn reduce_kernel(reduce: CellReduce) -> Kernel {
    match reduce {
        CellReduce::AllNonZero => Kernel::CellsReduceAll,
        CellReduce::Min => Kernel::CellsReduceMin,
    }
}

/// The reductions the reduce kernel is instantiated for.
pub(crate) const REDUCTIONS: [CellReduce; 2] = [CellReduce::AllNonZero, CellReduce::Min];

/// The `#define`s of the operation and reduction codes (for the prelude).
pub(crate) fn cell_codes() -> String {
    let mut s = String::new();
    for (code, op) in CellOp::ALL.iter().enumerate() {
        let _ = writeln!(s, "#define {} {code}", op.define());
    }
    for (code, r) in REDUCTIONS.iter().enumerate() {
        let _ = writeln!(s, "#define {} {code}", reduce_define(*r));
    }
    s
}

/// The cell kernels' entry points, one per shape and operation (appended after `cells.cu`).
pub(crate) fn cell_entry_points() -> String {
    let mut s = String::from("// ---- cell entry points, generated by bloomlanes-gpu (entry.rs)\n");
    let mut entry = |k: Kernel, template: &str, code: &str| {
        let _ = writeln!(
            s,
            "extern \"C\" __global__ void __launch_bounds__(BL_THREADS) {}(BL_CELL_PARAMS) {{ {template}<{code}>(BL_CELL_ARGS); }}",
            k.name()
        );
    };
    for op in CellOp::ALL {
        entry(op.update_kernel(), "bl_cells_update", op.define());
        entry(op.slices_kernel(), "bl_cells_slices", op.define());
    }
    for r in REDUCTIONS {
        entry(reduce_kernel(r), "bl_cells_reduce", reduce_define(r));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_discriminant_order_with_distinct_names() {
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
        let mut names: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Kernel::ALL.len(), "a name is listed twice");
        assert_eq!(
            Kernel::InsertU64Bulk.windowed().name(),
            "bl_insert_u64_bulk_window"
        );
        assert!(Kernel::ProbeList.windowed().is_windowed());
        assert_eq!(Kernel::Union.windowed(), Kernel::Union);
    }

    #[test]
    fn every_core_update_has_its_operation_and_kernels() {
        for (u, op, v) in [
            (CellUpdate::Set, CellOp::Set, 0),
            (CellUpdate::Increment, CellOp::Increment, 0),
            (CellUpdate::Decrement, CellOp::Decrement, 0),
            (CellUpdate::Decay, CellOp::Decay, 0),
            (CellUpdate::Max(9), CellOp::Max, 9),
        ] {
            assert_eq!(CellOp::of(u), (op, v));
            assert!(op.update_kernel().name().starts_with("bl_cells_update_"));
            assert!(op.slices_kernel().name().starts_with("bl_cells_slices_"));
        }
        let s = cell_entry_points();
        assert_eq!(s.matches("extern \"C\"").count(), 12);
        assert!(s.contains(
            "bl_cells_slices_max(BL_CELL_PARAMS) { bl_cells_slices<BL_OP_MAX>(BL_CELL_ARGS); }"
        ));
        assert!(cell_codes().contains("#define BL_OP_MAX 4\n"));
        assert!(cell_codes().contains("#define BL_RED_MIN 1\n"));
    }
}
