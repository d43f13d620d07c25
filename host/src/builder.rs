//! Building filters: sizing (through the core's one sizing routine), layout, seed and backend,
//! then the keys.

use bloomlanes_core::{AnyFilter, Filter, KeyType, Layout, Params, Sizing};

use crate::backend::{self, BackendChoice};
use crate::bulk::{self, Progress};
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::kinds::{self, KindSpec};

/// Builds filters: sizing, layout, seed and backend, then the keys.
///
/// ```
/// use bloomlanes_host::{BackendChoice, FilterBuilder, KeySet};
/// let keys = KeySet::from_strings(["alice", "bob"]);
/// let built = FilterBuilder::new().fpp(0.001).backend(BackendChoice::Scalar).build(&keys)?;
/// assert!(built.filter.contains("alice"));
/// # Ok::<(), bloomlanes_host::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FilterBuilder {
    pub(crate) sizing: Sizing,
    pub(crate) capacity: Option<u64>,
    pub(crate) layout: Option<Layout>,
    pub(crate) seed: u64,
    backend: BackendChoice,
    pub(crate) key_type: Option<KeyType>,
    pub(crate) pow2: bool,
    pub(crate) kind: KindSpec,
}

impl Default for FilterBuilder {
    fn default() -> Self {
        FilterBuilder {
            sizing: Sizing::FalsePositiveRate(0.01),
            capacity: None,
            layout: None,
            seed: 0,
            backend: BackendChoice::Auto,
            key_type: None,
            pow2: false,
            kind: KindSpec::Static,
        }
    }
}

/// A built filter and the backend that filled it.
#[derive(Debug)]
pub struct Built {
    /// The filter.
    pub filter: Filter,
    /// The backend that inserted the keys.
    pub backend: String,
}

/// Builder methods that store their argument in the field of the same name and return the
/// builder; each entry is its doc comment and `name: Type;`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = $name;
            self
        }
    )*};
}

impl FilterBuilder {
    /// A builder with the defaults: 1% false positives, layout chosen for the rate, seed 0,
    /// automatic backend, capacity counted from the keys.
    pub fn new() -> FilterBuilder {
        FilterBuilder::default()
    }
    /// Size for an expected false-positive rate.
    pub fn fpp(mut self, rate: f64) -> Self {
        self.sizing = Sizing::FalsePositiveRate(rate);
        self
    }
    /// Size for a number of bits per key.
    pub fn bits_per_key(mut self, bits: f64) -> Self {
        self.sizing = Sizing::BitsPerKey(bits);
        self
    }
    setters! {
        /// Size for this many keys instead of the number given to [`FilterBuilder::build`].
        capacity: Option<u64>;
        /// The block layout (`None`: the one that meets the rate in the fewest bits).
        layout: Option<Layout>;
        /// The hash seed (0, with layout 8x32, gives Parquet-compatible filters).
        seed: u64;
        /// The backend that inserts the keys.
        backend: BackendChoice;
        /// The key type recorded in the filter (`None`: the key set's, see
        /// [`KeySet::key_type`]).
        key_type: Option<KeyType>;
        /// Round the block count up to a power of two (what every Parquet reader accepts: Arrow
        /// C++ and Velox refuse other sizes).
        pow2: bool;
        /// The kind of filter [`FilterBuilder::empty_any`] makes (default static; see
        /// [`kinds::empty`] for how each kind is sized).
        kind: KindSpec;
    }
    /// The capacity given with [`FilterBuilder::capacity`], if any.
    pub fn capacity_given(&self) -> Option<u64> {
        self.capacity
    }
    /// The hash seed.
    pub fn seed_value(&self) -> u64 {
        self.seed
    }
    /// The backend asked for.
    pub fn backend_choice(&self) -> BackendChoice {
        self.backend
    }

    /// The parameters of a filter for `keys` keys (or the capacity), by [`Params::for_keys`].
    ///
    /// Sized by a rate, the block count is rounded up onto the grid that folds
    /// ([`Params::for_keys_mergeable`], as the Python constructors size); sized by bits per key
    /// (a request for a size), the count is kept as asked; with `pow2` it is rounded to a power
    /// of two instead (also on the grid).
    pub fn params(&self, keys: u64) -> Result<Params> {
        let n = self.capacity.unwrap_or(keys).max(1);
        let mut p = if self.pow2 {
            let mut p = Params::for_keys(n, self.sizing, self.layout)?;
            // Past 2^31 blocks the next power of two does not fit: keep the largest one.
            p.blocks = p.blocks.checked_next_power_of_two().unwrap_or(1 << 31);
            p
        } else {
            Params::for_keys_mergeable(n, self.sizing, self.layout)?
        };
        p = p
            .with_seed(self.seed)
            .with_key_type(self.key_type.unwrap_or(KeyType::Any));
        Ok(p)
    }

    /// An empty filter sized for `keys` keys (or the capacity); a filter too large to allocate
    /// here is an [`Error::TooLarge`], not an abort.
    pub fn empty(&self, keys: u64) -> Result<Filter> {
        let params = self.params(keys)?;
        let too_large = |source| Error::TooLarge {
            keys: self.capacity.unwrap_or(keys).max(1),
            params,
            source,
        };
        let bytes = usize::try_from(params.byte_len()).map_err(|_| too_large(None))?;
        let mut probe: Vec<u8> = Vec::new();
        probe
            .try_reserve_exact(bytes)
            .map_err(|e| too_large(Some(e)))?;
        drop(probe);
        Ok(Filter::new(params))
    }

    /// An empty filter of the builder's kind sized for `keys` keys (or the capacity).
    pub fn empty_any(&self, keys: u64) -> Result<AnyFilter> {
        kinds::empty(self, keys)
    }

    /// Builds a filter holding `keys`.
    pub fn build(&self, keys: &KeySet) -> Result<Built> {
        self.build_with_progress(keys, &mut |_| {})
    }

    /// Builds a filter holding `keys`, reporting progress to `progress` (see [`bulk`]).
    pub fn build_with_progress(
        &self,
        keys: &KeySet,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Built> {
        let mut filter = self
            .clone()
            .key_type(self.key_type.or(Some(keys.key_type())))
            .empty(keys.len() as u64)?;
        let engine = backend::select(self.backend, keys.len())?;
        bulk::insert(&*engine, &mut filter, keys.keys(), progress)?;
        Ok(Built {
            filter,
            backend: engine.name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use bloomlanes_core::{math, Layout, SizingError};

    use super::*;

    #[test]
    fn builds_what_the_core_sizes() {
        let keys = KeySet::from_u64((0..10_000).collect());
        let b = FilterBuilder::new()
            .fpp(0.001)
            .seed(9)
            .backend(BackendChoice::Scalar);
        let built = b.build(&keys).unwrap();
        let mut expected = Params::for_keys(10_000, Sizing::FalsePositiveRate(0.001), None)
            .unwrap()
            .with_seed(9)
            .with_key_type(KeyType::U64);
        // Rounded up onto the grid that folds.
        assert_ne!(expected.blocks, math::fold_friendly_blocks(expected.blocks));
        expected.blocks = math::fold_friendly_blocks(expected.blocks);
        assert_eq!(*built.filter.params(), expected);
        assert_eq!(built.filter.key_count(), Some(10_000));
        assert!((0..10_000u64).all(|k| built.filter.contains(&k)));
        assert_eq!(built.backend, "scalar");
        let sized = b
            .capacity(Some(5))
            .layout(Some(Layout::L16x64))
            .params(1_000_000);
        assert_eq!(sized.unwrap().layout, Layout::L16x64);
    }

    #[test]
    fn bad_sizing_is_a_typed_usage_error() {
        let e = FilterBuilder::new()
            .bits_per_key(0.0)
            .empty(10)
            .unwrap_err();
        assert!(matches!(
            e,
            Error::Sizing {
                source: SizingError::BadBitsPerKey(_)
            }
        ));
        assert_eq!(e.exit_code(), 2);
    }
}
