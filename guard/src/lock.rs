//! Advisory locks: [`WriteLock`] on a lock file beside the target, [`read_lock`] on an open file.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Duration;

/// What to do when another process holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Wait {
    /// Wait until it is released (polling, so that the caller's `waiting` callback can give up).
    #[default]
    Block,
    /// Fail at once with [`LockError::Busy`].
    Fail,
}

/// A lock held by another process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Busy {
    /// The file being written (the lock's target).
    pub target: PathBuf,
    /// The lock file.
    pub lock_file: PathBuf,
    /// The process holding it, when the lock file names one.
    pub holder: Option<u32>,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is being written by ", self.target.display())?;
        match self.holder {
            Some(pid) => write!(f, "another process (pid {pid})")?,
            None => write!(f, "another process")?,
        }
        write!(f, ", which holds the lock {}", self.lock_file.display())
    }
}

/// Why a lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process holds it and [`Wait::Fail`] was asked for.
    Busy(Busy),
    /// The lock file could not be opened or locked.
    Io {
        /// The lock file (or the file to be read-locked).
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The system's error.
        source: io::Error,
    },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Busy(b) => write!(f, "{b}"),
            LockError::Io { path, op, source } => {
                write!(f, "{}: cannot {op}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Busy(_) => None,
            LockError::Io { source, .. } => Some(source),
        }
    }
}

/// The lock file of `target`: `<target>.lock` in the same folder.
pub fn lock_file_of(target: &Path) -> PathBuf {
    let mut name: OsString = target.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    target.with_file_name(name)
}

/// The identity of a lock held by this process: the lock file, its folder made absolute.
fn key_of(lock_file: &Path) -> PathBuf {
    let dir = match lock_file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.join(lock_file.file_name().unwrap_or_default())
}

/// A write lock held by this process.
struct Held {
    key: PathBuf,
    owner: ThreadId,
    depth: usize,
    file: File,
    /// The lock file carries this process's id (it was empty or named a process before): it is
    /// removed on release if it still does.
    ours: bool,
}

/// The write locks this process holds: a thread that already holds a lock takes it again
/// without waiting for itself (a read-modify-write holds the lock and then saves, which locks).
static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// An exclusive lock on a file's lock file ([`lock_file_of`]), released when dropped (on any
/// thread). See the [crate docs](crate).
#[derive(Debug)]
pub struct WriteLock {
    key: PathBuf,
    /// The thread that took it (a nested take on that thread is counted in its entry).
    owner: ThreadId,
}

impl WriteLock {
    /// Takes the write lock of `target` (a path whose folder exists; the lock file is created
    /// there). If another process holds it: with [`Wait::Fail`] a [`LockError::Busy`]; with
    /// [`Wait::Block`], `waiting` is called with who holds it, then again every few
    /// milliseconds until the lock is free (an error from it gives up, e.g. on an interrupt).
    /// A thread that holds the lock already takes it again at once.
    pub fn acquire(
        target: &Path,
        wait: Wait,
        waiting: &mut dyn FnMut(&Busy) -> io::Result<()>,
    ) -> Result<WriteLock, LockError> {
        let lock_file = lock_file_of(target);
        let key = key_of(&lock_file);
        let me = std::thread::current().id();
        if let Some(h) = held().iter_mut().find(|h| h.key == key && h.owner == me) {
            h.depth += 1;
            return Ok(WriteLock { key, owner: me });
        }
        let io_err = |op, source| LockError::Io {
            path: lock_file.clone(),
            op,
            source,
        };
        let mut pause = Duration::from_millis(1);
        let file = loop {
            let file = open_lock_file(&lock_file).map_err(|e| io_err("create the lock file", e))?;
            match try_lock(&file, true) {
                Ok(true) => {}
                Ok(false) => {
                    let busy = Busy {
                        target: target.to_path_buf(),
                        lock_file: lock_file.clone(),
                        holder: holder_of(&file),
                    };
                    if wait == Wait::Fail {
                        return Err(LockError::Busy(busy));
                    }
                    waiting(&busy).map_err(|e| io_err("wait for the lock", e))?;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(25));
                    continue;
                }
                Err(e) => return Err(io_err("lock", e)),
            }
            // A holder that released it may have removed the lock file after we opened it:
            // the lock is ours only if the name still leads to the file we locked.
            if same_file(&file, &lock_file) {
                break file;
            }
        };
        let ours = claim(&file);
        held().push(Held {
            key: key.clone(),
            owner: me,
            depth: 1,
            file,
            ours,
        });
        Ok(WriteLock { key, owner: me })
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let mut all = held();
        let Some(i) = all
            .iter()
            .position(|h| h.key == self.key && h.owner == self.owner)
        else {
            return;
        };
        all[i].depth -= 1;
        if all[i].depth > 0 {
            return;
        }
        let h = all.swap_remove(i);
        drop(all);
        // Removed while still locked, so that no other process can have it at this moment:
        // one that opened it already finds the name gone once it gets the lock, and retries.
        if h.ours && same_file(&h.file, &h.key) && holder_of(&h.file) == Some(std::process::id()) {
            let _ = std::fs::remove_file(&h.key);
        }
        drop(h.file);
    }
}

/// Takes a shared lock on `file` (the file a reader maps or reads; `path` names it in errors),
/// held until every descriptor of that open file is closed. With [`Wait::Block`], `waiting`
/// is called while another program holds an exclusive lock on it, as for [`WriteLock`].
pub fn read_lock(
    file: &File,
    path: &Path,
    wait: Wait,
    waiting: &mut dyn FnMut(&Busy) -> io::Result<()>,
) -> Result<(), LockError> {
    let mut pause = Duration::from_millis(1);
    loop {
        match try_lock(file, false) {
            Ok(true) => return Ok(()),
            Ok(false) => {
                let busy = Busy {
                    target: path.to_path_buf(),
                    lock_file: path.to_path_buf(),
                    holder: None,
                };
                if wait == Wait::Fail {
                    return Err(LockError::Busy(busy));
                }
                waiting(&busy).map_err(|source| LockError::Io {
                    path: path.to_path_buf(),
                    op: "wait for the lock on",
                    source,
                })?;
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(25));
            }
            // A file system without locks (some network mounts): reading goes on unlocked.
            Err(e) if unsupported(&e) => return Ok(()),
            Err(source) => {
                return Err(LockError::Io {
                    path: path.to_path_buf(),
                    op: "lock",
                    source,
                })
            }
        }
    }
}

/// Opens (creating) a lock file for reading and writing; on Unix never through a link.
fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut options = File::options();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o666)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// `flock(LOCK_EX | LOCK_NB)` (or `LOCK_SH`) on `file`: `Ok(false)` when another open file
/// holds a conflicting lock. Held until every descriptor of this open file is closed. (Used
/// also to mark a temporary file or folder as in use, and to tell an abandoned one.)
#[cfg(unix)]
pub fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let op = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    } | libc::LOCK_NB;
    loop {
        // SAFETY: `flock` on a descriptor we own (borrowed for the call); no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Locks are not taken on this platform: always `Ok(true)`.
#[cfg(not(unix))]
pub fn try_lock(_: &File, _: bool) -> io::Result<bool> {
    Ok(true)
}

#[cfg(unix)]
fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP)
    )
}

#[cfg(not(unix))]
fn unsupported(_: &io::Error) -> bool {
    true
}

/// Whether `path` still names the open `file`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// The process a lock file names (its contents: a decimal process id and a newline).
fn holder_of(file: &File) -> Option<u32> {
    let mut text = String::new();
    let mut f = file;
    f.seek(io::SeekFrom::Start(0)).ok()?;
    f.take(32).read_to_string(&mut text).ok()?;
    text.trim_end_matches('\n').parse().ok()
}

/// Writes this process's id into a lock file just locked, when it is empty or names a process
/// (a lock file of this tool); anything else is left as it is. Returns whether it now names us.
fn claim(file: &File) -> bool {
    let len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if len != 0 && holder_of(file).is_none() {
        return false;
    }
    let mut f = file;
    f.set_len(0).is_ok()
        && f.seek(io::SeekFrom::Start(0)).is_ok()
        && writeln!(f, "{}", std::process::id()).is_ok()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn never(_: &Busy) -> io::Result<()> {
        panic!("must not wait")
    }

    #[test]
    fn a_lock_is_reentrant_on_its_thread_and_removed_on_release() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.blf");
        let lock = WriteLock::acquire(&target, Wait::Fail, &mut never).unwrap();
        let lock_file = dir.path().join("t.blf.lock");
        assert_eq!(
            std::fs::read_to_string(&lock_file).unwrap(),
            format!("{}\n", std::process::id())
        );
        let again = WriteLock::acquire(&target, Wait::Fail, &mut never).unwrap();
        drop(again);
        assert!(lock_file.exists(), "still held by the outer lock");
        // Released by whichever thread drops it (a Python object is freed on any thread).
        std::thread::spawn(move || drop(lock)).join().unwrap();
        assert!(!lock_file.exists());
    }

    #[test]
    fn another_thread_waits_or_fails_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.blf");
        let lock = WriteLock::acquire(&target, Wait::Fail, &mut never).unwrap();
        let t = target.clone();
        let e = std::thread::spawn(move || WriteLock::acquire(&t, Wait::Fail, &mut never))
            .join()
            .unwrap()
            .unwrap_err();
        let LockError::Busy(b) = &e else {
            panic!("{e}")
        };
        assert_eq!(b.holder, Some(std::process::id()));
        assert!(e.to_string().contains("t.blf.lock"), "{e}");
        let t = target.clone();
        let waiter = std::thread::spawn(move || {
            let mut waited = 0;
            let l = WriteLock::acquire(&t, Wait::Block, &mut |_| {
                waited += 1;
                Ok(())
            })
            .unwrap();
            drop(l);
            waited
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(lock);
        assert!(waiter.join().unwrap() > 0);
    }

    #[test]
    fn a_foreign_lock_file_is_used_but_neither_changed_nor_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.blf");
        std::fs::write(dir.path().join("t.blf.lock"), "notes of the user").unwrap();
        drop(WriteLock::acquire(&target, Wait::Fail, &mut never).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t.blf.lock")).unwrap(),
            "notes of the user"
        );
        // A lock file left by a killed process (it names one) is reused and removed.
        std::fs::write(dir.path().join("t.blf.lock"), "999999\n").unwrap();
        drop(WriteLock::acquire(&target, Wait::Fail, &mut never).unwrap());
        assert!(!dir.path().join("t.blf.lock").exists());
    }

    #[test]
    fn a_read_lock_waits_for_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.blf");
        std::fs::write(&path, b"x").unwrap();
        let writer = File::open(&path).unwrap();
        assert!(try_lock(&writer, true).unwrap());
        let reader = File::open(&path).unwrap();
        let e = read_lock(&reader, &path, Wait::Fail, &mut never).unwrap_err();
        assert!(matches!(e, LockError::Busy(_)), "{e}");
        let mut rounds = 0;
        let e = read_lock(&reader, &path, Wait::Block, &mut |_| {
            rounds += 1;
            if rounds < 3 {
                Ok(())
            } else {
                Err(io::ErrorKind::Interrupted.into())
            }
        })
        .unwrap_err();
        assert!(matches!(e, LockError::Io { .. }), "{e}");
        drop(writer);
        read_lock(&reader, &path, Wait::Fail, &mut never).unwrap();
    }
}
