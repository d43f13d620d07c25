//! Writes the RTL of one configuration and prints its latency:
//! `gen [--registered-banks] <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] [c4|c8|s4|s8|s16]`
//! (`c4`/`c8`: the counting pipeline with 4- or 8-bit counters, `s4`/`s8`/`s16`: the spatial
//! pipeline with classes of that width; one port).
use bloomlanes_core::CounterBits;
use bloomlanes_hdl::{generate_pipeline, CellSpec, HdlConfig, PipelineConfig};

fn main() {
    let flag = "--registered-banks";
    let registered = std::env::args().any(|x| x == flag);
    let a: Vec<String> = std::env::args().filter(|x| x != flag).collect();
    let w: Vec<&str> = a.iter().map(String::as_str).collect();
    let run = || -> Result<(), String> {
        let (dir, words) = match w.as_slice() {
            [_, shape @ .., dir] if shape.len() == 4 => (*dir, shape.to_vec()),
            [_, l, z, k, p, dir, rest @ ..] => (*dir, [&[*l, *z, *k, *p][..], rest].concat()),
            _ => return Err("too few arguments".into()),
        };
        let cells = match words.get(6).copied() {
            None => CellSpec::STATIC,
            Some("c4") => CellSpec::counting(CounterBits::Four),
            Some("c8") => CellSpec::counting(CounterBits::Eight),
            Some(s) => match s.strip_prefix('s').and_then(|b| b.parse().ok()) {
                Some(bits) => CellSpec::spatial(bits),
                None => return Err(format!("{s:?} is not c4, c8, s4, s8 or s16")),
            },
        };
        let mut cfg = HdlConfig::from_words(&words[..words.len().min(6)], 5)?;
        cfg.registered_banks = registered;
        let d = generate_pipeline(&PipelineConfig::new(cfg, cells)).map_err(|e| e.to_string())?;
        let dir = std::path::Path::new(dir);
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("bloomlanes.v"), &d.rtl).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("bloomlanes_tb.v"), &d.testbench).map_err(|e| e.to_string())?;
        let (lat, hs, fd) = (d.latency_cycles, d.hash_stages, d.fifo_depth);
        println!("latency {lat} hash stages {hs} fifo {fd}");
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("gen: {e}\nusage: gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] [c4|c8|s4|s8|s16]");
        std::process::exit(2);
    }
}
