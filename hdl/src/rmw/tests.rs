//! Structure of the generated read-modify-write stage: which registers its critical cones read.

use std::collections::{BTreeMap, BTreeSet};

use crate::{generate_pipeline, CellSpec, HdlConfig, KeyMode, PipelineConfig};
use bloomlanes_core::{CounterBits, Layout};

/// The bits `name[index]` names, one key each (`a[3:1]`: `a[1]`, `a[2]`, `a[3]`).
fn keys(name: &str, index: Option<&str>) -> Vec<String> {
    let bounds = index.map(|i| match i.split_once(':') {
        Some((hi, lo)) => (lo.parse::<u32>().unwrap(), hi.parse::<u32>().unwrap()),
        None => (i.parse().unwrap(), i.parse().unwrap()),
    });
    let whole = bounds.is_none().then(|| name.to_string());
    let (lo, hi) = bounds.unwrap_or((1, 0));
    (lo..=hi)
        .map(|i| format!("{name}[{i}]"))
        .chain(whole)
        .collect()
}

/// The register bits `sig`'s combinational cone reads in `rtl` (`next:r[i]`: the value
/// register `r[i] <= …` takes): `wire a = …;` and `assign a[i] = …;` are followed, a `reg`
/// (declared `reg [w-1:0] a, b;`) ends a branch (a whole vector counts its width), upper-case
/// names (parameters) are constants.
fn register_cone(rtl: &str, sig: &str) -> BTreeSet<String> {
    let mut regs = BTreeMap::new();
    let mut defs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in rtl.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("reg ") {
            let (width, names) = match rest.strip_prefix('[') {
                Some(r) => {
                    let (range, names) = r.split_once(']').unwrap();
                    (
                        range.split(':').next().unwrap().parse::<u32>().unwrap() + 1,
                        names,
                    )
                }
                None => (1, rest),
            };
            for n in names.split(';').next().unwrap().split(',') {
                regs.insert(n.trim().to_string(), width);
            }
        } else if let Some((lhs, rhs)) = line.split_once(" <= ") {
            // A register's next value: `next:<lhs>` (with its index, if any).
            defs.entry(format!("next:{lhs}"))
                .or_default()
                .push(rhs.to_string());
        } else if let Some((lhs, rhs)) = line.split_once(" = ") {
            if line.starts_with("assign ") || line.starts_with("wire") {
                let target = lhs.rsplit(' ').next().unwrap();
                let (name, index) = match target.split_once('[') {
                    Some((n, i)) => (n, Some(i.trim_end_matches(']'))),
                    None => (target, None),
                };
                for key in keys(name, index) {
                    defs.entry(key).or_default().push(rhs.to_string());
                }
            }
        }
    }
    let (mut todo, mut seen, mut bits) = (vec![sig.to_string()], BTreeSet::new(), BTreeSet::new());
    while let Some(s) = todo.pop() {
        if !seen.insert(s.clone()) {
            continue;
        }
        for rhs in defs.get(&s).into_iter().flatten() {
            let mut rest = rhs.as_str();
            while let Some(at) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
                rest = &rest[at..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let (id, after) = rest.split_at(end);
                let index = after.strip_prefix('[').and_then(|a| a.split_once(']'));
                rest = index.map_or(after, |(_, a)| a);
                if id.chars().all(|c| !c.is_ascii_lowercase()) || rest.starts_with('\'') {
                    continue;
                }
                let index = index.map(|(i, _)| i);
                match (regs.get(id), index) {
                    (Some(&w), None) => bits.extend((0..w).map(|i| format!("{id}[{i}]"))),
                    (Some(_), Some(_)) => bits.extend(keys(id, index)),
                    (None, None) => todo.extend(
                        defs.keys()
                            .filter(|k| k.strip_prefix(id).is_some_and(|r| r.starts_with('[')))
                            .cloned()
                            .chain([id.to_string()]),
                    ),
                    (None, Some(_)) => {
                        todo.extend(keys(id, index).into_iter().chain([id.to_string()]))
                    }
                }
            }
        }
    }
    bits
}

/// The RTL of a counting design of 4-bit counters, 8x32 z=64 prehashed.
fn counting_rtl(registered_banks: bool) -> String {
    let mut cfg = HdlConfig::new(Layout::L8x32, 64, KeyMode::Prehashed, 1);
    cfg.registered_banks = registered_banks;
    let cells = CellSpec::counting(CounterBits::Four);
    generate_pipeline(&PipelineConfig::new(cfg, cells))
        .unwrap()
        .rtl
}

/// The counter's decrement decision, which every counter bit of the next cycle waits for,
/// reads at most seven register bits (one ECP5 LUT7, one LUT level): before, it read every
/// lane's forwarding flag and both zero flags (26 bits, four to five LUT levels on the
/// loop from Y, the counting design's critical path on ECP5).
#[test]
fn the_decrement_decision_reads_seven_register_bits() {
    for registered in [false, true] {
        let cone = register_cone(&counting_rtl(registered), "x_dec");
        assert!(cone.contains("y_dec[0]"), "{cone:?}");
        assert!(
            cone.len() <= 7,
            "registered {registered}: x_dec reads {cone:?}"
        );
    }
}

/// With registered banks, the flag of four lanes not shared with the one ahead
/// (`x_pre_fwd`, registered in R3) reads 16 register bits: per lane the one-ahead and
/// two-ahead flags, Y's zero flag and the merged flag of the three to six ahead (`r3_far`,
/// registered in R2). Before, it read every forwarded stage's flag and zero flag (44 bits,
/// three LUT levels: the critical path of every seed once the loop was shortened).
#[test]
fn registered_forwarded_flags_are_merged_a_stage_early() {
    let cone = register_cone(&counting_rtl(true), "next:x_pre_fwd[0]");
    assert!(cone.contains("r3_far[0]"), "{cone:?}");
    assert!(cone.len() <= 16, "x_pre_fwd[0] reads {cone:?}");
}
