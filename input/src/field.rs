//! Per-field key parsers ([`FieldParser`]): what turns a line or a CSV field into the bytes (or
//! the integer) that are hashed. Formats use their own (decimal integers, text flow keys), typed
//! keys use [`FieldParser::typed`], and a caller can plug in its own through
//! [`InputOptions::field_parser`](crate::InputOptions).

use std::fmt;
use std::sync::Arc;

use bloomlanes_core::KeyType;

use crate::pcap::{self, IPV6_TUPLE_LEN};

/// What a [`FieldParser`] made of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// The key is the field's bytes as they are.
    Field,
    /// The key is the bytes the parser wrote into its output buffer.
    Written,
    /// The key is this integer (hashed as its 8 little-endian bytes).
    U64(u64),
    /// No key in this field (e.g. an empty line).
    Skip,
}

/// The function type of a [`FieldParser`]: the field's bytes in, the key out (its bytes written
/// into the buffer when it answers [`Parsed::Written`]; the buffer arrives empty), or why the
/// field is not a key.
pub type FieldFn = dyn Fn(&[u8], &mut Vec<u8>) -> Result<Parsed, String> + Send + Sync;

/// A per-field key parser plugged into the pipeline: each line (or CSV field) goes through it and
/// what it returns is hashed. Formats use their own (decimal integers, text flow keys); a typed
/// key reader sets one through [`InputOptions::field_parser`](crate::InputOptions).
#[derive(Clone)]
pub struct FieldParser {
    name: &'static str,
    f: Arc<FieldFn>,
    /// The key type it parses (typed keys are shown in their type's text form).
    key_type: Option<KeyType>,
}

impl FieldParser {
    /// A parser named `name` (for messages).
    pub fn new(
        name: &'static str,
        f: impl Fn(&[u8], &mut Vec<u8>) -> Result<Parsed, String> + Send + Sync + 'static,
    ) -> FieldParser {
        FieldParser {
            name,
            f: Arc::new(f),
            key_type: None,
        }
    }

    /// Keys of type `key_type` written as text (see [`crate::key_text`]): hashed as the type's
    /// Parquet plain encoding, shown in the type's canonical text form; a blank field has no
    /// key.
    pub fn typed(key_type: KeyType) -> FieldParser {
        let mut p = FieldParser::new("typed", move |f, out| {
            if f.iter().all(u8::is_ascii_whitespace) {
                return Ok(Parsed::Skip);
            }
            crate::key_text::parse_into(key_type, f, out).map_err(|e| e.to_string())?;
            Ok(Parsed::Written)
        });
        p.key_type = Some(key_type);
        p
    }

    /// The key type of a [`FieldParser::typed`] parser.
    pub fn key_type(&self) -> Option<KeyType> {
        self.key_type
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Parses one field.
    pub fn parse(&self, field: &[u8], out: &mut Vec<u8>) -> Result<Parsed, String> {
        (self.f)(field, out)
    }

    /// Unsigned integers, decimal or `0x` hex, `_` separators allowed, surrounding blanks
    /// ignored; an empty field has no key.
    pub fn decimal() -> FieldParser {
        FieldParser::new("decimal", |f, _| {
            parse_decimal(f).map_err(|e| {
                let t = f.trim_ascii();
                let negative = t.len() > 1
                    && t[0] == b'-'
                    && t[1..].iter().all(|c| c.is_ascii_digit() || *c == b'_');
                if negative {
                    format!("{e} (a negative number: give --key-type i64)")
                } else {
                    e
                }
            })
        })
    }

    /// Flow keys as text (`10.0.0.1:1234>10.0.0.2:80/tcp`, see
    /// [`pcap::parse_flow_text`]); an empty field has no key.
    pub fn flow_text() -> FieldParser {
        FieldParser::new("flow", |f, out| {
            if f.iter().all(u8::is_ascii_whitespace) {
                return Ok(Parsed::Skip);
            }
            let mut key = [0u8; IPV6_TUPLE_LEN];
            let n = pcap::parse_flow_text(f, &mut key)
                .map_err(|e| format!("{} is not a flow key: {e}", shorten(f)))?;
            out.extend_from_slice(&key[..n]);
            Ok(Parsed::Written)
        })
    }
}

impl fmt::Debug for FieldParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FieldParser").field(&self.name).finish()
    }
}

/// At most this many bytes of an offending field are echoed in a message.
pub const ECHO_BYTES: usize = 64;

/// A field for an error message: quoted, cut to [`ECHO_BYTES`] bytes with its length said.
pub fn shorten(field: &[u8]) -> String {
    if field.len() <= ECHO_BYTES {
        format!("{:?}", String::from_utf8_lossy(field))
    } else {
        let mut cut = ECHO_BYTES;
        while cut > 0 && (field[cut] & 0xc0) == 0x80 {
            cut -= 1; // do not split a UTF-8 sequence
        }
        format!(
            "{:?}… ({} bytes)",
            String::from_utf8_lossy(&field[..cut]),
            field.len()
        )
    }
}

fn parse_decimal(field: &[u8]) -> Result<Parsed, String> {
    let t = field.trim_ascii();
    if t.is_empty() {
        return Ok(Parsed::Skip);
    }
    let bad = || format!("{} is not an unsigned 64-bit integer", shorten(t));
    let (digits, radix) = match t {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16u64),
        _ => (t, 10u64),
    };
    let mut v: u64 = 0;
    let mut any = false;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'f' if radix == 16 => u64::from(c - b'a' + 10),
            b'A'..=b'F' if radix == 16 => u64::from(c - b'A' + 10),
            b'_' => continue,
            _ => return Err(bad()),
        };
        any = true;
        v = v
            .checked_mul(radix)
            .and_then(|v| v.checked_add(d))
            .ok_or_else(bad)?;
    }
    if !any {
        return Err(bad());
    }
    Ok(Parsed::U64(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_fields() {
        assert_eq!(parse_decimal(b" 42\t"), Ok(Parsed::U64(42)));
        assert_eq!(parse_decimal(b"0xff_ff"), Ok(Parsed::U64(0xffff)));
        assert_eq!(parse_decimal(b"1_000"), Ok(Parsed::U64(1000)));
        assert_eq!(parse_decimal(b""), Ok(Parsed::Skip));
        assert!(parse_decimal(b"18446744073709551616").is_err());
        assert!(parse_decimal(b"0x").is_err());
        assert!(parse_decimal(b"-1").is_err());
        let long = vec![b'7'; 1000];
        let mut l = long.clone();
        l.push(b'x');
        let e = parse_decimal(&l).unwrap_err();
        assert!(e.len() < 200 && e.contains("(1001 bytes)"), "{e}");
    }
}
