//! The grouping passes and the grouped inserts on the CPU, launched as `partition/passes.rs` and
//! `radix.rs` launch them: the histogram (dynamic shared bins, grid-stride), the scan (with the
//! coarse segments of two levels), the one-level scatter with and without key positions, the
//! radix grouping in one and two levels (fan-outs from 1 to 256, up to 32,761 partitions), and
//! the inserts of the grouped hashes (the bulk-reduce kernel's host fallback and the slice
//! insert, into a static image and into a sliding window's generation), against core.

use bloomlanes_core::{Filter, Layout, Params};
use bloomlanes_gpu::{kernel_source, KernelModule};
use rand::{Rng, SeedableRng};

use super::{ctas, hashes, Arg, Emulator, Emulators, Job, Output, KEYS_PER_THREAD, THREADS};

/// A `#define` of the generated prelude (the kernels' own tile sizes).
fn define(layout: Layout, name: &str) -> u64 {
    let src = kernel_source(layout, KernelModule::Static);
    let line = format!("#define {name} ");
    let at = src.find(&line).unwrap_or_else(|| panic!("{name}")) + line.len();
    src[at..].lines().next().unwrap().trim().parse().unwrap()
}

/// Partitions of a grouping and how many are coarse (0: one level).
type Grouping = (u32, u32);

/// A batch and how it is grouped: `parts` partitions, `coarse` of them coarse (0: one level).
struct Case<'a> {
    layout: Layout,
    params: Params,
    keys: &'a [u64],
    mode: u64,
    parts: u32,
    coarse: u32,
    what: String,
}

/// The buffers of one grouping in a job.
struct Bufs {
    keys: Arg,
    counts: Arg,
    cursor: Arg,
    grouped: Arg,
    staging: Arg,
    segments: [Arg; 3],
}

impl Case<'_> {
    fn n(&self) -> u64 {
        self.keys.len() as u64
    }

    fn hashes(&self) -> Vec<u64> {
        hashes(self.keys, self.mode, self.params.seed)
    }

    fn part(&self, h: u64, parts: u32) -> u32 {
        (((h >> 32) * u64::from(parts)) >> 32) as u32
    }

    /// Whether `hashes` stand in the order of their partitions (of `parts`).
    fn in_part_order(&self, hashes: &[u64], parts: u32) -> bool {
        hashes
            .windows(2)
            .all(|w| self.part(w[0], parts) <= self.part(w[1], parts))
    }

    /// The buffers of a grouping (filled with junk where the kernels must write).
    fn buffers(&self, j: &mut Job) -> Bufs {
        let n = self.keys.len();
        let fanout = 257;
        Bufs {
            keys: j.buffer(self.keys),
            // Zeroed, as the launcher does before the histogram.
            counts: j.buffer(&vec![0u32; self.parts as usize]),
            cursor: j.buffer(&vec![u32::MAX; self.parts as usize]),
            grouped: j.buffer(&vec![u64::MAX; n.max(1)]),
            staging: j.buffer(&vec![u64::MAX; n.max(1)]),
            segments: [0; 3].map(|_| j.buffer(&vec![u32::MAX; fanout])),
        }
    }

    /// Passes 1 and 2: the histogram (on 3 CTAs, so that the grid-stride loop wraps) and the
    /// scan.
    fn counts(&self, j: &mut Job, b: &Bufs) {
        let v = |x: u64| Arg::Val(x);
        let (n, seed, parts) = (self.n(), self.params.seed, u64::from(self.parts));
        j.launch(
            "bl_part_hist",
            3,
            parts * 4,
            &[b.keys, v(n), v(seed), v(self.mode), v(parts), b.counts],
        );
        let [cc, seg, tiles] = if self.coarse == 0 {
            [Arg::Null; 3]
        } else {
            b.segments
        };
        j.launch(
            "bl_part_scan",
            1,
            0,
            &[
                b.counts,
                v(parts),
                b.cursor,
                v(u64::from(self.coarse)),
                cc,
                seg,
                tiles,
            ],
        );
    }

    /// Pass 3: the radix grouping's scatter(s) into `b.grouped`.
    fn scatter(&self, j: &mut Job, b: &Bufs) {
        let v = |x: u64| Arg::Val(x);
        let tile = THREADS * define(self.layout, "BL_SKPT");
        let (n, seed) = (self.n(), self.params.seed);
        if self.coarse == 0 {
            let args = [
                b.keys,
                v(n),
                v(seed),
                v(self.mode),
                v(u64::from(self.parts)),
                b.cursor,
                b.grouped,
            ];
            j.launch("bl_radix_scatter_keys", ctas(n, tile), 0, &args);
            return;
        }
        let coarse = u64::from(self.coarse);
        let fine = u64::from(self.parts / self.coarse);
        let [cc, seg, tiles] = b.segments;
        let args = [
            b.keys,
            v(n),
            v(seed),
            v(self.mode),
            v(coarse),
            cc,
            b.staging,
        ];
        j.launch("bl_radix_scatter_keys", ctas(n, tile), 0, &args);
        let args = [
            b.staging,
            v(n),
            v(coarse),
            v(fine),
            seg,
            tiles,
            b.cursor,
            b.grouped,
        ];
        j.launch(
            "bl_radix_scatter_hashes",
            n.div_ceil(tile) + coarse,
            0,
            &args,
        );
    }

    /// Checks the counts and the scan of a job that ran only passes 1 and 2.
    fn check_counts(&self, got: &Output, b: &Bufs) {
        let what = &self.what;
        let mut want = vec![0u32; self.parts as usize];
        for h in self.hashes() {
            want[self.part(h, self.parts) as usize] += 1;
        }
        assert_eq!(got.get::<u32>(b.counts), want, "{what}: histogram");
        let starts: Vec<u32> = want
            .iter()
            .scan(0u32, |run, &c| {
                *run += c;
                Some(*run - c)
            })
            .collect();
        assert_eq!(got.get::<u32>(b.cursor), starts, "{what}: scan");
        if self.coarse == 0 {
            return;
        }
        let (coarse, fine) = (self.coarse as usize, (self.parts / self.coarse) as usize);
        let tile = (THREADS * define(self.layout, "BL_SKPT")) as u32;
        let [cc, seg, tiles] = b.segments.map(|a| got.get::<u32>(a));
        let mut before = 0;
        for c in 0..coarse {
            assert_eq!(seg[c], starts[c * fine], "{what}: segment {c}");
            assert_eq!(cc[c], starts[c * fine], "{what}: coarse cursor {c}");
            assert_eq!(tiles[c], before, "{what}: tiles before {c}");
            let end = if c + 1 < coarse {
                starts[(c + 1) * fine]
            } else {
                self.n() as u32
            };
            before += (end - seg[c]).div_ceil(tile);
        }
        assert_eq!(
            (seg[coarse], tiles[coarse]),
            (self.n() as u32, before),
            "{what}: totals"
        );
    }

    /// Checks a grouping: `grouped` holds the batch's hashes in partition order (and, of two
    /// levels, the staging in coarse order), and the cursors end at each partition's end.
    fn check_grouped(&self, got: &Output, b: &Bufs) {
        let what = &self.what;
        let n = self.keys.len();
        let grouped: Vec<u64> = got.get::<u64>(b.grouped)[..n].to_vec();
        let parts = self.parts;
        assert!(self.in_part_order(&grouped, parts), "{what}: grouped");
        let mut want = self.hashes();
        let mut sorted = grouped.clone();
        want.sort_unstable();
        sorted.sort_unstable();
        assert!(sorted == want, "{what}: the same hashes");
        let ends = got.get::<u32>(b.cursor);
        for (q, &end) in ends.iter().enumerate() {
            let want = grouped.partition_point(|&h| self.part(h, parts) <= q as u32);
            assert_eq!(end as usize, want, "{what}: end of partition {q}");
        }
        if self.coarse > 0 {
            let staged = &got.get::<u64>(b.staging)[..n];
            assert!(
                self.in_part_order(staged, self.coarse),
                "{what}: level 1 grouped by coarse partition"
            );
        }
    }
}

/// Random words with about one bit in eight set (inserts OR into whatever the image holds).
fn sparse_words(r: &mut impl Rng, len: usize) -> Vec<u32> {
    (0..len)
        .map(|_| r.gen::<u32>() & r.gen::<u32>() & r.gen::<u32>())
        .collect()
}

/// Generation `gen` of `gens` interleaved by block (`block_u32s` words a block).
fn generation(words: &[u32], block_u32s: usize, gens: usize, gen: usize) -> Vec<u32> {
    words
        .chunks(block_u32s)
        .skip(gen)
        .step_by(gens)
        .flatten()
        .copied()
        .collect()
}

/// The insert of `grouped` (the grouping of `case`: its hashes and partition ends) into an image
/// of `gens` generations (generation `gen`; 1 generation: a static image) by `emu`'s module: the
/// grouped bulk insert (`sb` = 0) or slices of `sb` blocks. Generation `gen` must equal core's
/// filter after the same keys, the others stay unchanged.
#[allow(clippy::too_many_arguments)]
fn check_insert(
    emu: &Emulator,
    case: &Case<'_>,
    grouped: &(Vec<u64>, Vec<u32>),
    r: &mut impl Rng,
    gens: u32,
    gen: u32,
    sb: u64,
) {
    let (layout, params) = (case.layout, case.params);
    let u32s = layout.block_u32s();
    let before = sparse_words(r, gens as usize * params.blocks as usize * u32s);
    let mut j = Job::default();
    let words = j.buffer(&before);
    let hashes = j.buffer(&grouped.0);
    let ends = j.buffer(&grouped.1);
    let v = |x: u64| Arg::Val(x);
    let (n, blocks) = (case.n(), u64::from(params.blocks));
    let window = if gens > 1 { "_window" } else { "" };
    let geo = if gens > 1 {
        vec![v(u64::from(gens)), v(u64::from(gen))]
    } else {
        vec![]
    };
    let kernel = if sb == 0 {
        let mut args = vec![words, v(blocks), hashes, v(n), v(params.seed)];
        args.extend(&geo);
        let grid = ctas(n, THREADS * KEYS_PER_THREAD);
        j.launch(&format!("bl_insert_hash_bulk{window}"), grid, 0, &args);
        "grouped bulk".to_string()
    } else {
        let parts = u64::from(case.parts);
        let mut args = vec![words, v(blocks), hashes, v(n), ends, v(parts), v(sb)];
        args.extend(&geo);
        let smem = sb * layout.block_bytes() as u64;
        j.launch(
            &format!("bl_insert_slices{window}"),
            ctas(blocks, sb),
            smem,
            &args,
        );
        format!("slices of {sb}")
    };
    let got = emu.run(&j).get::<u32>(words);
    let what = format!("{} {kernel}, {gens} generations", case.what);
    for g in 0..gens as usize {
        let mut f = Filter::new(params);
        f.words_mut()
            .copy_from_slice(&generation(&before, u32s, gens as usize, g));
        if g == gen as usize {
            for h in case.hashes() {
                f.insert_hash(h);
            }
        }
        let have = generation(&got, u32s, gens as usize, g);
        assert!(have == f.words(), "{what}: generation {g}");
    }
}

/// The one-level scatter of the partitioned insert and lookups (`bl_part_scatter`, with positions
/// `bl_part_scatter_pos`): every hash once, grouped by partition, and each position its key's.
fn check_one_level(emu: &Emulator, case: &Case<'_>) {
    let v = |x: u64| Arg::Val(x);
    let (n, seed, parts) = (case.n(), case.params.seed, u64::from(case.parts));
    for positions in [false, true] {
        let mut j = Job::default();
        let b = case.buffers(&mut j);
        let pos = j.buffer(&vec![u32::MAX; case.keys.len().max(1)]);
        case.counts(&mut j, &b);
        let mut args = vec![
            b.keys,
            v(n),
            v(seed),
            v(case.mode),
            v(parts),
            b.cursor,
            b.grouped,
        ];
        let (kernel, kpt) = if positions {
            args.push(pos);
            ("bl_part_scatter_pos", define(case.layout, "BL_SKPT_POS"))
        } else {
            ("bl_part_scatter", define(case.layout, "BL_SKPT"))
        };
        j.launch(kernel, ctas(n, THREADS * kpt), 0, &args);
        let got = emu.run(&j);
        case.check_grouped(&got, &b);
        if positions {
            let (grouped, pos) = (got.get::<u64>(b.grouped), got.get::<u32>(pos));
            let hashes = case.hashes();
            for i in 0..case.keys.len() {
                assert_eq!(
                    hashes[pos[i] as usize], grouped[i],
                    "{}: position {i}",
                    case.what
                );
            }
        }
    }
}

#[test]
fn grouping_passes_and_grouped_inserts_equal_the_core_when_run_on_the_cpu() {
    let test = "grouping_passes_and_grouped_inserts_equal_the_core_when_run_on_the_cpu";
    let Some(emulators) = Emulators::new(test, "radix") else {
        return;
    };
    let mut r = rand::rngs::StdRng::seed_from_u64(0x7ad1);
    for layout in Layout::ALL {
        let emu = emulators.build(layout, KernelModule::Static);
        let window = emulators.build(layout, KernelModule::Window);
        // (blocks, keys, (partitions, coarse) of the groupings tried)
        let cases: [(u32, usize, &[Grouping]); 5] = [
            (1, 1, &[(1, 0), (6, 2)]),
            (7, 4095, &[(7, 0), (256, 0), (6, 2)]),
            (1000, 4097, &[(1, 0), (16 * 16, 16), (2 * 256, 2)]),
            (65_537, 30_011, &[(255, 0), (37 * 50, 37), (181 * 181, 181)]),
            (3000, 12_000, &[(64, 0), (9 * 9, 9)]),
        ];
        for (ci, (blocks, n, groupings)) in cases.into_iter().enumerate() {
            let seed = r.gen::<u64>();
            let params = Params::new(layout, blocks).with_seed(seed);
            // The last case: one key 12,000 times, so that one partition takes the batch.
            let keys: Vec<u64> = if ci == 4 {
                vec![r.gen(); n]
            } else {
                (0..n).map(|_| r.gen()).collect()
            };
            for &(parts, coarse) in groupings {
                let mode = r.gen_range(0..2u64);
                let case = Case {
                    layout,
                    params,
                    keys: &keys,
                    mode,
                    parts,
                    coarse,
                    what: format!("{layout} {blocks} blocks, {n} keys (mode {mode}), {parts} partitions ({coarse} coarse)"),
                };
                let mut j = Job::default();
                let b = case.buffers(&mut j);
                case.counts(&mut j, &b);
                case.check_counts(&emu.run(&j), &b);
                if parts as usize <= 2048 {
                    check_one_level(&emu, &case);
                }
                // The grouped bulk insert, and slices of one block (small images), a third of
                // the image and all of it, at most 256 KiB each (at most 64 CTAs: each emulated
                // CTA is 256 fibers).
                let cap = (256u64 << 10) / layout.block_bytes() as u64;
                let whole = u64::from(blocks).min(cap);
                let third = u64::from(blocks).div_ceil(3).min(cap);
                let first = if blocks <= 64 {
                    1
                } else {
                    5.max(u64::from(blocks) / 64)
                };
                let mut j = Job::default();
                let b = case.buffers(&mut j);
                case.counts(&mut j, &b);
                case.scatter(&mut j, &b);
                let got = emu.run(&j);
                case.check_grouped(&got, &b);
                let grouped = (got.get::<u64>(b.grouped), got.get::<u32>(b.cursor));
                for sb in [0, first.min(cap), third, whole] {
                    check_insert(&emu, &case, &grouped, &mut r, 1, 0, sb);
                }
                let gen = r.gen_range(0..3);
                check_insert(&window, &case, &grouped, &mut r, 3, gen, third);
                check_insert(&window, &case, &grouped, &mut r, 2, 1, 0);
            }
        }
    }
}
