//! Opening one input: a file (memory-mapped when it is a regular uncompressed file), standard
//! input (`-`), or a gzip, zstd or xz stream (detected by its magic bytes, decompressed on the
//! fly). Nothing is read whole: the bytes are handed on in chunks by [`crate::chunk`].

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::error::{Error, Location, Result};

/// Bytes looked at to decide an input's format (the start of its decompressed contents).
pub const SNIFF_BYTES: usize = 64 * 1024;

/// How an input is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (RFC 1952), possibly several members.
    Gzip,
    /// Zstandard frames.
    Zstd,
    /// xz (LZMA2).
    Xz,
}

impl Compression {
    /// The name for messages: `gzip`, `zstd`, `xz`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }

    /// The compression whose magic bytes `head` starts with.
    pub fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else {
            Compression::None
        }
    }
}

/// Compressed forms that are recognised but not read (an error naming them beats reading them
/// as text). Each signature is checked past its magic bytes, so that a text line such as
/// `BZh9 …` or a binary u64 file whose first key is 93 (`5d 00 00 …`) is not mistaken for one.
fn unsupported_compression(head: &[u8]) -> Option<&'static str> {
    // bzip2: "BZh", the block size digit, then the 48-bit magic of a block (π) or of the
    // end of the stream (√π).
    let bzip2_block = |b: &[u8]| {
        b == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59] || b == [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]
    };
    // legacy .lzma: the properties byte 0x5d, then a dictionary size of 2^n or 2^n + 2^(n-1)
    // bytes, at least 4 KiB (what every LZMA encoder writes).
    let lzma_dict = |b: &[u8]| {
        let d = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        d >= 4096 && (d.is_power_of_two() || (d.is_multiple_of(3) && (d / 3).is_power_of_two()))
    };
    if head.len() >= 10
        && head.starts_with(b"BZh")
        && head[3].is_ascii_digit()
        && bzip2_block(&head[4..10])
    {
        Some("bzip2")
    } else if head.len() >= 5 && head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) && head[4] >> 6 == 1 {
        // lz4 frame: the magic, then a frame descriptor of version 01.
        Some("lz4")
    } else if head.starts_with(b"PK\x03\x04") {
        Some("zip")
    } else if head.len() >= 5 && head[0] == 0x5d && lzma_dict(&head[1..5]) {
        Some("lzma")
    } else {
        None
    }
}

/// Where the (decompressed) bytes of an input come from.
pub enum Body {
    /// A regular uncompressed file, mapped read-only.
    Mapped(Arc<Mmap>),
    /// Anything else, read front to back.
    Stream(Box<dyn Read + Send>),
}

/// An opened input: its name for messages, its compression, its first bytes and its body.
pub struct Opened {
    /// The name in messages (`<stdin>` for `-`).
    pub shown: PathBuf,
    /// The path as given (its extension helps to guess the format).
    pub path: PathBuf,
    /// How it is compressed.
    pub compression: Compression,
    /// The first (up to [`SNIFF_BYTES`]) decompressed bytes, also still at the start of `body`.
    pub head: Vec<u8>,
    /// The bytes.
    pub body: Body,
    /// Whether it can be opened again for a second pass (a regular file).
    pub reopenable: bool,
    /// Its length in bytes on disk, when known (for progress).
    pub disk_len: Option<u64>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("shown", &self.shown)
            .field("compression", &self.compression)
            .field("reopenable", &self.reopenable)
            .finish()
    }
}

/// The name `-` stands for in messages.
pub fn shown_name(path: &Path) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}

/// A read that reports its source as the input's error, with what was being decompressed.
#[cfg(feature = "compression")]
struct Named<R> {
    inner: R,
    compression: Compression,
    done: u64,
}

#[cfg(feature = "compression")]
impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.done += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) if e.to_string() == "memory limit reached" => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} stream asks for more than {} MiB of decoder memory (its dictionary); \
                     refused",
                    self.compression.name(),
                    XZ_MEMORY_LIMIT >> 20
                ),
            )),
            // zstd's decoder refuses a frame whose window passes its bound (ZSTD_d_windowLogMax).
            Err(e) if e.to_string().contains("too much memory") => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} stream asks for a window larger than the decoder's 128 MiB bound (it was \
                     compressed with --long=28 or more); refused: recompress it with a window of \
                     at most 128 MiB (zstd --long=27)",
                    self.compression.name()
                ),
            )),
            Err(e) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} stream is damaged or cut short after {} decompressed bytes ({e})",
                    self.compression.name(),
                    self.done
                ),
            )),
        }
    }
}

/// The most memory an xz stream may make the decoder allocate (its dictionary and state): four
/// times what the strongest preset (`xz -9e`, 64 MiB dictionary) needs. Zstd's decoder has its own
/// bound (windows up to 128 MiB, its default `window_log_max` of 27).
#[cfg(feature = "compression")]
const XZ_MEMORY_LIMIT: u64 = 256 << 20;

#[cfg(feature = "compression")]
fn decoder(
    c: Compression,
    raw: Box<dyn Read + Send>,
    shown: &Path,
) -> Result<Box<dyn Read + Send>> {
    let r: Box<dyn Read + Send> = match c {
        Compression::None => return Ok(raw),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::new(raw).map_err(|e| Error::io(shown, "decompress", e))?,
        ),
        Compression::Xz => {
            // A hostile header may ask for a dictionary of up to 4 GiB; liblzma refuses a stream
            // that needs more than the limit (xz -9 needs 65 MiB), instead of allocating it.
            let stream = liblzma::stream::Stream::new_stream_decoder(
                XZ_MEMORY_LIMIT,
                liblzma::stream::CONCATENATED,
            )
            .map_err(|e| Error::io(shown, "decompress", e.into()))?;
            Box::new(liblzma::read::XzDecoder::new_stream(raw, stream))
        }
    };
    Ok(Box::new(Named {
        inner: r,
        compression: c,
        done: 0,
    }))
}

#[cfg(not(feature = "compression"))]
fn decoder(
    c: Compression,
    raw: Box<dyn Read + Send>,
    shown: &Path,
) -> Result<Box<dyn Read + Send>> {
    match c {
        Compression::None => Ok(raw),
        _ => Err(Error::input(
            shown,
            Some(Location::Byte(0)),
            format!(
                "is {}-compressed, and compressed inputs are not available in this build \
                 (bloomlanes-input was compiled without its `compression` feature)",
                c.name()
            ),
        )),
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The first bytes of `r`, and a reader that yields every byte of `r` again from the start.
fn sniff(mut r: Box<dyn Read + Send>, shown: &Path) -> Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = read_full(&mut r, &mut head).map_err(|e| read_error(shown, e))?;
    head.truncate(n);
    let again: Box<dyn Read + Send> = Box::new(io::Cursor::new(head.clone()).chain(r));
    Ok((head, again))
}

/// A read failure on an input, as an error naming it (a decompression failure is a damaged
/// input, not an I/O fault).
pub(crate) fn read_error(shown: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::InvalidData {
        Error::input(shown, None, e.to_string())
    } else {
        Error::io(shown, "read", e)
    }
}

/// Opens `path` (`-`: standard input), detecting and undoing its compression.
pub fn open(path: &Path) -> Result<Opened> {
    let shown = shown_name(path);
    let (raw, map, reopenable, disk_len): (Option<Box<dyn Read + Send>>, _, _, _) =
        if path.as_os_str() == "-" {
            (Some(Box::new(io::stdin())), None, false, None)
        } else {
            if path.is_dir() {
                return Err(Error::input(path, None, "is a directory, not a file"));
            }
            let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
            let meta = file.metadata().map_err(|e| Error::io(path, "read", e))?;
            if meta.is_file() && meta.len() > 0 {
                // SAFETY: the map is read-only and private. The tool never writes its inputs; if
                // another program truncates the file while it is read, the process may take a
                // SIGBUS, as with every mmap-based reader (the same contract as `FilterFile`).
                let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, "map", e))?;
                let _ = map.advise(memmap2::Advice::Sequential);
                (None, Some(map), true, Some(meta.len()))
            } else {
                let len = meta.is_file().then_some(meta.len());
                (Some(Box::new(file)), None, meta.is_file(), len)
            }
        };
    if let Some(map) = map {
        let compression = Compression::detect(&map);
        if compression == Compression::None {
            if let Some(name) = unsupported_compression(&map) {
                return Err(unsupported(&shown, name));
            }
            let head = map[..map.len().min(SNIFF_BYTES)].to_vec();
            return Ok(Opened {
                shown,
                path: path.to_path_buf(),
                compression,
                head,
                body: Body::Mapped(Arc::new(map)),
                reopenable,
                disk_len,
            });
        }
        // A compressed regular file: read it (a map of it would count towards the resident
        // set as it is read).
        drop(map);
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let raw: Box<dyn Read + Send> = Box::new(io::BufReader::with_capacity(1 << 20, file));
        return finish_stream(path, shown, raw, compression, reopenable, disk_len);
    }
    let Some(raw) = raw else {
        return Err(Error::input(&shown, None, "neither mapped nor streamed"));
    };
    open_stream(path, shown, raw, reopenable, disk_len)
}

/// Opens a stream that is already there (`name` names it in messages): its compression is
/// detected and undone as for files.
pub fn open_reader(name: &Path, reader: Box<dyn Read + Send>) -> Result<Opened> {
    open_stream(name, name.to_path_buf(), reader, false, None)
}

fn open_stream(
    path: &Path,
    shown: PathBuf,
    raw: Box<dyn Read + Send>,
    reopenable: bool,
    disk_len: Option<u64>,
) -> Result<Opened> {
    // Peek at the raw bytes for the compression magic, then hand every byte on.
    let (raw_head, raw) = sniff(raw, &shown)?;
    let compression = Compression::detect(&raw_head);
    if compression == Compression::None {
        if let Some(name) = unsupported_compression(&raw_head) {
            return Err(unsupported(&shown, name));
        }
        return Ok(Opened {
            shown,
            path: path.to_path_buf(),
            compression,
            head: raw_head,
            body: Body::Stream(raw),
            reopenable,
            disk_len,
        });
    }
    finish_stream(path, shown, raw, compression, reopenable, disk_len)
}

fn unsupported(shown: &Path, name: &str) -> Error {
    Error::input(
        shown,
        Some(Location::Byte(0)),
        format!("is {name}-compressed, which is not read here (gzip, zstd and xz are); decompress it first"),
    )
}

fn finish_stream(
    path: &Path,
    shown: PathBuf,
    raw: Box<dyn Read + Send>,
    compression: Compression,
    reopenable: bool,
    disk_len: Option<u64>,
) -> Result<Opened> {
    let dec = decoder(compression, raw, &shown)?;
    let (head, body) = sniff(dec, &shown)?;
    // What was compressed is read as it is: compressed again (a `.zip.gz`, a `.gz.xz`), it is
    // refused as the plain file would be, not read as text.
    let inner = Compression::detect(&head);
    if inner != Compression::None {
        return Err(Error::input(
            &shown,
            Some(Location::Byte(0)),
            format!(
                "is {}-compressed, and what it holds is {}-compressed again; decompress it to the keys first",
                compression.name(),
                inner.name()
            ),
        ));
    }
    if let Some(name) = unsupported_compression(&head) {
        return Err(unsupported(&shown, name));
    }
    Ok(Opened {
        shown,
        path: path.to_path_buf(),
        compression,
        head,
        body: Body::Stream(body),
        reopenable,
        disk_len,
    })
}

/// The extension that tells the format: `keys.csv.gz` → `csv`.
pub fn format_extension(path: &Path) -> String {
    let ext = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let e = ext(path);
    if matches!(e.as_str(), "gz" | "gzip" | "zst" | "zstd" | "xz") {
        if let Some(stem) = path.file_stem() {
            return ext(Path::new(stem));
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(Compression::detect(b"\xfd7zXZ\x00\x00"), Compression::Xz);
        assert_eq!(Compression::detect(b"hello"), Compression::None);
        assert_eq!(unsupported_compression(b"BZh91AY&SY"), Some("bzip2"));
        assert_eq!(unsupported_compression(b"BZh9 is a key\n"), None);
        assert_eq!(unsupported_compression(b"PK\x03\x04\x14\x00"), Some("zip"));
        // xz's own .lzma header (preset 6: 8 MiB dictionary), and a u64 file whose first key is 93.
        assert_eq!(
            unsupported_compression(&[0x5d, 0, 0, 0x80, 0, 0xff, 0xff]),
            Some("lzma")
        );
        assert_eq!(
            unsupported_compression(&[0x5d, 0, 0, 0, 0, 0, 0, 0, 1]),
            None
        );
        assert_eq!(
            unsupported_compression(&[0x04, 0x22, 0x4d, 0x18, 0x64, 0x40]),
            Some("lz4")
        );
        assert_eq!(
            unsupported_compression(&[0x04, 0x22, 0x4d, 0x18, 0, 0]),
            None
        );
        assert_eq!(format_extension(Path::new("a/keys.csv.gz")), "csv");
        assert_eq!(format_extension(Path::new("keys.TXT")), "txt");
    }

    #[cfg(feature = "compression")]
    #[test]
    fn an_xz_dictionary_past_the_memory_limit_is_refused() {
        use std::io::Write;
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
        e.write_all(b"alice\nbob\n").unwrap();
        let mut xz = e.finish().unwrap();
        // The block header follows the 12-byte stream header; its LZMA2 filter flags are the
        // filter id 0x21, the properties size 1, then the dictionary size code. Code 40 means
        // 4 GiB - 1; the header's CRC32 is recomputed so that only the size is hostile.
        let size = (usize::from(xz[12]) + 1) * 4;
        let header = 12..12 + size;
        let at = xz[header.clone()]
            .windows(2)
            .position(|w| w == [0x21, 0x01])
            .expect("LZMA2 filter flags");
        xz[12 + at + 2] = 40;
        let mut crc = flate2::Crc::new();
        crc.update(&xz[12..12 + size - 4]);
        xz[12 + size - 4..12 + size].copy_from_slice(&crc.sum().to_le_bytes());
        let err = match open_reader(Path::new("big.xz"), Box::new(io::Cursor::new(xz))) {
            Ok(_) => panic!("a 4 GiB dictionary was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("big.xz") && err.contains("256 MiB"), "{err}");
    }

    #[cfg(feature = "compression")]
    #[test]
    fn compressed_contents_are_checked_as_plain_files_are() {
        use std::io::Write;
        let gzip = |b: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(b).unwrap();
            e.finish().unwrap()
        };
        let open = |b: Vec<u8>| open_reader(Path::new("k.gz"), Box::new(io::Cursor::new(b)));
        let zip = b"PK\x03\x04\x14\x00\x00\x00".to_vec();
        let plain = open(zip.clone()).unwrap_err().to_string();
        assert_eq!(open(gzip(&zip)).unwrap_err().to_string(), plain);
        let twice = open(gzip(&gzip(b"a\nb\n"))).unwrap_err().to_string();
        assert!(
            twice.contains("k.gz") && twice.contains("gzip-compressed again"),
            "{twice}"
        );
        let once = open(gzip(b"a\nb\n")).unwrap();
        assert_eq!(once.compression, Compression::Gzip);
        assert_eq!(once.head, b"a\nb\n");
    }
}
