//! The row groups of a footer and their column chunks: byte ranges of the pages, bloom-filter
//! and index locations, each checked to lie inside the data before it is believed.

use super::{
    read_struct, BloomLocation, Chunk, Ctx, FooterError, LeafColumn, PhysicalType, RowGroup,
};
use crate::thrift::ty;

pub(super) fn parse_row_group(
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
