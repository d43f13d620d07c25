//! Tests' reading of generated RTL: which register bits a signal's combinational cone reads
//! (the structure the timing fixes rely on, checked without synthesis).

use std::collections::{BTreeMap, BTreeSet};

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
/// (declared `reg [w-1:0] a, b;`) ends a branch (a whole vector counts its width), and so does
/// a wire declared without a value and never assigned (an instance's output: the banks' read
/// data `rd0`); upper-case names (parameters) are constants.
pub(crate) fn register_cone(rtl: &str, sig: &str) -> BTreeSet<String> {
    let (mut regs, mut wires) = (BTreeMap::new(), BTreeMap::new());
    let mut defs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in rtl.lines().map(str::trim) {
        let declared = match (line.strip_prefix("reg "), line.strip_prefix("wire ")) {
            (Some(rest), _) => Some((&mut regs, rest)),
            (None, Some(rest)) if !line.contains(" = ") => Some((&mut wires, rest)),
            _ => None,
        };
        if let Some((names_of, rest)) = declared {
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
            // `reg [1:0] a = 2'b10, b;`: the names, without their initial values.
            for n in names.split(';').next().unwrap().split(',') {
                let name = n.split(" = ").next().unwrap();
                names_of.insert(name.trim().to_string(), width);
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
    // Declared wires nothing in `rtl` assigns end a branch like registers.
    wires.retain(|w, _| {
        !defs.keys().any(|k| {
            k == w
                || k.strip_prefix(w.as_str())
                    .is_some_and(|r| r.starts_with('['))
        })
    });
    regs.extend(wires);
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
