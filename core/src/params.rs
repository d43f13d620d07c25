//! A filter's identity: everything besides its bits that decides which bits a key sets.
//!
//! [`Params`] travels with every view ([`FilterRef`](crate::FilterRef),
//! [`FilterMut`](crate::FilterMut)), with the owning [`Filter`](crate::Filter), with the file
//! header and with every backend's filter, so that no function takes a seed or a layout beside a
//! view, and two filters are compared, sized and described in one place.

use core::fmt;

use crate::format::HashId;
use crate::key::Key;
use crate::key_type::{KeyMatch, KeyType};
use crate::kind::FilterKind;
use crate::layout::Layout;
use crate::math::{self, SizingError};

/// The identity of a filter: its block shape, block count, hash function, seed and key type.
///
/// Build one with [`Params::new`] and the `with_*` methods, or size one for a number of keys with
/// [`Params::for_keys`]. Marked `#[non_exhaustive]` so that later fields (key type, filter kind)
/// can join without breaking callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Params {
    /// Block shape (lanes × word bits).
    pub layout: Layout,
    /// Number of blocks `z`, at least 1.
    pub blocks: u32,
    /// Seed of the key hash.
    pub seed: u64,
    /// The function that turns keys into 64-bit hashes.
    pub hash: HashId,
    /// What the keys are ([`KeyType::Any`] when not recorded).
    pub key_type: KeyType,
    /// The kind of filter (static by default) and its parameters.
    pub kind: FilterKind,
}

/// The accessors of a type that carries a filter's [`Params`] in a field `params` (a filter,
/// a view of one, a device image): `params`, `layout`, `blocks` and `seed`, written once, so
/// that every such type answers them alike.
///
/// ```
/// use bloomlanes_core::{Layout, Params};
///
/// struct Image {
///     params: Params,
/// }
/// impl Image {
///     bloomlanes_core::params_accessors!();
/// }
///
/// let image = Image { params: Params::new(Layout::L8x32, 4).with_seed(7) };
/// assert_eq!((image.layout(), image.blocks(), image.seed()), (Layout::L8x32, 4, 7));
/// ```
#[macro_export]
macro_rules! params_accessors {
    () => {
        /// The filter's parameters.
        #[inline]
        pub fn params(&self) -> &$crate::Params {
            &self.params
        }
        /// The block shape.
        #[inline]
        pub fn layout(&self) -> $crate::Layout {
            self.params.layout
        }
        /// Number of blocks `z`.
        #[inline]
        pub fn blocks(&self) -> u32 {
            self.params.blocks
        }
        /// Seed of the key hash.
        #[inline]
        pub fn seed(&self) -> u64 {
            self.params.seed
        }
    };
}

/// How to size a new filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sizing {
    /// Meet this expected false-positive rate.
    FalsePositiveRate(f64),
    /// Spend about this many bits per key.
    BitsPerKey(f64),
}

/// Why two filters cannot be combined (merged, compared or used in place of each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeError {
    /// Different block shapes.
    Layout(Layout, Layout),
    /// Different block counts.
    Blocks(u32, u32),
    /// Different hash seeds.
    Seed(u64, u64),
    /// Different hash functions.
    Hash(HashId, HashId),
    /// Different key types (with different byte forms, or one side not recorded).
    KeyType(KeyType, KeyType),
    /// Different kinds of filter (or the same kind with different parameters).
    Kind(FilterKind, FilterKind),
    /// Block counts differ and this kind does not fold (see [`crate::fold`]).
    Unfoldable(FilterKind),
    /// This kind does not merge cell by cell (stable, window, scalable, retrieval).
    Unmergeable(FilterKind),
    /// Spatial filters whose classes differ (names or order): a cell's number would mean a
    /// different class in each.
    Classes,
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Layout(a, b) => write!(f, "incompatible filters: layout {a} vs {b}"),
            MergeError::Blocks(a, b) => write!(f, "incompatible filters: {a} blocks vs {b}"),
            MergeError::Seed(a, b) => write!(f, "incompatible filters: seed {a} vs {b}"),
            MergeError::Hash(a, b) => write!(f, "incompatible filters: hash {a} vs {b}"),
            MergeError::KeyType(a, b) => {
                write!(f, "incompatible filters: keys of type {a} vs {b}")
            }
            MergeError::Kind(a, b) => write!(f, "incompatible filters: {a} vs {b}"),
            MergeError::Unfoldable(k) => write!(
                f,
                "incompatible filters: block counts differ and a {} filter does not fold to fewer \
                 blocks (only static, counting and spatial filters do)",
                k.name()
            ),
            MergeError::Unmergeable(k) => write!(
                f,
                "a {} filter does not merge (only static, counting and spatial filters do)",
                k.name()
            ),
            MergeError::Classes => write!(
                f,
                "incompatible spatial filters: their classes differ (the same names in the same \
                 order are needed: a cell holds a class number)"
            ),
        }
    }
}

impl core::error::Error for MergeError {}

/// `const` methods that return the parameters with one field replaced; each entry is its doc
/// comment and `method: field: Type;`.
macro_rules! with {
    ($($(#[$doc:meta])* $method:ident: $field:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub const fn $method(mut self, $field: $ty) -> Params {
            self.$field = $field;
            self
        }
    )*};
}

impl Params {
    /// `blocks` blocks of `layout` (at least 1), XXH64 with seed 0.
    pub const fn new(layout: Layout, blocks: u32) -> Params {
        Params {
            layout,
            blocks: if blocks == 0 { 1 } else { blocks },
            seed: 0,
            hash: HashId::Xxh64,
            key_type: KeyType::Any,
            kind: FilterKind::Static,
        }
    }

    with! {
        /// The same parameters with hash seed `seed`.
        with_seed: seed: u64;
        /// The same parameters with key type `key_type`.
        with_key_type: key_type: KeyType;
        /// The same parameters with filter kind `kind`.
        with_kind: kind: FilterKind;
        /// The same parameters with hash function `hash`.
        with_hash: hash: HashId;
    }

    /// The parameters of a filter for `keys` keys sized by `sizing`, XXH64 with seed 0.
    ///
    /// `layout` `None` picks, for a rate, the layout that meets it in the fewest bits (ties to
    /// the smaller block); for bits per key, `None` means 8x32. `keys` 0 is sized as 1.
    pub fn for_keys(
        keys: u64,
        sizing: Sizing,
        layout: Option<Layout>,
    ) -> Result<Params, SizingError> {
        let keys = keys.max(1);
        let (layout, blocks) = match (sizing, layout) {
            (Sizing::FalsePositiveRate(r), None) => math::auto_size(keys, r)?,
            (Sizing::FalsePositiveRate(r), Some(l)) => (l, math::blocks_for_rate(l, keys, r)?),
            (Sizing::BitsPerKey(b), l) => {
                let l = l.unwrap_or(Layout::L8x32);
                (l, math::blocks_for_bits_per_key(l, keys, b)?)
            }
        };
        Ok(Params::new(layout, blocks))
    }

    /// [`Params::for_keys`] as every builder of this project sizes a new filter (the CLI's
    /// `build`, the host library's builder, the Python constructors): sized by a rate, the
    /// block count is rounded up onto the grid of [`math::fold_friendly_blocks`] (`m × 2^e`,
    /// `m` in 4..=7), so that filters of similar inputs get equal block counts and merge, and
    /// others often differ by a power of two and merge by folding (about 9.5 % more memory on
    /// average; the rate only falls). Sized by bits per key (a request for a size), the count
    /// is kept as asked.
    pub fn for_keys_mergeable(
        keys: u64,
        sizing: Sizing,
        layout: Option<Layout>,
    ) -> Result<Params, SizingError> {
        let mut p = Self::for_keys(keys, sizing, layout)?;
        if let Sizing::FalsePositiveRate(_) = sizing {
            p.blocks = math::fold_friendly_blocks(p.blocks);
        }
        Ok(p)
    }

    /// Size of the bit array in bytes: `z × L × W / 8`.
    pub const fn byte_len(&self) -> u64 {
        self.blocks as u64 * self.layout.block_bytes() as u64
    }

    /// Size of the bit array in bits.
    pub const fn bit_len(&self) -> u64 {
        self.byte_len() * 8
    }

    /// Number of 32-bit words of the byte image.
    pub const fn u32_len(&self) -> u64 {
        self.byte_len() / 4
    }

    /// Whether the block count is valid: at least 1 (at most `MAX_BLOCKS` by its type).
    pub const fn is_valid(&self) -> bool {
        self.blocks >= 1
    }

    /// The one compatibility check: two filters can be merged, compared bit for bit or queried
    /// with each other's keys only when layout, block count, hash and seed all agree, and their
    /// key types are the same (or one is not recorded, [`KeyType::Any`]).
    pub fn check_compatible(&self, other: &Params) -> Result<(), MergeError> {
        if self.layout != other.layout {
            return Err(MergeError::Layout(self.layout, other.layout));
        }
        if self.blocks != other.blocks {
            return Err(MergeError::Blocks(self.blocks, other.blocks));
        }
        if self.hash != other.hash {
            return Err(MergeError::Hash(self.hash, other.hash));
        }
        if self.seed != other.seed {
            return Err(MergeError::Seed(self.seed, other.seed));
        }
        if self.kind != other.kind {
            return Err(MergeError::Kind(self.kind, other.kind));
        }
        match self.key_type.check_query(other.key_type) {
            KeyMatch::Same | KeyMatch::Unchecked => Ok(()),
            KeyMatch::SameBytes | KeyMatch::Mismatch => {
                Err(MergeError::KeyType(self.key_type, other.key_type))
            }
        }
    }

    /// The key type two compatible filters' merge records: the one recorded, if only one is.
    pub fn merged_key_type(&self, other: &Params) -> KeyType {
        if self.key_type == KeyType::Any {
            other.key_type
        } else {
            self.key_type
        }
    }

    /// Whether the Parquet split-block form can express this filter: layout 8x32, XXH64, seed 0.
    pub fn parquet_compatible(&self) -> bool {
        self.layout == Layout::L8x32 && self.seed == 0 && self.hash == HashId::Xxh64
    }

    /// The 64-bit hash of `key` under this filter's seed (XXH64 of the key's bytes).
    #[inline]
    pub fn hash_key<K: Key + ?Sized>(&self, key: &K) -> u64 {
        key.key_hash(self.seed)
    }

    /// Expected false-positive rate with `keys` keys inserted (see [`math::false_positive_rate`]).
    pub fn expected_fpr(&self, keys: u64) -> f64 {
        math::false_positive_rate(self.layout, self.blocks, keys)
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "layout {}, {} blocks, {}, seed {}, keys {}",
            self.layout, self.blocks, self.hash, self.seed, self.key_type
        )
    }
}
