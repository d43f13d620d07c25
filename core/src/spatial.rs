//! The spatial filter's class table: what each class is called and how many keys went into it,
//! stored in the kind metadata of a spatial filter file (no allocator; see `docs/FORMAT.md` §9).
//!
//! ```text
//! byte 0: cell bits c (4, 8 or 16); 2..4: classes n (u16, 1 ≤ n ≤ 2^c − 1);
//! 4..8: name bytes N (u32, at most 256 × n); every other byte of the first 64 is zero
//! 64 .. 64 + 8n:            keys inserted per class (u64), class 1 first
//! 64 + 8n .. 64 + 8n + N:   the names, class 1 first, each a length byte ℓ (1 ≤ ℓ ≤ 255)
//!                           and ℓ bytes of UTF-8 without control characters or commas;
//!                           no two names equal
//! then zero bytes up to a multiple of 64
//! ```
//!
//! The insert and lookup of a spatial filter are the cell algebra's ([`crate::cell`]):
//! [`CellUpdate::Max`](crate::cell::CellUpdate::Max) of the key's class on its cells, and
//! [`CellReduce::Min`](crate::cell::CellReduce::Min) over them.

#[cfg(feature = "alloc")]
use alloc::collections::BTreeSet;

use crate::format::FormatError;
use crate::kind_meta::META_LEN;

/// The longest class name, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 255;

/// Bytes of the class table (per-class key counts and names) after the first 64 metadata bytes.
pub const fn table_len(classes: u16, name_bytes: u32) -> u64 {
    8 * classes as u64 + name_bytes as u64
}

/// Why a class name cannot be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_NAME_BYTES`].
    TooLong,
    /// The name holds a control character or a comma (commas separate names on the command line).
    BadCharacter,
    /// The name begins or ends with white space ("deny " would show as a second "deny").
    Padded,
}

messages!(NameError {
    Empty => "a class name is empty",
    TooLong => "a class name is longer than 255 bytes",
    BadCharacter => "a class name holds a control character or a comma",
    Padded => "a class name begins or ends with white space",
});

/// Checks that `name` can name a new class. A file's class table is read with one rule less:
/// names written before writers refused white space around them ([`NameError::Padded`]) still
/// open.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.trim() != name {
        return Err(NameError::Padded);
    }
    check_stored_name(name)
}

/// [`check_name`] without the white-space rule: what a reader accepts.
pub fn check_stored_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong);
    }
    if name.chars().any(|c| c.is_control() || c == ',') {
        return Err(NameError::BadCharacter);
    }
    Ok(())
}

fn bad(what: &'static str) -> FormatError {
    FormatError::Metadata { what }
}

/// The names of a class table read so far, to find a repeated one. With an allocator a set:
/// 65535 names (up to 16 MiB of them, from any file) are checked in n log n, where a scan of
/// the names before each took minutes. Without one, that scan.
#[derive(Default)]
struct Seen<'a> {
    #[cfg(feature = "alloc")]
    names: BTreeSet<&'a str>,
    #[cfg(not(feature = "alloc"))]
    names: core::marker::PhantomData<&'a str>,
}

impl<'a> Seen<'a> {
    /// Whether `name`, the name of class `i + 1` of `table`, is one of the classes before it.
    #[cfg(feature = "alloc")]
    fn repeats(&mut self, _: &ClassTable<'a>, _: u16, name: &'a str) -> Result<bool, FormatError> {
        Ok(!self.names.insert(name))
    }

    /// Whether `name`, the name of class `i + 1` of `table`, is one of the classes before it.
    #[cfg(not(feature = "alloc"))]
    fn repeats(
        &mut self,
        table: &ClassTable<'a>,
        i: u16,
        name: &'a str,
    ) -> Result<bool, FormatError> {
        let mut at = 0usize;
        for _ in 0..i {
            if table.name_at(&mut at)? == name {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A checked view of a spatial filter's class table inside its kind metadata.
#[derive(Clone, Copy, Debug)]
pub struct ClassTable<'a> {
    keys: &'a [u8],
    names: &'a [u8],
    classes: u16,
}

impl<'a> ClassTable<'a> {
    /// Reads and checks the class table of the kind metadata `meta` (the whole metadata of a
    /// spatial filter, first 64 bytes included): lengths, names, uniqueness.
    pub fn parse(meta: &'a [u8]) -> Result<ClassTable<'a>, FormatError> {
        if meta.len() < META_LEN {
            return Err(bad("kind metadata shorter than 64 bytes"));
        }
        let classes = u16::from_le_bytes([meta[2], meta[3]]);
        let name_bytes = u32::from_le_bytes([meta[4], meta[5], meta[6], meta[7]]);
        if classes == 0 || u64::from(name_bytes) > 256 * u64::from(classes) {
            return Err(bad("spatial class count or name length out of range"));
        }
        let end = META_LEN as u64 + table_len(classes, name_bytes);
        if end > meta.len() as u64 {
            return Err(bad("the class table runs past the kind metadata"));
        }
        let keys_end = META_LEN + 8 * usize::from(classes);
        let table = ClassTable {
            keys: &meta[META_LEN..keys_end],
            names: &meta[keys_end..end as usize],
            classes,
        };
        let mut at = 0usize;
        let mut seen = Seen::default();
        for i in 0..classes {
            let name = table.name_at(&mut at)?;
            check_stored_name(name)
                .map_err(|_| bad("a class name is empty or holds a bad character"))?;
            if seen.repeats(&table, i, name)? {
                return Err(bad("two classes share a name"));
            }
        }
        if at != table.names.len() {
            return Err(bad("class names do not fill their stated length"));
        }
        Ok(table)
    }

    /// The name that starts at byte `*at` of the names; moves `*at` past it.
    fn name_at(&self, at: &mut usize) -> Result<&'a str, FormatError> {
        let len = usize::from(*self.names.get(*at).ok_or(bad("class names cut short"))?);
        let bytes = self
            .names
            .get(*at + 1..*at + 1 + len)
            .ok_or(bad("class names cut short"))?;
        *at += 1 + len;
        core::str::from_utf8(bytes).map_err(|_| bad("a class name is not UTF-8"))
    }

    /// The number of classes `n`.
    pub fn classes(&self) -> u16 {
        self.classes
    }

    /// Keys inserted with class `class` (1-based), or `None` past the last class.
    pub fn keys(&self, class: u16) -> Option<u64> {
        let i = usize::from(class.checked_sub(1)?);
        let b = self.keys.get(8 * i..8 * i + 8)?;
        Some(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// The names, class 1 first.
    pub fn names(&self) -> impl Iterator<Item = &'a str> + 'a {
        let table = *self;
        let mut at = 0usize;
        (0..self.classes).map(move |_| table.name_at(&mut at).expect("checked by parse"))
    }
}
