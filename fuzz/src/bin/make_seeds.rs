//! Writes seed corpora made by the library itself (what the CLI writes): filters of every kind,
//! layout and key type, and Parquet forms. `make_seeds DIR` fills `DIR/<target>/`.
use std::path::Path;

use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, Filter, FilterKind, KeyType, Layout, Params,
    ScalableFilter, WindowFilter, WindowUnit,
};

fn main() {
    let dir = std::env::args().nth(1).expect("usage: make_seeds DIR");
    let dir = Path::new(&dir);
    let files = dir.join("filter_file");
    let parquet = dir.join("parquet_form");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::create_dir_all(&parquet).unwrap();
    let mut n = 0;
    let mut put = |d: &Path, bytes: Vec<u8>| {
        std::fs::write(d.join(format!("seed{n:03}")), bytes).unwrap();
        n += 1;
    };
    for layout in Layout::ALL {
        for blocks in [1u32, 3] {
            let p = Params::new(layout, blocks)
                .with_seed(7)
                .with_key_type(KeyType::U64);
            let mut f = Filter::new(p);
            (0..20u64).for_each(|k| f.insert(&k));
            put(&files, f.to_file_bytes());
            let mut c = CountingFilter::counting(p, CounterBits::Four);
            (0..20u64).for_each(|k| c.insert(&k));
            put(&files, c.to_file_bytes());
            let s = CountingFilter::stable(p, CounterBits::Eight, 2);
            put(&files, AnyFilter::Counting(s).to_file_bytes());
            let kind = FilterKind::Window {
                generations: 2,
                unit: WindowUnit::Keys,
                span: 4,
            };
            let mut w = WindowFilter::new(p.with_kind(kind)).unwrap();
            (0..11u64).for_each(|k| w.insert(&k));
            put(&files, w.to_file_bytes());
        }
    }
    let mut s = ScalableFilter::new(Params::new(Layout::L8x32, 1), 4, 0.1, 2, 0.5).unwrap();
    (0..30u64).for_each(|k| s.insert(&k).unwrap());
    put(&files, s.to_file_bytes());
    let mut f = Filter::new(Params::new(Layout::L8x32, 2));
    f.insert("a");
    put(&parquet, f.to_parquet().unwrap());
    // The input readers: the captures and key files the host's tests write, behind the byte
    // that picks the format and chunk size.
    let captures = dir.join("capture");
    let texts = dir.join("text_inputs");
    let packed = dir.join("decompress");
    for d in [&captures, &texts, &packed] {
        std::fs::create_dir_all(d).unwrap();
    }
    let frames = sample_frames();
    for pick in [0u8, 5, 130] {
        put(&captures, [vec![pick], pcap_file(&frames)].concat());
        put(&captures, [vec![pick], pcapng_file(&frames)].concat());
    }
    let samples: [&[u8]; 6] = [
        b"alpha\r\n\nbeta\ngamma delta\nlast",
        b"1\n 0x2a \n\n1_000\n18446744073709551615\n",
        b"10.0.0.1:1234>10.0.0.2:80/tcp\n[2001:db8::1]:53 > [2001:db8::2]:53/udp\n",
        b"id,name\r\n1,\"multi\nline, \"\"quoted\"\"\"\n2,plain\n3,\"\"\n",
        &[
            1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255,
        ],
        b"id,name\n1,\"unterminated\n2,b\n",
    ];
    for (i, s) in samples.iter().enumerate() {
        for pick in [i as u8, i as u8 + 0x46, i as u8 + 0xc0] {
            put(&texts, [vec![pick], s.to_vec()].concat());
        }
        put(&packed, [vec![3u8], s.to_vec()].concat());
    }
    put(&packed, vec![0, 8, 0, 0, 0, 0, 0, 0, 3]);
    println!("{n} seeds in {}", dir.display());
}

/// Ethernet frames: IPv4 UDP (one VLAN-tagged), IPv6 TCP, ARP, and one cut inside its IP header.
fn sample_frames() -> Vec<Vec<u8>> {
    let eth = |ethertype: u16, tags: usize, payload: &[u8]| {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        for _ in 0..tags {
            f.extend_from_slice(&[0x81, 0x00, 0, 100]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    let mut udp = vec![
        0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    udp.extend_from_slice(&[0x04, 0xd2, 0, 53, 0, 8, 0, 0]);
    let mut tcp6 = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
    tcp6.extend_from_slice(&[0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    tcp6.extend_from_slice(&[0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    tcp6.extend_from_slice(&[0x0f, 0xa0, 1, 187]);
    tcp6.extend_from_slice(&[0; 16]);
    vec![
        eth(0x0800, 0, &udp),
        eth(0x0800, 1, &udp),
        eth(0x86dd, 0, &tcp6),
        eth(0x0806, 0, &[0; 28]),
        eth(0x0800, 0, &udp[..12]),
    ]
}

fn pcap_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 4, 0]);
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for f in frames {
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    b
}

fn pcapng_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let block = |kind: u32, body: &[u8]| {
        let len = 12 + body.len().div_ceil(4) * 4;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(body);
        b.resize(len - 4, 0);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b
    };
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    let mut out = block(0x0a0d_0d0a, &shb);
    out.extend(block(1, &[1, 0, 0, 0, 0xff, 0xff, 0, 0]));
    for f in frames {
        let mut epb = vec![0; 12];
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(f);
        out.extend(block(6, &epb));
    }
    out
}
