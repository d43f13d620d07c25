//! How this process waits for the locks of filter files (see [`bloomlanes_guard`]): every
//! writer of an output takes its write lock ([`write_lock`], done by
//! [`AtomicFile`](crate::outfile::AtomicFile)), held for the whole read-modify-write when the
//! caller takes it first ([`lock_output`]); every reader of a filter file a shared lock on it
//! ([`read_lock`]). Whether a busy lock is waited for, and what is said while waiting, is set
//! once for the process ([`set_wait`], [`set_waiting_notice`]): the command line's
//! `--wait`/`--no-wait`.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use bloomlanes_guard::LockError;
pub use bloomlanes_guard::{Busy, Wait};

use crate::error::{Error, Result};

static FAIL_WHEN_BUSY: AtomicBool = AtomicBool::new(false);
static NOTICE: OnceLock<fn(&Busy)> = OnceLock::new();

/// Sets whether this process waits for a lock another process holds ([`Wait::Block`], the
/// default) or fails at once with [`Error::Locked`] ([`Wait::Fail`]).
pub fn set_wait(wait: Wait) {
    FAIL_WHEN_BUSY.store(wait == Wait::Fail, Ordering::Relaxed);
}

/// The waiting policy set by [`set_wait`].
pub fn wait_policy() -> Wait {
    if FAIL_WHEN_BUSY.load(Ordering::Relaxed) {
        Wait::Fail
    } else {
        Wait::Block
    }
}

/// Sets what is called, once per lock, when this process starts waiting for a lock (the
/// command line prints a line saying who holds it). The library itself says nothing. Only the
/// first call takes effect.
pub fn set_waiting_notice(notice: fn(&Busy)) {
    let _ = NOTICE.set(notice);
}

fn lock_error(e: LockError) -> Error {
    match e {
        LockError::Busy(busy) => Error::Locked { busy },
        LockError::Io { path, op, source } => Error::io(&path, op, source),
    }
}

/// A callback for the guard's wait loop: the notice on its first call, nothing after.
fn noticing() -> impl FnMut(&Busy) -> std::io::Result<()> {
    let mut told = false;
    move |busy| {
        if !told {
            told = true;
            if let Some(n) = NOTICE.get() {
                n(busy);
            }
        }
        Ok(())
    }
}

/// A write lock held by this process ([`bloomlanes_guard::WriteLock`]), its lock file removed
/// also when a terminating signal ends the process (as the outputs' temporary files are; what
/// `SIGKILL` leaves names a dead process and is reused, then removed, by the next writer).
#[derive(Debug)]
pub struct WriteLock {
    /// Disarmed first, before the folder closes and the lock is released.
    #[cfg(unix)]
    _armed: Option<crate::outfile::signals::Armed>,
    #[cfg(unix)]
    _dir: Option<File>,
    _lock: bloomlanes_guard::WriteLock,
}

/// Takes the write lock of the regular file `target` (see
/// [`bloomlanes_guard::WriteLock::acquire`]) under this process's policy.
pub fn write_lock(target: &Path) -> Result<WriteLock> {
    let lock = bloomlanes_guard::WriteLock::acquire(target, wait_policy(), &mut noticing())
        .map_err(lock_error)?;
    #[cfg(unix)]
    {
        let lock_file = bloomlanes_guard::lock_file_of(target);
        let dir = File::open(crate::outfile::parent_of(&lock_file)).ok();
        let armed = dir.as_ref().and_then(|d| {
            let name = lock_file.file_name()?;
            crate::outfile::signals::arm(
                std::os::fd::AsRawFd::as_raw_fd(d),
                std::os::unix::ffi::OsStrExt::as_bytes(name),
                false,
            )
        });
        Ok(WriteLock {
            _armed: armed,
            _dir: dir,
            _lock: lock,
        })
    }
    #[cfg(not(unix))]
    Ok(WriteLock { _lock: lock })
}

/// Takes the write lock of the output path `path` for a read-modify-write, before the filter is
/// read: the output's regular file (links followed, as [`outfile`](crate::outfile) writes it),
/// or nothing for standard output (`-`). Saving to `path` while holding it does not wait for
/// the lock again.
pub fn lock_output(path: &Path) -> Result<Option<WriteLock>> {
    if crate::outfile::is_stdout(path) {
        return Ok(None);
    }
    let target = crate::outfile::resolve_output_file(path)?;
    write_lock(&target).map(Some)
}

/// Takes a shared lock on the open filter file `file` (read from `path`), held until it is
/// closed, under this process's policy.
pub fn read_lock(file: &File, path: &Path) -> Result<()> {
    bloomlanes_guard::read_lock(file, path, wait_policy(), &mut noticing()).map_err(lock_error)
}
