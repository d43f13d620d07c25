//! The typed-key text parser: any text for any key type is parsed or refused with a short
//! error; a parsed key written back as text parses to the same bytes.
#![no_main]

use bloomlanes_input::key_text::{display, looks_numeric, parse};
use bloomlanes_input::KeyType;
use libfuzzer_sys::fuzz_target;

const TYPES: [KeyType; 16] = [
    KeyType::Bytes,
    KeyType::U64,
    KeyType::I64,
    KeyType::U32,
    KeyType::I32,
    KeyType::F32,
    KeyType::F64,
    KeyType::Date32,
    KeyType::TimestampMillis,
    KeyType::TimestampMicros,
    KeyType::TimestampNanos,
    KeyType::FixedBytes(16),
    KeyType::FixedBytes(3),
    KeyType::Flow,
    KeyType::FixedBytes(13),
    KeyType::Any,
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, text)) = data.split_first() else {
        return;
    };
    let ty = TYPES[usize::from(which) % TYPES.len()];
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
