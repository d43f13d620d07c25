//! The bounded stream reader of filter files (`bloomlanes_host::store::read_bounded`: pipes,
//! FIFOs, block devices): it never reads more than the header says a file holds plus one byte,
//! and it accepts exactly the streams whose whole bytes the file reader accepts.
#![no_main]

use std::path::Path;

use bloomlanes_core::format::{self, FormatError, Verify, HEADER_LEN};
use bloomlanes_host::store::read_bounded;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = format::parse_with(data, Verify::HeaderOnly);
    let Ok(bytes) = read_bounded(Path::new("stream"), data) else {
        // Rejected on its header: so is the whole stream.
        assert!(whole.is_err());
        return;
    };
    assert!(data.starts_with(&bytes), "a prefix of the stream");
    if bytes.len() >= HEADER_LEN {
        if let Err(FormatError::Truncated { needed, .. }) =
            format::parse_with(&bytes[..HEADER_LEN], Verify::HeaderOnly)
        {
            // `needed` saturates at u64::MAX for a header that states a payload near 2^64 bytes.
            let bound = needed.saturating_add(1);
            assert!(bytes.len() as u64 <= bound, "bounded by the header");
        }
    }
    let bounded = format::parse_with(&bytes, Verify::HeaderOnly);
    match (&whole, &bounded) {
        (Ok((a, _)), Ok((b, _))) => assert_eq!(a, b),
        (Err(FormatError::TrailingBytes(_)), Err(FormatError::TrailingBytes(1))) => {}
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("whole stream {whole:?}, bounded read {bounded:?}"),
    }
});
