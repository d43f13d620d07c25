//! Owned batches of keys: [`KeySet`] (what the readers produce and the backends take as a
//! borrowed [`Keys`]) and its [`KeySetBuilder`].

use bloomlanes_core::{KeyType, Keys, Physical, Records, Strings};

use crate::key_text;
use crate::pcap;

/// What the keys of a [`KeySet`] are, for printing them back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Integers.
    Integers,
    /// Byte strings (printed as text, invalid UTF-8 replaced).
    Text,
    /// Packet 5-tuples (printed as `src:port -> dst:port proto N`).
    Tuples,
}

#[derive(Clone, Debug)]
enum Repr {
    U64(Vec<u64>),
    Records { data: Vec<u8>, width: usize },
    Strings { data: Vec<u8>, offsets: Vec<u64> },
}

/// An owned batch of keys, handed to backends as a borrowed [`Keys`].
#[derive(Clone, Debug)]
pub struct KeySet {
    repr: Repr,
    kind: KeyKind,
    key_type: KeyType,
}

impl KeySet {
    /// Integer keys.
    pub fn from_u64(keys: Vec<u64>) -> KeySet {
        KeySet {
            repr: Repr::U64(keys),
            kind: KeyKind::Integers,
            key_type: KeyType::U64,
        }
    }

    /// Byte-string keys.
    pub fn from_strings<I, S>(keys: I) -> KeySet
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let mut b = KeySetBuilder::default();
        for k in keys {
            b.push_bytes(k.as_ref(), KeyKind::Text);
        }
        b.finish().with_key_type(KeyType::Bytes)
    }

    /// The same keys, recorded as being of type `key_type` (the bytes are not changed).
    pub fn with_key_type(mut self, key_type: KeyType) -> KeySet {
        self.key_type = key_type;
        self
    }

    /// What the keys are ([`KeyType::Any`] when not known): recorded in a filter built from
    /// them, and checked against a filter queried with them.
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::U64(k) => k.len(),
            Repr::Records { data, width } => data.len() / width,
            Repr::Strings { offsets, .. } => offsets.len() - 1,
        }
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the keys are.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The keys, borrowed in the form the backends take.
    pub fn keys(&self) -> Keys<'_> {
        match &self.repr {
            Repr::U64(k) => Keys::U64(k),
            Repr::Records { data, width } => {
                Keys::Records(Records::new(data, *width).expect("records are whole"))
            }
            Repr::Strings { data, offsets } => {
                Keys::Strings(Strings::new(data, offsets).expect("offsets are valid"))
            }
        }
    }

    /// Key `i` written for people (its number, text or 5-tuple), in the text form of its key
    /// type (see [`key_text::display`]).
    pub fn display(&self, i: usize) -> String {
        if !matches!(self.key_type, KeyType::Any | KeyType::Bytes) {
            return key_text::display(self.key_type, &self.key_bytes(i));
        }
        match (&self.repr, self.kind) {
            (Repr::U64(k), _) => k[i].to_string(),
            (_, KeyKind::Tuples) => pcap::format_tuple(self.bytes(i)),
            _ => String::from_utf8_lossy(self.bytes(i)).into_owned(),
        }
    }

    /// The bytes that are hashed for key `i` (an integer key: its 8 little-endian bytes).
    pub fn key_bytes(&self, i: usize) -> Vec<u8> {
        match &self.repr {
            Repr::U64(k) => k[i].to_le_bytes().to_vec(),
            _ => self.bytes(i).to_vec(),
        }
    }

    /// Key `i`'s bytes, without re-checking the offsets (they were valid when the set was
    /// made): constant time, so that listing every key is linear.
    fn bytes(&self, i: usize) -> &[u8] {
        match &self.repr {
            Repr::Records { data, width } => &data[i * width..(i + 1) * width],
            Repr::Strings { data, offsets } => &data[offsets[i] as usize..offsets[i + 1] as usize],
            Repr::U64(_) => &[],
        }
    }
}

/// Accumulates keys of possibly several inputs into one [`KeySet`].
#[derive(Debug, Default)]
pub struct KeySetBuilder {
    ints: Vec<u64>,
    data: Vec<u8>,
    offsets: Vec<u64>,
    kind: Option<KeyKind>,
}

impl KeySetBuilder {
    fn note(&mut self, kind: KeyKind) {
        self.kind = match self.kind {
            None => Some(kind),
            Some(k) if k == kind => Some(k),
            Some(_) => Some(KeyKind::Text),
        };
    }

    /// Adds an integer key.
    pub fn push_u64(&mut self, k: u64) {
        self.note(KeyKind::Integers);
        self.ints.push(k);
    }

    /// Makes room for `n` more integer keys.
    pub fn reserve_u64(&mut self, n: usize) {
        self.ints.reserve(n);
    }

    /// Adds a key of type `key_type` given as the bytes that are hashed (8-byte integers and
    /// doubles are kept as integers, the fastest form for the backends).
    pub fn push_typed(&mut self, k: &[u8], key_type: KeyType) {
        match (key_type.physical(), <[u8; 8]>::try_from(k)) {
            (Physical::Int64 | Physical::Double, Ok(b)) => self.push_u64(u64::from_le_bytes(b)),
            (Physical::ByteArray | Physical::Unknown, _) if key_type != KeyType::Flow => {
                self.push_bytes(k, KeyKind::Text)
            }
            (_, _) if key_type == KeyType::Flow => self.push_bytes(k, KeyKind::Tuples),
            _ => self.push_bytes(k, KeyKind::Integers),
        }
    }

    /// Adds a byte-string key.
    pub fn push_bytes(&mut self, k: &[u8], kind: KeyKind) {
        self.note(kind);
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.data.extend_from_slice(k);
        self.offsets.push(self.data.len() as u64);
    }

    /// Appends the keys of `other` after these.
    pub fn append(&mut self, other: KeySetBuilder) {
        if let Some(kind) = other.kind {
            self.note(kind);
        }
        self.ints.extend_from_slice(&other.ints);
        if other.offsets.len() > 1 {
            if self.offsets.is_empty() {
                self.offsets.push(0);
            }
            let base = self.data.len() as u64;
            self.data.extend_from_slice(&other.data);
            self.offsets
                .extend(other.offsets[1..].iter().map(|o| o + base));
        }
    }

    /// Number of keys so far.
    pub fn len(&self) -> usize {
        self.ints.len() + self.offsets.len().saturating_sub(1)
    }

    /// Whether no key was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key set (of key type [`KeyType::Any`]: see [`KeySet::with_key_type`]): integers stay integers unless mixed with byte strings (then each becomes its
    /// 8 little-endian bytes, which hash the same); byte strings of one width become records.
    pub fn finish(mut self) -> KeySet {
        let kind = self.kind.unwrap_or(KeyKind::Integers);
        if self.offsets.is_empty() {
            return KeySet {
                repr: Repr::U64(self.ints),
                kind,
                key_type: KeyType::Any,
            };
        }
        for k in std::mem::take(&mut self.ints) {
            self.data.extend_from_slice(&k.to_le_bytes());
            self.offsets.push(self.data.len() as u64);
        }
        let width = self.offsets[1] - self.offsets[0];
        let uniform = width > 0 && self.offsets.windows(2).all(|w| w[1] - w[0] == width);
        let repr = if uniform {
            Repr::Records {
                data: self.data,
                width: width as usize,
            }
        } else {
            Repr::Strings {
                data: self.data,
                offsets: self.offsets,
            }
        };
        KeySet {
            repr,
            kind,
            key_type: KeyType::Any,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_records_and_strings() {
        let mut b = KeySetBuilder::default();
        b.push_bytes(b"abc", KeyKind::Text);
        b.push_bytes(b"def", KeyKind::Text);
        let k = b.finish();
        assert!(matches!(k.keys(), Keys::Records(_)));
        assert_eq!(k.display(1), "def");
        let k = KeySet::from_strings(["a", "bc"]);
        assert!(matches!(k.keys(), Keys::Strings(_)));
        assert_eq!(k.len(), 2);
    }

    #[test]
    fn mixed_ints_hash_like_bytes() {
        let mut b = KeySetBuilder::default();
        b.push_bytes(b"x", KeyKind::Text);
        b.push_u64(42);
        let k = b.finish();
        assert_eq!(
            k.keys().hash(1, 7),
            Keys::U64(&[42]).hash(0, 7),
            "an integer key hashes as its little-endian bytes"
        );
    }
}
