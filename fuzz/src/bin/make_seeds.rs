//! Writes seed corpora made by the library itself (what the CLI writes): filters of every kind,
//! layout and key type (also the stream reader's seeds), Parquet forms, small `.parquet` files with
//! bloom filters (footer written here in the Thrift compact protocol, as `parquet add-filters`
//! writes it), and typed key texts. `make_seeds DIR` fills `DIR/<target>/`.
use std::path::Path;

use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
use bloomlanes_core::{
    AnyFilter, CounterBits, CountingFilter, Filter, FilterKind, KeyType, Layout, Params,
    ScalableFilter, SpatialFilter, WindowFilter, WindowUnit,
};
use bloomlanes_input::pcap::write::{PcapWriter, PcapngWriter, Resolution, LINKTYPE_ETHERNET};

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
            let kind = FilterKind::Window {
                generations: 3,
                unit: WindowUnit::Nanos,
                span: 100,
            };
            let mut w = WindowFilter::new(p.with_kind(kind)).unwrap();
            (0..11u64).for_each(|k| w.insert_at(&k, 1_000 + 70 * k));
            put(&files, w.to_file_bytes());
            for (bits, names) in [(4, &["deny", "allow"][..]), (16, &["a", "bb", "ccc"][..])] {
                let mut f = SpatialFilter::new(p, bits, names).unwrap();
                (0..20u64).for_each(|k| f.insert(&k, (k % names.len() as u64) as u32 + 1).unwrap());
                put(&files, f.to_file_bytes());
            }
        }
    }
    let mut s = ScalableFilter::new(Params::new(Layout::L8x32, 1), 4, 0.1, 2, 0.5).unwrap();
    (0..30u64).for_each(|k| s.insert(&k).unwrap());
    put(&files, s.to_file_bytes());
    // Retrieval tables: their own target, and the any-kind reader.
    let tables = dir.join("retrieval_file");
    std::fs::create_dir_all(&tables).unwrap();
    for (v, f, arity, n) in [
        (8u8, 0u8, 4u8, 20u32),
        (3, 5, 3, 7),
        (32, 32, 4, 3),
        (1, 0, 4, 0),
    ] {
        let keys: Vec<u64> = (0..u64::from(n)).collect();
        let values: Vec<u32> = keys
            .iter()
            .map(|&k| k as u32 & ((1u64 << v) - 1) as u32)
            .collect();
        let spec = RetrievalSpec::new(v, f).with_arity(arity);
        let t = RetrievalTable::build_keys(Params::new(Layout::L8x64, 1), spec, &keys, &values)
            .unwrap();
        put(&tables, t.to_file_bytes());
        put(&files, t.to_file_bytes());
    }
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
    // The stream reader reads the same files (plus whatever follows them), and the crafted-file
    // target mutates them (it recomputes their checksums).
    for target in ["filter_stream", "filter_fields"] {
        let copies = dir.join(target);
        std::fs::create_dir_all(&copies).unwrap();
        for seed in std::fs::read_dir(&files).unwrap() {
            let seed = seed.unwrap();
            std::fs::copy(seed.path(), copies.join(seed.file_name())).unwrap();
        }
    }
    // A spatial file whose header states a payload of 2^64 − 1 bytes (checksum recomputed):
    // the stream reader's bound saturates there. The smoke run once failed on a mutant like
    // it, through the target's own unchecked `needed + 1`.
    let names = ["deny", "allow"];
    let mut huge = SpatialFilter::new(Params::new(Layout::L8x32, 1), 4, &names)
        .unwrap()
        .to_file_bytes();
    huge[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    let sum = bloomlanes_core::xxh64::xxh64(&huge[..56], 0);
    huge[56..64].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(dir.join("filter_stream").join("huge_payload_length"), huge).unwrap();

    let files = dir.join("parquet_file");
    std::fs::create_dir_all(&files).unwrap();
    for (groups, with_length) in [(1, true), (2, false), (3, true)] {
        put(&files, parquet_file(groups, with_length));
    }
    let texts = dir.join("key_text");
    std::fs::create_dir_all(&texts).unwrap();
    // One byte choosing the key type (see fuzz_targets/key_text.rs), then the text.
    for (which, text) in [
        (1u8, "alice"),
        (2, "18446744073709551615"),
        (3, "-500"),
        (3, "0x7fff_ffff"),
        (4, "4294967295"),
        (5, "-2147483648"),
        (6, "-0.0"),
        (7, "NaN"),
        (7, "1e-300"),
        (8, "2024-02-29"),
        (9, "2024-01-02T03:04:05.123Z"),
        (10, "1969-12-31 23:59:59.999999-01:30"),
        (11, "1700000000000000000"),
        (12, "00112233-4455-6677-8899-aabbccddeeff"),
        (14, "0xbeef01"),
        (13, "10.0.0.1:1234 -> 10.0.0.2:53 proto 17"),
        (13, "[::1]:1 -> [fe80::2]:2 proto 6"),
    ] {
        let mut b = vec![which];
        b.extend_from_slice(text.as_bytes());
        put(&texts, b);
    }
    println!("{n} seeds in {}", dir.display());
}

/// A compact-protocol writer, just enough for a Parquet footer.
#[derive(Default)]
struct Compact {
    out: Vec<u8>,
    last: Vec<i16>,
}

impl Compact {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    fn header(&mut self, id: i16, t: u8) {
        let last = self.last.last_mut().unwrap();
        let delta = id - *last;
        *last = id;
        if (1..=15).contains(&delta) {
            self.out.push((delta as u8) << 4 | t);
        } else {
            self.out.push(t);
            self.varint(((i64::from(id) << 1) ^ (i64::from(id) >> 63)) as u64);
        }
    }
    fn int(&mut self, id: i16, t: u8, v: i64) {
        self.header(id, t);
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
    fn i32(&mut self, id: i16, v: i32) {
        self.int(id, 5, i64::from(v));
    }
    fn i64(&mut self, id: i16, v: i64) {
        self.int(id, 6, v);
    }
    fn bin(&mut self, id: i16, b: &[u8]) {
        self.header(id, 8);
        self.varint(b.len() as u64);
        self.out.extend_from_slice(b);
    }
    fn begin(&mut self, id: i16) {
        self.header(id, 12);
        self.last.push(0);
    }
    fn begin_elem(&mut self) {
        self.last.push(0);
    }
    fn end(&mut self) {
        self.out.push(0);
        self.last.pop();
    }
    fn list(&mut self, id: i16, elem: u8, n: usize) {
        self.header(id, 9);
        if n < 15 {
            self.out.push((n as u8) << 4 | elem);
        } else {
            self.out.push(0xf0 | elem);
            self.varint(n as u64);
        }
    }
}

/// A small `.parquet` file: columns `n` (INT32 DATE), `s` (BYTE_ARRAY), `u` (FLBA(16) UUID),
/// `groups` row groups of fake pages, a bloom filter per chunk.
fn parquet_file(groups: usize, with_length: bool) -> Vec<u8> {
    let mut file = b"PAR1".to_vec();
    let mut chunks = Vec::new();
    for g in 0..groups {
        for c in 0..3 {
            let pages = file.len() as i64;
            file.extend_from_slice(&[
                0x15, 0x00, 0x15, 0x08, 0x15, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7,
            ]);
            let mut f = Filter::new(Params::new(Layout::L8x32, 1 + g as u32));
            f.insert(&(g as i32 * 10 + c));
            let form = f.to_parquet().unwrap();
            chunks.push((pages, 14i64, form));
        }
    }
    let mut blooms = Vec::new();
    for (_, _, form) in &chunks {
        blooms.push((file.len() as i64, form.len() as i32));
        file.extend_from_slice(form);
    }
    let mut w = Compact::default();
    w.last.push(0);
    w.i32(1, 2);
    w.list(2, 12, 4);
    let schema: [(&str, Option<i32>, Option<i32>, Option<i32>); 4] = [
        ("schema", None, None, None),
        ("n", Some(1), None, Some(6)),
        ("s", Some(6), None, Some(0)),
        ("u", Some(7), Some(16), None),
    ];
    for (i, (name, ty, len, conv)) in schema.iter().enumerate() {
        w.begin_elem();
        if let Some(t) = ty {
            w.i32(1, *t);
        }
        if let Some(l) = len {
            w.i32(2, *l);
        }
        w.i32(3, 0);
        w.bin(4, name.as_bytes());
        if i == 0 {
            w.i32(5, 3);
        }
        if let Some(c) = conv {
            w.i32(6, *c);
        }
        if *name == "u" {
            w.begin(10);
            w.begin(14);
            w.end();
            w.end();
        }
        w.end();
    }
    w.i64(3, 10 * groups as i64);
    w.list(4, 12, groups);
    for g in 0..groups {
        w.begin_elem();
        w.list(1, 12, 3);
        for c in 0..3 {
            let (pages, size, _) = &chunks[g * 3 + c];
            let (bo, bl) = blooms[g * 3 + c];
            w.begin_elem();
            w.i64(2, *pages);
            w.begin(3);
            w.i32(1, [1, 6, 7][c]);
            w.list(2, 5, 1);
            w.varint(0);
            w.list(3, 8, 1);
            let name = ["n", "s", "u"][c];
            w.varint(name.len() as u64);
            w.out.extend_from_slice(name.as_bytes());
            w.i32(4, 0);
            w.i64(5, 10);
            w.i64(6, *size);
            w.i64(7, *size);
            w.i64(9, *pages);
            w.i64(14, bo);
            if with_length {
                w.i32(15, bl);
            }
            w.end();
            w.end();
        }
        w.i64(2, 42);
        w.i64(3, 10);
        w.end();
    }
    w.end();
    let meta = w.out;
    file.extend_from_slice(&meta);
    file.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    file
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

/// A microsecond pcap of `frames` (Ethernet, snap length 65535, zero timestamps).
fn pcap_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros).unwrap();
    for f in frames {
        w.packet(0, 0, f.len() as u32, f).unwrap();
    }
    w.into_inner()
}

/// A pcapng section of `frames` (one Ethernet interface, snap length 65535, zero timestamps).
fn pcapng_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535).unwrap();
    for f in frames {
        w.packet(0, f.len() as u32, f).unwrap();
    }
    w.into_inner()
}
