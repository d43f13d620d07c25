//! Writes the RTL of one configuration (`bloomlanes.v`, its bench `bloomlanes_tb.v` and the
//! pin-light top `bloomlanes_wrap.v` for place and route) and prints its latency:
//! `gen [--registered-banks] <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] [c4|c8|s4|s8|s16|rV]`
//! (`c4`/`c8`: the counting pipeline with 4- or 8-bit counters, `s4`/`s8`/`s16`: the spatial
//! pipeline with classes of that width, `rV`: a retrieval table of `V`-bit values, 8 check
//! bits and 4 cells per key, sized for `<blocks>` keys (the layout is then unused); one port).
use bloomlanes_core::retrieval::Shape;
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
        let mut cfg = HdlConfig::from_words(&words[..words.len().min(6)], 5)?;
        cfg.registered_banks = registered;
        let retrieval = |v: u8| -> Result<PipelineConfig, String> {
            let keys = u64::from(cfg.blocks);
            let (segment_bits, segment_count) =
                Shape::sized(keys, 4, 0).ok_or_else(|| format!("no table for {keys} keys"))?;
            let shape = Shape {
                value_bits: v,
                check_bits: 8,
                arity: 4,
                segment_bits,
                segment_count,
                seed: 5,
            };
            Ok(PipelineConfig::retrieval(cfg.clone(), shape))
        };
        let pipeline = match words.get(6).copied() {
            None => PipelineConfig::new(cfg.clone(), CellSpec::STATIC),
            Some("c4") => PipelineConfig::new(cfg.clone(), CellSpec::counting(CounterBits::Four)),
            Some("c8") => PipelineConfig::new(cfg.clone(), CellSpec::counting(CounterBits::Eight)),
            Some(s) => match (s.get(..1), s.get(1..).map(str::parse::<u8>)) {
                (Some("s"), Some(Ok(bits))) => {
                    PipelineConfig::new(cfg.clone(), CellSpec::spatial(bits.into()))
                }
                (Some("r"), Some(Ok(v))) => retrieval(v)?,
                _ => return Err(format!("{s:?} is not c4, c8, s4, s8, s16 or rV")),
            },
        };
        let d = generate_pipeline(&pipeline).map_err(|e| e.to_string())?;
        let dir = std::path::Path::new(dir);
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("bloomlanes.v"), &d.rtl).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("bloomlanes_tb.v"), &d.testbench).map_err(|e| e.to_string())?;
        let wrap = d.pin_light_top.as_str();
        std::fs::write(dir.join("bloomlanes_wrap.v"), wrap).map_err(|e| e.to_string())?;
        let (lat, hs, fd) = (d.latency_cycles, d.hash_stages, d.fifo_depth);
        println!("latency {lat} hash stages {hs} fifo {fd}");
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("gen: {e}\nusage: gen <layout> <blocks> <bytes|vN|hash> <ports> <dir> [dsp|lut] [adder bits] [c4|c8|s4|s8|s16|rV]");
        std::process::exit(2);
    }
}
