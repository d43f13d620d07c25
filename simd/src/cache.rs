//! The data cache sizes of this machine, read once per process: they decide when a bulk
//! operation partitions its batch (a partition's filter slice must fit in L2) and when an
//! all-core insert gives every thread a private copy of the filter.
//!
//! On Linux the sizes come from `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`
//! (the kernel's reading of CPUID, also inside most VMs). Elsewhere, or when the files are
//! missing or unreadable, [`CacheSizes::FALLBACK`] is used: sizes smaller than most current
//! server CPUs have, so that a wrong guess costs speed (partitions smaller than they could be),
//! never a partition that misses L2.

use std::sync::OnceLock;

/// Data cache sizes, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    /// The level-2 cache of one core (data or unified).
    pub l2: usize,
    /// The last-level cache (the largest data or unified cache; shared by several cores on
    /// most CPUs).
    pub llc: usize,
}

impl CacheSizes {
    /// The sizes assumed when none can be read: 512 KiB of L2, 8 MiB of last-level cache.
    pub const FALLBACK: CacheSizes = CacheSizes {
        l2: 512 << 10,
        llc: 8 << 20,
    };

    /// This machine's sizes, detected once per process (see the module documentation).
    pub fn detected() -> CacheSizes {
        static SIZES: OnceLock<CacheSizes> = OnceLock::new();
        *SIZES.get_or_init(|| {
            read_sysfs(std::path::Path::new("/sys/devices/system/cpu/cpu0/cache"))
                .unwrap_or(CacheSizes::FALLBACK)
        })
    }
}

/// Parses a sysfs cache size: `"1024K"`, `"32M"`, or a plain byte count.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1usize << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

/// The sizes under a sysfs `cache` directory, if it names an L2 cache (data or unified). The
/// last-level size is the largest data or unified cache listed, at least the L2 size.
fn read_sysfs(dir: &std::path::Path) -> Option<CacheSizes> {
    let mut l2 = None;
    let mut llc = 0usize;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(path.join(f)).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(&size)) else {
            continue;
        };
        if size == 0 {
            continue;
        }
        if level == 2 {
            l2 = Some(l2.map_or(size, |s: usize| s.max(size)));
        }
        llc = llc.max(size);
    }
    let l2 = l2?;
    Some(CacheSizes {
        l2,
        llc: llc.max(l2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_size("1024K\n"), Some(1 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("x12K"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }

    fn write_index(dir: &std::path::Path, i: usize, level: &str, kind: &str, size: &str) {
        let d = dir.join(format!("index{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("level"), level).unwrap();
        std::fs::write(d.join("type"), kind).unwrap();
        std::fs::write(d.join("size"), size).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "touches the file system")]
    fn a_sysfs_tree_is_read_and_instruction_caches_are_ignored() {
        let dir = std::env::temp_dir().join(format!("bloomlanes-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_index(&dir, 0, "1", "Data", "32K");
        write_index(&dir, 1, "1", "Instruction", "64M");
        write_index(&dir, 2, "2", "Unified", "1024K");
        write_index(&dir, 3, "3", "Unified", "32768K");
        std::fs::create_dir_all(dir.join("power")).unwrap();
        assert_eq!(
            read_sysfs(&dir),
            Some(CacheSizes {
                l2: 1 << 20,
                llc: 32 << 20
            })
        );
        // No L2 listed: nothing to go by.
        std::fs::remove_dir_all(dir.join("index2")).unwrap();
        assert_eq!(read_sysfs(&dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read_sysfs(&dir), None, "a missing directory");
    }

    #[test]
    fn detected_sizes_are_sane() {
        let c = CacheSizes::detected();
        assert!(c.l2 >= 16 << 10 && c.llc >= c.l2, "{c:?}");
    }
}
