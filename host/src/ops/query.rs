//! Probing a batch of keys against a filter file.

use bloomlanes_core::key::{float_probes, float_probes_f32, FloatProbe};
use bloomlanes_core::{AnyFilter, Bitmap, FilterRef, HashId, KeyMatch, KeyType, Keys, Physical};

use crate::backend::{self, BackendChoice};
use crate::bulk::{self, Progress};
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::store::FilterFile;

/// The answers of a query.
#[derive(Clone, Debug)]
pub struct QueryResult {
    /// One bit per key, in input order: set if the key may be present.
    pub answers: Bitmap,
    /// Number of keys that may be present.
    pub matches: u64,
    /// The backend that answered.
    pub backend: String,
}

/// Checks that the keys of this host can be probed against `filter`: its hash must be one the
/// host computes (not caller-supplied hashes).
pub fn check_hashable(filter: &FilterFile) -> Result<()> {
    if filter.params().hash == HashId::Prehashed {
        return Err(Error::input(
            filter.path(),
            None,
            "this filter stores caller-supplied hashes (hash id 0); its keys cannot be hashed here",
        ));
    }
    Ok(())
}

/// Checks keys of type `query` against a filter of type `filter` (from the file `path`): a
/// [`KeyMatch::Mismatch`] (different byte forms: every present key would be answered "absent")
/// is an [`Error::KeyType`]; otherwise the match, for the caller to warn about
/// [`KeyMatch::SameBytes`] or note [`KeyMatch::Unchecked`] (see [`key_type_note`]).
pub fn check_key_type(path: &std::path::Path, filter: KeyType, query: KeyType) -> Result<KeyMatch> {
    match filter.check_query(query) {
        KeyMatch::Mismatch => Err(Error::KeyType {
            path: path.to_path_buf(),
            filter,
            query,
        }),
        m => Ok(m),
    }
}

/// What to tell a user about a key-type check that passed: `None` when the types are the same.
pub fn key_type_note(filter: KeyType, query: KeyType, m: KeyMatch) -> Option<String> {
    match m {
        KeyMatch::Same | KeyMatch::Mismatch => None,
        KeyMatch::SameBytes => Some(format!(
            "the filter's keys are {filter} and the query's are {query}: the same bytes, compared \
             as they are (right only if the values mean the same; query with --key-type {filter})"
        )),
        KeyMatch::Unchecked if filter == KeyType::Any => Some(format!(
            "the filter records no key type (an older file or caller-hashed keys): the query's \
             {query} keys cannot be checked against it"
        )),
        KeyMatch::Unchecked => Some(format!(
            "the query's key type is not known: it cannot be checked against the filter's {filter}"
        )),
    }
}

/// Applies the float lookup rule to answers of float keys (see
/// [`float_probes`](bloomlanes_core::key::float_probes)): a key `0.0` or `-0.0` may be present if
/// either zero is, and NaN is always "may be present", since writers hash raw bits. Keys of other
/// types are left as answered.
pub fn apply_float_probes(
    view: FilterRef<'_, u32>,
    key_type: KeyType,
    keys: Keys<'_>,
    answers: &mut Bitmap,
) {
    apply_float_rule(
        key_type,
        keys,
        answers,
        |x| view.contains(&x),
        |x| view.contains(&x),
    );
}

/// [`apply_float_probes`] for a filter of any kind (counting, stable, window, scalable: each
/// answers through its own lookup).
pub fn apply_float_probes_any(
    filter: &AnyFilter,
    key_type: KeyType,
    keys: Keys<'_>,
    answers: &mut Bitmap,
) {
    apply_float_rule(
        key_type,
        keys,
        answers,
        |x| filter.contains(&x),
        |x| filter.contains(&x),
    );
}

/// The float rule over answers, with the filter's lookup of a double and of a float.
fn apply_float_rule(
    key_type: KeyType,
    keys: Keys<'_>,
    answers: &mut Bitmap,
    has_f64: impl Fn(f64) -> bool,
    has_f32: impl Fn(f32) -> bool,
) {
    let physical = key_type.physical();
    if !matches!(physical, Physical::Float | Physical::Double) {
        return;
    }
    let bits_of = |i: usize| -> Option<u64> {
        match keys {
            Keys::U64(k) => Some(k[i]),
            Keys::Records(r) if r.width() == 8 => {
                Some(u64::from_le_bytes(r.get(i).try_into().ok()?))
            }
            Keys::Records(r) if r.width() == 4 => {
                Some(u64::from(u32::from_le_bytes(r.get(i).try_into().ok()?)))
            }
            _ => None,
        }
    };
    let double = physical == Physical::Double;
    for i in 0..keys.len() {
        let Some(bits) = bits_of(i) else { continue };
        let probe = if double {
            float_probes(f64::from_bits(bits))
        } else {
            float_probes_f32(f32::from_bits(bits as u32))
        };
        let hit = |b: u64| {
            if double {
                has_f64(f64::from_bits(b))
            } else {
                has_f32(f32::from_bits(b as u32))
            }
        };
        match probe {
            FloatProbe::Bits(_) => {}
            FloatProbe::AlwaysMaybe => answers.set(i, true),
            FloatProbe::BothZeros(a, b) => answers.set(i, hit(a) || hit(b)),
        }
    }
}

/// Probes `keys` against `filter` with the chosen backend. Keys of another byte form than the
/// filter's recorded key type are refused ([`check_key_type`]); float keys follow the ±0 / NaN
/// rule ([`apply_float_probes`]).
pub fn query(filter: &FilterFile, keys: &KeySet, choice: BackendChoice) -> Result<QueryResult> {
    query_with_progress(filter, keys, choice, &mut |_| {})
}

/// [`query`], reporting progress to `progress` (see [`bulk`]).
pub fn query_with_progress(
    filter: &FilterFile,
    keys: &KeySet,
    choice: BackendChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<QueryResult> {
    check_hashable(filter)?;
    check_key_type(filter.path(), filter.params().key_type, keys.key_type())?;
    filter.advise_lookups(keys.len());
    let engine = backend::select(choice, keys.len())?;
    let mut answers = bulk::contains(&*engine, filter.view(), keys.keys(), progress)?;
    apply_float_probes(filter.view(), keys.key_type(), keys.keys(), &mut answers);
    filter.check_unchanged()?;
    Ok(QueryResult {
        matches: answers.count_ones(),
        answers,
        backend: engine.name(),
    })
}
