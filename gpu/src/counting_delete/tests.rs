//! The delete semantics checked on the CPU: a model of the kernels (check against the state
//! before the attempt, decrements in a scrambled order that never go below 0, exact undo)
//! driven by [`delete_in_order`] must give the core's sequential delete, key by key.
use super::*;
use crate::kernel::STATUS_ACCEPTED as ACCEPTED;
use bloomlanes_core::counting::{cell, counter, set_counter};
use bloomlanes_core::{CounterBits, CountingFilter, Layout, Params, RemoveError};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// The kernels' semantics over a core filter's words.
struct Model {
    params: Params,
    bits: CounterBits,
    image: Vec<u32>,
    counters: Vec<u32>,
    hashes: Vec<u64>,
    status: Vec<u32>,
    rng: rand::rngs::StdRng,
    attempts: usize,
}

impl Model {
    fn has(&self, h: u64) -> bool {
        let l = self.params.layout;
        (0..l.lanes()).all(|lane| {
            let k = cell(l, self.params.blocks, h, lane);
            self.image[(k / 32) as usize] >> (k % 32) & 1 == 1
        })
    }
}

impl DeleteSteps for Model {
    type Error = ();

    fn attempt(&mut self, r: Range<usize>) -> Result<Attempt, ()> {
        self.attempts += 1;
        let mut a = Attempt::default();
        for i in r.clone() {
            let ok = self.has(self.hashes[i]);
            self.status[i] = if ok { ACCEPTED } else { 0 };
            a.accepted += u64::from(ok);
        }
        let l = self.params.layout;
        let mut work: Vec<(usize, usize)> = r
            .filter(|&i| self.status[i] & ACCEPTED != 0)
            .flat_map(|i| (0..l.lanes()).map(move |lane| (i, lane)))
            .collect();
        work.shuffle(&mut self.rng);
        let max = self.bits.max();
        for (i, lane) in work {
            let k = cell(l, self.params.blocks, self.hashes[i], lane);
            let v = counter(&self.counters, self.bits, k);
            if v == 0 {
                a.underflows += 1;
            } else if v < max {
                set_counter(&mut self.counters, self.bits, k, v - 1);
                self.status[i] |= 1 << lane;
                if v == 1 {
                    self.image[(k / 32) as usize] &= !(1 << (k % 32));
                }
            }
        }
        Ok(a)
    }

    fn undo(&mut self, r: Range<usize>) -> Result<(), ()> {
        let l = self.params.layout;
        for i in r {
            for lane in 0..l.lanes() {
                if self.status[i] >> lane & 1 == 1 {
                    let k = cell(l, self.params.blocks, self.hashes[i], lane);
                    let v = counter(&self.counters, self.bits, k);
                    set_counter(&mut self.counters, self.bits, k, v + 1);
                    self.image[(k / 32) as usize] |= 1 << (k % 32);
                }
            }
        }
        Ok(())
    }
}

#[test]
fn parallel_attempts_split_on_underflow_give_the_core_sequential_delete() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    let mut retried = 0;
    for round in 0..400 {
        let layout = Layout::ALL[round % 4];
        let bits = if round % 2 == 0 {
            CounterBits::Four
        } else {
            CounterBits::Eight
        };
        // Tiny filters, so keys share counters, saturate and pass as false positives.
        let blocks = rng.gen_range(1..4);
        let params = Params::new(layout, blocks).with_seed(rng.gen());
        let mut core = CountingFilter::counting(params, bits);
        let pool: Vec<u64> = (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect();
        for _ in 0..rng.gen_range(0..120) {
            core.insert_hash(*pool.choose(&mut rng).unwrap());
        }
        // A batch of present keys, keys deleted twice, and keys never inserted.
        let batch: Vec<u64> = (0..rng.gen_range(0..60))
            .map(|_| {
                if rng.gen_bool(0.8) {
                    *pool.choose(&mut rng).unwrap()
                } else {
                    rng.gen()
                }
            })
            .collect();
        let mut model = Model {
            params: *core.params(),
            bits,
            image: core.image_words().to_vec(),
            counters: core.counter_words().to_vec(),
            hashes: batch.clone(),
            status: vec![0; batch.len()],
            rng: rand::rngs::StdRng::seed_from_u64(round as u64),
            attempts: 0,
        };
        let tally = delete_in_order(&mut model, 0..batch.len(), false).unwrap();
        let mut want = Vec::new();
        for &h in &batch {
            match core.remove_hash(h) {
                Ok(()) => want.push(true),
                Err(RemoveError::NotPresent) => want.push(false),
                Err(e) => panic!("{e}"),
            }
        }
        let got: Vec<bool> = model.status.iter().map(|s| s & ACCEPTED != 0).collect();
        let what = format!("round {round}: {layout} {blocks} blocks {bits:?}");
        assert_eq!(got, want, "{what}: per-key results");
        assert_eq!(model.image, core.image_words(), "{what}: image");
        assert_eq!(model.counters, core.counter_words(), "{what}: counters");
        assert_eq!(
            tally.deleted,
            want.iter().filter(|&&w| w).count() as u64,
            "{what}: deleted count"
        );
        let attempts = if batch.is_empty() {
            0
        } else {
            1 + 2 * tally.retries
        };
        assert_eq!(model.attempts as u64, attempts, "{what}: attempts");
        retried += u64::from(tally.retries > 0);
    }
    // The rounds must exercise the undo-and-split path, not only clean batches.
    assert!(retried > 20, "only {retried} rounds conflicted");
}

/// Records the ranges the driver asks for; `fail` decides which attempts underflow.
struct Script {
    calls: Vec<(char, Range<usize>)>,
    fail: fn(&Range<usize>) -> bool,
}

impl DeleteSteps for Script {
    type Error = ();
    fn attempt(&mut self, r: Range<usize>) -> Result<Attempt, ()> {
        self.calls.push(('a', r.clone()));
        Ok(Attempt {
            accepted: r.len() as u64,
            underflows: u64::from((self.fail)(&r)),
        })
    }
    fn undo(&mut self, r: Range<usize>) -> Result<(), ()> {
        self.calls.push(('u', r));
        Ok(())
    }
}

#[test]
fn the_driver_splits_failed_ranges_in_input_order_down_to_single_keys() {
    // Every range of more than one key fails: the driver ends with single keys, in order.
    let mut s = Script {
        calls: Vec::new(),
        fail: |r| r.len() > 1,
    };
    let t = delete_in_order(&mut s, 0..5, false).unwrap();
    assert_eq!(t.deleted, 5);
    let stood: Vec<Range<usize>> = s
        .calls
        .iter()
        .enumerate()
        .filter(|(i, (op, _))| *op == 'a' && s.calls.get(i + 1).is_none_or(|c| c.0 == 'a'))
        .map(|(_, (_, r))| r.clone())
        .collect();
    assert_eq!(stood, (0..5).map(|i| i..i + 1).collect::<Vec<_>>());
    assert_eq!(t.retries, 4, "4 splits make 5 single keys");
    // A clean batch is one attempt; an already failed one starts with its halves.
    let mut s = Script {
        calls: Vec::new(),
        fail: |_| false,
    };
    assert_eq!(delete_in_order(&mut s, 3..9, false).unwrap().retries, 0);
    assert_eq!(s.calls, [('a', 3..9)]);
    let mut s = Script {
        calls: Vec::new(),
        fail: |_| false,
    };
    delete_in_order(&mut s, 3..9, true).unwrap();
    assert_eq!(s.calls, [('a', 3..6), ('a', 6..9)]);
    // An empty batch does nothing; a single failed key is not split again.
    let mut s = Script {
        calls: Vec::new(),
        fail: |_| true,
    };
    assert_eq!(
        delete_in_order(&mut s, 0..0, false).unwrap(),
        Tally::default()
    );
    delete_in_order(&mut s, 7..8, true).unwrap();
    assert_eq!(s.calls, [('a', 7..8)]);
}
