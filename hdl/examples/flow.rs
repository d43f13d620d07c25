//! Exports one configuration (no synthesis) for the build flow:
//! `flow [--registered-banks] <dir> <layout> <blocks> <bytes|vN|hash> <ports> [dsp|lut] [adder bits] [top]`.
use bloomlanes_hdl::{export, HdlConfig};

fn main() {
    let flag = "--registered-banks";
    let registered = std::env::args().any(|x| x == flag);
    let a: Vec<String> = std::env::args().filter(|x| x != flag).collect();
    let w: Vec<&str> = a.iter().map(String::as_str).collect();
    let (dir, words, top) = match w.as_slice() {
        [_, dir, rest @ ..] if rest.len() >= 4 => (*dir, &rest[..rest.len().min(6)], rest.get(6)),
        _ => (".", &[][..], None),
    };
    let mut cfg = HdlConfig::from_words(words, 0).unwrap_or_else(|e| {
        eprintln!("flow: {e}\nusage: flow <dir> <layout> <blocks> <bytes|vN|hash> <ports> [dsp|lut] [adder bits] [top]");
        std::process::exit(2);
    });
    cfg.registered_banks = registered;
    if let Some(t) = top {
        cfg.top_name = t.to_string();
    }
    match export(&cfg, None, std::path::Path::new(dir), false) {
        Ok(s) => println!(
            "{}: latency {} cycles",
            cfg.top_name, s.design.latency_cycles
        ),
        Err(e) => {
            eprintln!("flow: {e}");
            std::process::exit(1);
        }
    }
}
