//! The `.blf` file format: a 64-byte header, then the payload, so that the payload starts
//! 64-byte aligned and a memory-mapped file can be used without copying. See `docs/FORMAT.md`.
//!
//! ```text
//! offset size field
//!  0      8   magic  b"BLMLANES"
//!  8      2   format version, u16 LE (2; version 1 files are read too)
//! 10      1   lanes L (8 or 16)
//! 11      1   word bits W (32 or 64)
//! 12      4   block count z, u32 LE (>= 1)
//! 16      8   hash seed, u64 LE
//! 24      1   hash id (0 = caller-supplied hashes, 1 = XXH64)
//! 25      1   flags (bit 0: the key count field is known; other bits zero)
//! 26      1   filter kind (0 = static; 6 = retrieval; version 1: 0)
//! 27      1   key type code (0 = not recorded; version 1: 0)
//! 28      2   key width, u16 LE (fixed-length byte keys only, else 0)
//! 30      2   kind metadata length in 64-byte units, u16 LE (0 for static filters)
//! 32      8   inserted key count, u64 LE (0 unless flag bit 0)
//! 40      8   payload length in bytes, u64 LE (static: z × L × W / 8)
//! 48      8   XXH64(payload, seed 0)
//! 56      8   XXH64(header bytes 0..56, seed 0)
//! 64      …   payload: the kind metadata, then the byte image(s)
//! ```

use crate::key_type::KeyType;
use crate::kind::FilterKind;
use crate::kind_meta;
use crate::layout::Layout;
use crate::params::Params;
use crate::xxh64::xxh64;

/// First eight bytes of every filter file.
pub const MAGIC: [u8; 8] = *b"BLMLANES";
/// The format version this crate writes and the newest it reads.
pub const FORMAT_VERSION: u16 = 2;
/// The oldest format version this crate reads (its files have no key type and are static).
pub const OLDEST_VERSION: u16 = 1;
/// Header length; the payload starts here (64-byte aligned).
pub const HEADER_LEN: usize = 64;
const FLAG_KEY_COUNT: u8 = 1;

/// Which function turned keys into the 64-bit hashes stored in a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HashId {
    /// The caller supplied the hashes; the filter cannot hash keys itself.
    Prehashed,
    /// XXH64 of the key bytes with the header's seed.
    Xxh64,
}

impl HashId {
    /// The byte stored in the header.
    pub const fn code(self) -> u8 {
        match self {
            HashId::Prehashed => 0,
            HashId::Xxh64 => 1,
        }
    }
    /// The hash id for a header byte, if known.
    pub const fn from_code(code: u8) -> Option<HashId> {
        match code {
            0 => Some(HashId::Prehashed),
            1 => Some(HashId::Xxh64),
            _ => None,
        }
    }

    /// The name shown to people and in JSON: `"xxh64"` or `"prehashed"`.
    pub const fn name(self) -> &'static str {
        match self {
            HashId::Prehashed => "prehashed",
            HashId::Xxh64 => "xxh64",
        }
    }
}

impl core::fmt::Display for HashId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything the header says about a filter: its parameters and, when known, its key count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The filter's identity (its kind included).
    pub params: Params,
    /// Number of keys inserted, when known.
    pub keys: Option<u64>,
    /// Bytes of kind metadata at the start of the payload (a multiple of 64; 0 for static).
    pub meta_len: u64,
}

impl Header {
    /// The header of a static filter.
    pub const fn new(params: Params, keys: Option<u64>) -> Header {
        Header {
            params,
            keys,
            meta_len: 0,
        }
    }

    /// Payload length in bytes of a static filter: `z × L × W / 8` (other kinds: see
    /// [`kind_meta::payload_len`]).
    pub fn payload_len(&self) -> u64 {
        self.params.byte_len()
    }

    /// Encodes the header for `payload` (the byte image of a static filter, or the kind
    /// metadata and arrays of another kind, `self.meta_len` bytes of metadata first).
    pub fn encode(&self, payload: &[u8]) -> [u8; HEADER_LEN] {
        self.encode_parts(payload.len() as u64, xxh64(payload, 0))
    }

    /// Encodes the header for a payload of `payload_len` bytes whose `XXH64(payload, 0)` is
    /// `payload_hash` (for a writer that streams the payload instead of holding it).
    pub fn encode_parts(&self, payload_len: u64, payload_hash: u64) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        let p = &self.params;
        h[10] = p.layout.lanes() as u8;
        h[11] = p.layout.word_bits() as u8;
        h[12..16].copy_from_slice(&p.blocks.to_le_bytes());
        h[16..24].copy_from_slice(&p.seed.to_le_bytes());
        h[24] = p.hash.code();
        h[25] = if self.keys.is_some() {
            FLAG_KEY_COUNT
        } else {
            0
        };
        h[26] = p.kind.code();
        h[27] = p.key_type.code();
        h[28..30].copy_from_slice(&p.key_type.width_field().to_le_bytes());
        h[30..32].copy_from_slice(&((self.meta_len / 64) as u16).to_le_bytes());
        h[32..40].copy_from_slice(&self.keys.unwrap_or(0).to_le_bytes());
        h[40..48].copy_from_slice(&payload_len.to_le_bytes());
        h[48..56].copy_from_slice(&payload_hash.to_le_bytes());
        let check = xxh64(&h[..56], 0);
        h[56..64].copy_from_slice(&check.to_le_bytes());
        h
    }
}

/// Why a byte string is not a valid filter file. Every variant names the field at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The input ends before the header or payload does.
    Truncated {
        /// Bytes the file must have.
        needed: u64,
        /// Bytes present.
        found: u64,
    },
    /// The first eight bytes are not the magic: not a bloomlanes filter.
    BadMagic,
    /// Written by a newer (or unknown) format version.
    UnsupportedVersion {
        /// Version in the file.
        found: u16,
    },
    /// The header checksum does not match: the header is corrupt.
    HeaderChecksum,
    /// Lanes/word bits are not one of the supported layouts.
    BadLayout {
        /// Lanes field.
        lanes: u8,
        /// Word bits field.
        word_bits: u8,
    },
    /// Block count zero.
    ZeroBlocks,
    /// Unknown hash id byte.
    UnknownHash(u8),
    /// Unknown filter kind byte.
    UnknownKind(u8),
    /// Unknown key type code, or a key width that does not fit it.
    UnknownKeyType {
        /// Key type code (byte 27).
        code: u8,
        /// Key width field (bytes 28..30).
        width: u16,
    },
    /// Unknown flag bits or non-zero reserved bytes.
    ReservedBits,
    /// The key count field is non-zero although flag bit 0 says it is not known.
    StrayKeyCount(u64),
    /// The kind metadata is inconsistent.
    Metadata {
        /// What was wrong.
        what: &'static str,
    },
    /// A padding byte after an array is not zero.
    Padding {
        /// Offset of the padding in the payload.
        offset: u64,
    },
    /// The file holds another kind of filter than the one asked for.
    WrongKind {
        /// The kind asked for.
        expected: &'static str,
        /// The kind in the file.
        found: &'static str,
    },
    /// A static filter's header gives a kind metadata length (bytes 30..32), which only the
    /// other kinds have: the field must be 0.
    StaticMetadata {
        /// The field's value, in 64-byte units.
        units: u16,
    },
    /// The payload length field disagrees with `z × L × W / 8`.
    PayloadLength {
        /// Length the layout and block count require.
        expected: u64,
        /// Length field in the header.
        found: u64,
    },
    /// Bytes follow the payload.
    TrailingBytes(u64),
    /// An image bit is not its cell's projection (set iff the cell is positive).
    Projection {
        /// The image bit (= the cell's index).
        bit: u64,
    },
    /// A cell holds a value the kind cannot (a spatial cell past the last class).
    CellValue {
        /// The cell's index (= its image bit).
        cell: u64,
        /// Its value.
        value: u32,
    },
    /// The payload checksum does not match: the bits are corrupt.
    PayloadChecksum,
}

impl core::fmt::Display for FormatError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FormatError::Truncated { needed, found } => {
                write!(f, "truncated: needs {needed} bytes, has {found}")
            }
            FormatError::BadMagic => write!(f, "not a bloomlanes filter (bad magic at byte 0)"),
            FormatError::UnsupportedVersion { found } => write!(
                f,
                "format version {found} is not supported (this build reads version {FORMAT_VERSION})"
            ),
            FormatError::HeaderChecksum => write!(f, "header checksum mismatch (bytes 0..64 are corrupt)"),
            FormatError::BadLayout { lanes, word_bits } => {
                write!(f, "unsupported layout {lanes}x{word_bits} (bytes 10..12)")
            }
            FormatError::ZeroBlocks => write!(f, "block count is zero (bytes 12..16)"),
            FormatError::UnknownHash(id) => write!(f, "unknown hash id {id} (byte 24)"),
            FormatError::UnknownKind(k) => write!(f, "unknown filter kind {k} (byte 26)"),
            FormatError::UnknownKeyType { code, width } => {
                write!(f, "unknown key type {code} with width {width} (bytes 27..30)")
            }
            FormatError::ReservedBits => write!(f, "unknown flags or non-zero reserved bytes (bytes 25..32)"),
            FormatError::Metadata { what } => write!(f, "bad kind metadata: {what}"),
            FormatError::Padding { offset } => {
                write!(f, "non-zero padding at payload byte {offset}")
            }
            FormatError::WrongKind { expected, found } => write!(
                f,
                "the file holds a {found} filter, not a {expected} filter (byte 26)"
            ),
            FormatError::StrayKeyCount(n) => write!(
                f,
                "key count field is {n} but flag bit 0 says no count is recorded (bytes 32..40)"
            ),
            FormatError::StaticMetadata { units } => write!(
                f,
                "metadata length field (bytes 30..32) is {units} ({} bytes) but the filter kind \
                 (byte 26) is static, which has no kind metadata: the field must be 0",
                u64::from(*units) * 64
            ),
            FormatError::PayloadLength { expected, found } => write!(
                f,
                "payload length field is {found} but the layout and block count need {expected} (bytes 40..48)"
            ),
            FormatError::TrailingBytes(n) => write!(f, "{n} unexpected bytes after the payload"),
            FormatError::Projection { bit } => write!(
                f,
                "image bit {bit} disagrees with its cell (the image must be the cells' projection)"
            ),
            FormatError::CellValue { cell, value } => write!(
                f,
                "cell {cell} holds {value}, past the last class (the cells are corrupt)"
            ),
            FormatError::PayloadChecksum => write!(f, "payload checksum mismatch (the filter bits are corrupt)"),
        }
    }
}

impl core::error::Error for FormatError {}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// How much of a file [`parse_with`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Verify {
    /// Everything, including the payload checksum (reads every byte of the payload).
    #[default]
    Full,
    /// Everything but the payload checksum: the header and its checksum, the lengths. Opening a
    /// multi-gigabyte memory-mapped filter then touches one page instead of all of them; a
    /// corrupt bit array goes unnoticed.
    HeaderOnly,
}

/// Parses and checks a whole file. On success returns the header and the payload (a borrow of
/// `file[64..]`, 64-byte aligned if `file` is). Nothing is returned for a file with any fault.
pub fn parse(file: &[u8]) -> Result<(Header, &[u8]), FormatError> {
    parse_with(file, Verify::Full)
}

/// [`parse`] of a file that must hold a filter of a kind `accepts` (named `expected` in the
/// error): any other kind is [`FormatError::WrongKind`]. Every owning filter reads its files
/// through this.
pub fn parse_kind<'a>(
    file: &'a [u8],
    expected: &'static str,
    accepts: fn(FilterKind) -> bool,
) -> Result<(Header, &'a [u8]), FormatError> {
    let (header, payload) = parse(file)?;
    if !accepts(header.params.kind) {
        return Err(FormatError::WrongKind {
            expected,
            found: header.params.kind.name(),
        });
    }
    Ok((header, payload))
}

/// [`parse`], with the payload checksum checked or not (see [`Verify`]).
///
/// The checks run in the order `docs/FORMAT.md` gives: magic (when at least 8 bytes are present),
/// length of the header, header checksum (a header that fails it but carries a newer version is
/// reported as an unsupported version), version, layout, block count, hash id, flags and
/// reserved bytes, kind, key type, key count, a static filter's metadata length, payload length field, file length, payload
/// checksum.
pub fn parse_with(file: &[u8], verify: Verify) -> Result<(Header, &[u8]), FormatError> {
    let found = file.len() as u64;
    if file.len() >= 8 && file[..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    if file.len() < HEADER_LEN {
        return Err(FormatError::Truncated {
            needed: HEADER_LEN as u64,
            found,
        });
    }
    let version = u16::from_le_bytes([file[8], file[9]]);
    if xxh64(&file[..56], 0) != le_u64(&file[56..]) {
        // A newer writer may change the header; report the version before the checksum.
        if version > FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion { found: version });
        }
        return Err(FormatError::HeaderChecksum);
    }
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion { found: version });
    }
    let layout = Layout::from_parts(usize::from(file[10]), u32::from(file[11])).ok_or(
        FormatError::BadLayout {
            lanes: file[10],
            word_bits: file[11],
        },
    )?;
    let blocks = u32::from_le_bytes([file[12], file[13], file[14], file[15]]);
    if blocks == 0 {
        return Err(FormatError::ZeroBlocks);
    }
    let hash = HashId::from_code(file[24]).ok_or(FormatError::UnknownHash(file[24]))?;
    let v1 = version == 1;
    // Version 1 reserved bytes 26..32; version 2 uses them for the kind, key type and metadata.
    let reserved: &[u8] = if v1 { &file[26..32] } else { &[] };
    if file[25] & !FLAG_KEY_COUNT != 0 || reserved.iter().any(|&b| b != 0) {
        return Err(FormatError::ReservedBits);
    }
    let (kind_code, meta_len) = if v1 {
        (0, 0)
    } else {
        (
            file[26],
            u64::from(u16::from_le_bytes([file[30], file[31]])) * 64,
        )
    };
    let key_type = if v1 {
        KeyType::Any
    } else {
        if kind_code > 6 {
            return Err(FormatError::UnknownKind(kind_code));
        }
        let width = u16::from_le_bytes([file[28], file[29]]);
        KeyType::from_code(file[27], width).ok_or(FormatError::UnknownKeyType {
            code: file[27],
            width,
        })?
    };
    let count = le_u64(&file[32..]);
    let keys = if file[25] & FLAG_KEY_COUNT != 0 {
        Some(count)
    } else if count != 0 {
        return Err(FormatError::StrayKeyCount(count));
    } else {
        None
    };
    let mut params = Params::new(layout, blocks)
        .with_seed(le_u64(&file[16..]))
        .with_hash(hash)
        .with_key_type(key_type);
    let stated = le_u64(&file[40..]);
    if kind_code == 0 {
        if meta_len != 0 {
            return Err(FormatError::StaticMetadata {
                units: (meta_len / 64) as u16,
            });
        }
        let expected = params.byte_len();
        if stated != expected {
            return Err(FormatError::PayloadLength {
                expected,
                found: stated,
            });
        }
    } else if meta_len < kind_meta::META_LEN as u64 || meta_len > stated {
        return Err(FormatError::Metadata {
            what: "metadata length missing or longer than the payload",
        });
    }
    let needed = stated.saturating_add(HEADER_LEN as u64);
    if found < needed {
        return Err(FormatError::Truncated { needed, found });
    }
    if found > needed {
        return Err(FormatError::TrailingBytes(found - needed));
    }
    let payload = &file[HEADER_LEN..];
    if kind_code != 0 {
        let meta = &payload[..meta_len as usize];
        params = params.with_kind(kind_meta::decode_kind(kind_code, meta)?);
        if kind_meta::meta_len(&params, meta)? != meta_len {
            return Err(FormatError::Metadata {
                what: "metadata length field disagrees with the kind metadata",
            });
        }
        let expected = kind_meta::payload_len(&params, meta)?;
        if stated != expected {
            return Err(FormatError::PayloadLength {
                expected,
                found: stated,
            });
        }
        kind_meta::check_fields(&params, keys, meta)?;
        kind_meta::check_padding(&params, payload, meta_len)?;
    }
    let header = Header {
        params,
        keys,
        meta_len,
    };
    if verify == Verify::Full && xxh64(payload, 0) != le_u64(&file[48..]) {
        return Err(FormatError::PayloadChecksum);
    }
    Ok((header, payload))
}
