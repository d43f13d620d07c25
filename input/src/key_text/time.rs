//! Dates and timestamps as text: proleptic Gregorian days (`YYYY-MM-DD`), RFC 3339 timestamps
//! in a unit of `10^-digits` seconds, and their canonical text forms.

use super::parse_int;

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d` (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of day `z` since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

fn digits(s: &str, what: &str) -> Result<i64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 9 {
        return Err(format!("bad {what} {s:?}"));
    }
    s.parse().map_err(|_| format!("bad {what} {s:?}"))
}

/// `[+-]YYYY-MM-DD` as days since the epoch.
fn parse_ymd(s: &str) -> Result<i64, String> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut parts = body.splitn(3, '-');
    let (y, m, d) = match (parts.next(), parts.next(), parts.next()) {
        (Some(y), Some(m), Some(d)) if y.len() >= 4 && m.len() == 2 && d.len() == 2 => (y, m, d),
        _ => return Err("expected a date YYYY-MM-DD".into()),
    };
    let y = digits(y, "year")? * if neg { -1 } else { 1 };
    let m = digits(m, "month")? as u32;
    let d = digits(d, "day")? as u32;
    if !(1..=12).contains(&m) {
        return Err(format!("month {m} is not 1 to 12"));
    }
    if d < 1 || d > days_in_month(y, m) {
        return Err(format!("day {d} does not exist in {y:04}-{m:02}"));
    }
    Ok(days_from_civil(y, m, d))
}

pub(super) fn parse_date(s: &str) -> Result<i32, String> {
    let days = parse_ymd(s)?;
    i32::try_from(days).map_err(|_| "out of range of a 32-bit day count".into())
}

/// A timestamp in units of `10^-digits` seconds: an integer count, or RFC 3339 text.
pub(super) fn parse_timestamp(s: &str, unit_digits: u32) -> Result<i64, String> {
    if !s.contains(['-', ':']) || (s.starts_with('-') && !s[1..].contains(['-', ':'])) {
        let v = parse_int(s)?;
        return i64::try_from(v).map_err(|_| "out of range of a 64-bit count".into());
    }
    let sep = s
        .find(['T', 't', ' '])
        .ok_or("expected YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM] or an integer")?;
    let days = parse_ymd(&s[..sep])?;
    let rest = &s[sep + 1..];
    let (clock, offset_secs) = split_offset(rest)?;
    let (hms, frac) = match clock.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (clock, None),
    };
    let mut p = hms.split(':');
    let (h, mi, se) = match (p.next(), p.next(), p.next(), p.next()) {
        (Some(h), Some(m), Some(s), None) if h.len() == 2 && m.len() == 2 && s.len() == 2 => (
            digits(h, "hour")?,
            digits(m, "minute")?,
            digits(s, "second")?,
        ),
        _ => return Err("expected a time HH:MM:SS".into()),
    };
    if h > 23 || mi > 59 || se > 60 {
        return Err(format!("time {hms} is out of range"));
    }
    let mut sub: i128 = 0;
    if let Some(f) = frac {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad fraction of a second {f:?}"));
        }
        let (kept, dropped) = f.split_at(f.len().min(unit_digits as usize));
        if dropped.bytes().any(|b| b != b'0') {
            return Err(format!(
                "the fraction {f:?} is finer than the unit (10^-{unit_digits} s); it would be cut"
            ));
        }
        sub = kept.parse::<i128>().unwrap_or(0) * 10i128.pow(unit_digits - kept.len() as u32);
    }
    let secs =
        i128::from(days) * 86_400 + i128::from(h * 3600 + mi * 60 + se) - i128::from(offset_secs);
    let v = secs * 10i128.pow(unit_digits) + sub;
    i64::try_from(v).map_err(|_| "out of range of a 64-bit count of the unit".into())
}

/// Splits `HH:MM:SS[.f]` from a trailing `Z` or `±HH:MM` (none: UTC).
fn split_offset(rest: &str) -> Result<(&str, i64), String> {
    if let Some(c) = rest.strip_suffix(['Z', 'z']) {
        return Ok((c, 0));
    }
    if let Some(i) = rest.rfind(['+', '-']) {
        let (c, off) = rest.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..]
            .split_once(':')
            .ok_or_else(|| format!("bad UTC offset {off:?} (expected ±HH:MM)"))?;
        if oh.len() != 2 || om.len() != 2 {
            return Err(format!("bad UTC offset {off:?} (expected ±HH:MM)"));
        }
        let (oh, om) = (digits(oh, "offset hour")?, digits(om, "offset minute")?);
        if oh > 23 || om > 59 {
            return Err(format!("UTC offset {off} is out of range"));
        }
        return Ok((c, sign * (oh * 3600 + om * 60)));
    }
    Ok((rest, 0))
}

/// A year with at least 4 digits and its sign (ISO 8601 expanded form for years before 0).
pub(super) fn year_text(y: i64) -> String {
    if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    }
}

/// RFC 3339 UTC text of `v` units of `10^-digits` seconds since the epoch.
pub(super) fn timestamp_text(v: i64, digits: u32) -> String {
    let per = 10i64.pow(digits);
    let (secs, sub) = (v.div_euclid(per), v.rem_euclid(per));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let w = digits as usize;
    format!(
        "{}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{sub:0w$}Z",
        year_text(y),
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}
