//! Output files written completely or not at all, that leave nothing behind when the program is
//! killed, and that replace an existing file the way a user expects.
//!
//! - **Where** ([`Destination::of`]): the path `-` is standard output (refused on a terminal);
//!   a symbolic link is followed to the file it names, which is replaced in its own folder (the
//!   link stays a link); a folder, FIFO, device or socket is refused with an error saying so.
//! - **How** ([`AtomicFile`]): on Linux the data goes into an *unnamed* file (`O_TMPFILE`) in the
//!   target's folder, which is linked into place only once it is complete and on disk: a crash,
//!   `SIGKILL` included, leaves nothing, since the kernel frees an unnamed file when its last
//!   descriptor closes. Where `O_TMPFILE` is not supported (some file systems, other systems),
//!   a named temporary file `.bloomlanes-<pid>-<random>.tmp` is used instead and renamed over
//!   the target; a terminating signal removes it (see the `signals` module) and what `SIGKILL`
//!   leaves is removed by the next write into that folder once it is [`STALE_AFTER`] old
//!   ([`clean_stale`]). Setting `BLOOMLANES_TEMP_FILES=named` forces the fallback (for tests).
//! - **Mode and owner**: a new file gets `0666` less the umask, as any program's; a replaced file
//!   keeps its permission bits (`0777` part) and, where the system permits, its owner and group.

#[cfg(unix)]
pub(crate) mod signals;
mod stale;

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use stale::{clean_stale, is_temp_name, STALE_AFTER, TEMP_PREFIX, TEMP_SUFFIX};

use crate::error::{Error, Result};

/// The environment variable that, set to `named`, makes [`AtomicFile`] use named temporary files
/// even where unnamed ones are available (to test the fallback).
pub const TEMP_FILES_ENV: &str = "BLOOMLANES_TEMP_FILES";

/// Symbolic links followed at most when resolving an output path (as Linux's own limit).
const MAX_LINKS: usize = 40;

static STDOUT_DATA: AtomicBool = AtomicBool::new(false);

/// Whether this process has written data (a filter, a bitmap, an export) to standard output, by
/// the output path `-`: messages and reports then belong on standard error.
pub fn stdout_carries_data() -> bool {
    STDOUT_DATA.load(Ordering::Relaxed)
}

/// Whether `path` is `-`, the name of standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Standard output (the path `-`).
    Stdout,
    /// This regular file (created or replaced): the path given, with symbolic links followed.
    File(PathBuf),
}

impl Destination {
    /// Where the output path `path` writes: `-` is standard output, refused when that is a
    /// terminal (binary data would garble it); anything else must be, or be a link to, a regular
    /// file or a name that does not exist yet in an existing folder ([`resolve_output_file`]).
    /// Commands call it before their work, so that a bad output path fails at once.
    pub fn of(path: &Path) -> Result<Destination> {
        if is_stdout(path) {
            if io::stdout().is_terminal() {
                return Err(Error::usage(
                    "refusing to write binary data to a terminal: redirect standard output \
                     (`-o - > FILE`, `| …`) or give a file name",
                ));
            }
            return Ok(Destination::Stdout);
        }
        resolve_output_file(path).map(Destination::File)
    }
}

/// What kind of thing `t` is, for messages.
fn kind_name(t: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

fn not_regular(path: &Path, t: &fs::FileType) -> Error {
    if t.is_dir() {
        return Error::input(path, None, "is a directory; give a file name to write");
    }
    Error::input(
        path,
        None,
        format!(
            "is {}, not a regular file: outputs are written whole into a new file that then \
             replaces the old one, which this cannot be (to write into a pipe or device, give `-` \
             for standard output and redirect it)",
            kind_name(t)
        ),
    )
}

/// The folder of `path` (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The regular file an output path writes: `path` itself, or with symbolic links followed the
/// file the last link names (a link to a name that does not exist yet creates that name). The
/// result exists as a regular file, or does not exist and its folder does. Folders, FIFOs,
/// devices and sockets are refused: an error naming `path` and what it is.
pub fn resolve_output_file(path: &Path) -> Result<PathBuf> {
    if is_stdout(path) {
        return Err(Error::usage(
            "the output `-` (standard output) is not a file here",
        ));
    }
    // Where the links lead (`/dev/stdout` to a pipe, say): refuse what is not a file at once.
    if let Ok(m) = fs::metadata(path) {
        if !m.is_file() {
            return Err(not_regular(path, &m.file_type()));
        }
    }
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                if !may_follow(&p, &m) {
                    return Err(Error::input(
                        path,
                        None,
                        format!(
                            "{} is a symbolic link planted by another user in a sticky \
                             world-writable folder: not followed (the rule of Linux's \
                             fs.protected_symlinks)",
                            p.display()
                        ),
                    ));
                }
                let next = fs::read_link(&p).map_err(|e| Error::io(path, "read the link", e))?;
                p = if next.is_absolute() {
                    next
                } else {
                    parent_of(&p).join(next)
                };
            }
            Ok(m) if m.is_file() => return Ok(p),
            Ok(m) => return Err(not_regular(path, &m.file_type())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = parent_of(&p);
                return match fs::metadata(dir) {
                    Ok(d) if d.is_dir() => Ok(p),
                    Ok(_) => Err(Error::input(
                        path,
                        None,
                        format!("cannot be created: {} is not a directory", dir.display()),
                    )),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::input(
                        path,
                        None,
                        format!(
                            "cannot be created: the directory {} does not exist",
                            dir.display()
                        ),
                    )),
                    Err(e) => Err(Error::io(path, "inspect the folder of", e)),
                };
            }
            Err(e) => return Err(Error::io(path, "inspect", e)),
        }
    }
    Err(Error::input(
        path,
        None,
        "too many levels of symbolic links",
    ))
}

/// Whether the link `link` (its metadata `meta`, not followed) may be followed. Links are
/// resolved here by hand (to replace the file they name), which bypasses the kernel's
/// `fs.protected_symlinks` check, so it is made here: in a sticky world-writable folder (`/tmp`),
/// only a link owned by this user or by the folder's owner is followed. Elsewhere, any.
#[cfg(unix)]
fn may_follow(link: &Path, meta: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = fs::metadata(parent_of(link)) else {
        return true; // the link is then unreadable anyway
    };
    if dir.mode() & 0o1002 != 0o1002 {
        return true;
    }
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    meta.uid() == me || meta.uid() == dir.uid()
}

#[cfg(not(unix))]
fn may_follow(_: &Path, _: &Metadata) -> bool {
    true
}

/// Writes to standard output through `write` (buffered), marking it as carrying data
/// ([`stdout_carries_data`]) first.
pub fn write_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    STDOUT_DATA.store(true, Ordering::Relaxed);
    let err = |e| Error::io(Path::new("<stdout>"), "write", e);
    let mut out = io::BufWriter::with_capacity(1 << 20, io::stdout().lock());
    write(&mut out).map_err(err)?;
    out.flush().map_err(err)
}

/// How the data of an [`AtomicFile`] is held until it is complete.
#[derive(Debug)]
enum Temp {
    /// An `O_TMPFILE` file: no name until it is linked into place.
    Unnamed,
    /// A named temporary file beside the target.
    Named {
        path: PathBuf,
        /// Removes the file if a signal ends the process first.
        #[cfg(unix)]
        _armed: Option<signals::Armed>,
    },
}

/// A file being written that appears at its path only once complete: [`AtomicFile::commit`]
/// flushes it to disk and puts it in place (replacing any file there in one step); dropping it
/// uncommitted leaves the old file, or no file, as before. See the [module docs](self).
#[derive(Debug)]
pub struct AtomicFile {
    file: File,
    /// The path as given (for messages).
    given: PathBuf,
    /// The regular file it becomes.
    target: PathBuf,
    /// The target's folder, open (for linking and for the signal handler).
    dir: File,
    /// `None` once committed.
    temp: Option<Temp>,
    /// The target's write lock, held until the new file is in place (or dropped): a second
    /// writer of the same file waits for it ([`crate::store::lock`]). Declared last: released
    /// after the temporary data is gone.
    _lock: crate::store::lock::WriteLock,
}

impl AtomicFile {
    /// Starts writing the output `path` (resolved by [`resolve_output_file`]), under the
    /// target's write lock (waiting for another writer as [`crate::store::lock`] says; a lock
    /// this thread holds already, for a read-modify-write, is taken again at once). Stale
    /// temporary files of this tool in the same folder are removed first ([`clean_stale`]).
    pub fn create(path: &Path) -> Result<AtomicFile> {
        AtomicFile::create_with(path, unnamed_wanted())
    }

    /// [`AtomicFile::create`], with unnamed files tried (`unnamed`) or not.
    fn create_with(path: &Path, unnamed: bool) -> Result<AtomicFile> {
        let target = resolve_output_file(path)?;
        let lock = crate::store::lock::write_lock(&target)?;
        let dir_path = parent_of(&target).to_path_buf();
        clean_stale(&dir_path);
        let existing = fs::metadata(&target).ok().filter(Metadata::is_file);
        let dir = File::open(&dir_path).map_err(|e| Error::io(path, "open the folder of", e))?;
        let created = if unnamed {
            match create_unnamed(&dir_path) {
                Err(e) if unnamed_unsupported(&e) => create_named(&dir, &dir_path),
                other => other.map(|f| (f, Temp::Unnamed)),
            }
        } else {
            create_named(&dir, &dir_path)
        };
        let (file, temp) =
            created.map_err(|e| Error::io(path, "create a temporary file beside", e))?;
        let out = AtomicFile {
            file,
            given: path.to_path_buf(),
            target,
            dir,
            temp: Some(temp),
            _lock: lock,
        };
        if let Some(m) = &existing {
            keep_attributes(&out.file, m).map_err(|e| Error::io(path, "set the mode of", e))?;
        }
        Ok(out)
    }

    /// The regular file this becomes (the path given, links followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Whether the data is held in an unnamed (`O_TMPFILE`) file.
    pub fn is_unnamed(&self) -> bool {
        matches!(self.temp, Some(Temp::Unnamed))
    }

    /// Flushes the file to disk and puts it in place, replacing any file at the target in one
    /// step. On failure nothing has changed at the target and the temporary data is removed.
    pub fn commit(mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(&self.given, "sync", e))?;
        match &self.temp {
            Some(Temp::Unnamed) => self.link_unnamed()?,
            Some(Temp::Named { path, .. }) => fs::rename(path, &self.target)
                .map_err(|e| Error::io(&self.given, "rename the temporary file to", e))?,
            None => unreachable!("an AtomicFile is committed once"),
        }
        self.temp = None;
        // The new name is durable once the folder is (some file systems refuse; the data is safe).
        let _ = self.dir.sync_all();
        Ok(())
    }

    /// Links the unnamed file into place: straight at the target when it does not exist, else
    /// under a temporary name renamed over it (`linkat` cannot replace a file).
    #[cfg(target_os = "linux")]
    fn link_unnamed(&self) -> Result<()> {
        let err = |what, e| Error::io(&self.given, what, e);
        let target_name = self
            .target
            .file_name()
            .expect("a resolved output file has a file name");
        if fs::symlink_metadata(&self.target).is_err() {
            match link_at(&self.file, &self.dir, target_name) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(err("link the finished file to", e)),
            }
        }
        for _ in 0..100 {
            let name = stale::temp_name();
            let armed = signals::arm(
                std::os::fd::AsRawFd::as_raw_fd(&self.dir),
                name.as_bytes(),
                false,
            );
            match link_at(&self.file, &self.dir, name.as_ref()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(err("link the finished file beside", e)),
            }
            let named = parent_of(&self.target).join(&name);
            let renamed = fs::rename(&named, &self.target);
            if renamed.is_err() {
                let _ = fs::remove_file(&named);
            }
            drop(armed);
            return renamed.map_err(|e| err("rename the finished file to", e));
        }
        Err(err(
            "find a free temporary name beside",
            io::ErrorKind::AlreadyExists.into(),
        ))
    }

    #[cfg(not(target_os = "linux"))]
    fn link_unnamed(&self) -> Result<()> {
        unreachable!("unnamed files are only made on Linux")
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(Temp::Named { path, .. }) = self.temp.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Whether unnamed temporary files are to be tried: Linux, `/proc` mounted (linking one into
/// place goes through `/proc/self/fd`), and not turned off by [`TEMP_FILES_ENV`].
fn unnamed_wanted() -> bool {
    cfg!(target_os = "linux")
        && std::env::var_os(TEMP_FILES_ENV).is_none_or(|v| v != "named")
        && Path::new("/proc/self/fd").is_dir()
}

#[cfg(target_os = "linux")]
fn create_unnamed(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .mode(0o666)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
}

#[cfg(not(target_os = "linux"))]
fn create_unnamed(_: &Path) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Whether creating an unnamed file failed because the system or file system lacks them.
fn unnamed_unsupported(e: &io::Error) -> bool {
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return [libc::EOPNOTSUPP, libc::EISDIR, libc::EINVAL, libc::ENOTSUP].contains(&code);
    }
    e.kind() == io::ErrorKind::Unsupported
}

/// Creates a named temporary file in `dir`, armed for removal on a terminating signal.
fn create_named(dir: &File, dir_path: &Path) -> io::Result<(File, Temp)> {
    for _ in 0..100 {
        let name = stale::temp_name();
        #[cfg(unix)]
        let armed = signals::arm(std::os::fd::AsRawFd::as_raw_fd(dir), name.as_bytes(), false);
        #[cfg(not(unix))]
        let _ = dir;
        let path = dir_path.join(&name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o666);
        match options.open(&path) {
            Ok(file) => {
                stale::hold(&file);
                let temp = Temp::Named {
                    path,
                    #[cfg(unix)]
                    _armed: armed,
                };
                return Ok((file, temp));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::ErrorKind::AlreadyExists.into())
}

/// Gives `file` the permission bits and, where permitted, the owner and group of `old` (the
/// file it is to replace).
pub(crate) fn keep_attributes(file: &File, old: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{fchown, MetadataExt, PermissionsExt};
        // Owner first: changing it may clear mode bits. Not permitted (another user's file): the
        // group alone, or nothing.
        if fchown(file, Some(old.uid()), Some(old.gid())).is_err() {
            let _ = fchown(file, None, Some(old.gid()));
        }
        file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o777))
    }
    #[cfg(not(unix))]
    file.set_permissions(old.permissions())
}

/// `linkat(AT_FDCWD, "/proc/self/fd/<file>", dir, name, AT_SYMLINK_FOLLOW)`: gives the unnamed
/// `file` the name `name` in `dir` (fails with `AlreadyExists` if the name is taken).
#[cfg(target_os = "linux")]
fn link_at(file: &File, dir: &File, name: &std::ffi::OsStr) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .expect("a number has no NUL byte");
    let to = CString::new(name.as_bytes()).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: both strings are NUL-terminated and outlive the call; the descriptors are open
    // (borrowed for the call's duration).
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            dir.as_raw_fd(),
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A staging folder for an output made of several files (`export --hdl`): created beside its
/// destination with a temporary name, removed (with its files) when dropped, on a terminating
/// signal, or by a later run's [`clean_stale`] after `SIGKILL`.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
    /// Disarmed before `_parent` closes (fields drop in this order).
    #[cfg(unix)]
    _armed: Option<signals::Armed>,
    /// The folder it is in, open (for the signal handler).
    #[cfg(unix)]
    _parent: File,
    /// The folder itself, open and locked while it is in use (see `stale::abandoned`).
    _held: File,
    /// Renamed into place: nothing to remove.
    placed: bool,
}

impl StagingDir {
    /// Creates a staging folder (mode `0777` less the umask) in `parent`, after removing stale
    /// ones there.
    pub fn create_in(parent: &Path) -> io::Result<StagingDir> {
        clean_stale(parent);
        #[cfg(unix)]
        let parent_fd = File::open(parent)?;
        for _ in 0..100 {
            let name = stale::temp_name();
            #[cfg(unix)]
            let armed = signals::arm(
                std::os::fd::AsRawFd::as_raw_fd(&parent_fd),
                name.as_bytes(),
                true,
            );
            let path = parent.join(&name);
            match fs::create_dir(&path) {
                Ok(()) => {
                    let held = File::open(&path)?;
                    stale::hold(&held);
                    return Ok(StagingDir {
                        path,
                        #[cfg(unix)]
                        _armed: armed,
                        #[cfg(unix)]
                        _parent: parent_fd,
                        _held: held,
                        placed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::ErrorKind::AlreadyExists.into())
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the whole folder to `target` (which must not exist, or be an empty folder).
    pub fn rename_to(mut self, target: &Path) -> io::Result<()> {
        fs::rename(&self.path, target)?;
        self.placed = true;
        Ok(())
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.placed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(all(test, unix))]
mod tests;
