//! The typed-key text parser: any text for any key type is parsed or refused with a short
//! error; a parsed key written back as text parses to the same bytes.
#![no_main]

use bloomlanes_input::key_text::{display, looks_numeric, parse};
use bloomlanes_input::KeyType;
use libfuzzer_sys::fuzz_target;

/// Two more fixed-length widths than [`KeyType::NAMED`] shows (odd and not a power of two).
const MORE: [KeyType; 2] = [KeyType::FixedBytes(3), KeyType::FixedBytes(13)];

/// The key type the fuzzer's first byte picks: the named types of `core`, then [`MORE`].
fn key_type(which: u8) -> KeyType {
    let i = usize::from(which) % (KeyType::NAMED.len() + MORE.len());
    match KeyType::NAMED.get(i) {
        Some(&ty) => ty,
        None => MORE[i - KeyType::NAMED.len()],
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, text)) = data.split_first() else {
        return;
    };
    let ty = key_type(which);
    let _ = looks_numeric(text);
    match parse(ty, text) {
        Ok(bytes) => {
            if let Some(w) = ty.fixed_width() {
                assert_eq!(bytes.len(), w, "{ty}");
            }
            if !matches!(ty, KeyType::Bytes | KeyType::Any) {
                let shown = display(ty, &bytes);
                let back = parse(ty, shown.as_bytes())
                    .unwrap_or_else(|e| panic!("{ty}: {shown:?} does not parse back: {e}"));
                assert_eq!(back, bytes, "{ty}: {shown:?}");
            }
        }
        Err(e) => assert!(e.to_string().len() < 600, "{}", e.to_string().len()),
    }
});
