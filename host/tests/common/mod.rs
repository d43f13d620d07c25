//! Shared helpers for the end-to-end tests of the `bloomlanes` binary: running it, temporary
//! files, command lines ([`argv!`]), and the captures the tests classify (frames built here,
//! files written by the input crate's capture writer).
#![allow(dead_code, unused_imports, unused_macros)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bloomlanes_host::input::pcap::write::{
    PcapWriter, PcapngWriter, Resolution, LINKTYPE_ETHERNET,
};
use parquet::file::properties::ReaderProperties;
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};

/// The binary under test, quiet and without colours.
pub fn bl() -> Command {
    let mut c = Command::cargo_bin("bloomlanes").expect("the bloomlanes binary is built");
    c.env_remove("BLOOMLANES_SIMD");
    c
}

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// `dir/name`.
pub fn at(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &tempfile::TempDir, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = at(dir, name);
    std::fs::write(&p, bytes).expect("write a test file");
    p
}

/// Runs the binary and parses its standard output as JSON (the run must succeed; for `query`,
/// whose exit status is grep's, 1 says that no key was listed and is a success too).
pub fn json<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> serde_json::Value {
    let out = bl().arg("--json").args(args).output().expect("run");
    let query = args.first().is_some_and(|a| a.as_ref() == "query");
    assert!(
        out.status.success() || (query && out.status.code() == Some(1)),
        "bloomlanes {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// The `field` of each answer of `bloomlanes --json query FILTER KEYS FLAGS…` (flags split at
/// spaces): a class's name, a value or count as a number, null where a key has none.
pub fn answers(filter: &Path, keys: &Path, flags: &str, field: &str) -> Vec<serde_json::Value> {
    let v = json(&argv!("query", filter, keys, flags));
    v["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|a| a[field].clone())
        .collect()
}

/// The `field` of each row of a report's per-class table (`labels` of `build --json`,
/// `figures` of `stats --json`), class 1 first.
pub fn per_class(report: &serde_json::Value, field: &str) -> Vec<serde_json::Value> {
    report["classes"]
        .as_array()
        .unwrap_or_else(|| panic!("a per-class table in {report}"))
        .iter()
        .map(|c| c[field].clone())
        .collect()
}

/// Runs `cmd`, which must succeed (its standard error is the failure's message).
pub fn succeeds(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the binary expecting failure with `code`; returns stderr.
pub fn fails<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S], code: i32) -> String {
    let out = bl().args(args).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "bloomlanes {args:?}: expected exit {code}; stderr: {err}; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "panic on user input: {err}");
    err
}

/// Asserts that the message `text` says every one of `parts` (the failure names the part
/// missing and shows the whole message).
#[track_caller]
pub fn says(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

/// The path as a `&str`.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test path")
}

/// Names of the files in `dir` (to check no temporary or partial files are left behind).
pub fn files(dir: &tempfile::TempDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Makes the named pipe `dir/name` (with `mkfifo`, which must succeed) and returns its path.
pub fn fifo(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    let p = at(dir, name);
    let made = std::process::Command::new("mkfifo").arg(&p).status();
    assert!(
        made.expect("run mkfifo").success(),
        "mkfifo {}",
        p.display()
    );
    p
}

/// Checks that the HDL export in `dir` (top module `top`) holds the whole kit every kind gets,
/// besides the RTL and bank files: the report, the README (naming the top's ports, its latency
/// and the boards), the Makefile, the board tops, the AXI wrapper, the board constraints and the
/// cocotb and formal benches; `answer` is the answer port (`m0_hit`, ...). Returns the README.
pub fn hdl_kit(dir: &Path, top: &str, answer: &str) -> String {
    let kit = [
        format!("{top}.v"),
        format!("{top}_tb.v"),
        format!("{top}_harness.cpp"),
        format!("{top}_report.md"),
        "README.md".into(),
        "Makefile".into(),
        format!("{top}_board.v"),
        format!("{top}_wrap.v"),
        format!("{top}_axis.v"),
        "fpga/hx8k_breakout.pcf".into(),
        "fpga/ulx3s.lpf".into(),
        "fpga/fmax.sh".into(),
        "cocotb/config.json".into(),
        "cocotb/model.py".into(),
        "cocotb/test_filter.py".into(),
        "cocotb/run.py".into(),
        format!("formal/{top}_port_formal.sv"),
        format!("formal/{top}_port.sby"),
    ];
    for f in &kit {
        assert!(
            dir.join(f).is_file(),
            "{f} is missing from {}",
            dir.display()
        );
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let rtl = std::fs::read_to_string(dir.join(format!("{top}.v"))).unwrap();
    for want in [
        format!("# {top}: "),
        format!("`{answer}`"),
        "cycles from acceptance".into(),
        "make sim".into(),
        "make formal".into(),
        "make ecp5".into(),
    ] {
        assert!(
            readme.contains(&want),
            "README.md lacks {want:?}:\n{readme}"
        );
    }
    assert!(rtl.contains(answer), "{top}.v lacks {answer}");
    // The README's latency is the design's (as its header states it).
    let lat = rtl
        .split("// Latency: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("the RTL header states the latency");
    assert!(
        readme.contains(&format!("| {lat} cycles from acceptance")),
        "README.md does not give latency {lat}:\n{readme}"
    );
    readme
}

/// `n` text keys `prefix0 … prefix{n-1}`, one per line.
pub fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix}{i}\n")).collect()
}

/// A piece of a command line for [`argv!`].
pub trait Arg {
    /// Appends this piece's words to `argv`.
    fn push_to(&self, argv: &mut Vec<OsString>);
}

/// Text: flags and their values, split at spaces (never a path: paths may hold spaces).
impl Arg for str {
    fn push_to(&self, argv: &mut Vec<OsString>) {
        argv.extend(self.split_whitespace().map(OsString::from));
    }
}

/// A path, taken whole.
impl Arg for Path {
    fn push_to(&self, argv: &mut Vec<OsString>) {
        argv.push(self.as_os_str().to_owned());
    }
}

/// A path, taken whole.
impl Arg for PathBuf {
    fn push_to(&self, argv: &mut Vec<OsString>) {
        self.as_path().push_to(argv);
    }
}

/// A borrowed piece, as the piece.
impl<T: Arg + ?Sized> Arg for &T {
    fn push_to(&self, argv: &mut Vec<OsString>) {
        (**self).push_to(argv);
    }
}

/// A command line: `argv!("build", keys, "-o", filter, "--kind window --window-keys 100")`
/// gives `build KEYS -o FILTER --kind window --window-keys 100` (text split at spaces, paths
/// whole).
macro_rules! argv {
    ($($part:expr),* $(,)?) => {{
        let mut v: Vec<std::ffi::OsString> = Vec::new();
        $( $crate::common::Arg::push_to(&$part, &mut v); )*
        v
    }};
}
pub(crate) use argv;

/// `bloomlanes --json build INPUT -o FILTER FLAGS…` (flags split at spaces), which must succeed.
pub fn build(input: &Path, filter: &Path, flags: &str) -> serde_json::Value {
    json(&argv!("build", input, "-o", filter, flags))
}

/// The filter `KIND.blf` in `dir`, built from `keys` with `bloomlanes build … --kind KIND
/// FLAGS…` (which must succeed).
pub fn build_kind(dir: &tempfile::TempDir, keys: &Path, kind: &str, flags: &[&str]) -> PathBuf {
    let filter = at(dir, &format!("{kind}.blf"));
    let mut args = vec!["build", s(keys), "-o", s(&filter), "--kind", kind];
    args.extend_from_slice(flags);
    json(&args);
    filter
}

/// `bloomlanes --json parquet add-filters PLAIN -o OUT FLAGS…` (flags split at spaces), which
/// must succeed.
pub fn add_filters(plain: &Path, out: &Path, flags: &str) -> serde_json::Value {
    json(&argv!("parquet add-filters", plain, "-o", out, flags))
}

/// `bloomlanes --json import PARQUET --column n --row-group all --merge -o FILTER`: the filters of
/// column `n` in every row group of `parquet`, merged into one filter (must succeed).
pub fn import_merged_n(parquet: &Path, filter: &Path) -> serde_json::Value {
    json(&argv!(
        "import",
        parquet,
        "--column n --row-group all --merge -o",
        filter
    ))
}

/// A fresh temporary directory, the key file `keys_name` in it holding `keys`, and the filter
/// `filter_name` built from that file with `bloomlanes build … FLAGS` (which must succeed):
/// `(directory, key file, filter)`; the directory is removed when it is dropped.
pub fn built(
    keys_name: &str,
    keys: impl AsRef<[u8]>,
    filter_name: &str,
    flags: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tmp();
    let (keys, filter) = write_and_build(&dir, keys_name, keys, filter_name, flags);
    (dir, keys, filter)
}

/// The key file `keys_name` holding `keys` written in `dir`, and the filter `filter_name` built
/// there from it with `bloomlanes build … FLAGS` (which must succeed): `(key file, filter)`.
pub fn write_and_build(
    dir: &tempfile::TempDir,
    keys_name: &str,
    keys: impl AsRef<[u8]>,
    filter_name: &str,
    flags: &str,
) -> (PathBuf, PathBuf) {
    let keys = write(dir, keys_name, keys);
    let filter = at(dir, filter_name);
    build(&keys, &filter, flags);
    (keys, filter)
}

/// The `parquet` crate's reader of the `.parquet` file `path`, set to read bloom filters (what
/// the tests check this tool's filters against).
pub fn parquet_reader(path: &Path) -> SerializedFileReader<std::fs::File> {
    let props = ReaderProperties::builder()
        .set_read_bloom_filter(true)
        .build();
    let opts = ReadOptionsBuilder::new()
        .with_reader_properties(props)
        .build();
    let file = std::fs::File::open(path).expect("open the .parquet file");
    SerializedFileReader::new_with_options(file, opts).expect("a .parquet file the crate reads")
}

/// One INT32 column `n` in row groups of `sizes` rows (values 0, 1, 2, … across them), no
/// bloom filters.
pub fn parquet_of(path: &std::path::Path, sizes: &[i32]) {
    let schema = std::sync::Arc::new(
        parquet::schema::parser::parse_message_type("message t { required int32 n; }").unwrap(),
    );
    let props = std::sync::Arc::new(parquet::file::properties::WriterProperties::builder().build());
    let mut w = parquet::file::writer::SerializedFileWriter::new(
        std::fs::File::create(path).unwrap(),
        schema,
        props,
    )
    .unwrap();
    let mut next = 0;
    for &n in sizes {
        let mut rg = w.next_row_group().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        let v: Vec<i32> = (next..next + n).collect();
        next += n;
        c.typed::<parquet::data_type::Int32Type>()
            .write_batch(&v, None, None)
            .unwrap();
        c.close().unwrap();
        rg.close().unwrap();
    }
    w.close().unwrap();
}

/// How many of the keys in `file` `filter` answers "may be present" (`query --count`).
pub fn matches(filter: &Path, file: &Path) -> u64 {
    json(&argv!("query", filter, file, "--count"))["matches"]
        .as_u64()
        .expect("a match count")
}

// ---- captures ---------------------------------------------------------------------------------

/// An IPv4 packet of protocol `proto` (TCP 6, UDP 17 …) from `src:sport` to `dst:dport` with
/// a transport header of the protocol's size (20 for TCP, 8 otherwise) and `payload` bytes
/// `0xab`.
pub fn ipv4(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: usize,
) -> Vec<u8> {
    let transport = if proto == 6 { 20 } else { 8 };
    let total = (20 + transport + payload) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    ip.extend_from_slice(&transport_header(proto, sport, dport, payload));
    ip.extend(std::iter::repeat_n(0xab, payload));
    ip
}

/// An IPv6 packet of protocol `proto` from `2001::{src_last}` to `2001::{dst_last}` (ports as
/// for [`ipv4`], no payload).
pub fn ipv6(proto: u8, src_last: u8, dst_last: u8, sport: u16, dport: u16) -> Vec<u8> {
    let transport = transport_header(proto, sport, dport, 0);
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&(transport.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[proto, 64]);
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&[0x20, 0x01]);
    a[15] = src_last;
    ip.extend_from_slice(&a);
    a[15] = dst_last;
    ip.extend_from_slice(&a);
    ip.extend_from_slice(&transport);
    ip
}

/// The ports and the rest of a TCP (20 bytes) or UDP-like (8 bytes, with its length) header.
fn transport_header(proto: u8, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let mut h = sport.to_be_bytes().to_vec();
    h.extend_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        h.extend_from_slice(&[0; 16]);
    } else {
        h.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
        h.extend_from_slice(&[0, 0]);
    }
    h
}

/// An Ethernet frame with `tags` VLAN tags (802.1ad outer, 802.1Q inner).
pub fn eth(ethertype: u16, tags: usize, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    for t in 0..tags {
        let tpid: u16 = if t + 1 < tags { 0x88a8 } else { 0x8100 };
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&(100 + t as u16).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A little-endian microsecond pcap of Ethernet `frames` (snap length 65535): packet `i` at
/// 1 700 000 000 + `i` s and `7 i` µs, 4 bytes longer on the wire than captured.
pub fn pcap_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, Resolution::Micros)
        .expect("a pcap header");
    for (i, f) in frames.iter().enumerate() {
        w.packet(
            1_700_000_000 + i as u32,
            i as u32 * 7,
            f.len() as u32 + 4,
            f,
        )
        .expect("a packet record");
    }
    w.into_inner()
}

/// A little-endian pcapng section of Ethernet `frames` (one interface, snap length 65535):
/// packet `i` at `i << 32` microseconds.
pub fn pcapng_file(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535).expect("a section");
    for (i, f) in frames.iter().enumerate() {
        w.packet((i as u64) << 32, f.len() as u32, f)
            .expect("a packet block");
    }
    w.into_inner()
}

/// A scalable filter of the keys `k0`..`k{n-1}` (written to `k.txt` in `d`) built with `flags`
/// into `name`: the keys' file, the filter's path, its `stats` JSON and that JSON's stages.
pub fn scalable(
    d: &tempfile::TempDir,
    n: usize,
    name: &str,
    flags: &str,
) -> (PathBuf, PathBuf, serde_json::Value, Vec<serde_json::Value>) {
    let keys = write(d, "k.txt", lines("k", n));
    let f = at(d, name);
    build(&keys, &f, &format!("--kind scalable {flags}"));
    let st = json(&["stats", s(&f)]);
    let stages = st["figures"]["stages"].as_array().unwrap().clone();
    (keys, f, st, stages)
}
