//! The schema of a footer: its elements read ([`parse_schema`]), their logical types, and the
//! leaf columns with the key type their values hash as ([`leaf_columns`]).

use bloomlanes_core::KeyType;

use super::{read_struct, Ctx, FooterError, LeafColumn, PhysicalType};
use crate::thrift::{self, ty};

#[derive(Default)]
pub(super) struct SchemaElement {
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

pub(super) fn parse_schema(c: &mut Ctx<'_>) -> Result<Vec<SchemaElement>, FooterError> {
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

pub(super) fn leaf_columns(
    c: &Ctx<'_>,
    schema: &[SchemaElement],
) -> Result<Vec<LeafColumn>, FooterError> {
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
