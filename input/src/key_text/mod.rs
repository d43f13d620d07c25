//! Typed keys written as text: parsing a field or line into the bytes a filter hashes, and
//! writing those bytes back as text. Pure functions over `&[u8]` (no I/O), shared by every
//! reader of text keys (lines, CSV columns, command-line values).
//!
//! The bytes are those of the key type's Parquet plain encoding (see
//! [`KeyType`] and `docs/FORMAT.md` §2), so a filter built from text
//! finds the values a Parquet writer hashed:
//!
//! | key type | text accepted | bytes hashed |
//! |---|---|---|
//! | `bytes` | anything (taken as written, not trimmed) | the text's bytes |
//! | `u64` `i64` `u32` `i32` | decimal with optional sign and `_` separators, or `0x` hex; range-checked | 8 or 4 little-endian bytes (two's complement) |
//! | `f32` `f64` | decimal or exponent notation, `inf`, `-inf`, `nan` (any case), `-0.0` | the IEEE 754 bits, little-endian; `nan` is the quiet NaN `0x7fc00000` / `0x7ff8000000000000` |
//! | `date` | `YYYY-MM-DD` (proleptic Gregorian) | days since 1970-01-01 as 4 little-endian bytes |
//! | `timestamp-ms/us/ns` | an integer in the unit, or RFC 3339 `YYYY-MM-DDTHH:MM:SS[.f](Z\|±HH:MM)` (a space may replace `T`; no offset means UTC) | the count of units since the epoch, 8 little-endian bytes |
//! | `fixed:N` | `2N` hex digits (`-` separators and a `0x` prefix allowed; a UUID in canonical text for `fixed:16`) | the `N` bytes (a UUID big-endian, as Parquet stores it) |
//! | `flow` | `a.b.c.d:port -> e.f.g.h:port proto N`, `[v6]:port -> [v6]:port proto N`, the `--format flows` form `a.b.c.d:port>e.f.g.h:port/tcp` (a protocol name or number), or 26/74 hex digits | the 13- or 37-byte 5-tuple |
//!
//! Floats are hashed as their raw bits, as every Parquet writer does; `0.0` and `-0.0` are
//! different keys on insert, and a lookup applies the core's
//! [`float_probes`](bloomlanes_core::key::float_probes) rule (both zeros probed, NaN always
//! "may be present"). Numbers other than bytes are trimmed of surrounding ASCII white space.

use std::fmt;

use bloomlanes_core::{KeyType, Physical};

mod time;

pub use time::{civil_from_days, days_from_civil};
use time::{parse_date, parse_timestamp, timestamp_text, year_text};

/// Why a text is not a value of the key type asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The key type asked for.
    pub key_type: KeyType,
    /// The start of the offending text (at most 40 characters, lossily decoded).
    pub excerpt: String,
    /// What is wrong, and where useful what to do about it.
    pub why: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "an i64", "an ip", "a u64" (said "you"), "a date".
        let name = self.key_type.to_string();
        let article = if name.starts_with(['a', 'e', 'i', 'o']) {
            "an"
        } else {
            "a"
        };
        write!(
            f,
            "{:?} is not {article} {name} key: {}",
            self.excerpt, self.why
        )
    }
}

impl std::error::Error for ParseError {}

const EXCERPT_CHARS: usize = 40;

fn excerpt(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(&text[..text.len().min(4 * EXCERPT_CHARS)]);
    let mut e: String = s.chars().take(EXCERPT_CHARS).collect();
    if e.len() < text.len() && (s.chars().count() > EXCERPT_CHARS || text.len() > 4 * EXCERPT_CHARS)
    {
        e.push('…');
    }
    e
}

fn err(ty: KeyType, text: &[u8], why: impl Into<String>) -> ParseError {
    // The reason may quote part of the text: keep it short too.
    let mut why: String = why.into();
    if why.chars().count() > 4 * EXCERPT_CHARS {
        why = why.chars().take(4 * EXCERPT_CHARS).collect::<String>() + "…";
    }
    ParseError {
        key_type: ty,
        excerpt: excerpt(text),
        why,
    }
}

/// Parses `text` as a key of type `ty` and appends the bytes that are hashed to `out`.
/// [`KeyType::Any`] is taken as bytes. On error `out` is unchanged.
pub fn parse_into(ty: KeyType, text: &[u8], out: &mut Vec<u8>) -> Result<(), ParseError> {
    let e = |why: String| err(ty, text, why);
    match ty {
        KeyType::Bytes | KeyType::Any => {
            out.extend_from_slice(text);
            return Ok(());
        }
        KeyType::Flow => {
            let t = trim(text);
            return parse_flow(t, out).map_err(e);
        }
        KeyType::Ip => {
            let t = std::str::from_utf8(trim(text)).map_err(|_| e("not UTF-8 text".into()))?;
            let t = one_address(t).map_err(e)?;
            match t.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
                Ok(std::net::IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
                Err(_) => {
                    return Err(e(
                        "not an IP address (IPv4 such as 10.0.0.1 or IPv6 such as 2001:db8::1)"
                            .into(),
                    ))
                }
            }
            return Ok(());
        }
        KeyType::FixedBytes(n) => return parse_hex(trim(text), n as usize, out).map_err(e),
        _ => {}
    }
    let t = trim(text);
    let s = std::str::from_utf8(t).map_err(|_| e("not UTF-8 text".into()))?;
    match ty {
        KeyType::U64 => {
            out.extend_from_slice(&int_in(s, 0, u64::MAX as i128, ty)?.to_le_bytes()[..8])
        }
        KeyType::I64 => out.extend_from_slice(
            &(int_in(s, i64::MIN as i128, i64::MAX as i128, ty)? as i64).to_le_bytes(),
        ),
        KeyType::U32 => {
            out.extend_from_slice(&(int_in(s, 0, u32::MAX as i128, ty)? as u32).to_le_bytes())
        }
        KeyType::I32 => out.extend_from_slice(
            &(int_in(s, i32::MIN as i128, i32::MAX as i128, ty)? as i32).to_le_bytes(),
        ),
        KeyType::F32 => out.extend_from_slice(&parse_f32(s).map_err(e)?.to_bits().to_le_bytes()),
        KeyType::F64 => out.extend_from_slice(&parse_f64(s).map_err(e)?.to_bits().to_le_bytes()),
        KeyType::Date32 => out.extend_from_slice(&parse_date(s).map_err(e)?.to_le_bytes()),
        KeyType::TimestampMillis => {
            out.extend_from_slice(&parse_timestamp(s, 3).map_err(e)?.to_le_bytes())
        }
        KeyType::TimestampMicros => {
            out.extend_from_slice(&parse_timestamp(s, 6).map_err(e)?.to_le_bytes())
        }
        KeyType::TimestampNanos => {
            out.extend_from_slice(&parse_timestamp(s, 9).map_err(e)?.to_le_bytes())
        }
        _ => return Err(e(format!("key type {ty} has no text form"))),
    }
    Ok(())
}

/// Parses `text` as a key of type `ty`: the bytes that are hashed.
pub fn parse(ty: KeyType, text: &[u8]) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    parse_into(ty, text, &mut out)?;
    Ok(out)
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end]
}

/// An integer: optional sign, decimal digits with `_` separators, or `0x` hex.
fn parse_int(s: &str) -> Result<i128, String> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => (16, h),
        None => (10, body),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return Err("not an integer".into());
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c
            .to_digit(radix)
            .ok_or_else(|| format!("{c:?} is not a digit of a base-{radix} integer"))?;
        v = v
            .checked_mul(i128::from(radix))
            .and_then(|v| v.checked_add(i128::from(d)))
            .ok_or_else(|| "out of range".to_string())?;
        if v > u64::MAX as i128 + 1 {
            return Err("out of range".into());
        }
    }
    Ok(if neg { -v } else { v })
}

fn int_in(s: &str, min: i128, max: i128, ty: KeyType) -> Result<i128, ParseError> {
    let v = parse_int(s).map_err(|why| err(ty, s.as_bytes(), why))?;
    if v < min || v > max {
        let hint = match ty {
            KeyType::U64 if v < 0 => "; negative numbers need --key-type i64",
            KeyType::U32 if v < 0 => "; negative numbers need --key-type i32",
            KeyType::I32 | KeyType::U32 => "; wider numbers need --key-type i64 or u64",
            KeyType::I64 if v > 0 => "; numbers above 2^63-1 need --key-type u64",
            _ => "",
        };
        return Err(err(
            ty,
            s.as_bytes(),
            format!("out of range ({min} to {max}){hint}"),
        ));
    }
    Ok(v)
}

fn float_text_ok(s: &str) -> Result<(), String> {
    // Rust's parser also takes "infinity"; refuse what it would read that no writer writes? No:
    // accept all it accepts, but refuse hex and the empty string with a clear message.
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.contains(['x', 'X']) {
        return Err("hexadecimal floats are not accepted".into());
    }
    Ok(())
}

/// A float: Rust's decimal syntax plus `inf`/`nan` in any case; `nan` (any sign) is the quiet NaN.
fn parse_f64(s: &str) -> Result<f64, String> {
    float_text_ok(s)?;
    let v: f64 = s.parse().map_err(|_| "not a number".to_string())?;
    Ok(if v.is_nan() { f64::NAN } else { v })
}

fn parse_f32(s: &str) -> Result<f32, String> {
    float_text_ok(s)?;
    let v: f32 = s.parse().map_err(|_| "not a number".to_string())?;
    Ok(if v.is_nan() { f32::NAN } else { v })
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Exactly `n` bytes written as hex digits, with optional `0x` prefix and `-`/`:` separators.
fn parse_hex(t: &[u8], n: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let t = t
        .strip_prefix(b"0x")
        .or_else(|| t.strip_prefix(b"0X"))
        .unwrap_or(t);
    let digits: Vec<u8> = t
        .iter()
        .copied()
        .filter(|&c| c != b'-' && c != b':')
        .collect();
    if digits.len() != 2 * n {
        return Err(format!(
            "expected {n} bytes as {} hex digits, found {} characters",
            2 * n,
            digits.len()
        ));
    }
    let start = out.len();
    for pair in digits.chunks_exact(2) {
        match (hex_val(pair[0]), hex_val(pair[1])) {
            (Some(a), Some(b)) => out.push(a << 4 | b),
            _ => {
                out.truncate(start);
                return Err(format!(
                    "{:?} is not a hex digit pair",
                    String::from_utf8_lossy(pair)
                ));
            }
        }
    }
    Ok(())
}

/// The address of `t`, which may be written as a prefix of one address (`10.0.0.1/32`,
/// `2001:db8::1/128`, as route tables write hosts); any wider prefix is refused, saying how
/// many addresses it holds: a filter matches whole addresses, not prefixes.
fn one_address(t: &str) -> Result<&str, String> {
    let Some((addr, len)) = t.split_once('/') else {
        return Ok(t);
    };
    let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
        return Ok(t);
    };
    let bits: u32 = if ip.is_ipv4() { 32 } else { 128 };
    match len.parse::<u32>() {
        Ok(n) if n == bits => Ok(addr),
        Ok(n) if n < bits => {
            let count = match bits - n {
                m @ 0..=63 => format!("{}", 1u64 << m),
                m => format!("2^{m}"),
            };
            Err(format!(
                "{t:?} is a prefix of {count} addresses, not one address: a filter matches \
                 whole addresses (exact match), so list the addresses a rule covers, one per row"
            ))
        }
        _ => Err(format!(
            "{t:?}: /{len} is not a prefix length of an IPv{} address",
            if ip.is_ipv4() { 4 } else { 6 }
        )),
    }
}

/// A 5-tuple in the form [`display`] writes (or the `--format flows` form), or its bytes in hex.
fn parse_flow(t: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let s = std::str::from_utf8(t).map_err(|_| "not UTF-8 text".to_string())?;
    if !s.contains('>') {
        return match s.len() {
            26 => parse_hex(t, 13, out),
            74 => parse_hex(t, 37, out),
            _ => Err(
                "expected SRC:PORT -> DST:PORT proto N (or SRC:PORT>DST:PORT/PROTO), or 13 or \
                 37 bytes in hex"
                    .into(),
            ),
        };
    }
    // Both text forms (`10.0.0.1:1234 -> 10.0.0.2:80 proto 6` and, as `--format flows` reads
    // them, `10.0.0.1:1234>10.0.0.2:80/tcp`): one parser, so a flow is one key whichever form a
    // rule table writes it in.
    let mut key = [0u8; crate::pcap::IPV6_TUPLE_LEN];
    let n = crate::pcap::parse_flow_text(t, &mut key)?;
    out.extend_from_slice(&key[..n]);
    Ok(())
}

/// Writes the hashed bytes of a key of type `ty` back as text (the inverse of [`parse`]; bytes
/// are decoded lossily as UTF-8). Bytes of the wrong width are written in hex.
pub fn display(ty: KeyType, b: &[u8]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let a4 = || <[u8; 4]>::try_from(b).ok();
    let a8 = || <[u8; 8]>::try_from(b).ok();
    let shown = match ty {
        KeyType::Bytes | KeyType::Any => return String::from_utf8_lossy(b).into_owned(),
        KeyType::U64 => a8().map(|x| u64::from_le_bytes(x).to_string()),
        KeyType::I64 => a8().map(|x| i64::from_le_bytes(x).to_string()),
        KeyType::U32 => a4().map(|x| u32::from_le_bytes(x).to_string()),
        KeyType::I32 => a4().map(|x| i32::from_le_bytes(x).to_string()),
        KeyType::F32 => a4().map(|x| format!("{:?}", f32::from_le_bytes(x))),
        KeyType::F64 => a8().map(|x| format!("{:?}", f64::from_le_bytes(x))),
        KeyType::Date32 => a4().map(|x| {
            let (y, m, d) = civil_from_days(i64::from(i32::from_le_bytes(x)));
            format!("{}-{m:02}-{d:02}", year_text(y))
        }),
        KeyType::TimestampMillis => a8().map(|x| timestamp_text(i64::from_le_bytes(x), 3)),
        KeyType::TimestampMicros => a8().map(|x| timestamp_text(i64::from_le_bytes(x), 6)),
        KeyType::TimestampNanos => a8().map(|x| timestamp_text(i64::from_le_bytes(x), 9)),
        KeyType::FixedBytes(16) if b.len() == 16 => Some(format!(
            "{}-{}-{}-{}-{}",
            hex(&b[..4]),
            hex(&b[4..6]),
            hex(&b[6..8]),
            hex(&b[8..10]),
            hex(&b[10..])
        )),
        KeyType::Flow => Some(crate::pcap::format_tuple(b)),
        KeyType::Ip => match b.len() {
            4 => a4().map(|x| std::net::Ipv4Addr::from(x).to_string()),
            16 => <[u8; 16]>::try_from(b)
                .ok()
                .map(|x| std::net::Ipv6Addr::from(x).to_string()),
            _ => None,
        },
        _ => None,
    };
    shown.unwrap_or_else(|| hex(b))
}

/// Whether `text` looks like a number (an integer or a decimal float): what `--format auto`
/// refuses to guess the type of.
pub fn looks_numeric(text: &[u8]) -> bool {
    let t = trim(text);
    let Ok(s) = std::str::from_utf8(t) else {
        return false;
    };
    if s.is_empty() {
        return false;
    }
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if body.starts_with("0x") || body.starts_with("0X") {
        return body.len() > 2
            && body[2..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b'_');
    }
    body.bytes().any(|b| b.is_ascii_digit())
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+' | b'_'))
        && s.parse::<f64>().is_ok() | parse_int(s).is_ok()
}

/// Whether keys of type `ty` are floats (their lookups follow the ±0 / NaN probe rule).
pub fn is_float(ty: KeyType) -> bool {
    matches!(ty.physical(), Physical::Float | Physical::Double)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(ty: &str, s: &str) -> Result<Vec<u8>, ParseError> {
        parse(ty.parse().unwrap(), s.as_bytes())
    }

    /// `text` read as a key of type `ty` gives exactly the bytes `expected`.
    #[track_caller]
    fn yields(ty: &str, text: &str, expected: impl AsRef<[u8]>) {
        assert_eq!(p(ty, text).unwrap(), expected.as_ref(), "{ty}: {text:?}");
    }

    #[test]
    fn integers_signed_hex_and_ranges() {
        assert_eq!(p("i64", "-500").unwrap(), (-500i64).to_le_bytes());
        assert_eq!(p("u64", "0x10").unwrap(), 16u64.to_le_bytes());
        assert_eq!(p("u64", " 1_000 ").unwrap(), 1000u64.to_le_bytes());
        assert_eq!(
            p("u64", "18446744073709551615").unwrap(),
            u64::MAX.to_le_bytes()
        );
        assert!(p("u64", "18446744073709551616").is_err());
        let e = p("u64", "-500").unwrap_err();
        assert!(e.to_string().contains("--key-type i64"), "{e}");
        assert_eq!(p("i32", "-2147483648").unwrap(), i32::MIN.to_le_bytes());
        assert!(p("i32", "2147483648").is_err());
        assert_eq!(p("u32", "4294967295").unwrap(), u32::MAX.to_le_bytes());
        assert!(p("u32", "-1").is_err());
        assert_eq!(
            p("i64", "-9223372036854775808").unwrap(),
            i64::MIN.to_le_bytes()
        );
        assert!(p("i64", "9223372036854775808").is_err());
        for bad in [
            "",
            "-",
            "0x",
            "1.5",
            "12a",
            "_1",
            "99999999999999999999999999999999999999999",
        ] {
            assert!(p("i64", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn floats_keep_raw_bits() {
        yields("f64", "-0.0", (-0.0f64).to_bits().to_le_bytes());
        yields("f64", "0", 0u64.to_le_bytes());
        yields("f32", "0.1", 0.1f32.to_bits().to_le_bytes());
        yields("f64", "NaN", 0x7ff8_0000_0000_0000u64.to_le_bytes());
        yields("f64", "-nan", 0x7ff8_0000_0000_0000u64.to_le_bytes());
        yields("f32", "nan", 0x7fc0_0000u32.to_le_bytes());
        yields("f64", "-inf", f64::NEG_INFINITY.to_bits().to_le_bytes());
        yields("f64", "1e300", 1e300f64.to_bits().to_le_bytes());
        assert!(p("f64", "0x1p3").is_err());
        assert!(p("f32", "one").is_err());
    }

    #[test]
    fn dates_and_timestamps() {
        yields("date", "1970-01-01", 0i32.to_le_bytes());
        yields("date", "2024-03-01", 19783i32.to_le_bytes());
        yields("date", "1969-12-31", (-1i32).to_le_bytes());
        assert!(p("date", "2023-02-29").is_err());
        assert!(p("date", "2024-13-01").is_err());
        yields(
            "timestamp-us",
            "1700000000000000",
            1_700_000_000_000_000i64.to_le_bytes(),
        );
        yields("timestamp-ms", "-5", (-5i64).to_le_bytes());
        yields(
            "timestamp-ms",
            "2023-11-14T22:13:20Z",
            1_700_000_000_000i64.to_le_bytes(),
        );
        yields(
            "timestamp-ns",
            "2023-11-15 00:13:20.000000001+02:00",
            1_700_000_000_000_000_001i64.to_le_bytes(),
        );
        assert!(p("timestamp-ms", "2023-11-14T22:13:20.0001Z").is_err());
        assert!(p("timestamp-ns", "2300-01-01T00:00:00Z").is_err());
        for v in [-86_400_000_001i64, 0, 1_700_000_000_123] {
            let s = display(KeyType::TimestampMillis, &v.to_le_bytes());
            assert_eq!(p("timestamp-ms", &s).unwrap(), v.to_le_bytes(), "{s}");
        }
        for d in [-800_000i32, -1, 0, 19_783, 2_000_000] {
            let s = display(KeyType::Date32, &d.to_le_bytes());
            assert_eq!(p("date", &s).unwrap(), d.to_le_bytes(), "{s}");
        }
    }

    #[test]
    fn uuids_fixed_bytes_and_flows() {
        let u = p("uuid", "00112233-4455-6677-8899-aabbccddeeff").unwrap();
        assert_eq!(u, (0..16).map(|i| i * 0x11).collect::<Vec<u8>>());
        assert_eq!(
            display(KeyType::FixedBytes(16), &u),
            "00112233-4455-6677-8899-aabbccddeeff"
        );
        assert_eq!(p("fixed:2", "0xBEEF").unwrap(), [0xbe, 0xef]);
        assert!(p("fixed:2", "beefee").is_err());
        assert!(p("fixed:2", "zzzz").is_err());
        let f = p("flow", "10.0.0.1:1234 -> 10.0.0.2:53 proto 17").unwrap();
        assert_eq!(f, [10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0, 53, 17]);
        assert_eq!(
            display(KeyType::Flow, &f),
            "10.0.0.1:1234 -> 10.0.0.2:53 proto 17"
        );
        let f6 = p("flow", "[::1]:1 -> [::2]:2 proto 6").unwrap();
        assert_eq!(f6.len(), 37);
        assert!(p("flow", "10.0.0.1:1 -> [::2]:2 proto 6").is_err());
        // The `--format flows` form, protocol by name or number, is the same key.
        assert_eq!(p("flow", "10.0.0.1:1234>10.0.0.2:53/udp").unwrap(), f);
        assert_eq!(p("flow", " 10.0.0.1:1234 > 10.0.0.2:53/17 ").unwrap(), f);
        assert_eq!(p("flow", "[::1]:1>[::2]:2/tcp").unwrap(), f6);
        for bad in [
            "10.0.0.1:1234>10.0.0.2:53",
            "10.0.0.1:1234>10.0.0.2:53/nope",
            "a>b/tcp",
        ] {
            assert!(p("flow", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ip_addresses_are_their_header_bytes() {
        assert_eq!(p("ip", " 10.0.0.1 ").unwrap(), [10, 0, 0, 1]);
        let v6 = p("ip", "2001:db8::1").unwrap();
        assert_eq!(v6.len(), 16);
        assert_eq!(&v6[..4], [0x20, 0x01, 0x0d, 0xb8]);
        assert_eq!(display(KeyType::Ip, &v6), "2001:db8::1");
        // A mapped address is what an IPv6 header carries: 16 bytes, not the IPv4 address.
        assert_eq!(p("ip", "::ffff:10.0.0.1").unwrap().len(), 16);
        for bad in ["10.0.0", "10.0.0.256", "10.0.0.1:80", "host", "", "host/24"] {
            let e = p("ip", bad).unwrap_err().to_string();
            assert!(e.contains("not an IP address"), "{bad}: {e}");
        }
        // A host route is its address; a wider prefix is no key, and says how wide it is.
        assert_eq!(p("ip", "10.0.0.1/32").unwrap(), [10, 0, 0, 1]);
        assert_eq!(p("ip", "2001:db8::1/128").unwrap(), v6);
        for (prefix, what) in [
            ("10.0.0.0/24", "prefix of 256 addresses"),
            ("0.0.0.0/0", "prefix of 4294967296 addresses"),
            ("2001:db8::/32", "prefix of 2^96 addresses"),
            ("10.0.0.1/33", "not a prefix length of an IPv4"),
            ("10.0.0.1/x", "not a prefix length"),
        ] {
            let e = p("ip", prefix).unwrap_err().to_string();
            assert!(e.contains(what), "{prefix}: {e}");
        }
        // The address part of a flow key (source: bytes 0..4) is the ip key of that address.
        let f = p("flow", "10.0.0.1:1234 -> 10.0.0.2:53 proto 17").unwrap();
        assert_eq!(f[..4], p("ip", "10.0.0.1").unwrap()[..]);
        assert_eq!(f[4..8], p("ip", "10.0.0.2").unwrap()[..]);
    }

    #[test]
    fn display_round_trips_and_errors_are_short() {
        for (ty, s) in [
            ("i64", "-500"),
            ("u32", "7"),
            ("f64", "-0.0"),
            ("f32", "1.5"),
            ("f64", "NaN"),
        ] {
            let t: KeyType = ty.parse().unwrap();
            let b = p(ty, s).unwrap();
            assert_eq!(p(ty, &display(t, &b)).unwrap(), b, "{ty} {s}");
        }
        let long = "9".repeat(1_000_000);
        let e = p("u64", &long).unwrap_err().to_string();
        assert!(e.len() < 200, "{}", e.len());
        // A reason quoting part of the text is cut too (found by the key_text fuzz target).
        let stamp = format!("2024-01-02T0430::05{}", "\x1c".repeat(500));
        let e = p("timestamp-ms", &stamp).unwrap_err().to_string();
        assert!(e.len() < 600, "{}", e.len());
        assert!(looks_numeric(b"-12.5e3") && looks_numeric(b"0x1f") && looks_numeric(b" 42"));
        assert!(!looks_numeric(b"alice") && !looks_numeric(b"2024-01-01") && !looks_numeric(b"-"));
    }
}
