//! Writes the RTL of one configuration: `gen <layout> <blocks> <bytes|hash> <ports> <dir>`.
use bloomlanes_core::Layout;
use bloomlanes_hdl::{generate, HdlConfig, KeyMode};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let layout = Layout::from_name(&a[1]).expect("layout");
    let key = if a[3] == "hash" {
        KeyMode::Prehashed
    } else {
        KeyMode::Bytes(a[3].parse().expect("bytes"))
    };
    let mut cfg = HdlConfig::new(layout, a[2].parse().expect("blocks"), key, 5);
    cfg.lookup_ports = a[4].parse().expect("ports");
    let d = generate(&cfg).expect("generate");
    let dir = std::path::Path::new(&a[5]);
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("bloomlanes.v"), d.rtl).expect("w");
    std::fs::write(dir.join("bloomlanes_tb.v"), d.testbench).expect("w");
}
