//! Class names as a spatial build reads them: numbered from 1 as they are met or listed
//! (`ClassNames`), taken from a field or argument without the spaces around them
//! (`class_field`), put in numeric order when every name is a number (`numeric_order`), and
//! checked for names that differ only in case (`case_twins`).

use bloomlanes_host::bloomlanes_core::spatial::check_name;

/// Class names in number order (first = class 1, the lowest priority), with the most a build
/// may hold.
pub struct ClassNames {
    /// The names, class 1 first.
    pub order: Vec<String>,
    /// Whether the names were listed (`--classes`): a name not among them is an error.
    pub fixed: bool,
    /// The most classes the build may hold.
    pub most: usize,
    /// The cell width given, if any (named in the error past `most`).
    pub cells: Option<u32>,
}

impl ClassNames {
    /// The class number of `field`, from 1 (a new name joins at the end unless the classes
    /// are fixed).
    pub fn number(&mut self, field: &[u8]) -> std::result::Result<u16, String> {
        let name = class_field(field)?;
        if let Some(i) = self.order.iter().position(|n| n == name) {
            return Ok(i as u16 + 1);
        }
        if self.fixed {
            return Err(format!(
                "class {name:?} is not one of --classes {}",
                self.order.join(",")
            ));
        }
        check_name(name).map_err(|e| format!("class name {name:?}: {e}"))?;
        if self.order.len() == self.most {
            let cells = self.cells.map_or_else(
                || "the widest cells (16 bits)".to_string(),
                |b| format!("{b}-bit cells (--cell-bits {b})"),
            );
            return Err(format!(
                "class {name:?} is class number {}, but {cells} hold at most {} classes",
                self.most + 1,
                self.most
            ));
        }
        self.order.push(name.to_string());
        Ok(self.order.len() as u16)
    }
}

/// The new number of each class (by its first-met number) when every name is an unsigned
/// decimal number and first appearance did not already number them in numeric order: a column
/// of libSBF areas, rule ids or tiers means its numbers' order (area 3 above area 1), whichever
/// row comes first. `None` leaves the order of first appearance.
pub fn numeric_order(names: &[String]) -> Option<Vec<u16>> {
    let value = |n: &str| -> Option<u64> {
        let digits = n.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| n.parse().ok()).flatten()
    };
    let values = names
        .iter()
        .map(|n| value(n))
        .collect::<Option<Vec<u64>>>()?;
    let mut by_value: Vec<usize> = (0..names.len()).collect();
    // Equal numbers written apart ("1", "01") are two names; the shorter comes first.
    by_value.sort_by_key(|&i| (values[i], names[i].len()));
    let mut renumber = vec![0u16; names.len()];
    for (to, &from) in by_value.iter().enumerate() {
        renumber[from] = to as u16 + 1;
    }
    (renumber
        .iter()
        .enumerate()
        .any(|(i, &to)| usize::from(to) != i + 1))
    .then_some(renumber)
}

/// The class name a field or argument gives: its UTF-8 text without the spaces around it
/// (they are the file's or the command line's, not the name's: "deny " in a hand-edited CSV is
/// class deny), never empty.
pub fn class_field(field: &[u8]) -> std::result::Result<&str, String> {
    let name = std::str::from_utf8(field)
        .map_err(|_| "the class name is not UTF-8 text".to_string())?
        .trim();
    if name.is_empty() {
        return Err("the class name is empty".into());
    }
    Ok(name)
}

/// The warning for class names that differ only in case ("Deny" and "deny": two classes, two
/// priorities), which a class column typed by hand is prone to.
pub fn case_twins(names: &[String]) -> Option<String> {
    let (a, b) = names.iter().enumerate().find_map(|(i, a)| {
        let b = names[i + 1..]
            .iter()
            .find(|b| b.to_lowercase() == a.to_lowercase())?;
        Some((a, b))
    })?;
    Some(format!(
        "classes {a:?} and {b:?} differ only in case: they are two classes with two \
         priorities; if they are one class, write them alike"
    ))
}
