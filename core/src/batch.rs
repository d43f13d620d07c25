//! A batch of keys in one of the shapes the bulk backends accept. Shared vocabulary, so the SIMD,
//! GPU and host layers describe inputs the same way; the scalar hash of each form lives here.

use crate::xxh64::{xxh64, xxh64_u64};

/// A borrowed batch of keys.
#[derive(Clone, Copy, Debug)]
pub enum Keys<'a> {
    /// Integer keys, hashed as their 8 little-endian bytes.
    U64(&'a [u64]),
    /// Caller-supplied 64-bit hashes, used as they are.
    Hashes(&'a [u64]),
    /// Fixed-width byte records laid end to end (e.g. 13-byte IPv4 5-tuples).
    Records(Records<'a>),
    /// Variable-length byte strings: one buffer plus offsets, as Arrow stores strings.
    Strings(Strings<'a>),
}

/// Fixed-width records; build with [`Records::new`], which checks the shape.
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    data: &'a [u8],
    width: usize,
}

/// Variable-length strings; build with [`Strings::new`], which checks the offsets.
#[derive(Clone, Copy, Debug)]
pub struct Strings<'a> {
    data: &'a [u8],
    offsets: &'a [u64],
}

/// Why a batch is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchError {
    /// Record width zero.
    ZeroWidth,
    /// The data length is not a multiple of the record width.
    RaggedRecords {
        /// Bytes of data.
        len: usize,
        /// Record width.
        width: usize,
    },
    /// Offsets must have at least one entry (n keys need n + 1 offsets).
    NoOffsets,
    /// Offset `index` is smaller than the one before it or past the end of the data.
    BadOffset {
        /// Index into the offsets.
        index: usize,
        /// Its value.
        value: u64,
    },
}

impl core::fmt::Display for BatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BatchError::ZeroWidth => write!(f, "record width must be at least one byte"),
            BatchError::RaggedRecords { len, width } => {
                write!(
                    f,
                    "{len} bytes is not a whole number of {width}-byte records"
                )
            }
            BatchError::NoOffsets => write!(f, "string offsets need at least one entry"),
            BatchError::BadOffset { index, value } => write!(
                f,
                "string offset {index} ({value}) is out of order or past the end of the data"
            ),
        }
    }
}

impl core::error::Error for BatchError {}

impl<'a> Records<'a> {
    /// `data` as records of `width` bytes.
    pub fn new(data: &'a [u8], width: usize) -> Result<Self, BatchError> {
        if width == 0 {
            return Err(BatchError::ZeroWidth);
        }
        if !data.len().is_multiple_of(width) {
            return Err(BatchError::RaggedRecords {
                len: data.len(),
                width,
            });
        }
        Ok(Records { data, width })
    }
    /// The raw bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
    /// Record width in bytes.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Record `i`.
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.data[i * self.width..(i + 1) * self.width]
    }
}

impl<'a> Strings<'a> {
    /// Strings `data[offsets[i]..offsets[i + 1]]`; offsets must be non-decreasing and in bounds.
    pub fn new(data: &'a [u8], offsets: &'a [u64]) -> Result<Self, BatchError> {
        if offsets.is_empty() {
            return Err(BatchError::NoOffsets);
        }
        let mut prev = 0;
        for (index, &value) in offsets.iter().enumerate() {
            if value < prev || value > data.len() as u64 {
                return Err(BatchError::BadOffset { index, value });
            }
            prev = value;
        }
        Ok(Strings { data, offsets })
    }
    /// The raw bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
    /// The offsets (one more than the number of strings).
    pub fn offsets(&self) -> &'a [u64] {
        self.offsets
    }
    /// String `i`.
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

impl<'a> Keys<'a> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        match self {
            Keys::U64(k) | Keys::Hashes(k) => k.len(),
            Keys::Records(r) => r.data.len() / r.width,
            Keys::Strings(s) => s.offsets.len() - 1,
        }
    }
    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The 64-bit hash of key `i` under `seed` (the scalar definition every backend matches).
    #[inline]
    pub fn hash(&self, i: usize, seed: u64) -> u64 {
        match self {
            Keys::U64(k) => xxh64_u64(k[i], seed),
            Keys::Hashes(h) => h[i],
            Keys::Records(r) => xxh64(r.get(i), seed),
            Keys::Strings(s) => xxh64(s.get(i), seed),
        }
    }
    /// The keys `range` of this batch, in the same form (for chunking across threads or devices).
    pub fn slice(&self, range: core::ops::Range<usize>) -> Keys<'a> {
        match *self {
            Keys::U64(k) => Keys::U64(&k[range]),
            Keys::Hashes(h) => Keys::Hashes(&h[range]),
            Keys::Records(r) => Keys::Records(Records {
                data: &r.data[range.start * r.width..range.end * r.width],
                width: r.width,
            }),
            Keys::Strings(s) => Keys::Strings(Strings {
                data: s.data,
                offsets: &s.offsets[range.start..range.end + 1],
            }),
        }
    }
}
