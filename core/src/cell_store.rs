//! The owned storage every cell-based kind with cells wider than a bit shares (counting, stable,
//! spatial; behind `alloc`): the parameters, the key count, the projection image and the cells,
//! with their view, their projection and the arrays of their file.

use alloc::vec::Vec;

use crate::cell::{cell_words, CellBits, CellsMut};
use crate::filter::Filter;
use crate::format::FormatError;
use crate::kind::FilterKind;
use crate::kind_meta::pad64;
use crate::params::Params;
use crate::reference::FilterRef;
use crate::storage::Words;

/// The parameters, key count, projection image and cells of a cell-based filter.
#[derive(Clone, PartialEq)]
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

    /// Bytes of the two arrays in a file (each padded to 64 bytes).
    pub(crate) fn arrays_len(&self) -> usize {
        pad64(self.params.byte_len()) as usize + self.cells.as_slice().len() * 4 + 64
    }

    /// Appends the image and the cells, each padded to 64 bytes.
    pub(crate) fn write_arrays(&self, out: &mut Vec<u8>) {
        self.image.write_le(out, true);
        self.cells.write_le(out, true);
    }

    /// The storage of a parsed file whose payload holds `meta_len` bytes of metadata, then the
    /// image and the cells (lengths checked by the format's parser).
    pub(crate) fn from_payload(
        params: Params,
        keys: Option<u64>,
        payload: &[u8],
        meta_len: usize,
    ) -> Result<CellStore, FormatError> {
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
        Ok(CellStore {
            params,
            keys,
            image: Words::from_le_bytes(image),
            cells: Words::from_le_bytes(cells),
        })
    }
}
