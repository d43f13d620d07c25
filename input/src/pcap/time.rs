//! Packet capture times: a classic pcap record's seconds and micro- or nanoseconds, and a pcapng
//! packet block's 64-bit count of its interface's units (`if_tsresol`: 10^-k seconds, or 2^-k
//! when the high bit is set; 10^-6 when the option is absent), shifted by `if_tsoffset`.

use std::fmt;

use super::{err, PcapError};

/// A packet's capture time: seconds since the Unix epoch, the nanoseconds past them, and how many
/// decimals its capture's resolution gives (6 for microseconds, 9 for nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp {
    /// Whole seconds.
    pub seconds: u64,
    /// Nanoseconds past them (below 10^9).
    pub nanos: u32,
    /// Decimals of the capture's resolution (0 to 9; finer resolutions are shown to the
    /// nanosecond).
    pub decimals: u8,
}

impl fmt::Display for Timestamp {
    /// Seconds, then the resolution's decimals (`1700000000.000007` for a microsecond capture;
    /// no point when the resolution is whole seconds). The fraction is cut, never rounded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = u32::from(self.decimals.min(9));
        if d == 0 {
            return write!(f, "{}", self.seconds);
        }
        let frac = self.nanos / 10u32.pow(9 - d);
        write!(f, "{}.{frac:0w$}", self.seconds, w = d as usize)
    }
}

/// The unit of a pcapng interface's timestamps: the `if_tsresol` option's byte as written
/// (10^-k seconds, or 2^-k when bit 7 is set), checked when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsResolution(u8);

impl Default for TsResolution {
    /// Microseconds: the unit of an interface without `if_tsresol`.
    fn default() -> TsResolution {
        TsResolution(6)
    }
}

/// Largest decimal exponent accepted (10^19 is the largest power of ten in a `u64`).
const MAX_DECIMAL: u8 = 19;
/// Largest binary exponent accepted (2^-63 s).
const MAX_BINARY: u8 = 63;

impl TsResolution {
    /// The resolution of an `if_tsresol` byte found at byte `offset`: a fault if its unit is
    /// finer than 10^-19 or 2^-63 s (no 64-bit timestamp could then reach a second).
    pub fn from_option(byte: u8, offset: usize) -> Result<TsResolution, PcapError> {
        let exp = byte & 0x7f;
        let max = if byte & 0x80 == 0 {
            MAX_DECIMAL
        } else {
            MAX_BINARY
        };
        if exp > max {
            let base = if byte & 0x80 == 0 { 10 } else { 2 };
            return err(
                offset,
                format!("if_tsresol {byte:#04x} (units of {base}^-{exp} s) is out of range"),
            );
        }
        Ok(TsResolution(byte))
    }

    /// The time of a packet block's timestamp `ticks` (units of this resolution since the
    /// epoch), plus `offset_seconds` (`if_tsoffset`; a time before the epoch is shown as 0).
    pub fn time(self, ticks: u64, offset_seconds: i64) -> Timestamp {
        let exp = u32::from(self.0 & 0x7f);
        let (seconds, nanos, decimals) = if self.0 & 0x80 == 0 {
            let unit = 10u64.pow(exp);
            let frac = u128::from(ticks % unit) * 1_000_000_000 / u128::from(unit);
            (ticks / unit, frac as u32, exp.min(9) as u8)
        } else {
            let frac = ((u128::from(ticks) & ((1u128 << exp) - 1)) * 1_000_000_000) >> exp;
            (ticks >> exp, frac as u32, exp.min(9) as u8)
        };
        Timestamp {
            seconds: seconds.saturating_add_signed(offset_seconds),
            nanos,
            decimals,
        }
    }
}

/// The time of a classic pcap record header `rec` (16 bytes or more): seconds, and micro- or
/// nanoseconds as the file header says. A fraction of a second or more (a writer's bug) carries
/// into the seconds.
pub fn record_time(rec: &[u8], big_endian: bool, nanos: bool) -> Timestamp {
    let word = |at: usize| {
        let b = [rec[at], rec[at + 1], rec[at + 2], rec[at + 3]];
        if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let frac = u64::from(word(4)) * if nanos { 1 } else { 1000 };
    Timestamp {
        seconds: u64::from(word(0)) + frac / 1_000_000_000,
        nanos: (frac % 1_000_000_000) as u32,
        decimals: if nanos { 9 } else { 6 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(byte: u8, ticks: u64) -> String {
        TsResolution::from_option(byte, 0)
            .unwrap()
            .time(ticks, 0)
            .to_string()
    }

    #[test]
    fn decimal_and_binary_units_show_their_decimals() {
        assert_eq!(shown(6, 1_700_000_000_000_007), "1700000000.000007");
        assert_eq!(shown(9, 1_700_000_000_123_456_789), "1700000000.123456789");
        assert_eq!(shown(3, 1_700_000_000_120), "1700000000.120");
        assert_eq!(shown(0, 42), "42");
        // 10^-12: shown to the nanosecond, cut.
        assert_eq!(shown(12, 5_000_000_000_123_999), "5000.000000123");
        // 2^-1 and 2^-3 are exact in 1 and 3 decimals; 2^-30 to the nanosecond.
        assert_eq!(shown(0x81, 7), "3.5");
        assert_eq!(shown(0x83, (10 << 3) | 1), "10.125");
        assert_eq!(shown(0x9e, (2 << 30) | (1 << 29)), "2.500000000");
        assert_eq!(TsResolution::default(), TsResolution(6));
    }

    #[test]
    fn offsets_apply_and_out_of_range_units_are_faults() {
        let r = TsResolution::from_option(9, 0).unwrap();
        assert_eq!(r.time(1_500_000_000, 100).to_string(), "101.500000000");
        assert_eq!(r.time(1_500_000_000, -100).seconds, 0);
        assert_eq!(
            TsResolution::from_option(19, 0)
                .unwrap()
                .time(u64::MAX, 0)
                .seconds,
            1
        );
        assert_eq!(
            TsResolution::from_option(0xbf, 0)
                .unwrap()
                .time(u64::MAX, 0)
                .seconds,
            1
        );
        for bad in [20u8, 0x7f, 0xc0, 0xff] {
            let e = TsResolution::from_option(bad, 77).unwrap_err();
            assert_eq!(e.offset, 77);
            assert!(e.what.contains("if_tsresol"), "{}", e.what);
        }
    }

    #[test]
    fn classic_records_carry_their_resolution() {
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&7u32.to_le_bytes());
        rec[4..8].copy_from_slice(&1_000_001u32.to_le_bytes());
        assert_eq!(record_time(&rec, false, false).to_string(), "8.000001");
        assert_eq!(record_time(&rec, false, true).to_string(), "7.001000001");
    }
}
