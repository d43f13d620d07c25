//! Where the keys of a window insert go: the generations a batch clears and the ranges of the
//! batch each generation receives, so that the device's result equals the core's key-by-key
//! inserts ([`bloomlanes_core::WindowMut::insert_hash`] and `insert_hash_at`).
//!
//! A window counted in keys rotates before an insert into a current generation that holds `span`
//! keys. A batch of `n` keys therefore splits into segment 0 (the room left in the current
//! generation) and segments `1..=R` of `span` keys (the last possibly shorter), segment `i`
//! going into generation `(current + i) mod (g + 1)` after rotation `i` clears it. Segment `i` is
//! cleared again by rotation `i + g + 1` if the batch gets that far, so only segments
//! `R − g ..= R` survive; and every clear of a generation that holds a surviving segment happens
//! before that segment's inserts. So the plan clears the generations the batch rotates into
//! (`min(R, g + 1)` of them) first, then inserts the surviving segments: at most `g + 1` clears
//! and `g + 1` insert launches however long the batch, with the core's bits and state at the end.

use std::ops::Range;

use bloomlanes_core::WindowState;

/// The device work of one batch, and the state after it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WindowPlan {
    /// Generations to clear, before any insert.
    pub(crate) clears: Vec<u32>,
    /// Keys `range` of the batch go into generation `gen`: `(range, gen)`, non-empty ranges.
    pub(crate) inserts: Vec<(Range<usize>, u32)>,
    /// The state after the batch.
    pub(crate) end: WindowState,
}

impl WindowPlan {
    /// The plan of a batch that changes nothing (yet): the state stays `state`.
    fn at(state: WindowState) -> WindowPlan {
        WindowPlan {
            end: state,
            ..WindowPlan::default()
        }
    }
}

/// The generation `steps` rotations after `current`, of `gens`.
fn after(current: u16, steps: u64, gens: u32) -> u32 {
    ((u64::from(current) + steps) % u64::from(gens)) as u32
}

/// The generations cleared by rotations `1..=rotations` from `current` (each at most once).
fn cleared(current: u16, rotations: u64, gens: u32) -> Vec<u32> {
    (1..=rotations.min(u64::from(gens)))
        .map(|r| after(current, r, gens))
        .collect()
}

/// The plan for `n` keys into a window counted in keys with `gens = g + 1` generations of `span`
/// keys (`span ≥ 1`), from `state`.
pub(crate) fn plan_keys(state: WindowState, gens: u32, span: u64, n: usize) -> WindowPlan {
    let (mut plan, span) = (WindowPlan::at(state), span.max(1));
    if n == 0 {
        return plan;
    }
    let room = span.saturating_sub(state.keys_in_current);
    let n64 = n as u64;
    if n64 <= room {
        plan.inserts.push((0..n, u32::from(state.current)));
        plan.end.keys_in_current = state.keys_in_current + n64;
        return plan;
    }
    let rest = n64 - room;
    let rotations = rest.div_ceil(span);
    plan.clears = cleared(state.current, rotations, gens);
    let g = u64::from(gens) - 1;
    // Segment i covers keys [start(i), start(i + 1)) of the batch.
    let start = |i: u64| -> usize {
        if i == 0 {
            0
        } else {
            (room + (i - 1) * span).min(n64) as usize
        }
    };
    for i in rotations.saturating_sub(g)..=rotations {
        let r = start(i)..start(i + 1).min(n);
        if !r.is_empty() {
            plan.inserts.push((r, after(state.current, i, gens)));
        }
    }
    plan.end.current = after(state.current, rotations, gens) as u16;
    plan.end.keys_in_current = rest - (rotations - 1) * span;
    plan
}

/// The plan for `n` keys all seen at `time` (nanoseconds) into a window counted in time with
/// `gens` generations of `span` nanoseconds: the first key rotates as the core's
/// `insert_hash_at` does, the others (at the same time) never rotate again.
pub(crate) fn plan_time(
    state: WindowState,
    gens: u32,
    span: u64,
    n: usize,
    time: u64,
) -> WindowPlan {
    let mut plan = WindowPlan::at(state);
    if n == 0 {
        return plan;
    }
    let (span, end) = (span.max(1), &mut plan.end);
    if !end.started {
        end.started = true;
        end.current_start = time;
    }
    let behind = time.saturating_sub(end.current_start) / span;
    if behind > 0 {
        let rotations = behind.min(u64::from(gens));
        plan.clears = cleared(end.current, rotations, gens);
        end.current = after(end.current, rotations, gens) as u16;
        end.keys_in_current = 0;
        end.current_start = end
            .current_start
            .saturating_add(behind.saturating_mul(span));
    }
    plan.inserts.push((0..n, u32::from(end.current)));
    end.keys_in_current += n as u64;
    plan
}

/// The plan of one rotation: the next generation cleared and made current.
pub(crate) fn plan_rotate(state: WindowState, gens: u32) -> WindowPlan {
    let next = after(state.current, 1, gens);
    WindowPlan {
        clears: vec![next],
        inserts: Vec::new(),
        end: WindowState {
            current: next as u16,
            keys_in_current: 0,
            ..state
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{
        block_index, block_mask, FilterKind, Layout, Params, WindowFilter, WindowUnit,
    };
    use rand::{Rng, SeedableRng};

    /// Applies `plan` to a copy of `w`'s words the way the device does.
    fn apply(w: &WindowFilter, plan: &WindowPlan, hashes: &[u64]) -> Vec<u32> {
        let p = *w.params();
        let gens = bloomlanes_core::window::generations(&p) as usize;
        let per = p.layout.block_u32s();
        let mut words = w.words().to_vec();
        for &g in &plan.clears {
            for b in 0..p.blocks as usize {
                let at = (b * gens + g as usize) * per;
                words[at..at + per].fill(0);
            }
        }
        for (r, g) in &plan.inserts {
            for &h in &hashes[r.clone()] {
                let mask = block_mask(p.layout, h);
                let at = (block_index(h, p.blocks) as usize * gens + *g as usize) * per;
                for (w, m) in words[at..at + per].iter_mut().zip(&mask[..per]) {
                    *w |= m;
                }
            }
        }
        words
    }

    fn window(rng: &mut impl Rng, unit: WindowUnit) -> WindowFilter {
        let kind = FilterKind::Window {
            generations: rng.gen_range(1..5),
            unit,
            span: rng.gen_range(1..8),
        };
        let layout = Layout::ALL[rng.gen_range(0..4)];
        WindowFilter::new(Params::new(layout, rng.gen_range(1..4)).with_kind(kind)).unwrap()
    }

    /// Applies `plan` to a copy of `w`'s words and `insert`s `hashes` into `w` with the core:
    /// both must leave the same words and state.
    fn check_plan(
        w: &mut WindowFilter,
        plan: &WindowPlan,
        hashes: &[u64],
        insert: impl Fn(&mut WindowFilter, u64),
        round: usize,
    ) {
        let got = apply(w, plan, hashes);
        for &h in hashes {
            insert(w, h);
        }
        assert_eq!(got, w.words(), "round {round}: words");
        assert_eq!(plan.end, w.state(), "round {round}: state");
    }

    fn gens_span(w: &WindowFilter) -> (u32, u64) {
        match w.params().kind {
            FilterKind::Window {
                generations, span, ..
            } => (u32::from(generations) + 1, span),
            _ => unreachable!(),
        }
    }

    /// Runs `round` for `rounds` random windows counted in `unit` (keys windows hold some keys
    /// first), with their `(gens, span)`.
    fn each_window(
        seed: u64,
        rounds: usize,
        unit: WindowUnit,
        mut round: impl FnMut(&mut rand::rngs::StdRng, usize, WindowFilter, (u32, u64)),
    ) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for i in 0..rounds {
            let mut w = window(&mut rng, unit);
            if unit == WindowUnit::Keys {
                for _ in 0..rng.gen_range(0..30) {
                    w.insert_hash(rng.gen());
                }
            }
            let shape = gens_span(&w);
            round(&mut rng, i, w, shape);
        }
    }

    #[test]
    fn key_window_plans_give_the_core_bits_and_state() {
        let mut many_rotations = 0;
        each_window(
            17,
            500,
            WindowUnit::Keys,
            |rng, round, mut w, (gens, span)| {
                // A batch from empty up to several windows long.
                let n = rng.gen_range(0..(gens as usize + 2) * span as usize * 2);
                let hashes: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
                let plan = plan_keys(w.state(), gens, span, n);
                assert!(plan.clears.len() <= gens as usize && plan.inserts.len() <= gens as usize);
                many_rotations += usize::from(n as u64 > u64::from(gens) * span);
                check_plan(&mut w, &plan, &hashes, |w, h| w.insert_hash(h), round);
            },
        );
        assert!(
            many_rotations > 50,
            "batches longer than the window: {many_rotations}"
        );
    }

    #[test]
    fn time_window_plans_give_the_core_bits_and_state() {
        each_window(
            18,
            500,
            WindowUnit::Nanos,
            |rng, round, mut w, (gens, span)| {
                let mut time = rng.gen_range(0..1000u64);
                for _ in 0..rng.gen_range(0..6) {
                    // Batches at increasing times (sometimes far ahead, sometimes in the past).
                    time = match rng.gen_range(0..4) {
                        0 => time.saturating_sub(rng.gen_range(0..3 * span)),
                        1 => time + rng.gen_range(0..20) * span * 3,
                        _ => time + rng.gen_range(0..3 * span),
                    };
                    let n = rng.gen_range(0..12);
                    let hashes: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
                    let plan = plan_time(w.state(), gens, span, n, time);
                    let insert = |w: &mut WindowFilter, h| w.insert_hash_at(h, time);
                    check_plan(&mut w, &plan, &hashes, insert, round);
                }
            },
        );
    }

    #[test]
    fn a_rotation_clears_the_next_generation() {
        each_window(19, 100, WindowUnit::Keys, |_, _, mut w, (gens, _)| {
            let plan = plan_rotate(w.state(), gens);
            let got = apply(&w, &plan, &[]);
            w.as_view_mut().rotate();
            assert_eq!(got, w.words());
            assert_eq!(plan.end, w.state());
        });
    }
}
