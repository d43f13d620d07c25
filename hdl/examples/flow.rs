//! Exports one configuration (no synthesis) for the build flow:
//! `flow <dir> <layout> <blocks> <bytes|vN|hash> <ports> [dsp|lut] [adder bits] [top]`.
use bloomlanes_core::Layout;
use bloomlanes_hdl::{export, HdlConfig, KeyMode, MulStyle};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!("usage: flow <dir> <layout> <blocks> <bytes|vN|hash> <ports> [dsp|lut] [adder bits] [top]");
        std::process::exit(2);
    }
    let layout = Layout::from_name(&a[2]).expect("layout");
    let key = if a[4] == "hash" {
        KeyMode::Prehashed
    } else if let Some(n) = a[4].strip_prefix('v') {
        KeyMode::VarBytes(n.parse().expect("max bytes"))
    } else {
        KeyMode::Bytes(a[4].parse().expect("bytes"))
    };
    let mut cfg = HdlConfig::new(layout, a[3].parse().expect("blocks"), key, 0);
    cfg.lookup_ports = a[5].parse().expect("ports");
    if a.get(6).is_some_and(|s| s == "lut") {
        cfg.mul_style = MulStyle::Lut;
    }
    if let Some(b) = a.get(7) {
        cfg.adder_bits = b.parse().expect("adder bits");
    }
    if let Some(t) = a.get(8) {
        cfg.top_name = t.clone();
    }
    match export(&cfg, None, std::path::Path::new(&a[1]), false) {
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
