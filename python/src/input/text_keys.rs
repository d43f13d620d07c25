//! Keys that no numpy, Arrow or Python type carries (an `ip` address, a `flow` 5-tuple) come
//! from Python as text: a filter of those keys reads `str` keys (lists, Arrow strings) as that
//! text and parses them into the key's bytes, as `bloomlanes query` reads text as the filter's
//! recorded type. So `rules.classify(["10.0.0.1"])` asks for the address, not its characters.

use bloomlanes_core::KeyType;

use super::{Input, Owner, RawPart, RawValues, Values};
use crate::errors::Error;

/// Whether keys of type `t` are given as text in Python and parsed.
pub(crate) fn parsed_from_text(t: KeyType) -> bool {
    matches!(t, KeyType::Ip | KeyType::Flow)
}

impl<'py> Input<'py> {
    /// The keys, read as text, parsed as `to` (one run of strings of the keys' bytes; nulls
    /// kept): a key that does not parse is an error naming it and its index. Other inputs
    /// (not text, or `to` not parsed from text) are returned as they are.
    pub(crate) fn parse_text_as(self, to: KeyType) -> Result<Input<'py>, Error> {
        if !parsed_from_text(to) || self.key_type != KeyType::Bytes {
            return Ok(self);
        }
        let n = self.len();
        let mut data = Vec::new();
        let mut offsets: Vec<u64> = Vec::with_capacity(n + 1);
        offsets.push(0);
        let mut valid = vec![0xffu8; n.div_ceil(8)];
        let mut any_null = false;
        let mut at = 0usize;
        for part in self.parts()? {
            let m = part.values.len();
            for i in 0..m {
                if part.nulls.is_some_and(|v| !v.is_valid(i)) {
                    valid[at / 8] &= !(1 << (at % 8));
                    any_null = true;
                } else {
                    let text = text_at(&part.values, i).ok_or_else(|| {
                        Error::value(format!("key {at}: not text (the filter's keys are of type {to}, given as text)"))
                    })?;
                    bloomlanes_input::key_text::parse_into(to, text, &mut data).map_err(|e| {
                        Error::value(format!(
                            "key {at}: {e} (the filter's keys are of type {to})"
                        ))
                    })?;
                }
                offsets.push(data.len() as u64);
                at += 1;
            }
        }
        let mut out = Input::new(to);
        let raw = RawPart {
            values: RawValues::Str64(data.as_ptr(), offsets.as_ptr(), n),
            nulls: any_null.then_some((valid.as_ptr(), 0)),
        };
        // The buffers move into the owners: their heap pointers stay where they are.
        out.owners.push(Owner::Bytes(data));
        out.owners.push(Owner::Words64(offsets));
        out.owners.push(Owner::Bytes(valid));
        out.push(raw);
        Ok(out)
    }
}

/// The bytes of key `i` of `values` read as text: a string's bytes, or a fixed-width record's
/// without the NUL padding numpy's `S` arrays give short strings; `None` for other forms or
/// offsets out of range.
fn text_at<'a>(values: &Values<'a>, i: usize) -> Option<&'a [u8]> {
    let range = match *values {
        Values::Str32(_, o) => {
            usize::try_from(*o.get(i)?).ok()?..usize::try_from(*o.get(i + 1)?).ok()?
        }
        Values::Str64(_, o) => {
            usize::try_from(*o.get(i)?).ok()?..usize::try_from(*o.get(i + 1)?).ok()?
        }
        Values::Records(_, w) => i * w..(i + 1) * w,
        _ => return None,
    };
    match *values {
        Values::Str32(d, _) | Values::Str64(d, _) => d.get(range),
        Values::Records(d, _) => {
            let r = d.get(range)?;
            Some(&r[..r.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1)])
        }
        _ => None,
    }
}
