//! Shared helpers of the integration tests.
#![allow(dead_code)]

use bloomlanes_core::{FilterMut, FilterRef, Keys, Layout, Params, Records, Strings};
use bloomlanes_simd::{available_paths, PartitionMode, Partitioning, Probe, SimdPath};
use proptest::prelude::*;

/// Every path this CPU runs; paths it cannot run are named on stderr (skipped, not failed).
pub fn paths() -> Vec<Probe> {
    static SAY: std::sync::Once = std::sync::Once::new();
    SAY.call_once(|| {
        for p in SimdPath::ALL {
            if !p.is_available() {
                bloomlanes_testkit::skip(format_args!(
                    "SIMD path `{p}` is not available on this CPU; its tests did not run"
                ));
            }
        }
    });
    available_paths()
        .into_iter()
        .map(|p| Probe::new(p).expect("available"))
        .collect()
}

/// The four key forms.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    U64,
    Hashes,
    Records(usize),
    Strings,
}

/// Owned storage for a batch of one form, built from `keys`; byte forms start one byte into
/// their buffer so that nothing is aligned.
pub struct Batch {
    form: Form,
    ints: Vec<u64>,
    bytes: Vec<u8>,
    offsets: Vec<u64>,
}

impl Batch {
    pub fn new(form: Form, keys: &[u64]) -> Batch {
        let mut bytes = vec![0xa5u8];
        let mut offsets = vec![0u64];
        match form {
            Form::U64 | Form::Hashes => {}
            Form::Records(w) => {
                for &k in keys {
                    for j in 0..w {
                        bytes.push((k >> (8 * (j % 8))) as u8 ^ (j / 8) as u8);
                    }
                }
            }
            Form::Strings => {
                for &k in keys {
                    let len = (k % 41) as usize;
                    for j in 0..len {
                        bytes.push((k >> (8 * (j % 8))) as u8 ^ j as u8);
                    }
                    offsets.push((bytes.len() - 1) as u64);
                }
            }
        }
        Batch {
            form,
            ints: keys.to_vec(),
            bytes,
            offsets,
        }
    }

    pub fn keys(&self) -> Keys<'_> {
        match self.form {
            Form::U64 => Keys::U64(&self.ints),
            Form::Hashes => Keys::Hashes(&self.ints),
            Form::Records(w) => Keys::Records(Records::new(&self.bytes[1..], w).unwrap()),
            Form::Strings => Keys::Strings(Strings::new(&self.bytes[1..], &self.offsets).unwrap()),
        }
    }
}

/// The reference insert of `keys`.
pub fn ref_insert(params: Params, words: &mut [u32], keys: Keys<'_>) {
    let mut f = FilterMut::new(params, words).unwrap();
    for i in 0..keys.len() {
        f.insert_hash(keys.hash(i, params.seed));
    }
}

/// The reference lookup of `keys`.
pub fn ref_contains(params: Params, words: &[u32], keys: Keys<'_>) -> Vec<u8> {
    let f = FilterRef::new(params, words).unwrap();
    (0..keys.len())
        .map(|i| u8::from(f.contains_hash(keys.hash(i, params.seed))))
        .collect()
}

/// Bytes → packed bitmap.
pub fn pack(bytes: &[u8]) -> Vec<u64> {
    let mut out = vec![0u64; bytes.len().div_ceil(64)];
    for (i, &b) in bytes.iter().enumerate() {
        out[i / 64] |= u64::from(b) << (i % 64);
    }
    out
}

/// A small deterministic generator (splitmix64).
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Any layout.
pub fn layout() -> impl Strategy<Value = Layout> {
    prop::sample::select(Layout::ALL.to_vec())
}

/// A filter's shape: any layout, 1, 2, 3 or up to `max_blocks` blocks, any seed.
pub fn shape(max_blocks: u32) -> impl Strategy<Value = Params> {
    let blocks = prop_oneof![Just(1u32), Just(2), Just(3), 1..max_blocks];
    (layout(), blocks, any::<u64>()).prop_map(|(l, b, s)| Params::new(l, b).with_seed(s))
}

/// Any key form (records of 1 to 39 bytes).
pub fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        3 => Just(Form::U64),
        1 => Just(Form::Hashes),
        1 => (1usize..40).prop_map(Form::Records),
        1 => Just(Form::Strings),
    ]
}

/// Keys drawn from a small pool (so that batches repeat keys and share cells) or at random.
pub fn pooled_keys(pool: u64, max: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(prop_oneof![3 => 0..pool, 1 => any::<u64>()], 0..max)
}

/// Forced partitioning with small sizes (0: the default size).
pub fn forced(slice_bytes: usize, round_keys: usize, task_keys: usize) -> Partitioning {
    Partitioning {
        mode: PartitionMode::Partitioned,
        slice_bytes,
        round_keys,
        task_keys,
        min_part_keys: 0,
        ..Partitioning::default()
    }
}

/// `probe` with partitioning settings that make small batches take several partitions (one
/// block each, or four), rounds and producers, each sequential and on every core. Long batches
/// (`keys` over 1000) get the default sizes and 64 KiB slices instead (tiny rounds of a long
/// batch would take minutes).
pub fn partitioned(probe: Probe, keys: usize) -> Vec<(Probe, bool)> {
    let sizes: &[(usize, usize, usize)] = if keys > 1000 {
        &[(0, 0, 0), (64 << 10, 0, 1 << 14)]
    } else {
        &[(1, 128, 64), (4 * 288, 0, 0), (1, 0, 64)]
    };
    sizes
        .iter()
        .flat_map(|&(s, r, t)| {
            let p = probe.with_partitioning(forced(s, r, t));
            [(p, false), (p, true)]
        })
        .collect()
}

/// `len` filter words with about one bit in eight set, drawn from `seed`.
pub fn sparse_words(len: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..len)
        .map(|_| (splitmix(&mut state) & splitmix(&mut state) & splitmix(&mut state)) as u32)
        .collect()
}

/// `probe`'s lookups of `keys` in `view`, into bytes and into a bitmap, against `want`.
pub fn lookups_match(
    probe: &Probe,
    view: FilterRef<'_, u32>,
    keys: Keys<'_>,
    want: &[u8],
) -> Result<(), TestCaseError> {
    let mut hits = vec![7u8; want.len()];
    probe.contains(view, keys, &mut hits);
    prop_assert_eq!(&hits[..], want, "contains on {}", probe.path());
    let mut bits = vec![u64::MAX; want.len().div_ceil(64)];
    probe.contains_bitmap(view, keys, &mut bits);
    prop_assert_eq!(&bits, &pack(want), "contains_bitmap on {}", probe.path());
    Ok(())
}
