//! [`GpuSpatialFilter`]: a spatial Bloom filter in GPU memory, bit-identical to
//! [`bloomlanes_core::SpatialFilter`] (image, cells, per-class key counts).
//!
//! The cell algebra's spatial instance: a [`GpuCellFilter`] (to which it dereferences, and
//! through it to the image's lookups, which answer membership in any class) whose inserts are
//! [`CellUpdate::Max`]`(class)` and whose class lookup is [`CellReduce::Min`] (0: absent). `Max`
//! commutes, so a batch needs no order: batches past half the L2 cache are partitioned and
//! applied slice by slice in shared memory like the counting filter's inserts, with one class
//! per batch or one per key (grouped keys carry their positions to find their class).
//!
//! Classes are checked before anything is inserted, as the core refuses them: one per batch on
//! the host; one per key from device memory by a kernel that also counts the keys of each class
//! (the per-class key counts of the file), waited for; one per key from host memory on the host.
//!
//! # Memory traffic per key (insert; lookup)
//!
//! As the counting filter's insert (`counting.rs`): the key, and per lane one cell word read and
//! CAS'd and the image bits ORed (a 16-bit cell's block holds `L × W × 2` bytes: 512 for 8x32),
//! plus 4 bytes of class per key when each key has its own (8 more to group them with their
//! positions). A class lookup reads the key and one cell word per lane: `L` 32-byte sectors
//! (4 for 8x32 with 4-bit cells, whose lanes pair up in a sector; 8 with 8- or 16-bit cells)
//! against the static lookup's one, so a direct class lookup of a filter past L2 is bound by the
//! random-read rate at about a quarter (4-bit) to an eighth of the static lookup's rate; the
//! partitioned lookup ([`GpuImage::set_lookup_kernel`](crate::GpuImage::set_lookup_kernel))
//! reads the cells once per batch instead.

use bloomlanes_core::{CellReduce, CellUpdate, Keys, Params, SpatialFilter};
use cudarc::driver::{CudaSlice, PushKernelArg};

use crate::cells::CellAnswer;
use crate::image::filter_wrapper;
use crate::kernel::{Kernel, THREADS};
use crate::module::grid;
use crate::{DeviceBuffer, DeviceKeys, GpuCellFilter, GpuError, GpuStream};

/// A spatial filter in GPU memory: inserts of keys with their classes and class lookups of
/// batches, bit-identical to [`SpatialFilter`]. It dereferences to its [`GpuCellFilter`]
/// (settings, generic updates and reductions) and through it to its image's lookups.
pub struct GpuSpatialFilter {
    cells: GpuCellFilter,
    names: Vec<String>,
    /// Keys inserted per class, class 1 first.
    class_keys: Vec<u64>,
    /// The per-class counts of a device check (`classes` words).
    counts: Option<CudaSlice<u64>>,
}

/// What a host filter of the same parameters and classes holds, checked by the core: its
/// parameters (the spatial kind) and class names. Only a one-block filter is built.
fn checked(
    shape: Params,
    cell_bits: u32,
    names: &[&str],
) -> Result<(Params, Vec<String>), GpuError> {
    let mut one = shape;
    one.blocks = 1;
    let f =
        SpatialFilter::new(one, cell_bits, names).map_err(|e| GpuError::Spatial(e.to_string()))?;
    let mut params = *f.params();
    params.blocks = shape.blocks.max(1);
    Ok((params, f.class_names().to_vec()))
}

filter_wrapper!(GpuSpatialFilter, cells: GpuCellFilter, [names, class_keys]);

/// Refuses fewer classes than keys.
fn one_class_per_key(keys: usize, classes: usize) -> Result<(), GpuError> {
    if classes < keys {
        return Err(GpuError::InputTooShort {
            what: "classes",
            needed: keys,
            found: classes,
        });
    }
    Ok(())
}

impl GpuSpatialFilter {
    /// An empty spatial filter with `shape`'s layout, blocks, seed, hash and key type, cells of
    /// `cell_bits` bits (4, 8 or 16) and one class per name, class 1 first, on device 0: the
    /// arguments [`SpatialFilter::new`] takes, refused as it refuses them.
    pub fn new(
        shape: Params,
        cell_bits: u32,
        names: &[&str],
    ) -> Result<GpuSpatialFilter, GpuError> {
        let (params, names) = checked(shape, cell_bits, names)?;
        Ok(GpuSpatialFilter {
            cells: GpuCellFilter::new(params)?,
            class_keys: vec![0; names.len()],
            names,
            counts: None,
        })
    }

    /// A device copy of a host spatial filter.
    pub fn upload(filter: &SpatialFilter) -> Result<GpuSpatialFilter, GpuError> {
        Ok(GpuSpatialFilter {
            cells: GpuCellFilter::upload(
                *filter.params(),
                filter.image_words(),
                filter.cell_words(),
                filter.key_count(),
            )?,
            names: filter.class_names().to_vec(),
            class_keys: filter.keys_per_class().to_vec(),
            counts: None,
        })
    }

    /// The filter copied back to the host: equal to the core's filter after the same inserts
    /// (its key count is the sum of the per-class counts, as every filter the core builds has).
    pub fn download(&self) -> Result<SpatialFilter, GpuError> {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let bits = self.cells.cell_bits().bits();
        let mut f = SpatialFilter::with_stored_names(*self.cells.params(), bits, &names)
            .map_err(|e| GpuError::Spatial(e.to_string()))?;
        {
            let mut view = f.as_view_mut();
            let (image, cells) = view.parts_mut();
            self.cells.download_into(image, cells)?;
        }
        for (i, &n) in self.class_keys.iter().enumerate() {
            f.record_inserts(i as u32 + 1, n)
                .map_err(|e| GpuError::Spatial(e.to_string()))?;
        }
        Ok(f)
    }

    /// The number of classes `n`.
    pub fn classes(&self) -> u16 {
        self.names.len() as u16
    }
    /// The class names, class 1 first.
    pub fn class_names(&self) -> &[String] {
        &self.names
    }
    /// Keys inserted per class, class 1 first.
    pub fn keys_per_class(&self) -> &[u64] {
        &self.class_keys
    }

    /// Empties the filter: image, cells and the per-class and total key counts.
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.cells.clear()?;
        self.class_keys.iter_mut().for_each(|k| *k = 0);
        Ok(())
    }

    /// Refuses a class outside `1..=n`, as the core does.
    fn check_class(&self, class: u32) -> Result<(), GpuError> {
        if class == 0 || class > u32::from(self.classes()) {
            return Err(GpuError::Spatial(format!(
                "class {class} does not exist: the filter has classes 1 to {}",
                self.classes()
            )));
        }
        Ok(())
    }

    /// Counts `n` more keys in class `class` (checked; the total is the cell filter's).
    fn record(&mut self, class: u32, n: u64) {
        let slot = &mut self.class_keys[class as usize - 1];
        *slot = slot.saturating_add(n);
    }

    // ---- inserts ------------------------------------------------------------------------------

    /// Inserts device-resident keys, all in class `class` (1 to `n`), queued on `stream` (string
    /// offsets are checked on the device first, which waits).
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        class: u32,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        self.check_class(class)?;
        self.cells
            .insert_keys(keys, CellUpdate::Max(class), None, stream.raw())?;
        self.record(class, keys.len() as u64);
        Ok(())
    }

    /// Inserts device-resident keys, all in class `class`, and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>, class: u32) -> Result<(), GpuError> {
        let s = self.cells.stream.clone();
        self.insert_device_async(keys, class, &s)?;
        s.synchronize()
    }

    /// Inserts device-resident keys, key `i` in class `classes[i]` (each 1 to `n`; at least one
    /// per key), and waits. The classes are checked (and counted per class) on the device
    /// first: a class outside `1..=n` is refused, naming the first such key, and nothing is
    /// inserted.
    pub fn insert_device_classes(
        &mut self,
        keys: DeviceKeys<'_>,
        classes: &DeviceBuffer<u32>,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        one_class_per_key(n, classes.len())?;
        keys.check_shape()?;
        let counts = self.count_classes(classes, n)?;
        let s = self.cells.stream.raw().clone();
        let operands = classes.view().slice(..n);
        self.cells
            .insert_keys(keys, CellUpdate::Max(0), Some(operands), &s)?;
        for (i, c) in counts.into_iter().enumerate() {
            self.record(i as u32 + 1, c);
        }
        self.cells.stream.synchronize()
    }

    /// Inserts keys from host memory, all in class `class`, and waits.
    pub fn insert(&mut self, keys: Keys<'_>, class: u32) -> Result<(), GpuError> {
        self.check_class(class)?;
        self.cells.insert_host(keys, CellUpdate::Max(class), None)?;
        self.record(class, keys.len() as u64);
        Ok(())
    }

    /// Inserts keys from host memory, key `i` in class `classes[i]` (checked first, as the core
    /// checks them; at least one per key), and waits.
    pub fn insert_classes(&mut self, keys: Keys<'_>, classes: &[u32]) -> Result<(), GpuError> {
        let n = keys.len();
        one_class_per_key(n, classes.len())?;
        let mut counts = vec![0u64; self.names.len()];
        for &c in &classes[..n] {
            self.check_class(c)?;
            counts[c as usize - 1] += 1;
        }
        self.cells
            .insert_host(keys, CellUpdate::Max(0), Some(&classes[..n]))?;
        for (i, c) in counts.into_iter().enumerate() {
            self.record(i as u32 + 1, c);
        }
        Ok(())
    }

    /// Checks `classes[..n]` on the device and returns the keys of each class; refuses the
    /// first class outside `1..=n`.
    fn count_classes(
        &mut self,
        classes: &DeviceBuffer<u32>,
        n: usize,
    ) -> Result<Vec<u64>, GpuError> {
        let stream = self.cells.stream.raw().clone();
        let k = self.cells.k.clone();
        let m = self.names.len();
        let (len, max) = (n as u64, u32::from(self.classes()));
        let counts = crate::stage::grown(&mut self.counts, &stream, "class counts", m)?;
        let mut counts = counts.slice_mut(..m);
        stream
            .memset_zeros(&mut counts)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async(class counts)", m as u64 * 8, e))?;
        let mut first_bad = stream
            .clone_htod(&[u64::MAX])
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD(class check)", 8, e))?;
        let values = classes.view().slice(..n);
        if len > 0 {
            let mut l = stream.launch_builder(k.get(Kernel::CheckClasses)?);
            l.arg(&values)
                .arg(&len)
                .arg(&max)
                .arg(&mut first_bad)
                .arg(&mut counts);
            // SAFETY: `bl_check_classes(const u32* values, u64 n, u32 classes, u64* first_bad,
            // u64* counts)` takes these arguments in this order. Thread `i < n` reads
            // `values[i]` (the view holds `n`), updates the one u64 of `first_bad`, and adds to
            // `counts[c − 1]` only for `1 ≤ c ≤ classes` = `counts`' length; every lane reaches
            // the warp's `__match_any_sync`.
            unsafe { l.launch(grid(len, u64::from(THREADS))?) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_check_classes)", len, e))?;
        }
        let bad = stream
            .clone_dtoh(&first_bad)
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH(class check)", 8, e))?;
        let per_class = stream
            .clone_dtoh(&counts)
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH(class counts)", m as u64 * 8, e))?;
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        if let Some(&i) = bad.first().filter(|&&i| i != u64::MAX) {
            let v = stream.clone_dtoh(&values.slice(i as usize..i as usize + 1));
            let class = match (v, stream.synchronize()) {
                (Ok(v), Ok(())) => v.first().copied().unwrap_or(0),
                _ => 0,
            };
            return Err(GpuError::Spatial(format!(
                "key {i}: class {class} does not exist: the filter has classes 1 to {max}"
            )));
        }
        Ok(per_class)
    }

    // ---- class lookups ------------------------------------------------------------------------

    /// The class of each of device-resident `keys` into `out[i]` (0: absent; the smallest of its
    /// cells, as [`SpatialFilter::class_of_hash`]), as `u16` or `u32` (`u8` for cells of at most
    /// 8 bits), queued on `stream`; partitioned like the image's lookups
    /// ([`GpuImage::set_lookup_kernel`](crate::GpuImage::set_lookup_kernel)).
    pub fn classes_device_async<T: CellAnswer>(
        &mut self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<T>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        self.cells
            .reduce_device_async(keys, CellReduce::Min, out, stream)
    }

    /// The classes of keys in host memory into `out` (at least one per key), and waits.
    pub fn classes_of<T: CellAnswer>(
        &mut self,
        keys: Keys<'_>,
        out: &mut [T],
    ) -> Result<(), GpuError> {
        self.cells.reduce(keys, CellReduce::Min, out)
    }
}
