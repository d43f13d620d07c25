//! Owning spatial Bloom filters (behind `alloc`): which class a key belongs to.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::cell::{self, CellBits, CellsMut};
use crate::cell_store::CellStore;
use crate::filter::Filter;
use crate::format::{self, FormatError};
use crate::key::Key;
use crate::kind::FilterKind;
use crate::kind_meta;
use crate::math::{self, SizingError};
use crate::params::{MergeError, Params};
use crate::reference::FilterRef;
use crate::spatial::{check_name, check_stored_name, ClassTable, NameError};
use crate::stats::Stats;
use crate::write_file::{FileParts, WriteFile};

/// Why a spatial filter cannot be made, or a key inserted, as asked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SpatialError {
    /// The cell width is not 4, 8 or 16 bits.
    CellBits(u32),
    /// No classes, or more than the cells hold (`2^c − 1`).
    ClassCount {
        /// Classes asked for.
        classes: usize,
        /// The most the cell width holds.
        max: u32,
    },
    /// A class name cannot be stored.
    Name {
        /// The name.
        name: String,
        /// What is wrong with it.
        error: NameError,
    },
    /// Two classes share a name.
    DuplicateName(String),
    /// A class number outside `1..=n`.
    NoSuchClass {
        /// The class asked for.
        class: u32,
        /// The number of classes.
        classes: u16,
    },
    /// No filter of the layout meets the rate asked for.
    Sizing(SizingError),
}

impl core::fmt::Display for SpatialError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SpatialError::CellBits(b) => write!(f, "spatial cells are 4, 8 or 16 bits, not {b}"),
            SpatialError::ClassCount { classes, max } => write!(
                f,
                "{classes} classes do not fit cells that hold classes 1 to {max}: \
                 give between 1 and {max} classes or wider cells"
            ),
            SpatialError::Name { name, error } => write!(f, "class name {name:?}: {error}"),
            SpatialError::DuplicateName(n) => write!(f, "class name {n:?} is given twice"),
            SpatialError::NoSuchClass { class, classes } => write!(
                f,
                "class {class} does not exist: the filter has classes 1 to {classes}"
            ),
            SpatialError::Sizing(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for SpatialError {}

impl WriteFile for SpatialFilter {
    /// The kind metadata with the class table (per-class key counts, then the names), the image
    /// and the cells.
    fn file_parts(&self) -> FileParts<'_> {
        let mut meta = kind_meta::encode_meta(self.store.params.kind, None).to_vec();
        let name_bytes: usize = self.names.iter().map(|n| 1 + n.len()).sum();
        meta[4..8].copy_from_slice(&(name_bytes as u32).to_le_bytes());
        for k in &self.class_keys {
            meta.extend_from_slice(&k.to_le_bytes());
        }
        for n in &self.names {
            meta.push(n.len() as u8);
            meta.extend_from_slice(n.as_bytes());
        }
        self.store.file_parts(meta)
    }
}

/// The statistics of one class of a spatial filter ([`SpatialFilter::class_stats`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SpatialStats {
    /// The class number (1 to `n`).
    pub class: u16,
    /// Its name.
    pub name: String,
    /// Keys inserted in it.
    pub keys: u64,
    /// Cells holding it (the cells it *owns*).
    pub cells: u64,
    /// Cells expected to hold it, for these key counts.
    pub expected_cells: f64,
    /// Probability that an absent key is reported in this class (the a-priori false-positive
    /// rate of the class).
    pub expected_fpr: f64,
    /// Probability that a key of this class is reported in a higher class (its emersion rate;
    /// 0 for the top class).
    pub expected_emersion: f64,
}

/// A spatial Bloom filter on the split-block layout (see [`crate::spatial`] and
/// [`crate::cell`]): a key's cells take the larger of their value and the key's class; a lookup
/// answers the smallest of the key's cells, 0 for an absent key. Classes are numbered from 1 in
/// priority order: where keys of two classes share a cell the higher class wins, so a key may be
/// reported in a higher class than its own, never in a lower one.
#[derive(Clone, Debug, PartialEq)]
pub struct SpatialFilter {
    store: CellStore,
    names: Vec<String>,
    /// Each name's class number (`names` indexed: a build or insert names a class per key,
    /// and a filter may hold 65535 of them).
    numbers: BTreeMap<String, u16>,
    class_keys: Vec<u64>,
}

/// Each of `names`' class number, from 1.
fn numbers_of(names: &[String]) -> BTreeMap<String, u16> {
    // `names` first: a range from 1 would step past u16::MAX after the 65535th name.
    names.iter().zip(1..=u16::MAX).map(|(n, c)| (n.clone(), c)).collect()
}

impl SpatialFilter {
    /// An empty spatial filter with `shape`'s layout, blocks, seed, hash and key type, cells of
    /// `cell_bits` bits and one class per name, class 1 first.
    pub fn new<S: AsRef<str>>(
        shape: Params,
        cell_bits: u32,
        names: &[S],
    ) -> Result<SpatialFilter, SpatialError> {
        SpatialFilter::empty(shape, cell_bits, names, check_name)
    }

    /// [`SpatialFilter::new`] with the names checked as a file's class table is read (a name
    /// with white space around it, which earlier writers let through, is kept): for a filter
    /// remade from one that was read, e.g. a device copy coming back.
    pub fn with_stored_names<S: AsRef<str>>(
        shape: Params,
        cell_bits: u32,
        names: &[S],
    ) -> Result<SpatialFilter, SpatialError> {
        SpatialFilter::empty(shape, cell_bits, names, check_stored_name)
    }

    /// An empty filter whose names pass `check`.
    fn empty<S: AsRef<str>>(
        shape: Params,
        cell_bits: u32,
        names: &[S],
        check: fn(&str) -> Result<(), NameError>,
    ) -> Result<SpatialFilter, SpatialError> {
        let bits = match CellBits::from_bits(cell_bits) {
            Some(b @ (CellBits::Four | CellBits::Eight | CellBits::Sixteen)) => b,
            _ => return Err(SpatialError::CellBits(cell_bits)),
        };
        if names.is_empty() || names.len() as u64 > u64::from(bits.max()) {
            return Err(SpatialError::ClassCount {
                classes: names.len(),
                max: bits.max(),
            });
        }
        let mut owned: Vec<String> = Vec::with_capacity(names.len());
        // The numbers so far find a repeat, not a scan of the names: 65535 names in n log n.
        let mut numbers = BTreeMap::new();
        for name in names.iter().map(AsRef::as_ref) {
            check(name).map_err(|error| SpatialError::Name {
                name: name.to_string(),
                error,
            })?;
            let number = owned.len() as u16 + 1;
            if numbers.insert(name.to_string(), number).is_some() {
                return Err(SpatialError::DuplicateName(name.to_string()));
            }
            owned.push(name.to_string());
        }
        let kind = FilterKind::Spatial {
            cell_bits: bits,
            classes: names.len() as u16,
        };
        Ok(SpatialFilter {
            store: CellStore::new(shape.with_kind(kind)).expect("a spatial kind has cells"),
            class_keys: vec![0; owned.len()],
            names: owned,
            numbers,
        })
    }

    /// An empty spatial filter for `keys` keys in all classes (their sum: the rate that any
    /// absent key is reported in some class depends on it alone) with `shape`'s layout, seed,
    /// hash and key type, sized so that this rate is at most `rate`: the blocks of a static
    /// filter of `keys` keys ([`math::blocks_for_rate`]; [`SpatialFilter::class_stats`] gives
    /// the per-class rates).
    pub fn for_keys<S: AsRef<str>>(
        shape: Params,
        cell_bits: u32,
        names: &[S],
        keys: u64,
        rate: f64,
    ) -> Result<SpatialFilter, SpatialError> {
        let blocks =
            math::blocks_for_rate(shape.layout, keys.max(1), rate).map_err(SpatialError::Sizing)?;
        SpatialFilter::new(Params { blocks, ..shape }, cell_bits, names)
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.store.params
    }

    /// The cell width.
    pub fn cell_bits(&self) -> CellBits {
        self.store.bits()
    }

    /// The number of classes `n`.
    pub fn classes(&self) -> u16 {
        self.names.len() as u16
    }

    /// The class names, class 1 first.
    pub fn class_names(&self) -> &[String] {
        &self.names
    }

    /// The name of class `class` (1-based); `None` for 0 (absent) and past the last class.
    pub fn class_name(&self, class: u32) -> Option<&str> {
        let i = usize::try_from(class.checked_sub(1)?).ok()?;
        self.names.get(i).map(String::as_str)
    }

    /// The number of the class called `name`, if there is one.
    pub fn class_number(&self, name: &str) -> Option<u16> {
        self.numbers.get(name).copied()
    }

    /// Keys inserted per class, class 1 first.
    pub fn keys_per_class(&self) -> &[u64] {
        &self.class_keys
    }

    /// Keys inserted in all classes, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.store.keys
    }

    /// Adds `count` keys of class `class` to the per-class and total key counts (for a bulk
    /// backend that inserted through [`SpatialFilter::as_view_mut`]).
    pub fn record_inserts(&mut self, class: u32, count: u64) -> Result<(), SpatialError> {
        self.check_class(class)?;
        let slot = &mut self.class_keys[class as usize - 1];
        *slot = slot.saturating_add(count);
        self.store.keys = self.store.keys.map(|k| k.saturating_add(count));
        Ok(())
    }

    fn check_class(&self, class: u32) -> Result<(), SpatialError> {
        if class == 0 || class > u32::from(self.classes()) {
            return Err(SpatialError::NoSuchClass {
                class,
                classes: self.classes(),
            });
        }
        Ok(())
    }

    /// Inserts the key with hash `hash` in class `class` (1 to `n`).
    pub fn insert_hash(&mut self, hash: u64, class: u32) -> Result<(), SpatialError> {
        self.check_class(class)?;
        self.store.view_mut().spatial_insert_hash(hash, class);
        self.record_inserts(class, 1)
    }

    /// Inserts a key in class `class` (1 to `n`).
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, class: u32) -> Result<(), SpatialError> {
        self.insert_hash(self.params().hash_key(key), class)
    }

    /// The class of the key with hash `hash`: the smallest of its cells, 0 if absent.
    pub fn class_of_hash(&self, hash: u64) -> u32 {
        self.store.smallest_cell(hash)
    }

    /// The class of a key (0: absent); see [`SpatialFilter::class_of_hash`].
    pub fn class_of<K: Key + ?Sized>(&self, key: &K) -> u32 {
        self.class_of_hash(self.params().hash_key(key))
    }

    /// Whether the key with `hash` may be present in some class.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.projection().contains_hash(hash)
    }

    /// Whether a key may be present in some class.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.projection().contains(key)
    }

    /// The projection image's words (bit set iff its cell is positive).
    pub fn image_words(&self) -> &[u32] {
        self.store.image_words()
    }

    /// The cells' words (packed as [`crate::cell`] says).
    pub fn cell_words(&self) -> &[u32] {
        self.store.cell_words()
    }

    /// A mutable view, for the bulk backends (the key counts are not updated: see
    /// [`SpatialFilter::record_inserts`]).
    pub fn as_view_mut(&mut self) -> CellsMut<'_> {
        self.store.view_mut()
    }

    /// The projection as a static filter view: every static lookup path answers membership.
    pub fn projection(&self) -> FilterRef<'_, u32> {
        self.store.projection()
    }

    /// The projection as an owned static filter: byte-identical to the static filter of all
    /// keys of every class.
    pub fn to_static(&self) -> Filter {
        self.store.to_static()
    }

    /// The number of cells holding each class, class 1 first (the cells a class *owns*).
    pub fn cells_per_class(&self) -> Vec<u64> {
        let mut owned = vec![0u64; self.names.len()];
        cell::for_each_cell(self.store.cell_words(), self.store.bits(), |v| {
            if let Some(slot) = (v as usize).checked_sub(1).and_then(|i| owned.get_mut(i)) {
                *slot += 1;
            }
        });
        owned
    }

    /// Per-class statistics, class 1 first: keys, cells owned, and the expected rates of
    /// [`math::spatial_class_rates`] for this filter's blocks and key counts.
    pub fn class_stats(&self) -> Vec<SpatialStats> {
        let p = self.params();
        let cells = self.cells_per_class();
        let mut above = 0u64;
        let mut stats: Vec<SpatialStats> = (0..self.names.len())
            .rev()
            .map(|i| {
                let keys = self.class_keys[i];
                let rates = math::spatial_class_rates(p.layout, p.blocks, keys, above);
                above = above.saturating_add(keys);
                SpatialStats {
                    class: i as u16 + 1,
                    name: self.names[i].clone(),
                    keys,
                    cells: cells[i],
                    expected_cells: rates.cells,
                    expected_fpr: rates.false_positive,
                    expected_emersion: rates.emersion,
                }
            })
            .collect();
        stats.reverse();
        stats
    }

    /// Statistics of the projection (membership in any class), with the rate of its bits (a
    /// lookup needs every probed cell non-zero).
    pub fn stats(&self) -> Stats {
        let view = self.projection();
        Stats::new(*self.params(), self.store.keys, view.count_ones())
            .with_fpr_from_bits(view.fpr_from_bits())
    }

    /// This spatial filter folded into `blocks` blocks, which must divide its block count:
    /// cells at the same place in the folded blocks keep the larger class, so the result is
    /// byte for byte the spatial filter of the same keys built at `blocks` blocks (see
    /// [`crate::fold`]); names and per-class key counts are kept.
    pub fn folded(&self, blocks: u32) -> Result<SpatialFilter, MergeError> {
        Ok(SpatialFilter {
            store: self.store.folded(blocks)?,
            names: self.names.clone(),
            numbers: self.numbers.clone(),
            class_keys: self.class_keys.clone(),
        })
    }

    /// Merges `other` into this filter: the filter of both key sets, byte for byte what
    /// inserting all their keys into one gives (each cell the larger class). Both must have
    /// the same parameters (layout, blocks, seed, hash, key type, cells) and the same classes
    /// in the same order; the per-class key counts add.
    pub fn union_with(&mut self, other: &SpatialFilter) -> Result<(), MergeError> {
        if self.names != other.names {
            // Checked first: the kinds (which count the classes) may already differ.
            return Err(MergeError::Classes);
        }
        self.store.union_with(&other.store)?;
        for (k, o) in self.class_keys.iter_mut().zip(&other.class_keys) {
            *k = k.saturating_add(*o);
        }
        Ok(())
    }

    /// [`SpatialFilter::union_with`] of filters whose block counts divide one another: each is
    /// folded to the smaller block count first ([`SpatialFilter::folded`]), which gives the
    /// bytes of building both at that size.
    pub fn union_folding(&self, other: &SpatialFilter) -> Result<SpatialFilter, MergeError> {
        if self.names != other.names {
            return Err(MergeError::Classes);
        }
        crate::fold::union_folding(self, other)
    }

    /// The whole file: header, kind metadata with the class table, image, cells.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole spatial filter file; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<SpatialFilter, FormatError> {
        let (header, payload) =
            format::parse_kind(file, "spatial", |k| matches!(k, FilterKind::Spatial { .. }))?;
        let table = ClassTable::parse(&payload[..header.meta_len as usize])?;
        let class_keys = (1..=table.classes())
            .map(|c| table.keys(c).expect("checked by parse"))
            .collect();
        let store = CellStore::from_payload(&header, payload)?;
        let classes = u32::from(table.classes());
        if classes < store.bits().max() {
            if let Some((cell, value)) =
                cell::first_above(store.cell_words(), store.bits(), classes)
            {
                return Err(FormatError::CellValue { cell, value });
            }
        }
        let names: Vec<String> = table.names().map(ToString::to_string).collect();
        Ok(SpatialFilter {
            store,
            numbers: numbers_of(&names),
            names,
            class_keys,
        })
    }
}
