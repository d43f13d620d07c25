//! One capture per label (`classify -w DIR` against a spatial filter or a retrieval table): each
//! packet goes to the file of its class or value, or to `absent`, each file with the input's own
//! header (classic pcap) or section and interface blocks (pcapng). Every file is written through
//! [`AtomicFile`]: none appears until [`LabelFiles::commit`], and dropping the set uncommitted
//! (an input error, a full disk) leaves none of them behind.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::classify::{Select, Verdicts};
use crate::error::{Error, Result};
use crate::outfile::AtomicFile;

/// Files written at most (labels and `absent`): a bound on open descriptors and buffer memory.
pub const MAX_LABEL_FILES: usize = 256;

/// The name of the file of packets with no label.
pub const ABSENT: &str = "absent";

/// Buffer of each file.
const BUFFER: usize = 64 << 10;

/// Descriptors each open file holds ([`AtomicFile`]): its temporary file and its folder, and
/// its write lock's file and folder.
const DESCRIPTORS_PER_FILE: u64 = 4;

/// Descriptors left for everything else (the input, the bitmap, the tool's own).
const OTHER_DESCRIPTORS: u64 = 64;

/// Raises this process's soft limit of open descriptors, up to its hard limit, so that
/// [`MAX_LABEL_FILES`] files fit (a soft limit of 256 or 512 would stop a run part way, with
/// nothing written). Returns the soft limit now in force, `None` where it cannot be read.
// `rlim_t` is `u64` on Linux, not on every Unix: the casts stay.
#[allow(clippy::unnecessary_cast)]
fn make_room_for_files() -> Option<u64> {
    #[cfg(unix)]
    {
        let want = MAX_LABEL_FILES as u64 * DESCRIPTORS_PER_FILE + OTHER_DESCRIPTORS;
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes one `rlimit` through the pointer, which points at a live,
        // writable local of that type.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return None;
        }
        let cur = lim.rlim_cur as u64;
        if cur >= want || lim.rlim_cur == libc::RLIM_INFINITY {
            return Some(cur);
        }
        let raised = libc::rlimit {
            rlim_cur: (want as libc::rlim_t).min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `setrlimit` only reads the `rlimit` behind the pointer (a live local); a soft
        // limit at most the hard one is always allowed, and a refusal leaves the limit as it was.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(raised.rlim_cur as u64);
        }
        Some(cur)
    }
    #[cfg(not(unix))]
    None
}

/// pcapng block types kept for files opened later: a section header starts anew.
const SHB: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];

/// A record of a chunk: its byte range, its frame's byte range, its link type, whether it is a
/// packet (pcapng blocks that are not packets are copied as they are).
#[derive(Clone, Copy)]
pub(super) struct Rec {
    pub(super) start: u32,
    pub(super) end: u32,
    pub(super) frame: (u32, u32),
    pub(super) linktype: u32,
    pub(super) packet: bool,
}

/// Where a run of a chunk's bytes goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dest {
    /// Blocks that are not packets: to every output.
    Block,
    /// Packets the selection keeps.
    Selected,
    /// Packets of one label (`None`: absent).
    Label(Option<u32>),
}

/// A run of adjacent records of one destination.
pub(super) struct Run {
    pub(super) dest: Dest,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// The runs of `recs` to write: the selected packets (`Some(select)`) or every packet by label
/// (`None`), with the blocks that are not packets (each a run of its own, so that
/// [`LabelFiles::block`] sees one block at a time).
pub(super) fn runs(recs: &[Rec], v: &Verdicts, select: Option<Select>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut p = 0;
    for r in recs {
        let dest = if r.packet {
            p += 1;
            match select {
                Some(sel) if v.matched(p - 1) == (sel == Select::Matching) => Dest::Selected,
                Some(_) => continue,
                None => Dest::Label(v.label(p - 1)),
            }
        } else {
            Dest::Block
        };
        let (start, end) = (r.start as usize, r.end as usize);
        match runs.last_mut() {
            Some(l) if l.end == start && l.dest == dest && dest != Dest::Block => l.end = end,
            _ => runs.push(Run { dest, start, end }),
        }
    }
    runs
}

/// The per-label capture files of one classification, in the folder `dir`.
pub struct LabelFiles {
    dir: PathBuf,
    /// The names of the labels known in advance (a spatial filter's classes); others are named
    /// by their value in decimal.
    names: BTreeMap<u32, String>,
    /// `pcap` or `pcapng`, once the input's format is known.
    ext: &'static str,
    /// What a file opened now starts with: the classic header, or the current section's header
    /// and interface blocks.
    preamble: Vec<u8>,
    files: BTreeMap<Option<u32>, BufWriter<AtomicFile>>,
    /// `dir` was made here: removed again unless committed.
    made_dir: bool,
    /// The soft limit of open descriptors, for the message when a file cannot be opened.
    descriptors: Option<u64>,
}

impl LabelFiles {
    /// A set of files in `dir` (created if missing; its parent must exist), one per label of
    /// `names` and for `absent` from the start, one per further label as it appears. A name
    /// that cannot be a file name (empty, `.`, `..`, with `/` or NUL, or `absent`) is refused.
    pub fn new(dir: &Path, names: BTreeMap<u32, String>) -> Result<LabelFiles> {
        for n in names.values() {
            if n.is_empty() || n == "." || n == ".." || n.contains(['/', '\0']) || n == ABSENT {
                return Err(Error::usage(format!(
                    "-w DIR names each file by its class, and the class name {n:?} cannot be a \
                     file name of its own"
                )));
            }
        }
        let mut made_dir = false;
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::input(
                    dir,
                    None,
                    "is not a directory: against a spatial filter or retrieval table, -w names \
                     a directory that gets one capture per class or value",
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir(dir).map_err(|e| Error::io(dir, "create", e))?;
                made_dir = true;
            }
            Err(e) => return Err(Error::io(dir, "inspect", e)),
        }
        Ok(LabelFiles {
            dir: dir.to_path_buf(),
            names,
            ext: "pcap",
            preamble: Vec::new(),
            files: BTreeMap::new(),
            made_dir,
            descriptors: make_room_for_files(),
        })
    }

    /// Starts the files: `header` is a classic pcap file's 24-byte header (`None`: pcapng,
    /// whose section and interface blocks come through [`LabelFiles::block`]).
    pub(crate) fn begin(&mut self, header: Option<&[u8]>) -> Result<()> {
        self.ext = if header.is_some() { "pcap" } else { "pcapng" };
        self.preamble = header.unwrap_or_default().to_vec();
        let known: Vec<u32> = self.names.keys().copied().collect();
        self.open(None)?;
        known
            .into_iter()
            .try_for_each(|l| self.open(Some(l)).map(drop))
    }

    /// The file of `label`, opened (with the preamble) if it is not yet.
    fn open(&mut self, label: Option<u32>) -> Result<&mut BufWriter<AtomicFile>> {
        if !self.files.contains_key(&label) {
            if self.files.len() == MAX_LABEL_FILES {
                return Err(Error::usage(format!(
                    "-w {} would write more than {MAX_LABEL_FILES} files (one per value seen); \
                     count the values with --json instead",
                    self.dir.display()
                )));
            }
            let name = match label {
                None => ABSENT.to_string(),
                Some(l) => self.names.get(&l).cloned().unwrap_or_else(|| l.to_string()),
            };
            let path = self.dir.join(format!("{name}.{}", self.ext));
            let file = AtomicFile::create(&path).map_err(|e| self.explain_limit(e))?;
            let mut w = BufWriter::with_capacity(BUFFER, file);
            w.write_all(&self.preamble)
                .map_err(|e| Error::io(&path, "write", e))?;
            self.files.insert(label, w);
        }
        Ok(self.files.get_mut(&label).expect("just opened"))
    }

    /// `e`, or, when it is the limit of open descriptors, an error that says so and how many
    /// files were open.
    fn explain_limit(&self, e: Error) -> Error {
        let emfile = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<io::Error>())
            .and_then(io::Error::raw_os_error)
            == Some(libc_emfile());
        if !emfile {
            return e;
        }
        let limit = self
            .descriptors
            .map_or_else(|| "unknown".to_string(), |n| n.to_string());
        let msg = format!(
            "-w: {} files open (each holds {DESCRIPTORS_PER_FILE} descriptors) reach this \
             process's limit of open files ({limit}, `ulimit -n`; its hard limit is below what \
             {MAX_LABEL_FILES} files need): raise it, or count the labels with --json instead",
            self.files.len()
        );
        Error::input(&self.dir, None, msg)
    }

    /// A pcapng block that is not a packet: to every file, and kept for files opened later when
    /// it is a section header (which starts the preamble anew) or an interface description.
    pub(super) fn block(&mut self, block: &[u8]) -> Result<()> {
        match block.get(..4) {
            Some(t) if t == SHB => self.preamble = block.to_vec(),
            Some([1, 0, 0, 0] | [0, 0, 0, 1]) => self.preamble.extend_from_slice(block),
            _ => {}
        }
        for w in self.files.values_mut() {
            w.write_all(block).map_err(|e| write_err(w, e))?;
        }
        Ok(())
    }

    /// Records of packets of `label` (`None`: absent).
    pub(crate) fn packets(&mut self, label: Option<u32>, records: &[u8]) -> Result<()> {
        let w = self.open(label)?;
        w.write_all(records).map_err(|e| write_err(w, e))
    }

    /// Puts every file in place (all flushed before any is), returning their paths.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        for (label, w) in std::mem::take(&mut self.files) {
            let file = w
                .into_inner()
                .map_err(|e| Error::io(&self.dir, "write a file in", e.into_error()))?;
            done.push((label, file));
        }
        let mut paths = Vec::new();
        for (_, file) in done {
            paths.push(file.target().to_path_buf());
            file.commit()?;
        }
        self.made_dir = false;
        Ok(paths)
    }
}

/// A failed write to the file of `w`.
fn write_err(w: &BufWriter<AtomicFile>, e: io::Error) -> Error {
    Error::io(w.get_ref().target(), "write", e)
}

impl Drop for LabelFiles {
    /// Uncommitted: the files vanish with their [`AtomicFile`]s, and a folder made here goes too.
    fn drop(&mut self) {
        self.files.clear();
        if self.made_dir {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// `EMFILE`, the error of a process at its limit of open descriptors.
fn libc_emfile() -> i32 {
    #[cfg(unix)]
    {
        libc::EMFILE
    }
    #[cfg(not(unix))]
    {
        24
    }
}
