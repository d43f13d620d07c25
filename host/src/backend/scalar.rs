//! The scalar reference path of `bloomlanes-core`: one key at a time, no dependencies.

use bloomlanes_core::{Filter, FilterRef, Keys};

use super::{check_out, Backend, Querier};
use crate::error::Result;

/// The scalar reference path of `bloomlanes-core`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

struct ScalarQuerier<'a> {
    view: FilterRef<'a, u32>,
}

impl Querier for ScalarQuerier<'_> {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u64]) -> Result<()> {
        check_out(&keys, out)?;
        let seed = self.view.params().seed;
        for (w, word) in out.iter_mut().enumerate() {
            let start = w * 64;
            let end = (start + 64).min(keys.len());
            *word = (start..end).fold(0u64, |acc, i| {
                acc | u64::from(self.view.contains_hash(keys.hash(i, seed))) << (i - start)
            });
        }
        Ok(())
    }
}

impl Backend for Scalar {
    fn name(&self) -> String {
        "scalar".into()
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        let seed = filter.seed();
        let mut view = filter.as_view_mut();
        for i in 0..keys.len() {
            view.insert_hash(keys.hash(i, seed));
        }
        filter.add_key_count(keys.len() as u64);
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        Ok(Box::new(ScalarQuerier { view }))
    }
}
