//! The schedule of the pipelined XXH64: one pipeline stage per 64-bit multiply on the critical
//! path, unrolled for a fixed key width. Mirrors `bloomlanes_core::xxh64` step by step.

use std::collections::BTreeSet;

/// One register assigned in a stage: `name <= expr`, where `$x` in `expr` names variable `x` of
/// the previous stage.
pub(crate) struct Assign {
    pub name: String,
    pub width: u32,
    pub expr: String,
}

/// The unrolled hash.
pub(crate) struct Plan {
    /// Variables of stage 0: name, width, bit offset in the key input.
    pub inputs: Vec<(String, u32, u32)>,
    /// Stages 1..=H.
    pub stages: Vec<Vec<Assign>>,
}

/// Variables each stage holds (after liveness): for stage `s` (0 = inputs), name → width.
pub(crate) fn live_vars(plan: &Plan) -> Vec<Vec<(String, u32)>> {
    let h = plan.stages.len();
    // refs[s] = variables referenced by stage s (1-based).
    let refs: Vec<BTreeSet<String>> = plan
        .stages
        .iter()
        .map(|st| st.iter().flat_map(|a| refs_of(&a.expr)).collect())
        .collect();
    let mut out: Vec<Vec<(String, u32)>> = Vec::with_capacity(h + 1);
    out.push(
        plan.inputs
            .iter()
            .map(|(n, w, _)| (n.clone(), *w))
            .collect(),
    );
    for s in 1..=h {
        let assigned: Vec<(String, u32)> = plan.stages[s - 1]
            .iter()
            .map(|a| (a.name.clone(), a.width))
            .collect();
        let mut vars = assigned.clone();
        for (name, w) in &out[s - 1] {
            if assigned.iter().any(|(n, _)| n == name) {
                continue;
            }
            let used_later = refs[s..].iter().any(|r| r.contains(name)) || (s == h && name == "h");
            if used_later {
                vars.push((name.clone(), *w));
            }
        }
        out.push(vars);
    }
    out
}

/// Names referenced as `$name` in `expr`.
pub(crate) fn refs_of(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            out.push(expr[start..j].to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Replaces every `$name` in `expr` with `prefix` + `name`.
pub(crate) fn resolve(expr: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 16);
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            out.push_str(prefix);
            i += 1;
        } else {
            let start = i;
            while i < b.len() && b[i] != b'$' {
                i += 1;
            }
            out.push_str(&expr[start..i]);
        }
    }
    out
}

fn a(name: impl Into<String>, expr: impl Into<String>) -> Assign {
    Assign {
        name: name.into(),
        width: 64,
        expr: expr.into(),
    }
}

/// The plan for XXH64 over `n` bytes (`n ≥ 1`), following `bloomlanes_core::xxh64`:
/// stripes of 32 bytes into four accumulators, merge, `+ len`, then 8-byte words, a 4-byte word
/// and single bytes of the tail, then the avalanche (its last xor-shift is left to the user).
/// Constants referenced: `PRIME64_1..5`, `XXH_V1..4` (accumulator seeds), `XXH_H0`
/// (`seed + PRIME64_5 + n`), `XXH_LEN` (`n`).
pub(crate) fn plan_bytes(n: usize) -> Plan {
    let stripes = n / 32;
    let rest = n % 32;
    let tail_words = rest / 8;
    let has_u32 = rest % 8 >= 4;
    let tail_bytes = rest % 4;
    let words = 4 * stripes + tail_words;

    let mut inputs = Vec::new();
    for j in 0..words {
        inputs.push((format!("k{j}"), 64, 64 * j as u32));
    }
    let mut off = 64 * words as u32;
    if has_u32 {
        inputs.push(("u".to_string(), 32, off));
        off += 32;
    }
    for i in 0..tail_bytes {
        inputs.push((format!("b{i}"), 8, off + 8 * i as u32));
    }

    let mut stages: Vec<Vec<Assign>> = Vec::new();
    // Stage 1: every multiply of a key word by a prime, in parallel.
    let mut s1 = Vec::new();
    for j in 0..words {
        s1.push(a(format!("p{j}"), format!("$k{j} * PRIME64_2")));
    }
    if has_u32 {
        s1.push(a("q", "{32'd0, $u} * PRIME64_1"));
    }
    for i in 0..tail_bytes {
        s1.push(a(format!("c{i}"), format!("{{56'd0, $b{i}}} * PRIME64_5")));
    }
    stages.push(s1);
    // Stage 2: round(0, word) of the tail words; first stripe into the accumulators.
    let mut s2 = Vec::new();
    for j in 4 * stripes..words {
        s2.push(a(format!("r{j}"), format!("rotl64($p{j}, 31) * PRIME64_1")));
    }
    if stripes > 0 {
        for i in 1..=4 {
            s2.push(a(
                format!("v{i}"),
                format!("rotl64(XXH_V{i} + $p{}, 31) * PRIME64_1", i - 1),
            ));
        }
    }
    // Carry the tail words' p through stage 2 is not needed: r replaces them.
    if !s2.is_empty() {
        stages.push(s2);
    }
    let mut h_defined = false;
    if stripes > 0 {
        for s in 1..stripes {
            stages.push(
                (1..=4)
                    .map(|i| {
                        a(
                            format!("v{i}"),
                            format!("rotl64($v{i} + $p{}, 31) * PRIME64_1", 4 * s + i - 1),
                        )
                    })
                    .collect(),
            );
        }
        let mut m1: Vec<Assign> = (1..=4)
            .map(|i| a(format!("m{i}"), format!("$v{i} * PRIME64_2")))
            .collect();
        m1.push(a(
            "h",
            "rotl64($v1, 1) + rotl64($v2, 7) + rotl64($v3, 12) + rotl64($v4, 18)",
        ));
        stages.push(m1);
        stages.push(
            (1..=4)
                .map(|i| a(format!("m{i}"), format!("rotl64($m{i}, 31) * PRIME64_1")))
                .collect(),
        );
        for i in 1..=4 {
            let tail = if i == 4 { " + XXH_LEN" } else { "" };
            stages.push(vec![a(
                "h",
                format!("($h ^ $m{i}) * PRIME64_1 + PRIME64_4{tail}"),
            )]);
        }
        h_defined = true;
    }
    let h_src = |defined: &mut bool| -> &'static str {
        if *defined {
            "$h"
        } else {
            *defined = true;
            "XXH_H0"
        }
    };
    for j in 4 * stripes..words {
        let h = h_src(&mut h_defined);
        stages.push(vec![a(
            "h",
            format!("rotl64({h} ^ $r{j}, 27) * PRIME64_1 + PRIME64_4"),
        )]);
    }
    if has_u32 {
        let h = h_src(&mut h_defined);
        stages.push(vec![a(
            "h",
            format!("rotl64({h} ^ $q, 23) * PRIME64_2 + PRIME64_3"),
        )]);
    }
    for i in 0..tail_bytes {
        let h = h_src(&mut h_defined);
        stages.push(vec![a("h", format!("rotl64({h} ^ $c{i}, 11) * PRIME64_1"))]);
    }
    stages.push(vec![a("h", "($h ^ ($h >> 33)) * PRIME64_2")]);
    stages.push(vec![a("h", "($h ^ ($h >> 29)) * PRIME64_3")]);
    Plan { inputs, stages }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::xxh64::{PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5};

    /// A tiny evaluator of the plan's expression language, to check the schedule against core
    /// without a simulator.
    fn eval_plan(plan: &Plan, key: &[u8], seed: u64) -> u64 {
        use std::collections::HashMap;
        let n = key.len() as u64;
        let mut consts: HashMap<&str, u64> = HashMap::new();
        consts.insert("PRIME64_1", PRIME64_1);
        consts.insert("PRIME64_2", PRIME64_2);
        consts.insert("PRIME64_3", PRIME64_3);
        consts.insert("PRIME64_4", PRIME64_4);
        consts.insert("PRIME64_5", PRIME64_5);
        consts.insert(
            "XXH_V1",
            seed.wrapping_add(PRIME64_1).wrapping_add(PRIME64_2),
        );
        consts.insert("XXH_V2", seed.wrapping_add(PRIME64_2));
        consts.insert("XXH_V3", seed);
        consts.insert("XXH_V4", seed.wrapping_sub(PRIME64_1));
        consts.insert("XXH_H0", seed.wrapping_add(PRIME64_5).wrapping_add(n));
        consts.insert("XXH_LEN", n);
        let mut vars: HashMap<String, u64> = HashMap::new();
        for (name, w, off) in &plan.inputs {
            let mut v = 0u64;
            for i in 0..*w as usize / 8 {
                v |= u64::from(key[*off as usize / 8 + i]) << (8 * i);
            }
            vars.insert(name.clone(), v);
        }
        for stage in &plan.stages {
            let mut next = vars.clone();
            for asg in stage {
                next.insert(asg.name.clone(), eval(&asg.expr, &vars, &consts));
            }
            vars = next;
        }
        let h = vars["h"];
        h ^ (h >> 32)
    }

    // Recursive-descent evaluator for: expr := term (('+'|'^'|'*') term)* with the usual
    // precedence (* > + > ^), terms: $var, CONST, decimal, rotl64(e, n), (e), (e >> n), {Nd0, e}.
    fn eval(
        expr: &str,
        vars: &std::collections::HashMap<String, u64>,
        consts: &std::collections::HashMap<&str, u64>,
    ) -> u64 {
        let toks = tokenize(expr);
        let mut p = 0;
        let v = parse_xor(&toks, &mut p, vars, consts);
        assert_eq!(p, toks.len(), "trailing tokens in {expr}");
        v
    }

    fn tokenize(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let c: Vec<char> = s.chars().collect();
        let mut i = 0;
        while i < c.len() {
            let ch = c[i];
            if ch.is_whitespace() {
                i += 1;
            } else if ch == '>' {
                out.push(">>".into());
                i += 2;
            } else if ch.is_alphanumeric() || ch == '$' || ch == '_' || ch == '\'' {
                let st = i;
                while i < c.len() && (c[i].is_alphanumeric() || "$_'".contains(c[i])) {
                    i += 1;
                }
                out.push(c[st..i].iter().collect());
            } else {
                out.push(ch.to_string());
                i += 1;
            }
        }
        out
    }

    type Env<'a> = (
        &'a std::collections::HashMap<String, u64>,
        &'a std::collections::HashMap<&'a str, u64>,
    );

    fn parse_xor(
        t: &[String],
        p: &mut usize,
        vars: &std::collections::HashMap<String, u64>,
        consts: &std::collections::HashMap<&str, u64>,
    ) -> u64 {
        let env: Env = (vars, consts);
        let mut v = parse_add(t, p, env);
        while *p < t.len() && t[*p] == "^" {
            *p += 1;
            v ^= parse_add(t, p, env);
        }
        v
    }
    fn parse_add(t: &[String], p: &mut usize, env: Env) -> u64 {
        let mut v = parse_mul(t, p, env);
        while *p < t.len() && t[*p] == "+" {
            *p += 1;
            v = v.wrapping_add(parse_mul(t, p, env));
        }
        v
    }
    fn parse_mul(t: &[String], p: &mut usize, env: Env) -> u64 {
        let mut v = parse_shift(t, p, env);
        while *p < t.len() && t[*p] == "*" {
            *p += 1;
            v = v.wrapping_mul(parse_shift(t, p, env));
        }
        v
    }
    fn parse_shift(t: &[String], p: &mut usize, env: Env) -> u64 {
        let v = parse_atom(t, p, env);
        if *p < t.len() && t[*p] == ">>" {
            *p += 1;
            let n: u32 = t[*p].parse().unwrap();
            *p += 1;
            return v >> n;
        }
        v
    }
    fn parse_atom(t: &[String], p: &mut usize, env: Env) -> u64 {
        let tok = t[*p].clone();
        *p += 1;
        match tok.as_str() {
            "(" => {
                let v = parse_xor(t, p, env.0, env.1);
                assert_eq!(t[*p], ")");
                *p += 1;
                v
            }
            "{" => {
                // {Nd0, e}
                *p += 2; // width literal and comma
                let v = parse_xor(t, p, env.0, env.1);
                assert_eq!(t[*p], "}");
                *p += 1;
                v
            }
            "rotl64" => {
                assert_eq!(t[*p], "(");
                *p += 1;
                let v = parse_xor(t, p, env.0, env.1);
                assert_eq!(t[*p], ",");
                let n: u32 = t[*p + 1].parse().unwrap();
                assert_eq!(t[*p + 2], ")");
                *p += 3;
                v.rotate_left(n)
            }
            s if s.starts_with('$') => env.0[&s[1..]],
            s if s.chars().all(|c| c.is_ascii_digit()) => s.parse().unwrap(),
            s => env.1[s],
        }
    }

    #[test]
    fn plan_matches_core_xxh64_for_every_width() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for n in 1..=100usize {
            let plan = plan_bytes(n);
            for seed in [0u64, 7, 0xdead_beef_cafe_f00d] {
                let key: Vec<u8> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                assert_eq!(
                    eval_plan(&plan, &key, seed),
                    bloomlanes_core::xxh64(&key, seed),
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn liveness_keeps_only_what_is_used() {
        let plan = plan_bytes(13);
        let live = live_vars(&plan);
        assert_eq!(live.len(), plan.stages.len() + 1);
        assert_eq!(live.last().unwrap(), &vec![("h".to_string(), 64)]);
        // The key words never travel past the stage that multiplies them.
        assert!(live[1].iter().all(|(n, _)| !n.starts_with('k')));
    }
}
