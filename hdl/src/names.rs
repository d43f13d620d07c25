//! Module names: a top module name must be a plain Verilog identifier that is not a keyword of
//! Verilog-2005 (IEEE 1364-2005, Annex B) or SystemVerilog-2017 (IEEE 1800-2017, Annex B),
//! since the generated files are read by tools of either language (`module module #(` is no
//! design). Keywords are case-sensitive, as in both languages.

/// The reserved keywords of Verilog-2005 (IEEE 1364-2005, Annex B).
pub const VERILOG_2005_KEYWORDS: &[&str] = &[
    "always",
    "and",
    "assign",
    "automatic",
    "begin",
    "buf",
    "bufif0",
    "bufif1",
    "case",
    "casex",
    "casez",
    "cell",
    "cmos",
    "config",
    "deassign",
    "default",
    "defparam",
    "design",
    "disable",
    "edge",
    "else",
    "end",
    "endcase",
    "endconfig",
    "endfunction",
    "endgenerate",
    "endmodule",
    "endprimitive",
    "endspecify",
    "endtable",
    "endtask",
    "event",
    "for",
    "force",
    "forever",
    "fork",
    "function",
    "generate",
    "genvar",
    "highz0",
    "highz1",
    "if",
    "ifnone",
    "incdir",
    "include",
    "initial",
    "inout",
    "input",
    "instance",
    "integer",
    "join",
    "large",
    "liblist",
    "library",
    "localparam",
    "macromodule",
    "medium",
    "module",
    "nand",
    "negedge",
    "nmos",
    "nor",
    "noshowcancelled",
    "not",
    "notif0",
    "notif1",
    "or",
    "output",
    "parameter",
    "pmos",
    "posedge",
    "primitive",
    "pull0",
    "pull1",
    "pulldown",
    "pullup",
    "pulsestyle_ondetect",
    "pulsestyle_onevent",
    "rcmos",
    "real",
    "realtime",
    "reg",
    "release",
    "repeat",
    "rnmos",
    "rpmos",
    "rtran",
    "rtranif0",
    "rtranif1",
    "scalared",
    "showcancelled",
    "signed",
    "small",
    "specify",
    "specparam",
    "strong0",
    "strong1",
    "supply0",
    "supply1",
    "table",
    "task",
    "time",
    "tran",
    "tranif0",
    "tranif1",
    "tri",
    "tri0",
    "tri1",
    "triand",
    "trior",
    "trireg",
    "unsigned",
    "use",
    "uwire",
    "vectored",
    "wait",
    "wand",
    "weak0",
    "weak1",
    "while",
    "wire",
    "wor",
    "xnor",
    "xor",
];

/// The reserved keywords SystemVerilog-2017 (IEEE 1800-2017, Annex B) adds to Verilog-2005's.
pub const SYSTEMVERILOG_2017_KEYWORDS: &[&str] = &[
    "accept_on",
    "alias",
    "always_comb",
    "always_ff",
    "always_latch",
    "assert",
    "assume",
    "before",
    "bind",
    "bins",
    "binsof",
    "bit",
    "break",
    "byte",
    "chandle",
    "checker",
    "class",
    "clocking",
    "const",
    "constraint",
    "context",
    "continue",
    "cover",
    "covergroup",
    "coverpoint",
    "cross",
    "dist",
    "do",
    "endchecker",
    "endclass",
    "endclocking",
    "endgroup",
    "endinterface",
    "endpackage",
    "endprogram",
    "endproperty",
    "endsequence",
    "enum",
    "eventually",
    "expect",
    "export",
    "extends",
    "extern",
    "final",
    "first_match",
    "foreach",
    "forkjoin",
    "global",
    "iff",
    "ignore_bins",
    "illegal_bins",
    "implements",
    "implies",
    "import",
    "inside",
    "int",
    "interconnect",
    "interface",
    "intersect",
    "join_any",
    "join_none",
    "let",
    "local",
    "logic",
    "longint",
    "matches",
    "modport",
    "nettype",
    "new",
    "nexttime",
    "null",
    "package",
    "packed",
    "priority",
    "program",
    "property",
    "protected",
    "pure",
    "rand",
    "randc",
    "randcase",
    "randsequence",
    "ref",
    "reject_on",
    "restrict",
    "return",
    "s_always",
    "s_eventually",
    "s_nexttime",
    "s_until",
    "s_until_with",
    "sequence",
    "shortint",
    "shortreal",
    "soft",
    "solve",
    "static",
    "string",
    "strong",
    "struct",
    "super",
    "sync_accept_on",
    "sync_reject_on",
    "tagged",
    "this",
    "throughout",
    "timeprecision",
    "timeunit",
    "type",
    "typedef",
    "union",
    "unique",
    "unique0",
    "until",
    "until_with",
    "untyped",
    "var",
    "virtual",
    "void",
    "wait_order",
    "weak",
    "wildcard",
    "with",
    "within",
];

/// Longest top module name (the generated module and file names add suffixes to it).
pub const MAX_TOP_NAME: usize = 64;

/// Checks that `name` can name a top module: 1 to [`MAX_TOP_NAME`] letters, digits and `_`,
/// not starting with a digit, and not a Verilog-2005 or SystemVerilog-2017 keyword. The error
/// says which rule it breaks.
pub fn check_module_name(name: &str) -> Result<(), String> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > MAX_TOP_NAME {
        return Err(format!(
            "top module name {name:?} must have 1 to {MAX_TOP_NAME} characters"
        ));
    }
    if !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return Err(format!(
            "top module name {name:?} is not a Verilog identifier: it must start with a letter \
             or _"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(format!(
            "top module name {name:?} is not a plain Verilog identifier: {c:?} is not a \
             letter, digit or _"
        ));
    }
    if VERILOG_2005_KEYWORDS.contains(&name) {
        return Err(format!(
            "top module name {name:?} is a Verilog-2005 keyword (IEEE 1364-2005); choose \
             another name"
        ));
    }
    if SYSTEMVERILOG_2017_KEYWORDS.contains(&name) {
        return Err(format!(
            "top module name {name:?} is a SystemVerilog-2017 keyword (IEEE 1800-2017); choose \
             another name"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_bad_identifiers_are_refused() {
        let bad = "module wire begin always reg logic endmodule input bit interface 9lives";
        for bad in bad.split(' ').chain(["a b", "", "x-y", "näme"]) {
            assert!(check_module_name(bad).is_err(), "{bad:?}");
        }
        let long = "a".repeat(MAX_TOP_NAME + 1);
        assert!(check_module_name(&long).is_err());
        for good in "bloomlanes Module _x edge_a modules wire1 logic_top".split(' ') {
            assert!(check_module_name(good).is_ok(), "{good:?}");
        }
        let e = check_module_name("logic").unwrap_err();
        assert!(e.contains("SystemVerilog-2017"), "{e}");
        let e = check_module_name("module").unwrap_err();
        assert!(e.contains("Verilog-2005"), "{e}");
    }

    #[test]
    fn keyword_lists_have_the_standards_sizes() {
        // IEEE 1800-2017 Annex B lists 248 keywords, Verilog-2005's among them.
        assert_eq!(
            VERILOG_2005_KEYWORDS.len() + SYSTEMVERILOG_2017_KEYWORDS.len(),
            248
        );
        for k in SYSTEMVERILOG_2017_KEYWORDS {
            assert!(!VERILOG_2005_KEYWORDS.contains(k), "{k} twice");
        }
    }
}
