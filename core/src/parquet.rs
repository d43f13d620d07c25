//! The Parquet split-block form: a Thrift compact-protocol `BloomFilterHeader` followed by the
//! bitset. Only layout `8x32` with XXH64 seed 0 can be expressed in it.

use crate::layout::Layout;

/// Why bytes are not a Parquet bloom filter this crate can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParquetError {
    /// The header ends early.
    Truncated {
        /// Byte offset where more input was needed.
        offset: usize,
    },
    /// The Thrift encoding is malformed.
    Malformed {
        /// Byte offset of the fault.
        offset: usize,
        /// What was wrong.
        what: &'static str,
    },
    /// A required header field is absent.
    MissingField(&'static str),
    /// The header names an algorithm, hash or compression this crate does not implement.
    Unsupported {
        /// The header field.
        field: &'static str,
        /// Its union member id.
        member: i16,
    },
    /// `numBytes` is not a positive multiple of 32.
    BadLength(i64),
    /// The bitset is shorter than `numBytes` says.
    ShortBitset {
        /// `numBytes` from the header.
        expected: u64,
        /// Bytes present after the header.
        found: u64,
    },
    /// Only layout 8x32 with XXH64 seed 0 has a Parquet form.
    NotParquetLayout,
}

impl core::fmt::Display for ParquetError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ParquetError::Truncated { offset } => {
                write!(f, "Parquet bloom filter header truncated at byte {offset}")
            }
            ParquetError::Malformed { offset, what } => {
                write!(
                    f,
                    "malformed Parquet bloom filter header at byte {offset}: {what}"
                )
            }
            ParquetError::MissingField(name) => {
                write!(f, "Parquet bloom filter header lacks required field {name}")
            }
            ParquetError::Unsupported { field, member } => {
                write!(
                    f,
                    "unsupported Parquet bloom filter {field} (union member {member})"
                )
            }
            ParquetError::BadLength(n) => {
                write!(f, "Parquet numBytes {n} is not a positive multiple of 32")
            }
            ParquetError::ShortBitset { expected, found } => write!(
                f,
                "Parquet bitset truncated: header says {expected} bytes, {found} present"
            ),
            ParquetError::NotParquetLayout => write!(
                f,
                "only layout 8x32 with XXH64 seed 0 can be written in the Parquet form"
            ),
        }
    }
}

impl core::error::Error for ParquetError {}

/// The pieces of the Thrift compact protocol that this module's header reader and the
/// `bloomlanes-parquet` footer reader share.
pub mod compact {
    /// The i64 a zigzag-encoded varint stands for.
    pub const fn zigzag_decode(v: u64) -> i64 {
        (v >> 1) as i64 ^ -((v & 1) as i64)
    }

    /// The zigzag encoding of `v` (the inverse of [`zigzag_decode`]).
    pub const fn zigzag_encode(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    /// A struct's field header byte: `None` for the stop byte, else `(delta, type)`: the field's
    /// id is the previous field's plus `delta`, or, when `delta` is 0, a zigzag varint that
    /// follows the byte.
    pub const fn field_header(b: u8) -> Option<(u8, u8)> {
        if b == 0 {
            None
        } else {
            Some((b >> 4, b & 0x0f))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn zigzag_round_trips_and_field_headers_split() {
            for (v, z) in [
                (0i64, 0u64),
                (-1, 1),
                (1, 2),
                (-2, 3),
                (i64::MAX, u64::MAX - 1),
            ] {
                assert_eq!((zigzag_encode(v), zigzag_decode(z)), (z, v));
            }
            assert_eq!(zigzag_decode(u64::MAX), i64::MIN);
            assert_eq!(field_header(0), None);
            assert_eq!(field_header(0x15), Some((1, 5)));
            assert_eq!(field_header(0x0c), Some((0, 12)));
        }
    }
}

/// The longest header [`encode_header`] writes.
pub const MAX_HEADER_LEN: usize = 18;

/// Encodes a `BloomFilterHeader` for a bitset of `num_bytes` bytes (BLOCK, XXHASH, UNCOMPRESSED),
/// as the `parquet` crate writes it. Returns the buffer and the length used.
pub fn encode_header(num_bytes: u32) -> ([u8; MAX_HEADER_LEN], usize) {
    let mut out = [0u8; MAX_HEADER_LEN];
    let mut n = 0;
    out[n] = 0x15; // field 1, i32
    n += 1;
    let mut v = compact::zigzag_encode(i64::from(num_bytes));
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[n] = byte;
            n += 1;
            break;
        }
        out[n] = byte | 0x80;
        n += 1;
    }
    // Fields 2, 3, 4: a union whose member 1 is an empty struct.
    for _ in 0..3 {
        out[n..n + 4].copy_from_slice(&[0x1c, 0x1c, 0x00, 0x00]);
        n += 4;
    }
    out[n] = 0x00; // stop
    (out, n + 1)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

const T_STRUCT: u8 = 12;
const MAX_DEPTH: u32 = 32;

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, ParquetError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or(ParquetError::Truncated { offset: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, ParquetError> {
        let start = self.pos;
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ParquetError::Malformed {
            offset: start,
            what: "varint longer than 64 bits",
        })
    }

    fn zigzag(&mut self) -> Result<i64, ParquetError> {
        Ok(compact::zigzag_decode(self.varint()?))
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), ParquetError> {
        let end = (self.pos as u64).saturating_add(n);
        if end > self.bytes.len() as u64 {
            return Err(ParquetError::Truncated {
                offset: self.bytes.len(),
            });
        }
        self.pos = end as usize;
        Ok(())
    }

    /// Next field header of a struct: `None` at the stop byte.
    fn field(&mut self, last_id: &mut i16) -> Result<Option<(i16, u8)>, ParquetError> {
        let at = self.pos;
        let Some((delta, kind)) = compact::field_header(self.byte()?) else {
            return Ok(None);
        };
        let id = if delta == 0 {
            let v = self.zigzag()?;
            i16::try_from(v).map_err(|_| ParquetError::Malformed {
                offset: at,
                what: "field id out of range",
            })?
        } else {
            last_id.wrapping_add(i16::from(delta))
        };
        *last_id = id;
        Ok(Some((id, kind)))
    }

    fn skip(&mut self, kind: u8, depth: u32) -> Result<(), ParquetError> {
        let at = self.pos;
        if depth > MAX_DEPTH {
            return Err(ParquetError::Malformed {
                offset: at,
                what: "nesting too deep",
            });
        }
        match kind {
            1 | 2 => Ok(()),
            3 => self.skip_bytes(1),
            4..=6 => self.varint().map(|_| ()),
            7 => self.skip_bytes(8),
            8 => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            9 | 10 => {
                let h = self.byte()?;
                let elem = h & 0x0f;
                let n = if h >> 4 == 15 {
                    self.varint()?
                } else {
                    u64::from(h >> 4)
                };
                // Every element takes at least one byte, so a count beyond the bytes left is a
                // lie: refusing it bounds the loop by the input's length.
                self.check_count(at, n, 1)?;
                for _ in 0..n {
                    self.skip_element(elem, depth + 1)?;
                }
                Ok(())
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    self.check_count(at, n, 2)?;
                    for _ in 0..n {
                        self.skip_element(kv >> 4, depth + 1)?;
                        self.skip_element(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            T_STRUCT => {
                let mut last = 0;
                while let Some((_, k)) = self.field(&mut last)? {
                    self.skip(k, depth + 1)?;
                }
                Ok(())
            }
            _ => Err(ParquetError::Malformed {
                offset: at,
                what: "unknown Thrift type",
            }),
        }
    }

    /// Skips one element of a list, set or map. Unlike a struct field, whose bool value lives in
    /// the field header, a bool element is one byte.
    fn skip_element(&mut self, kind: u8, depth: u32) -> Result<(), ParquetError> {
        if kind == 1 || kind == 2 {
            self.skip_bytes(1)
        } else {
            self.skip(kind, depth)
        }
    }

    /// Refuses a collection of `n` elements of at least `min_bytes` bytes each when fewer bytes
    /// are left.
    fn check_count(&self, at: usize, n: u64, min_bytes: u64) -> Result<(), ParquetError> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes) > left {
            return Err(ParquetError::Malformed {
                offset: at,
                what: "collection count exceeds the bytes left",
            });
        }
        Ok(())
    }

    /// Reads a union and returns the id of its member, which must be an (ignored) struct.
    fn union_member(&mut self, name: &'static str) -> Result<i16, ParquetError> {
        let mut last = 0;
        let mut member = None;
        while let Some((id, kind)) = self.field(&mut last)? {
            if member.is_none() {
                member = Some(id);
            }
            self.skip(kind, 1)?;
        }
        member.ok_or(ParquetError::MissingField(name))
    }
}

/// Parses a Parquet bloom filter (header + bitset). Returns the bitset (exactly `numBytes`
/// bytes) and the number of bytes consumed. Trailing bytes are left to the caller.
pub fn parse(bytes: &[u8]) -> Result<(&[u8], usize), ParquetError> {
    let mut r = Reader { bytes, pos: 0 };
    let mut last = 0;
    let (mut num_bytes, mut algorithm, mut hash, mut compression) = (None, None, None, None);
    while let Some((id, kind)) = r.field(&mut last)? {
        let at = r.pos;
        match (id, kind) {
            (1, 5) => num_bytes = Some(r.zigzag()?),
            (2, T_STRUCT) => algorithm = Some(r.union_member("algorithm")?),
            (3, T_STRUCT) => hash = Some(r.union_member("hash")?),
            (4, T_STRUCT) => compression = Some(r.union_member("compression")?),
            (1..=4, _) => {
                return Err(ParquetError::Malformed {
                    offset: at,
                    what: "header field has the wrong Thrift type",
                })
            }
            _ => r.skip(kind, 1)?,
        }
    }
    let num_bytes = num_bytes.ok_or(ParquetError::MissingField("numBytes"))?;
    for (field, member) in [
        (
            "algorithm",
            algorithm.ok_or(ParquetError::MissingField("algorithm"))?,
        ),
        ("hash", hash.ok_or(ParquetError::MissingField("hash"))?),
        (
            "compression",
            compression.ok_or(ParquetError::MissingField("compression"))?,
        ),
    ] {
        if member != 1 {
            return Err(ParquetError::Unsupported { field, member });
        }
    }
    let block = Layout::L8x32.block_bytes() as i64;
    if num_bytes <= 0 || num_bytes % block != 0 || num_bytes / block > i64::from(u32::MAX) {
        return Err(ParquetError::BadLength(num_bytes));
    }
    let start = r.pos;
    let available = (bytes.len() - start) as u64;
    if available < num_bytes as u64 {
        return Err(ParquetError::ShortBitset {
            expected: num_bytes as u64,
            found: available,
        });
    }
    let end = start + num_bytes as usize;
    Ok((&bytes[start..end], end))
}
