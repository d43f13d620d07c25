//! Path names, availability and the process-wide choice.

use bloomlanes_testkit::skip;

use bloomlanes_simd::{active_path, available_paths, Probe, SimdPath};

#[test]
fn names_round_trip() {
    for p in SimdPath::ALL {
        assert_eq!(p.name().parse::<SimdPath>().unwrap(), p);
        assert_eq!(p.to_string(), p.name());
    }
    assert!("AVX2".parse::<SimdPath>().is_ok());
    assert!("neon".parse::<SimdPath>().is_err());
}

#[test]
fn availability_is_consistent() {
    let avail = available_paths();
    assert!(avail.contains(&SimdPath::Scalar));
    assert!(avail.contains(&SimdPath::Portable));
    for p in SimdPath::ALL {
        assert_eq!(Probe::new(p).is_some(), p.is_available());
        assert_eq!(avail.contains(&p), p.is_available());
        if !p.is_available() {
            skip(format_args!("SIMD path `{p}` is not available on this CPU"));
        }
    }
    #[cfg(target_arch = "x86_64")]
    assert!(SimdPath::Sse2.is_available());
    assert!(active_path().is_available());
    assert_eq!(Probe::active().path(), active_path());
    eprintln!("available: {avail:?}, active: {}", active_path());
}

#[test]
fn env_override_is_honoured_when_set() {
    if let Ok(v) = std::env::var("BLOOMLANES_SIMD") {
        if let Ok(p) = v.parse::<SimdPath>() {
            if p.is_available() {
                assert_eq!(active_path(), p);
            }
        }
    }
}
