//! The owned storage every cell-based kind with cells wider than a bit shares (counting, stable,
//! spatial; behind `alloc`): the parameters, the key count, the projection image and the cells,
//! with their view, their projection and the arrays of their file.

use alloc::vec::Vec;

use crate::cell::{self, cell_words, CellBits, CellReduce, CellsMut};
use crate::filter::Filter;
use crate::fold::{self, CellMerge};
use crate::format::{FormatError, Header};
use crate::kind::FilterKind;
use crate::kind_meta::pad64;
use crate::params::{MergeError, Params};
use crate::reference::FilterRef;
use crate::storage::Words;
use crate::write_file::FileParts;

/// The parameters, key count, projection image and cells of a cell-based filter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CellStore {
    pub(crate) params: Params,
    pub(crate) keys: Option<u64>,
    image: Words,
    cells: Words,
}

impl CellStore {
    /// Empty storage for `params`, whose kind must have cells wider than a bit.
    pub(crate) fn new(params: Params) -> Option<CellStore> {
        CellStore::with(params, |n| Some(Words::zeroed(n)))
    }

    /// [`CellStore::new`], or `None` also when the arrays cannot be allocated.
    pub(crate) fn try_new(params: Params) -> Option<CellStore> {
        CellStore::with(params, Words::try_zeroed)
    }

    /// Empty storage for `params`, its arrays from `zeroed`.
    fn with(params: Params, zeroed: impl Fn(u64) -> Option<Words>) -> Option<CellStore> {
        let bits = params.kind.cell_bits();
        if bits == CellBits::One {
            return None;
        }
        let params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        Some(CellStore {
            params,
            keys: Some(0),
            image: zeroed(params.u32_len())?,
            cells: zeroed(cell_words(&params, bits))?,
        })
    }

    /// The cell width.
    pub(crate) fn bits(&self) -> CellBits {
        self.params.kind.cell_bits()
    }

    pub(crate) fn image_words(&self) -> &[u32] {
        self.image.as_slice()
    }

    pub(crate) fn cell_words(&self) -> &[u32] {
        self.cells.as_slice()
    }

    /// The smallest of the key's `L` cells ([`CellReduce::Min`]): a counting filter's count, a
    /// spatial filter's class.
    pub(crate) fn smallest_cell(&self, hash: u64) -> u32 {
        cell::reduce_cells(
            &self.params,
            self.bits(),
            self.cells.as_slice(),
            hash,
            CellReduce::Min,
        )
    }

    pub(crate) fn view_mut(&mut self) -> CellsMut<'_> {
        CellsMut::new(
            self.params,
            self.image.as_mut_slice(),
            self.cells.as_mut_slice(),
        )
        .expect("a CellStore has the shape of its parameters")
    }

    pub(crate) fn projection(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.params, self.image.as_slice()).expect("whole blocks")
    }

    /// The projection as an owned static filter with the same key count.
    pub(crate) fn to_static(&self) -> Filter {
        let mut f = Filter::new(self.params.with_kind(FilterKind::Static));
        f.words_mut().copy_from_slice(self.image.as_slice());
        f.set_key_count(self.keys);
        f
    }

    /// This storage folded into `blocks` blocks (see [`crate::fold`]): the image by OR, the
    /// cells by the kind's combine; the key count is kept.
    pub(crate) fn folded(&self, blocks: u32) -> Result<CellStore, MergeError> {
        let (params, bits) = (self.params, self.bits());
        let merge = CellMerge::of(params.kind).ok_or(MergeError::Unfoldable(params.kind))?;
        let block_words = params.layout.block_u32s();
        let image = fold::fold_words(self.image_words(), block_words, blocks, CellBits::One, merge)?;
        let cells = fold::fold_words(
            self.cell_words(),
            block_words * bits.bits() as usize,
            blocks,
            bits,
            merge,
        )?;
        let mut out = CellStore::new(Params { blocks, ..params }).expect("a kind with cells");
        out.keys = self.keys;
        out.image.as_mut_slice().copy_from_slice(&image);
        out.cells.as_mut_slice().copy_from_slice(&cells);
        Ok(out)
    }

    /// Merges `other` (same parameters; see [`Params::check_compatible`]) into this storage:
    /// the image by OR, the cells by the kind's combine ([`CellMerge`]: the larger class, the
    /// sum of counters stuck at their maximum), the key counts added (unknown if either is).
    pub(crate) fn union_with(&mut self, other: &CellStore) -> Result<(), MergeError> {
        self.params.check_compatible(&other.params)?;
        let kind = self.params.kind;
        let merge = CellMerge::of(kind).ok_or(MergeError::Unmergeable(kind))?;
        for (x, y) in self.image.as_mut_slice().iter_mut().zip(other.image_words()) {
            *x |= y;
        }
        let bits = self.bits();
        merge.merge_into(self.cells.as_mut_slice(), other.cell_words(), bits);
        self.params.key_type = self.params.merged_key_type(&other.params);
        self.keys = fold::merged_key_count(self.keys, other.keys);
        Ok(())
    }

    /// The parts of the file: the kind metadata `meta`, then the image and the cells.
    pub(crate) fn file_parts(&self, meta: Vec<u8>) -> FileParts<'_> {
        let arrays = alloc::vec![self.image.as_slice(), self.cells.as_slice()];
        FileParts::new(self.params, self.keys, meta, arrays)
    }

    /// The storage of a parsed file whose payload holds the header's metadata, then the image
    /// and the cells (lengths checked by the format's parser).
    pub(crate) fn from_payload(header: &Header, payload: &[u8]) -> Result<CellStore, FormatError> {
        let (params, keys) = (header.params, header.keys);
        let meta_len = header.meta_len as usize;
        let bits = params.kind.cell_bits();
        let image_len = params.byte_len() as usize;
        let cells_at = meta_len + pad64(image_len as u64) as usize;
        let cells_len = cell_words(&params, bits) as usize * 4;
        let (Some(image), Some(cells)) = (
            payload.get(meta_len..meta_len + image_len),
            payload.get(cells_at..cells_at + cells_len),
        ) else {
            return Err(FormatError::Metadata {
                what: "the arrays do not fit the payload",
            });
        };
        let store = CellStore {
            params,
            keys,
            image: Words::from_le_bytes(image),
            cells: Words::from_le_bytes(cells),
        };
        let (image, cells) = (store.image.as_slice(), store.cells.as_slice());
        match cell::first_unprojected(image, cells, bits) {
            Some(bit) => Err(FormatError::Projection { bit }),
            None => Ok(store),
        }
    }
}
