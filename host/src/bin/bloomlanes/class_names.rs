//! Class names as a spatial build reads them: numbered from 1 as they are met or listed
//! (`ClassNames`), taken from a field or argument without the spaces around them
//! (`class_field`), put in numeric order when every name is a number (`numeric_order`), and
//! checked for names that differ only in case (`case_twins`).

use std::collections::HashMap;

use bloomlanes_host::bloomlanes_core::spatial::check_name;

/// Class names in number order (first = class 1, the lowest priority), with the most a build
/// may hold.
pub struct ClassNames {
    /// The names, class 1 first.
    order: Vec<String>,
    /// Each name's number (a class column of 65535 classes is read in one pass).
    index: HashMap<String, u16>,
    /// Whether the names were listed (`--classes`): a name not among them is an error.
    fixed: bool,
    /// The most classes the build may hold.
    most: usize,
    /// The cell width given, if any (named in the error past `most`).
    cells: Option<u32>,
}

impl ClassNames {
    /// No names yet; at most `most` of them (the classes `cells`-bit cells hold, when given).
    pub fn new(most: usize, cells: Option<u32>) -> ClassNames {
        ClassNames {
            order: Vec::new(),
            index: HashMap::new(),
            fixed: false,
            most,
            cells,
        }
    }

    /// The names so far are all there are (`--classes`): another one is an error.
    pub fn fix(&mut self) {
        self.fixed = true;
    }

    /// The names, class 1 first.
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// The class number of `field`, from 1 (a new name joins at the end unless the classes
    /// are fixed).
    pub fn number(&mut self, field: &[u8]) -> std::result::Result<u16, String> {
        let name = class_field(field)?;
        if let Some(&c) = self.index.get(name) {
            return Ok(c);
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
        let c = self.order.len() as u16;
        self.index.insert(name.to_string(), c);
        Ok(c)
    }

    /// Unless the names were listed, numbers them in numeric order when every one is a number
    /// ([`numeric_order`]), and `classes` (numbers as met) with them.
    pub fn renumber_numeric(&mut self, classes: &mut [u16]) {
        let Some(renumber) = (!self.fixed).then(|| numeric_order(&self.order)).flatten() else {
            return;
        };
        for c in classes.iter_mut() {
            *c = renumber[usize::from(*c) - 1];
        }
        let mut order = vec![String::new(); self.order.len()];
        for (name, &to) in self.order.drain(..).zip(&renumber) {
            self.index.insert(name.clone(), to);
            order[usize::from(to) - 1] = name;
        }
        self.order = order;
    }

    /// The names, class 1 first.
    pub fn into_order(self) -> Vec<String> {
        self.order
    }
}

/// The new number of each class (by its first-met number) when every name is an unsigned
/// decimal number and first appearance did not already number them in numeric order: a column
/// of libSBF areas, rule ids or tiers means its numbers' order (area 3 above area 1), whichever
/// row comes first. `None` leaves the order of first appearance.
fn numeric_order(names: &[String]) -> Option<Vec<u16>> {
    let numeric = |n: &String| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    if !names.iter().all(numeric) {
        return None;
    }
    // Any number of digits: by value (its digits past leading zeros, shorter first), then
    // equal numbers written apart ("1", "01", two names) by length.
    let value = |n: &String| {
        let digits = n.trim_start_matches('0');
        (digits.len(), digits.to_string(), n.len())
    };
    let mut by_value: Vec<usize> = (0..names.len()).collect();
    by_value.sort_by_key(|&i| value(&names[i]));
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
    // One pass (a build may hold 65535 classes): each name's lower case, first holder kept.
    let mut seen = HashMap::with_capacity(names.len());
    let (a, b) = names
        .iter()
        .find_map(|b| seen.insert(b.to_lowercase(), b).map(|a| (a, b)))?;
    Some(format!(
        "classes {a:?} and {b:?} differ only in case: they are two classes with two \
         priorities; if they are one class, write them alike"
    ))
}
