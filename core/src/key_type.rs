//! What a filter's keys are: recorded in the file header so that a query with keys of another
//! type is refused (or warned about) instead of silently answering "absent".
//!
//! Every key type is hashed as the bytes of its Parquet plain encoding (see [`KeyType::physical`]),
//! so a filter interoperates with any Parquet writer for a column of that type.

use core::fmt;

/// The type of a filter's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum KeyType {
    /// Not recorded (files of format version 1, caller-hashed filters): nothing can be checked.
    #[default]
    Any,
    /// Byte strings or UTF-8 text (Parquet `BYTE_ARRAY`): hashed as their bytes.
    Bytes,
    /// Unsigned 64-bit integers (Parquet `INT64`, `UINT_64`): 8 little-endian bytes.
    U64,
    /// Signed 64-bit integers (Parquet `INT64`): 8 little-endian bytes (two's complement).
    I64,
    /// Unsigned 32-bit integers (Parquet `INT32`, `UINT_32`): 4 little-endian bytes.
    U32,
    /// Signed 32-bit integers (Parquet `INT32`): 4 little-endian bytes.
    I32,
    /// IEEE 754 single precision (Parquet `FLOAT`): the 4 little-endian bytes of its bits.
    F32,
    /// IEEE 754 double precision (Parquet `DOUBLE`): the 8 little-endian bytes of its bits.
    F64,
    /// Calendar dates as days since 1970-01-01 (Parquet `DATE`, physical `INT32`).
    Date32,
    /// Instants as milliseconds since the Unix epoch (Parquet `TIMESTAMP(MILLIS)`, `INT64`).
    TimestampMillis,
    /// Instants as microseconds since the Unix epoch (Parquet `TIMESTAMP(MICROS)`, `INT64`).
    TimestampMicros,
    /// Instants as nanoseconds since the Unix epoch (Parquet `TIMESTAMP(NANOS)`, `INT64`).
    TimestampNanos,
    /// Fixed-length byte strings of this many bytes (Parquet `FIXED_LEN_BYTE_ARRAY`, e.g. 16 for
    /// a UUID).
    FixedBytes(u16),
    /// Packet flow 5-tuples: 13 bytes for IPv4, 37 for IPv6 (see the host's packet reader).
    Flow,
    /// IP addresses as a packet header carries them, in network byte order: 4 bytes for IPv4,
    /// 16 for IPv6 (an IPv4-mapped IPv6 address stays 16 bytes). Classifies packets by their
    /// source or destination address.
    Ip,
}

/// How the bytes of a key type look: what decides whether two key types hash alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Physical {
    /// Variable-length bytes.
    ByteArray,
    /// 4 bytes, an integer.
    Int32,
    /// 8 bytes, an integer.
    Int64,
    /// 4 bytes, a float.
    Float,
    /// 8 bytes, a double.
    Double,
    /// `n` bytes.
    FixedLenByteArray(u16),
    /// Unknown.
    Unknown,
}

/// How a query's key type relates to a filter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMatch {
    /// The same type: answers are exact.
    Same,
    /// One side is not recorded ([`KeyType::Any`]): nothing can be checked.
    Unchecked,
    /// Different types with the same byte form (e.g. `u64` and `i64`): the bytes are compared as
    /// they are, which is right only if the values mean the same thing; worth a warning.
    SameBytes,
    /// Different byte forms: every present key would be reported absent. Must be refused.
    Mismatch,
}

/// A key type name that [`KeyType::from_str`](core::str::FromStr) does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownKeyType;

impl fmt::Display for UnknownKeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "unknown key type (expected bytes, u64, i64, u32, i32, f32, f64, date, \
             timestamp-ms, timestamp-us, timestamp-ns, fixed:N, flow, ip or any)",
        )
    }
}

impl core::error::Error for UnknownKeyType {}

impl KeyType {
    /// Every key type with a fixed name (fixed-length bytes shown with 16 bytes).
    pub const NAMED: [KeyType; 15] = [
        KeyType::Any,
        KeyType::Bytes,
        KeyType::U64,
        KeyType::I64,
        KeyType::U32,
        KeyType::I32,
        KeyType::F32,
        KeyType::F64,
        KeyType::Date32,
        KeyType::TimestampMillis,
        KeyType::TimestampMicros,
        KeyType::TimestampNanos,
        KeyType::FixedBytes(16),
        KeyType::Flow,
        KeyType::Ip,
    ];

    /// The code stored in the file header (byte 27); the width of [`KeyType::FixedBytes`] is
    /// stored beside it (see [`KeyType::width_field`]).
    pub const fn code(self) -> u8 {
        match self {
            KeyType::Any => 0,
            KeyType::Bytes => 1,
            KeyType::U64 => 2,
            KeyType::I64 => 3,
            KeyType::U32 => 4,
            KeyType::I32 => 5,
            KeyType::F32 => 6,
            KeyType::F64 => 7,
            KeyType::Date32 => 8,
            KeyType::TimestampMillis => 9,
            KeyType::TimestampMicros => 10,
            KeyType::TimestampNanos => 11,
            KeyType::FixedBytes(_) => 12,
            KeyType::Flow => 13,
            KeyType::Ip => 14,
        }
    }

    /// The width field stored in the header beside the code (bytes 28..30): the width of fixed
    /// bytes, else 0.
    pub const fn width_field(self) -> u16 {
        match self {
            KeyType::FixedBytes(n) => n,
            _ => 0,
        }
    }

    /// The key type for a header's code and width field; `None` for an unknown code, a fixed
    /// width of 0, or a width field set for a type that has none.
    pub const fn from_code(code: u8, width: u16) -> Option<KeyType> {
        let t = match code {
            0 => KeyType::Any,
            1 => KeyType::Bytes,
            2 => KeyType::U64,
            3 => KeyType::I64,
            4 => KeyType::U32,
            5 => KeyType::I32,
            6 => KeyType::F32,
            7 => KeyType::F64,
            8 => KeyType::Date32,
            9 => KeyType::TimestampMillis,
            10 => KeyType::TimestampMicros,
            11 => KeyType::TimestampNanos,
            12 if width > 0 => return Some(KeyType::FixedBytes(width)),
            13 => KeyType::Flow,
            14 => KeyType::Ip,
            _ => return None,
        };
        if width != 0 {
            return None;
        }
        Some(t)
    }

    /// The byte form of the keys.
    pub const fn physical(self) -> Physical {
        match self {
            KeyType::Any => Physical::Unknown,
            KeyType::Bytes | KeyType::Flow | KeyType::Ip => Physical::ByteArray,
            KeyType::U64
            | KeyType::I64
            | KeyType::TimestampMillis
            | KeyType::TimestampMicros
            | KeyType::TimestampNanos => Physical::Int64,
            KeyType::U32 | KeyType::I32 | KeyType::Date32 => Physical::Int32,
            KeyType::F32 => Physical::Float,
            KeyType::F64 => Physical::Double,
            KeyType::FixedBytes(n) => Physical::FixedLenByteArray(n),
        }
    }

    /// Bytes of one key when every key has the same width (4 or 8 for numbers, `n` for fixed
    /// bytes), else `None`.
    pub const fn fixed_width(self) -> Option<usize> {
        match self.physical() {
            Physical::Int32 | Physical::Float => Some(4),
            Physical::Int64 | Physical::Double => Some(8),
            Physical::FixedLenByteArray(n) => Some(n as usize),
            Physical::ByteArray | Physical::Unknown => None,
        }
    }

    /// How keys of type `query` relate to a filter of this key type.
    pub fn check_query(self, query: KeyType) -> KeyMatch {
        if self == query {
            KeyMatch::Same
        } else if self == KeyType::Any || query == KeyType::Any {
            KeyMatch::Unchecked
        } else if self.physical() == query.physical() {
            KeyMatch::SameBytes
        } else {
            KeyMatch::Mismatch
        }
    }

    /// The name used on the command line and in JSON, e.g. `"i64"`, `"fixed:16"`.
    pub fn name(self) -> KeyTypeName {
        KeyTypeName(self)
    }
}

/// The printable name of a [`KeyType`] (see [`KeyType::name`]).
#[derive(Clone, Copy, Debug)]
pub struct KeyTypeName(KeyType);

impl fmt::Display for KeyTypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.0 {
            KeyType::Any => "any",
            KeyType::Bytes => "bytes",
            KeyType::U64 => "u64",
            KeyType::I64 => "i64",
            KeyType::U32 => "u32",
            KeyType::I32 => "i32",
            KeyType::F32 => "f32",
            KeyType::F64 => "f64",
            KeyType::Date32 => "date",
            KeyType::TimestampMillis => "timestamp-ms",
            KeyType::TimestampMicros => "timestamp-us",
            KeyType::TimestampNanos => "timestamp-ns",
            KeyType::FixedBytes(n) => return write!(f, "fixed:{n}"),
            KeyType::Flow => "flow",
            KeyType::Ip => "ip",
        };
        f.write_str(s)
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.name().fmt(f)
    }
}

impl core::str::FromStr for KeyType {
    type Err = UnknownKeyType;
    /// Parses a name such as `"i64"`, `"date"`, `"fixed:16"` (also `"string"`/`"text"` for
    /// bytes, `"uuid"` for `fixed:16`, `"timestamp"` for microseconds).
    fn from_str(s: &str) -> Result<KeyType, UnknownKeyType> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("fixed:") {
            return match n.parse::<u16>() {
                Ok(n) if n > 0 => Ok(KeyType::FixedBytes(n)),
                _ => Err(UnknownKeyType),
            };
        }
        let named = [
            ("any", KeyType::Any),
            ("bytes", KeyType::Bytes),
            ("string", KeyType::Bytes),
            ("text", KeyType::Bytes),
            ("utf8", KeyType::Bytes),
            ("u64", KeyType::U64),
            ("uint64", KeyType::U64),
            ("i64", KeyType::I64),
            ("int64", KeyType::I64),
            ("u32", KeyType::U32),
            ("uint32", KeyType::U32),
            ("i32", KeyType::I32),
            ("int32", KeyType::I32),
            ("f32", KeyType::F32),
            ("float", KeyType::F32),
            ("f64", KeyType::F64),
            ("double", KeyType::F64),
            ("date", KeyType::Date32),
            ("date32", KeyType::Date32),
            ("timestamp-ms", KeyType::TimestampMillis),
            ("timestamp_ms", KeyType::TimestampMillis),
            ("timestamp", KeyType::TimestampMicros),
            ("timestamp-us", KeyType::TimestampMicros),
            ("timestamp_us", KeyType::TimestampMicros),
            ("timestamp-ns", KeyType::TimestampNanos),
            ("timestamp_ns", KeyType::TimestampNanos),
            ("uuid", KeyType::FixedBytes(16)),
            ("flow", KeyType::Flow),
            ("5-tuple", KeyType::Flow),
            ("tuple", KeyType::Flow),
            ("ip", KeyType::Ip),
            ("ipaddr", KeyType::Ip),
            ("inet", KeyType::Ip),
        ];
        named
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|&(_, t)| t)
            .ok_or(UnknownKeyType)
    }
}
