//! XXH64 as a pipeline on the [`Pipe`] builder, step by step like `bloomlanes_core::xxh64`:
//! every 64×64 multiply by a prime is a set of registered partial products and a pipelined adder
//! tree ([`Arith::mulc`]), so no stage holds more than one table lookup or one narrow adder.
//! Two forms: fixed-width keys (the steps unrolled for the width) and variable-length keys up
//! to 64 bytes (every step present, enabled by the length; one key per clock either way).

use bloomlanes_core::xxh64::{
    lane_init, short_init, AVALANCHE_SHIFTS, MERGE_ROTATES, PRIME64_1, PRIME64_2, PRIME64_3,
    PRIME64_4, PRIME64_5, ROUND_ROTATE, TAIL1_ROTATE, TAIL4_ROTATE, TAIL8_ROTATE,
};

use crate::arith::{Arith, Term};
use crate::pipe::{Op, Pipe, V};

/// The bits of a 2-bit count `n` (0 to 3) and the enables of items 0, 1, 2 (`n > i`).
fn count_enables(p: &mut Pipe, n: V) -> ([V; 2], [V; 3]) {
    let b0 = p.slice(n, 0, 1);
    let b1 = p.slice(n, 1, 1);
    let nz = p.wire(Op::Or(b0, b1), 1, "nz");
    let three = p.wire(Op::Eq(n, 3), 1, "n3");
    ([b0, b1], [nz, b1, three])
}

/// Largest key length of the variable-length hash.
pub(crate) const VAR_MAX: usize = 64;

struct H<'a> {
    p: &'a mut Pipe,
    a: Arith,
}

/// The accumulator of a round: a constant or a value.
#[derive(Clone, Copy)]
enum Acc {
    K(u64),
    V(V),
}

impl H<'_> {
    fn mul(&mut self, x: V, k: u64, c: u64) -> V {
        self.a.mulc(self.p, x, k, 64, Vec::new(), c)
    }

    fn mul_plus(&mut self, x: V, k: u64, extra: V, c: u64) -> V {
        self.a.mulc(self.p, x, k, 64, vec![Term::new(extra, 0)], c)
    }

    /// `rotl(acc + p, 31) * PRIME64_1` where `p = input * PRIME64_2` is given.
    fn round_p(&mut self, acc: Acc, pv: V) -> V {
        let s = match acc {
            Acc::K(0) => pv,
            Acc::K(k) => {
                let kv = self.p.konst(k, 64);
                self.a
                    .sum(self.p, vec![Term::new(pv, 0), Term::new(kv, 0)], 64)
            }
            Acc::V(v) => self
                .a
                .sum(self.p, vec![Term::new(pv, 0), Term::new(v, 0)], 64),
        };
        let r = self.p.rotl(s, ROUND_ROTATE);
        self.mul(r, PRIME64_1, 0)
    }

    /// `round(0, v)`.
    fn round0(&mut self, v: V) -> V {
        let pv = self.mul(v, PRIME64_2, 0);
        self.round_p(Acc::K(0), pv)
    }

    /// `rotl(h ^ x, r) * k + c` (`h` may be a constant node).
    fn step(&mut self, h: V, x: V, r: u32, k: u64, c: u64) -> V {
        let t = self.p.xor(h, x);
        let t = self.p.rotl(t, r);
        self.mul(t, k, c)
    }

    /// The avalanche, with its last xor-shift: the final hash.
    fn avalanche(&mut self, h: V) -> V {
        xorshift_multiply(self.p, self.a, h, AVALANCHE_SHIFTS, [PRIME64_2, PRIME64_3])
    }

    /// `(h ^ round(0, v)) * PRIME64_1 + PRIME64_4 (+ extra)`.
    fn merge(&mut self, h: V, v: V, extra: Option<V>, c: u64) -> V {
        let m = self.round0(v);
        let t = self.p.xor(h, m);
        match extra {
            Some(e) => self.mul_plus(t, PRIME64_1, e, PRIME64_4.wrapping_add(c)),
            None => self.mul(t, PRIME64_1, PRIME64_4.wrapping_add(c)),
        }
    }

    /// `rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)`.
    fn converge(&mut self, v: &[V; 4]) -> V {
        let terms = v
            .iter()
            .zip(MERGE_ROTATES)
            .map(|(&x, r)| Term::new(self.p.rotl(x, r), 0))
            .collect();
        self.a.sum(self.p, terms, 64)
    }

    fn mux(&mut self, sel: V, one: V, zero: V, w: u32) -> V {
        self.p.reg(Op::Mux(sel, one, zero), w, "mux")
    }

    /// A registered multiplexer tree: `inputs[index]`, `sel` least significant bit first.
    fn select(&mut self, sel: &[V], inputs: &[V], w: u32) -> V {
        let mut level: Vec<V> = inputs.to_vec();
        for (i, &s) in sel.iter().enumerate() {
            level = level
                .chunks(2)
                .map(|c| {
                    if c.len() == 1 {
                        c[0]
                    } else if i % 2 == 1 || i + 1 == sel.len() {
                        self.mux(s, c[1], c[0], w)
                    } else {
                        self.p.wire(Op::Mux(s, c[1], c[0]), w, "m")
                    }
                })
                .collect();
        }
        level[0]
    }
}

/// `h ^= h >> s0; h ×= k0; h ^= h >> s1; h ×= k1; h ^ (h >> s2)` (mod 2^64): XXH64's avalanche
/// and, with other constants, the retrieval table's `mix` (MurmurHash3's `fmix64`).
pub(crate) fn xorshift_multiply(p: &mut Pipe, a: Arith, h: V, s: [u32; 3], k: [u64; 2]) -> V {
    let mut h = h;
    for (i, &shift) in s.iter().enumerate() {
        let sh = p.wire(Op::Shr(h, shift), 64, "shr");
        h = p.xor(h, sh);
        if let Some(&k) = k.get(i) {
            h = a.mulc(p, h, k, 64, Vec::new(), 0);
        }
    }
    h
}

fn seeds(seed: u64) -> [u64; 4] {
    lane_init(seed)
}

/// XXH64 of `n` bytes (`n ≥ 1`); `key` holds the key's 64-bit words (byte `i` = bits
/// `8i+7..8i` of the concatenation, a last partial word zero-extended). Returns the final hash.
pub(crate) fn fixed(p: &mut Pipe, a: Arith, key: &[V], n: usize, seed: u64) -> V {
    let mut h = H { p, a };
    let word = |h: &mut H, j: usize| h.p.slice(key[j], 0, 64.min(8 * (n - 8 * j) as u32));
    let stripes = n / 32;
    let rest = n % 32;
    let mut hv: V;
    if stripes > 0 {
        let mut v = [Acc::K(0); 4];
        for (i, s) in seeds(seed).into_iter().enumerate() {
            v[i] = Acc::K(s);
        }
        for s in 0..stripes {
            for (i, acc) in v.iter_mut().enumerate() {
                let k = word(&mut h, 4 * s + i);
                let pv = h.mul(k, PRIME64_2, 0);
                *acc = Acc::V(h.round_p(*acc, pv));
            }
        }
        let vs = v.map(|x| match x {
            Acc::V(v) => v,
            Acc::K(_) => unreachable!(),
        });
        hv = h.converge(&vs);
        for (i, &x) in vs.iter().enumerate() {
            let c = if i == 3 { n as u64 } else { 0 };
            hv = h.merge(hv, x, None, c);
        }
    } else {
        hv = h.p.konst(short_init(seed).wrapping_add(n as u64), 64);
    }
    let base = 32 * stripes;
    for j in 0..rest / 8 {
        let k = word(&mut h, (base + 8 * j) / 8);
        let r = h.round0(k);
        hv = h.step(hv, r, TAIL8_ROTATE, PRIME64_1, PRIME64_4);
    }
    let mut off = base + 8 * (rest / 8);
    if rest % 8 >= 4 {
        let w = key[off / 8];
        let u = h.p.slice(w, 8 * (off % 8) as u32, 32);
        let q = h.mul(u, PRIME64_1, 0);
        hv = h.step(hv, q, TAIL4_ROTATE, PRIME64_2, PRIME64_3);
        off += 4;
    }
    while off < n {
        let b = h.p.slice(key[off / 8], 8 * (off % 8) as u32, 8);
        let c = h.mul(b, PRIME64_5, 0);
        hv = h.step(hv, c, TAIL1_ROTATE, PRIME64_1, 0);
        off += 1;
    }
    h.avalanche(hv)
}

/// XXH64 of a key of `len` bytes, `0 ≤ len ≤ max ≤ 64`: `key` holds `ceil(max / 8)` 64-bit
/// words, `len` is 7 bits wide. Every step exists once; the length enables it.
pub(crate) fn variable(p: &mut Pipe, a: Arith, key: &[V], len: V, max: usize, seed: u64) -> V {
    assert!((1..=VAR_MAX).contains(&max) && key.len() == max.div_ceil(8));
    let mut h = H { p, a };
    let zero = h.p.konst(0, 64);
    // A last partial word (max not a multiple of 8) is zero-extended to 64 bits.
    let key: Vec<V> = key
        .iter()
        .map(|&k| {
            let w = h.p.width(k);
            if w < 64 {
                let z = h.p.konst(0, 64 - w);
                h.p.wire(Op::Concat(vec![z, k]), 64, "kz")
            } else {
                k
            }
        })
        .collect();
    let kw = |j: usize| key.get(j).copied().unwrap_or(zero);
    // Length fields (len ≤ 64): stripes = 2 iff len = 64, 1 iff 32 ≤ len < 64.
    let eq64 = h.p.slice(len, 6, 1);
    let b5 = h.p.slice(len, 5, 1);
    let ge32 = h.p.wire(Op::Or(eq64, b5), 1, "ge32");
    let tw = h.p.slice(len, 3, 2);
    let has_u = h.p.slice(len, 2, 1);
    let tb = h.p.slice(len, 0, 2);
    // p_j = k_j * PRIME64_2 for every word that exists.
    let words = key.len();
    let pw: Vec<V> = (0..words).map(|j| h.mul(key[j], PRIME64_2, 0)).collect();
    let pz = |j: usize| pw.get(j).copied();
    let h_small = {
        let c = h.p.konst(short_init(seed), 64);
        h.a.sum(h.p, vec![Term::new(len, 0), Term::new(c, 0)], 64)
    };
    let mut hv = h_small;
    if max >= 32 {
        let sd = seeds(seed);
        let mut v = [zero; 4];
        for i in 0..4 {
            let s0 = h.round_p(Acc::K(sd[i]), pw[i]);
            v[i] = match pz(4 + i) {
                Some(p1) if max == 64 => {
                    let s1 = h.round_p(Acc::V(s0), p1);
                    h.mux(eq64, s1, s0, 64)
                }
                _ => s0,
            };
        }
        let mut hb = h.converge(&v);
        for (i, &x) in v.iter().enumerate() {
            hb = if i == 3 {
                h.merge(hb, x, Some(len), 0)
            } else {
                h.merge(hb, x, None, 0)
            };
        }
        hv = h.mux(ge32, hb, h_small, 64);
    }
    // Tail words: word j of the tail is word 4·stripes + j (stripes ≤ 1 when there is a tail).
    let ([tw0, tw1], en_w) = count_enables(h.p, tw);
    for (j, &en) in en_w.iter().enumerate() {
        if 8 * j >= max {
            break;
        }
        let src = match (pz(j), pz(4 + j)) {
            (Some(lo), Some(hi)) => h.mux(ge32, hi, lo, 64),
            (Some(lo), None) => lo,
            _ => break,
        };
        let r = h.round_p(Acc::K(0), src);
        let hn = h.step(hv, r, TAIL8_ROTATE, PRIME64_1, PRIME64_4);
        hv = h.mux(en, hn, hv, 64);
    }
    // The 4-byte word at byte 32·ge32 + 8·tw.
    if max >= 4 {
        let opts: Vec<V> = (0..8).map(|i| h.p.slice(kw(i), 0, 32)).collect();
        let sel = [tw0, tw1, ge32];
        let u = h.select(&sel, &opts, 32);
        let q = h.mul(u, PRIME64_1, 0);
        let hn = h.step(hv, q, TAIL4_ROTATE, PRIME64_2, PRIME64_3);
        hv = h.mux(has_u, hn, hv, 64);
    }
    // Up to three single bytes at byte 32·ge32 + 8·tw + 4·has_u + t.
    let (_, en_b) = count_enables(h.p, tb);
    let sel = [has_u, tw0, tw1, ge32];
    for (t, &en) in en_b.iter().enumerate() {
        if t >= max {
            break;
        }
        let opts: Vec<V> = (0..16)
            .map(|i| {
                let byte = 4 * i + t;
                let w = kw(byte / 8);
                h.p.slice(w, 8 * (byte % 8) as u32, 8)
            })
            .collect();
        let b = h.select(&sel, &opts, 8);
        let c = h.mul(b, PRIME64_5, 0);
        let hn = h.step(hv, c, TAIL1_ROTATE, PRIME64_1, 0);
        hv = h.mux(en, hn, hv, 64);
    }
    h.avalanche(hv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MulStyle;
    use std::collections::HashMap;

    struct Xs(u64);
    impl Xs {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    fn words_of(key: &[u8], words: usize) -> Vec<u64> {
        (0..words)
            .map(|j| {
                (0..8).fold(0u64, |acc, i| {
                    acc | u64::from(key.get(8 * j + i).copied().unwrap_or(0)) << (8 * i)
                })
            })
            .collect()
    }

    fn inputs(p: &mut Pipe, words: usize) -> Vec<V> {
        (0..words)
            .map(|j| p.input(&format!("k{j}"), 64, "k"))
            .collect()
    }

    fn feed(words: &[u64], len: Option<u64>) -> HashMap<String, u64> {
        let mut m: HashMap<String, u64> = words
            .iter()
            .enumerate()
            .map(|(j, w)| (format!("k{j}"), *w))
            .collect();
        if let Some(l) = len {
            m.insert("len".into(), l);
        }
        m
    }

    const STYLES: [Arith; 3] = [
        Arith {
            mul: MulStyle::Dsp,
            add_bits: 16,
        },
        Arith {
            mul: MulStyle::Lut,
            add_bits: 64,
        },
        Arith {
            mul: MulStyle::Lut,
            add_bits: 9,
        },
    ];

    #[test]
    fn fixed_width_pipeline_matches_core_xxh64() {
        let mut x = Xs(0x1234_5678_9abc_def0);
        for (si, a) in STYLES.into_iter().enumerate() {
            for n in 1..=100usize {
                if si > 0 && n % 7 != 0 && n > 40 {
                    continue;
                }
                let words = n.div_ceil(8);
                let mut p = Pipe::new();
                let k = inputs(&mut p, words);
                for seed in [0u64, 0xdead_beef_cafe_f00d] {
                    let mut q = p.clone();
                    let h = fixed(&mut q, a, &k, n, seed);
                    for _ in 0..3 {
                        let key = x.bytes(n);
                        let got = Pipe::get(&q.eval(&feed(&words_of(&key, words), None)), h);
                        assert_eq!(got, bloomlanes_core::xxh64(&key, seed), "n = {n}, {a:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn variable_length_pipeline_matches_core_xxh64_for_every_length() {
        let mut x = Xs(77);
        for a in STYLES {
            for max in [64usize, 44, 40, 13, 4, 1] {
                let words = max.div_ceil(8);
                let mut p = Pipe::new();
                // As the front end feeds it: the last word only as wide as the key input.
                let k: Vec<V> = (0..words)
                    .map(|j| {
                        let w = (8 * (max - 8 * j)).min(64) as u32;
                        p.input(&format!("k{j}"), w, "k")
                    })
                    .collect();
                let len = p.input("len", 7, "len");
                let seed = 0x5eed_0000_0000_0001;
                let h = variable(&mut p, a, &k, len, max, seed);
                for n in 0..=max {
                    for _ in 0..4 {
                        // Bytes past the length are garbage: the hash must ignore them.
                        let mut key = x.bytes(8 * words);
                        let got =
                            Pipe::get(&p.eval(&feed(&words_of(&key, words), Some(n as u64))), h);
                        key.truncate(n);
                        assert_eq!(
                            got,
                            bloomlanes_core::xxh64(&key, seed),
                            "len {n} max {max} {a:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn no_stage_holds_more_than_one_wide_operation() {
        // Every adder of the pipeline is at most add_bits (+ 1 carry) wide.
        let mut p = Pipe::new();
        let k = inputs(&mut p, 8);
        let len = p.input("len", 7, "len");
        let a = Arith {
            mul: MulStyle::Lut,
            add_bits: 16,
        };
        let _ = variable(&mut p, a, &k, len, 64, 0);
        assert!(p.widest_add() <= 17, "widest adder {}", p.widest_add());
    }
}
