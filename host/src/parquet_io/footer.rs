//! The footer of a `.parquet` file (its Thrift `FileMetaData`), read by this crate's own bounded
//! reader: the schema's leaf columns with the key type of their values, and per row group the
//! column chunks' byte ranges and bloom-filter locations, each offset and length checked
//! against the file's size. A footer that passes [`Footer::parse`] points only inside its file,
//! so what is read from it (bloom filters here, pages by the `parquet` crate) is bounded by the
//! file; one that does not is an error naming the row group, the column and the field.

use std::ops::Range;

use bloomlanes_core::KeyType;

use super::thrift::{self, raw_fields, ty, NewValue, Reader, ThriftError};

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for FooterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte offset {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for FooterError {}

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

#[derive(Default)]
struct SchemaElement {
    physical: Option<i32>,
    type_length: Option<i32>,
    name: String,
    num_children: Option<i32>,
    converted: Option<i32>,
    logical: Option<Logical>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Logical {
    Date,
    Timestamp(u8),
    Int { bits: i8, signed: bool },
    Uuid,
    Decimal,
    String,
    Other(i16),
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

fn parse_schema(c: &mut Ctx<'_>) -> Result<Vec<SchemaElement>, FooterError> {
    let (et, n) = c.r.list().map_err(|e| c.fail(e))?;
    if et != ty::STRUCT {
        return Err(c.bad(c.r.pos(), "schema is not a list of structs".into()));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        c.r.enter().map_err(|e| c.fail(e))?;
        let mut e = SchemaElement::default();
        let mut last = 0;
        while let Some((id, t)) = c.r.field(&mut last).map_err(|x| c.fail(x))? {
            match (id, t) {
                (1, ty::I32) => e.physical = Some(c.r.i32().map_err(|x| c.fail(x))?),
                (2, ty::I32) => e.type_length = Some(c.r.i32().map_err(|x| c.fail(x))?),
                (4, ty::BINARY) => e.name = c.r.string().map_err(|x| c.fail(x))?,
                (5, ty::I32) => e.num_children = Some(c.r.i32().map_err(|x| c.fail(x))?),
                (6, ty::I32) => e.converted = Some(c.r.i32().map_err(|x| c.fail(x))?),
                (10, ty::STRUCT) => e.logical = Some(parse_logical(c)?),
                _ => c.r.skip_field(t).map_err(|x| c.fail(x))?,
            }
        }
        c.r.leave();
        out.push(e);
    }
    Ok(out)
}

fn parse_logical(c: &mut Ctx<'_>) -> Result<Logical, FooterError> {
    let mut found = Logical::Other(0);
    read_struct(c, |c, id, t| {
        if t != ty::STRUCT {
            return c.r.skip_field(t).map_err(|e| c.fail(e));
        }
        found = match id {
            8 => {
                let mut unit = 0u8;
                read_struct(c, |c, id, t| match (id, t) {
                    (2, ty::STRUCT) => read_struct(c, |c, id, t| {
                        if t == ty::STRUCT {
                            unit = u8::try_from(id).unwrap_or(0);
                        }
                        c.r.skip_field(t).map_err(|e| c.fail(e))
                    }),
                    _ => c.r.skip_field(t).map_err(|e| c.fail(e)),
                })?;
                return {
                    found = Logical::Timestamp(unit);
                    Ok(())
                };
            }
            10 => {
                let (mut bits, mut signed) = (0i8, true);
                read_struct(c, |c, id, t| {
                    match (id, t) {
                        (1, ty::I8) => bits = c.r.i8().map_err(|e| c.fail(e))?,
                        (2, ty::BOOL_TRUE) => signed = true,
                        (2, ty::BOOL_FALSE) => signed = false,
                        _ => c.r.skip_field(t).map_err(|e| c.fail(e))?,
                    }
                    Ok(())
                })?;
                found = Logical::Int { bits, signed };
                return Ok(());
            }
            1 => Logical::String,
            5 => Logical::Decimal,
            6 => Logical::Date,
            14 => Logical::Uuid,
            other => Logical::Other(other),
        };
        c.r.skip(ty::STRUCT).map_err(|e| c.fail(e))
    })?;
    Ok(found)
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

/// The key type of a column's values, as its bloom filter hashes them: by physical type, with
/// the logical type naming what the numbers mean (DATE, TIMESTAMP unit, unsigned integers).
fn key_type_of(
    physical: PhysicalType,
    converted: Option<i32>,
    logical: Option<Logical>,
) -> Option<KeyType> {
    Some(match physical {
        PhysicalType::Boolean | PhysicalType::Int96 => return None,
        PhysicalType::Int32 => match (logical, converted) {
            (Some(Logical::Date), _) | (_, Some(6)) => KeyType::Date32,
            (Some(Logical::Int { signed: false, .. }), _) | (_, Some(11..=13)) => KeyType::U32,
            _ => KeyType::I32,
        },
        PhysicalType::Int64 => match (logical, converted) {
            (Some(Logical::Timestamp(1)), _) | (None, Some(9)) => KeyType::TimestampMillis,
            (Some(Logical::Timestamp(2)), _) | (None, Some(10)) => KeyType::TimestampMicros,
            (Some(Logical::Timestamp(3)), _) => KeyType::TimestampNanos,
            (Some(Logical::Int { signed: false, .. }), _) | (_, Some(14)) => KeyType::U64,
            _ => KeyType::I64,
        },
        PhysicalType::Float => KeyType::F32,
        PhysicalType::Double => KeyType::F64,
        PhysicalType::ByteArray => KeyType::Bytes,
        PhysicalType::FixedLenByteArray(n) => KeyType::FixedBytes(u16::try_from(n).ok()?),
    })
}

fn logical_name(converted: Option<i32>, logical: Option<Logical>) -> Option<String> {
    Some(match (logical, converted) {
        (Some(Logical::Date), _) => "DATE".into(),
        (Some(Logical::Timestamp(u)), _) => format!(
            "TIMESTAMP({})",
            ["?", "MILLIS", "MICROS", "NANOS"]
                .get(usize::from(u))
                .unwrap_or(&"?")
        ),
        (Some(Logical::Int { bits, signed }), _) => {
            format!(
                "INT({bits}, {})",
                if signed { "signed" } else { "unsigned" }
            )
        }
        (Some(Logical::Uuid), _) => "UUID".into(),
        (Some(Logical::Decimal), _) | (None, Some(5)) => "DECIMAL".into(),
        (Some(Logical::String), _) | (None, Some(0)) => "STRING".into(),
        (None, Some(c)) => format!("converted type {c}"),
        (Some(Logical::Other(id)), _) => format!("logical type {id}"),
        (None, None) => return None,
    })
}

fn leaf_columns(c: &Ctx<'_>, schema: &[SchemaElement]) -> Result<Vec<LeafColumn>, FooterError> {
    let bad = |what: &str| c.bad(0, format!("malformed schema: {what}"));
    let root = schema.first().ok_or_else(|| bad("no root element"))?;
    let mut out = Vec::new();
    // A stack of (path prefix, children left).
    let mut stack: Vec<(Vec<String>, i64)> =
        vec![(Vec::new(), i64::from(root.num_children.unwrap_or(0)))];
    let mut i = 1;
    while let Some(top) = stack.last_mut() {
        if top.1 <= 0 {
            stack.pop();
            continue;
        }
        top.1 -= 1;
        let prefix = top.0.clone();
        let e = schema
            .get(i)
            .ok_or_else(|| bad("num_children counts more elements than there are"))?;
        i += 1;
        let mut path = prefix;
        path.push(e.name.clone());
        match e.num_children {
            Some(n) if n > 0 => {
                if stack.len() > thrift::MAX_DEPTH as usize {
                    return Err(bad("nested too deeply"));
                }
                stack.push((path, i64::from(n)));
            }
            _ => {
                let physical = match (e.physical, e.type_length) {
                    (Some(0), _) => PhysicalType::Boolean,
                    (Some(1), _) => PhysicalType::Int32,
                    (Some(2), _) => PhysicalType::Int64,
                    (Some(3), _) => PhysicalType::Int96,
                    (Some(4), _) => PhysicalType::Float,
                    (Some(5), _) => PhysicalType::Double,
                    (Some(6), _) => PhysicalType::ByteArray,
                    (Some(7), Some(n)) if n > 0 => PhysicalType::FixedLenByteArray(n),
                    (Some(7), _) => {
                        return Err(bad(&format!(
                            "column {:?}: FIXED_LEN_BYTE_ARRAY without a positive type_length",
                            e.name
                        )))
                    }
                    (t, _) => {
                        return Err(bad(&format!(
                            "column {:?}: unknown physical type {t:?}",
                            e.name
                        )))
                    }
                };
                out.push(LeafColumn {
                    path: path.join("."),
                    name: e.name.clone(),
                    physical,
                    key_type: key_type_of(physical, e.converted, e.logical),
                    logical: logical_name(e.converted, e.logical),
                });
            }
        }
    }
    if i != schema.len() {
        return Err(bad("elements left over after the root's children"));
    }
    Ok(out)
}

fn parse_row_group(
    c: &mut Ctx<'_>,
    g: usize,
    columns: &[LeafColumn],
) -> Result<RowGroup, FooterError> {
    let mut num_rows = None;
    let mut chunks = Vec::new();
    c.r.enter().map_err(|e| c.fail(e))?;
    let mut last = 0;
    while let Some((id, t)) = c.r.field(&mut last).map_err(|e| c.fail(e))? {
        match (id, t) {
            (1, ty::LIST) => {
                let at = c.r.pos();
                let (et, n) = c.r.list().map_err(|e| c.fail(e))?;
                if et != ty::STRUCT || n != columns.len() {
                    return Err(c.bad(
                        at,
                        format!(
                            "row group {g} has {n} column chunks; the schema has {} leaf columns",
                            columns.len()
                        ),
                    ));
                }
                c.r.enter().map_err(|e| c.fail(e))?;
                for col in 0..n {
                    chunks.push(parse_chunk(c, g, col, columns)?);
                }
                c.r.leave();
            }
            (3, ty::I64) => num_rows = Some(c.r.i64().map_err(|e| c.fail(e))?),
            _ => c.r.skip_field(t).map_err(|e| c.fail(e))?,
        }
    }
    c.r.leave();
    let num_rows = num_rows.filter(|&n| n >= 0).ok_or_else(|| {
        c.bad(
            c.r.pos(),
            format!("row group {g}: num_rows missing or negative"),
        )
    })?;
    if chunks.len() != columns.len() {
        return Err(c.bad(c.r.pos(), format!("row group {g} lists no column chunks")));
    }
    Ok(RowGroup { num_rows, chunks })
}

#[derive(Default)]
struct ChunkFields {
    physical: Option<i32>,
    num_values: Option<i64>,
    compressed: Option<i64>,
    data_page: Option<i64>,
    dict_page: Option<i64>,
    index_page: Option<i64>,
    bloom_offset: Option<i64>,
    bloom_length: Option<i32>,
}

fn parse_chunk(
    c: &mut Ctx<'_>,
    g: usize,
    col: usize,
    columns: &[LeafColumn],
) -> Result<Chunk, FooterError> {
    let name = &columns[col].path;
    let whose = |what: &str| format!("row group {g}, column {name:?}: {what}");
    let mut meta = None;
    let mut indexes: Vec<(&str, Option<i64>, Option<i32>)> =
        vec![("offset index", None, None), ("column index", None, None)];
    let chunk_at = c.r.pos();
    c.r.enter().map_err(|e| c.fail(e))?;
    let mut last = 0;
    while let Some((id, t)) = c.r.field(&mut last).map_err(|e| c.fail(e))? {
        match (id, t) {
            (1, ty::BINARY) => {
                return Err(c.bad(
                    c.r.pos(),
                    whose(
                        "its data is in another file (file_path), which this tool does not follow",
                    ),
                ))
            }
            (3, ty::STRUCT) => {
                let start = c.r.pos();
                let mut f = ChunkFields::default();
                read_struct(c, |c, id, t| {
                    let v = |c: &mut Ctx<'_>| c.r.i64().map_err(|e| c.fail(e));
                    match (id, t) {
                        (1, ty::I32) => f.physical = Some(c.r.i32().map_err(|e| c.fail(e))?),
                        (5, ty::I64) => f.num_values = Some(v(c)?),
                        (7, ty::I64) => f.compressed = Some(v(c)?),
                        (9, ty::I64) => f.data_page = Some(v(c)?),
                        (10, ty::I64) => f.index_page = Some(v(c)?),
                        (11, ty::I64) => f.dict_page = Some(v(c)?),
                        (14, ty::I64) => f.bloom_offset = Some(v(c)?),
                        (15, ty::I32) => f.bloom_length = Some(c.r.i32().map_err(|e| c.fail(e))?),
                        _ => c.r.skip_field(t).map_err(|e| c.fail(e))?,
                    }
                    Ok(())
                })?;
                meta = Some((f, start..c.r.pos()));
            }
            (4, ty::I64) => indexes[0].1 = Some(c.r.i64().map_err(|e| c.fail(e))?),
            (5, ty::I32) => indexes[0].2 = Some(c.r.i32().map_err(|e| c.fail(e))?),
            (6, ty::I64) => indexes[1].1 = Some(c.r.i64().map_err(|e| c.fail(e))?),
            (7, ty::I32) => indexes[1].2 = Some(c.r.i32().map_err(|e| c.fail(e))?),
            (8 | 9, _) => {
                return Err(c.bad(
                    c.r.pos(),
                    whose("the column is encrypted, which this tool does not read"),
                ))
            }
            _ => c.r.skip_field(t).map_err(|e| c.fail(e))?,
        }
    }
    c.r.leave();
    let (f, meta_span) = meta.ok_or_else(|| c.bad(chunk_at, whose("no ColumnMetaData")))?;
    let data_end = c.start;
    let at = meta_span.start;
    let check_offset = |what: &str, v: i64| -> Result<u64, FooterError> {
        if v < 4 || v as u64 >= data_end {
            return Err(c.bad(
                at,
                whose(&format!("{what} {v} is outside the data (4 to {data_end})")),
            ));
        }
        Ok(v as u64)
    };
    let expected = match columns[col].physical {
        PhysicalType::Boolean => 0,
        PhysicalType::Int32 => 1,
        PhysicalType::Int64 => 2,
        PhysicalType::Int96 => 3,
        PhysicalType::Float => 4,
        PhysicalType::Double => 5,
        PhysicalType::ByteArray => 6,
        PhysicalType::FixedLenByteArray(_) => 7,
    };
    if f.physical != Some(expected) {
        return Err(c.bad(
            at,
            whose(&format!(
                "physical type {:?} differs from the schema's {}",
                f.physical, columns[col].physical
            )),
        ));
    }
    let num_values = f
        .num_values
        .filter(|&n| n >= 0)
        .ok_or_else(|| c.bad(at, whose("num_values missing or negative")))?;
    let data_page = check_offset(
        "data_page_offset",
        f.data_page
            .ok_or_else(|| c.bad(at, whose("no data_page_offset")))?,
    )?;
    let mut first = data_page;
    for (what, v) in [
        ("dictionary_page_offset", f.dict_page),
        ("index_page_offset", f.index_page),
    ] {
        if let Some(v) = v {
            // Some writers store 0 for "none".
            if v != 0 {
                first = first.min(check_offset(what, v)?);
            }
        }
    }
    let size = f
        .compressed
        .ok_or_else(|| c.bad(at, whose("no total_compressed_size")))?;
    if size < 0
        || first
            .checked_add(size as u64)
            .is_none_or(|end| end > data_end)
    {
        return Err(c.bad(at, whose(&format!("total_compressed_size {size} from offset {first} runs past the data (ends at {data_end})"))));
    }
    let bloom = match (f.bloom_offset, f.bloom_length) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(c.bad(at, whose("bloom_filter_length without bloom_filter_offset")))
        }
        (Some(o), len) => {
            let offset = check_offset("bloom_filter_offset", o)?;
            let length = match len {
                None => None,
                Some(l) if l <= 0 => return Err(c.bad(at, whose(&format!("bloom_filter_length {l} is not positive")))),
                Some(l) if offset + l as u64 > data_end => {
                    return Err(c.bad(at, whose(&format!("bloom_filter_length {l} from offset {offset} runs past the data (ends at {data_end})"))))
                }
                Some(l) => Some(l as u64),
            };
            Some(BloomLocation { offset, length })
        }
    };
    for (what, o, l) in indexes {
        match (o, l) {
            (None, None) => {}
            (Some(o), Some(l)) => {
                let o = check_offset(what, o)?;
                if l < 0 || o + l as u64 > data_end {
                    return Err(c.bad(at, whose(&format!("{what} length {l} from offset {o} runs past the data (ends at {data_end})"))));
                }
            }
            _ => {
                return Err(c.bad(
                    at,
                    whose(&format!("{what} offset and length must be given together")),
                ))
            }
        }
    }
    Ok(Chunk {
        column: col,
        num_values,
        pages: first..first + size as u64,
        bloom,
        meta_span,
    })
}
