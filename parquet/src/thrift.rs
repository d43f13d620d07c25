//! A bounded reader of the Thrift compact protocol (what Parquet footers are written in), and
//! the re-encoding of one struct with fields replaced: enough to read a footer's row groups,
//! column chunks and schema, and to set the bloom-filter fields of its column chunks.
//!
//! Every count is checked against the bytes left (each element takes at least one byte), nesting
//! is capped at [`MAX_DEPTH`], and nothing is allocated from a length before that length is known
//! to fit in the input: hostile footers give errors, never hangs or huge allocations.

use std::ops::Range;

use bloomlanes_core::parquet::compact::{self, zigzag_encode};

/// Deepest nesting of structs and collections accepted.
pub const MAX_DEPTH: u32 = 64;

/// Compact-protocol type ids.
pub mod ty {
    /// Boolean true (in a field header).
    pub const BOOL_TRUE: u8 = 1;
    /// Boolean false (in a field header); a boolean element of a collection.
    pub const BOOL_FALSE: u8 = 2;
    /// i8.
    pub const I8: u8 = 3;
    /// i16.
    pub const I16: u8 = 4;
    /// i32.
    pub const I32: u8 = 5;
    /// i64.
    pub const I64: u8 = 6;
    /// double.
    pub const DOUBLE: u8 = 7;
    /// binary / string.
    pub const BINARY: u8 = 8;
    /// list.
    pub const LIST: u8 = 9;
    /// set.
    pub const SET: u8 = 10;
    /// map.
    pub const MAP: u8 = 11;
    /// struct.
    pub const STRUCT: u8 = 12;
}

/// A fault in compact-protocol bytes, at a byte offset of the buffer read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThriftError {
    /// Byte offset in the buffer.
    pub offset: usize,
    /// What was wrong.
    pub what: String,
}

/// The reader's result type.
pub type TResult<T> = Result<T, ThriftError>;

/// A cursor over compact-protocol bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: u32,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            depth: 0,
        }
    }

    /// The current byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to byte offset `pos` (at most the end).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    /// An i8 (one byte).
    pub fn i8(&mut self) -> TResult<i8> {
        Ok(self.byte()? as i8)
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error at the current offset.
    pub fn err(&self, what: impl Into<String>) -> ThriftError {
        ThriftError {
            offset: self.pos,
            what: what.into(),
        }
    }

    fn byte(&mut self) -> TResult<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err("unexpected end of the footer"))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> TResult<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(self.err("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    /// A zigzag i64.
    pub fn i64(&mut self) -> TResult<i64> {
        Ok(compact::zigzag_decode(self.varint()?))
    }

    /// A zigzag i32 (refused when out of range).
    pub fn i32(&mut self) -> TResult<i32> {
        let at = self.pos;
        i32::try_from(self.i64()?).map_err(|_| ThriftError {
            offset: at,
            what: "i32 out of range".into(),
        })
    }

    /// Binary or string bytes (their length checked against the bytes left).
    pub fn binary(&mut self) -> TResult<&'a [u8]> {
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(self.err(format!("a string of {n} bytes, {} left", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// A UTF-8 string (lossily decoded).
    pub fn string(&mut self) -> TResult<String> {
        Ok(String::from_utf8_lossy(self.binary()?).into_owned())
    }

    /// The next field header of a struct after field `last`: `None` at the stop byte.
    pub fn field(&mut self, last: &mut i16) -> TResult<Option<(i16, u8)>> {
        let Some((delta, t)) = compact::field_header(self.byte()?) else {
            return Ok(None);
        };
        let id = if delta == 0 {
            let at = self.pos;
            i16::try_from(self.i64()?).map_err(|_| ThriftError {
                offset: at,
                what: "field id out of range".into(),
            })?
        } else {
            last.checked_add(i16::from(delta))
                .ok_or_else(|| self.err("field id out of range"))?
        };
        if !(1..=12).contains(&t) {
            return Err(self.err(format!("unknown field type {t}")));
        }
        *last = id;
        Ok(Some((id, t)))
    }

    /// A list or set header: element type and count (at most the bytes left).
    pub fn list(&mut self) -> TResult<(u8, usize)> {
        let b = self.byte()?;
        let t = b & 0x0f;
        let n = match b >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > self.remaining() as u64 {
            return Err(self.err(format!(
                "a list of {n} elements, {} bytes left",
                self.remaining()
            )));
        }
        Ok((t, n as usize))
    }

    /// Enters a struct or collection (nesting is capped).
    pub fn enter(&mut self) -> TResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        Ok(())
    }

    /// Leaves a struct or collection.
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips a value of type `t` (a field's; booleans of fields carry no bytes).
    pub fn skip_field(&mut self, t: u8) -> TResult<()> {
        match t {
            ty::BOOL_TRUE | ty::BOOL_FALSE => Ok(()),
            _ => self.skip(t),
        }
    }

    /// Skips a value of type `t` as it appears in a collection.
    pub fn skip(&mut self, t: u8) -> TResult<()> {
        match t {
            ty::BOOL_TRUE | ty::BOOL_FALSE | ty::I8 => self.byte().map(drop),
            ty::I16 | ty::I32 | ty::I64 => self.varint().map(drop),
            ty::DOUBLE => {
                if self.remaining() < 8 {
                    return Err(self.err("unexpected end of the footer"));
                }
                self.pos += 8;
                Ok(())
            }
            ty::BINARY => self.binary().map(drop),
            ty::LIST | ty::SET => {
                self.enter()?;
                let (et, n) = self.list()?;
                for _ in 0..n {
                    self.skip(et)?;
                }
                self.leave();
                Ok(())
            }
            ty::MAP => {
                self.enter()?;
                let n = self.varint()?;
                if n > self.remaining() as u64 {
                    return Err(self.err("a map longer than the bytes left"));
                }
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip(kv >> 4)?;
                        self.skip(kv & 0x0f)?;
                    }
                }
                self.leave();
                Ok(())
            }
            ty::STRUCT => {
                self.enter()?;
                let mut last = 0;
                while let Some((_, t)) = self.field(&mut last)? {
                    self.skip_field(t)?;
                }
                self.leave();
                Ok(())
            }
            _ => Err(self.err(format!("unknown type {t}"))),
        }
    }
}

/// One field of a struct as it was read: its id, type and the bytes of its value.
#[derive(Clone, Debug)]
pub struct RawField {
    /// Field id.
    pub id: i16,
    /// Compact type id (1/2 for a boolean field carry its value).
    pub ty: u8,
    /// The value's bytes, in the buffer the struct was read from (empty for booleans).
    pub value: Range<usize>,
}

/// Reads the fields of a struct (after its opening, up to and including the stop byte) without
/// interpreting them.
pub fn raw_fields(r: &mut Reader<'_>) -> TResult<Vec<RawField>> {
    r.enter()?;
    let mut out = Vec::new();
    let mut last = 0;
    while let Some((id, t)) = r.field(&mut last)? {
        let start = r.pos();
        r.skip_field(t)?;
        out.push(RawField {
            id,
            ty: t,
            value: start..r.pos(),
        });
    }
    r.leave();
    Ok(out)
}

/// A replacement field value for [`encode_struct`].
#[derive(Clone, Copy, Debug)]
pub enum NewValue {
    /// An i32.
    I32(i32),
    /// An i64.
    I64(i64),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_header(out: &mut Vec<u8>, last: i16, id: i16, t: u8) {
    let delta = i32::from(id) - i32::from(last);
    if (1..=15).contains(&delta) {
        out.push((delta as u8) << 4 | t);
    } else {
        out.push(t);
        put_varint(out, zigzag_encode(i64::from(id)));
    }
}

/// Re-encodes a struct whose fields are `fields` (values in `src`), with the fields of
/// `replace` set to new values (added when absent), in ascending id order, ending with the stop
/// byte. Values other than the replaced ones are copied byte for byte.
pub fn encode_struct(src: &[u8], fields: &[RawField], replace: &[(i16, NewValue)]) -> Vec<u8> {
    enum V<'a> {
        Raw(u8, &'a [u8]),
        New(NewValue),
    }
    let mut all: Vec<(i16, V<'_>)> = fields
        .iter()
        .filter(|f| !replace.iter().any(|(id, _)| *id == f.id))
        .map(|f| (f.id, V::Raw(f.ty, &src[f.value.clone()])))
        .collect();
    all.extend(replace.iter().map(|&(id, v)| (id, V::New(v))));
    all.sort_by_key(|(id, _)| *id);
    let mut out = Vec::new();
    let mut last = 0i16;
    for (id, v) in all {
        match v {
            V::Raw(t, bytes) => {
                put_header(&mut out, last, id, t);
                out.extend_from_slice(bytes);
            }
            V::New(NewValue::I32(x)) => {
                put_header(&mut out, last, id, ty::I32);
                put_varint(&mut out, zigzag_encode(i64::from(x)));
            }
            V::New(NewValue::I64(x)) => {
                put_header(&mut out, last, id, ty::I64);
                put_varint(&mut out, zigzag_encode(x));
            }
        }
        last = id;
    }
    out.push(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lying_counts_and_deep_nesting_are_errors() {
        // A list claiming 2^62 elements; a map of bool -> bool claiming 2^64-1 entries.
        assert!(Reader::new(&[0xf9, 0xff, 0xff, 0xff, 0xff, 0x3f])
            .skip(ty::LIST)
            .is_err());
        let m = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x11,
        ];
        assert!(Reader::new(&m).skip(ty::MAP).is_err());
        let deep = vec![0x1c; 10_000];
        let e = Reader::new(&deep).skip(ty::STRUCT).unwrap_err();
        assert!(e.what.contains("deeply"), "{e:?}");
    }

    #[test]
    fn replacing_fields_reencodes_the_headers() {
        // struct { 1: i32 = 7, 3: bool = true, 20: binary "ab" }
        let src = [0x15, 0x0e, 0x21, 0x08, 0x28, 0x02, b'a', b'b', 0x00];
        let mut r = Reader::new(&src);
        let f = raw_fields(&mut r).unwrap();
        assert_eq!(f.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 3, 20]);
        let out = encode_struct(&src, &f, &[(14, NewValue::I64(-1)), (1, NewValue::I32(9))]);
        let mut r = Reader::new(&out);
        let g = raw_fields(&mut r).unwrap();
        assert_eq!(g.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 3, 14, 20]);
        assert_eq!(Reader::new(&out[g[0].value.clone()]).i32().unwrap(), 9);
        assert_eq!(Reader::new(&out[g[2].value.clone()]).i64().unwrap(), -1);
        assert_eq!(g[1].ty, ty::BOOL_TRUE);
        assert_eq!(&out[g[3].value.clone()], &[0x02, b'a', b'b']);
        assert_eq!(r.remaining(), 0);
    }
}
