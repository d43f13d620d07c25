//! Writes the RTL of one configuration and prints its latency:
//! `gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits]`.
use bloomlanes_core::Layout;
use bloomlanes_hdl::{generate, HdlConfig, KeyMode, MulStyle};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!(
            "usage: gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits]"
        );
        std::process::exit(2);
    }
    let layout = Layout::from_name(&a[1]).expect("layout");
    let key = if a[3] == "hash" {
        KeyMode::Prehashed
    } else if let Some(n) = a[3].strip_prefix('v') {
        KeyMode::VarBytes(n.parse().expect("max bytes"))
    } else {
        KeyMode::Bytes(a[3].parse().expect("bytes"))
    };
    let mut cfg = HdlConfig::new(layout, a[2].parse().expect("blocks"), key, 5);
    cfg.lookup_ports = a[4].parse().expect("ports");
    if a.get(6).is_some_and(|s| s == "lut") {
        cfg.mul_style = MulStyle::Lut;
    }
    if let Some(b) = a.get(7) {
        cfg.adder_bits = b.parse().expect("adder bits");
    }
    let d = generate(&cfg).expect("generate");
    let dir = std::path::Path::new(&a[5]);
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("bloomlanes.v"), &d.rtl).expect("w");
    std::fs::write(dir.join("bloomlanes_tb.v"), &d.testbench).expect("w");
    println!(
        "latency {} hash stages {} fifo {}",
        d.latency_cycles, d.hash_stages, d.fifo_depth
    );
}
