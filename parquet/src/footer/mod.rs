//! The footer of a `.parquet` file (its Thrift `FileMetaData`), read by this crate's own bounded
//! reader: the schema's leaf columns with the key type of their values, and per row group the
//! column chunks' byte ranges and bloom-filter locations, each offset and length checked
//! against the file's size. A footer that passes [`Footer::parse`] points only inside its file,
//! so what is read from it (bloom filters here, pages by the `parquet` crate) is bounded by the
//! file; one that does not is an error naming the row group, the column and the field.

use std::ops::Range;

use bloomlanes_core::KeyType;

use crate::thrift::{self, raw_fields, ty, NewValue, Reader, ThriftError};

mod chunks;
mod schema;

use chunks::parse_row_group;
use schema::{leaf_columns, parse_schema};

/// Parquet physical types (the `Type` enum of the format).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysicalType {
    /// BOOLEAN.
    Boolean,
    /// INT32.
    Int32,
    /// INT64.
    Int64,
    /// INT96 (legacy timestamps).
    Int96,
    /// FLOAT.
    Float,
    /// DOUBLE.
    Double,
    /// BYTE_ARRAY.
    ByteArray,
    /// FIXED_LEN_BYTE_ARRAY of this many bytes.
    FixedLenByteArray(i32),
}

impl std::fmt::Display for PhysicalType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PhysicalType::Boolean => f.write_str("BOOLEAN"),
            PhysicalType::Int32 => f.write_str("INT32"),
            PhysicalType::Int64 => f.write_str("INT64"),
            PhysicalType::Int96 => f.write_str("INT96"),
            PhysicalType::Float => f.write_str("FLOAT"),
            PhysicalType::Double => f.write_str("DOUBLE"),
            PhysicalType::ByteArray => f.write_str("BYTE_ARRAY"),
            PhysicalType::FixedLenByteArray(n) => write!(f, "FIXED_LEN_BYTE_ARRAY({n})"),
        }
    }
}

/// A leaf column of the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafColumn {
    /// The dotted path (`a.b.c`).
    pub path: String,
    /// The leaf's own name.
    pub name: String,
    /// Its physical type.
    pub physical: PhysicalType,
    /// The key type its values hash as (by physical type; DATE, TIMESTAMP and unsigned INT
    /// annotations name what the numbers mean); `None`: no bloom-filter key type
    /// (BOOLEAN, INT96).
    pub key_type: Option<KeyType>,
    /// A short description of its logical type, if any (e.g. `DATE`, `TIMESTAMP(MICROS)`).
    pub logical: Option<String>,
}

/// Where a column chunk's bloom filter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BloomLocation {
    /// Byte offset of its header in the file.
    pub offset: u64,
    /// Its length (header + bitset), when the writer recorded it.
    pub length: Option<u64>,
}

/// One column chunk of a row group.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// Index of its leaf column in [`Footer::columns`].
    pub column: usize,
    /// Number of values (nulls included).
    pub num_values: i64,
    /// The bytes of its pages (dictionary page first when there is one).
    pub pages: Range<u64>,
    /// Its bloom filter, if any.
    pub bloom: Option<BloomLocation>,
    /// The bytes of its `ColumnMetaData` struct within the footer (after the field header).
    meta_span: Range<usize>,
}

/// One row group.
#[derive(Clone, Debug)]
pub struct RowGroup {
    /// Number of rows.
    pub num_rows: i64,
    /// Its column chunks, one per leaf column, in schema order.
    pub chunks: Vec<Chunk>,
}

/// A parsed, checked footer.
#[derive(Clone, Debug)]
pub struct Footer {
    /// Size of the file.
    pub file_len: u64,
    /// Offset of the footer (`FileMetaData`) bytes; the data ends here.
    pub start: u64,
    /// The footer's bytes.
    pub bytes: Vec<u8>,
    /// The schema's leaf columns.
    pub columns: Vec<LeafColumn>,
    /// The row groups.
    pub row_groups: Vec<RowGroup>,
}

/// Why a file's footer is refused: at a byte offset of the file.
pub type FooterError = bloomlanes_core::ByteFault;

/// The tail of a Parquet file: footer length (4 bytes LE) and `PAR1`.
pub const TAIL_LEN: u64 = 8;

/// Where the footer is, from the file's length and its last 8 bytes: checked to lie between
/// the leading `PAR1` and the tail.
pub fn footer_range(file_len: u64, tail: &[u8; 8]) -> Result<Range<u64>, FooterError> {
    let at = |what: String| FooterError {
        offset: file_len.saturating_sub(TAIL_LEN),
        what,
    };
    if file_len < 12 {
        return Err(at(format!(
            "{file_len} bytes is too short for a Parquet file"
        )));
    }
    match &tail[4..] {
        b"PAR1" => {}
        b"PARE" => {
            return Err(at(
                "the footer is encrypted, which this tool does not read".into()
            ))
        }
        _ => {
            return Err(at(
                "no PAR1 magic at the end: not a Parquet file, or cut short".into(),
            ))
        }
    }
    let n = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if n == 0 || n > file_len - 12 {
        return Err(at(format!(
            "footer length {n} does not fit in the file ({file_len} bytes)"
        )));
    }
    let start = file_len - TAIL_LEN - n;
    Ok(start..file_len - TAIL_LEN)
}

struct Ctx<'a> {
    start: u64,
    r: Reader<'a>,
}

impl Ctx<'_> {
    fn fail(&self, e: ThriftError) -> FooterError {
        FooterError {
            offset: self.start + e.offset as u64,
            what: format!("malformed footer: {}", e.what),
        }
    }
    fn bad(&self, at: usize, what: String) -> FooterError {
        FooterError {
            offset: self.start + at as u64,
            what,
        }
    }
}

impl Footer {
    /// Parses and checks the footer `bytes`, which start at offset `start` of a file of
    /// `file_len` bytes.
    pub fn parse(bytes: Vec<u8>, start: u64, file_len: u64) -> Result<Footer, FooterError> {
        let (columns, row_groups) = {
            let mut c = Ctx {
                start,
                r: Reader::new(&bytes),
            };
            parse_file_meta(&mut c)?
        };
        Ok(Footer {
            file_len,
            start,
            bytes,
            columns,
            row_groups,
        })
    }

    /// The index of the leaf column named `name`: its dotted path, its leaf name when unique, or
    /// a 0-based index.
    pub fn find_column(&self, name: &str) -> Option<usize> {
        if let Some(i) = self.columns.iter().position(|c| c.path == name) {
            return Some(i);
        }
        let leaf: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns[i].name == name)
            .collect();
        if leaf.len() == 1 {
            return Some(leaf[0]);
        }
        name.parse::<usize>()
            .ok()
            .filter(|&i| i < self.columns.len())
    }

    /// The column paths, for messages.
    pub fn column_names(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The footer bytes with the bloom-filter fields of the given chunks set: `(row group,
    /// column, offset, length)`. Every other byte of every struct is kept.
    pub fn with_blooms(&self, blooms: &[(usize, usize, u64, u32)]) -> Vec<u8> {
        let mut edits: Vec<(Range<usize>, Vec<u8>)> = blooms
            .iter()
            .map(|&(g, c, offset, length)| {
                let span = self.row_groups[g].chunks[c].meta_span.clone();
                let mut r = Reader::new(&self.bytes[span.clone()]);
                let fields = raw_fields(&mut r).expect("checked when the footer was parsed");
                let new = thrift::encode_struct(
                    &self.bytes[span.clone()],
                    &fields,
                    &[
                        (14, NewValue::I64(offset as i64)),
                        (15, NewValue::I32(length as i32)),
                    ],
                );
                (span, new)
            })
            .collect();
        edits.sort_by_key(|(r, _)| r.start);
        let mut out = Vec::with_capacity(self.bytes.len() + 16 * edits.len());
        let mut at = 0;
        for (span, new) in edits {
            out.extend_from_slice(&self.bytes[at..span.start]);
            out.extend_from_slice(&new);
            at = span.end;
        }
        out.extend_from_slice(&self.bytes[at..]);
        out
    }
}

fn parse_file_meta(c: &mut Ctx<'_>) -> Result<(Vec<LeafColumn>, Vec<RowGroup>), FooterError> {
    let mut schema = Vec::new();
    let mut groups_at = None;
    let mut last = 0;
    c.r.enter().map_err(|e| c.fail(e))?;
    while let Some((id, t)) = c.r.field(&mut last).map_err(|e| c.fail(e))? {
        match (id, t) {
            (2, ty::LIST) => schema = parse_schema(c)?,
            (4, ty::LIST) => {
                // Row groups refer to the schema's columns: read them after it.
                groups_at = Some(c.r.pos());
                c.r.skip(ty::LIST).map_err(|e| c.fail(e))?;
            }
            (8, _) => {
                return Err(c.bad(
                    c.r.pos(),
                    "the file is encrypted (encryption_algorithm is set)".into(),
                ))
            }
            _ => c.r.skip_field(t).map_err(|e| c.fail(e))?,
        }
    }
    c.r.leave();
    let columns = leaf_columns(c, &schema)?;
    let Some(at) = groups_at else {
        return Ok((columns, Vec::new()));
    };
    let end = c.r.pos();
    c.r.seek(at);
    c.r.enter().map_err(|e| c.fail(e))?;
    let (et, n) = c.r.list().map_err(|e| c.fail(e))?;
    if et != ty::STRUCT {
        return Err(c.bad(at, "row_groups is not a list of structs".into()));
    }
    let mut groups = Vec::with_capacity(n);
    for g in 0..n {
        groups.push(parse_row_group(c, g, &columns)?);
    }
    c.r.leave();
    c.r.seek(end);
    Ok((columns, groups))
}

/// Reads a struct's fields, handing each to `f` (which must consume its value).
fn read_struct<'a>(
    c: &mut Ctx<'a>,
    mut f: impl FnMut(&mut Ctx<'a>, i16, u8) -> Result<(), FooterError>,
) -> Result<(), FooterError> {
    c.r.enter().map_err(|e| c.fail(e))?;
    let mut last = 0;
    while let Some((id, t)) = c.r.field(&mut last).map_err(|e| c.fail(e))? {
        f(c, id, t)?;
    }
    c.r.leave();
    Ok(())
}
