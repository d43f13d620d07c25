//! Writes the RTL of one configuration and prints its latency:
//! `gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] [c4|c8]`
//! (`c4`/`c8`: the counting-filter pipeline with 4- or 8-bit counters, one port).
use bloomlanes_core::CounterBits;
use bloomlanes_core::Layout;
use bloomlanes_hdl::{generate, generate_counting, CountingConfig, HdlConfig, KeyMode, MulStyle};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!(
            "usage: gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] \
             [c4|c8]"
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
    let counter_bits = match a.get(8).map(String::as_str) {
        None => None,
        Some("c4") => Some(CounterBits::Four),
        Some("c8") => Some(CounterBits::Eight),
        Some(x) => {
            eprintln!("gen: {x:?} is not c4 or c8");
            std::process::exit(2);
        }
    };
    let d = match counter_bits {
        Some(bits) => generate_counting(&CountingConfig::new(cfg, bits)),
        None => generate(&cfg),
    }
    .unwrap_or_else(|e| {
        eprintln!("gen: {e}");
        std::process::exit(2);
    });
    let dir = std::path::Path::new(&a[5]);
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("bloomlanes.v"), &d.rtl).expect("w");
    std::fs::write(dir.join("bloomlanes_tb.v"), &d.testbench).expect("w");
    println!(
        "latency {} hash stages {} fifo {}",
        d.latency_cycles, d.hash_stages, d.fifo_depth
    );
}
