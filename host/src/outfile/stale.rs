//! Names of this tool's temporary files, and removing the ones a killed run left behind.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Prefix of every temporary file and staging folder this tool creates.
pub const TEMP_PREFIX: &str = ".bloomlanes-";
/// Suffix of every temporary file and staging folder this tool creates.
pub const TEMP_SUFFIX: &str = ".tmp";

/// How long a temporary file or staging folder of this tool must have gone unmodified before a
/// later run writing into the same folder removes it. A live writer modifies its temporary file
/// continually, so only a run that was killed (or stopped for this long) leaves one this old.
/// One of a process that is gone, whose lock nobody holds, is removed at once.
pub const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The process id in a temporary name of the current form (`.bloomlanes-<pid>-<hex>.tmp`).
fn pid_of(name: &str) -> Option<u32> {
    let middle = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    middle.split_once('-')?.0.parse().ok()
}

/// Whether no process with id `pid` exists on this machine.
#[cfg(unix)]
fn process_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_gone(_: u32) -> bool {
    false
}

/// Marks the temporary file or folder open as `file` as in use for as long as it stays open (an
/// exclusive `flock`; see [`abandoned`]). Best effort: where locks are unsupported, the age
/// rule alone applies.
pub(crate) fn hold(file: &std::fs::File) {
    let _ = bloomlanes_guard::try_lock(file, true);
}

/// Whether the temporary file or folder `path` (named `name`) was abandoned: the process its
/// name records is gone from this machine, and no process (of this machine or, on a network
/// file system, of another) holds its lock ([`hold`]). Such a one is removed at once, as rsync
/// leaves its temporaries to be found and SQLite tells a hot journal by its lock.
pub(crate) fn abandoned(path: &Path, name: &str) -> bool {
    let Some(pid) = pid_of(name) else {
        return false;
    };
    if pid == std::process::id() || !process_gone(pid) {
        return false;
    }
    open_quietly(path)
        .and_then(|f| bloomlanes_guard::try_lock(&f, true))
        .unwrap_or(false)
}

/// Opens `path` to test its lock without following a link and without waiting (a FIFO planted
/// under one of our names must not hang the cleanup).
#[cfg(unix)]
fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(not(unix))]
fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// A fresh temporary name: `.bloomlanes-<pid>-<16 hex digits>.tmp`.
pub(crate) fn temp_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    format!(
        "{TEMP_PREFIX}{}-{:016x}{TEMP_SUFFIX}",
        std::process::id(),
        h.finish()
    )
}

/// Whether `name` is one this tool gives its temporary files and folders: the current form
/// `.bloomlanes-<pid>-<16 hex>.tmp`, and the earlier `.bloomlanes-XXXXXX.tmp` (files) and
/// `.bloomlanes-hdl-XXXXXX` (staging folders) with six random letters or digits.
pub fn is_temp_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let alnum6 = |s: &str| s.len() == 6 && s.bytes().all(|b| b.is_ascii_alphanumeric());
    if let Some(rest) = name.strip_prefix(".bloomlanes-hdl-") {
        return alnum6(rest);
    }
    let Some(middle) = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|s| s.strip_suffix(TEMP_SUFFIX))
    else {
        return false;
    };
    if alnum6(middle) {
        return true;
    }
    match middle.split_once('-') {
        Some((pid, random)) => {
            !pid.is_empty()
                && pid.len() <= 10
                && pid.bytes().all(|b| b.is_ascii_digit())
                && random.len() == 16
                && random.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// When `path` (not followed if a link) was last modified; for a folder, the latest of it and
/// the entries directly in it.
fn last_modified(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mut latest = meta.modified().ok()?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).ok()?.flatten() {
            if let Ok(t) = entry.metadata().and_then(|m| m.modified()) {
                latest = latest.max(t);
            }
        }
    }
    Some(latest)
}

/// Removes from `dir` the temporary files and staging folders of this tool ([`is_temp_name`])
/// left by runs that were killed: at once those whose process is gone from this machine and
/// whose lock (held by every live writer) nobody holds, others once unmodified for
/// [`STALE_AFTER`] or longer; returns how many were removed. Nothing else is touched: no other name, nothing outside `dir` (links are
/// removed, never followed). Errors (an unreadable folder, a file removed meanwhile) are
/// ignored: this is housekeeping.
pub fn clean_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_temp_name(&name) {
            continue;
        }
        let path = entry.path();
        let stale = last_modified(&path)
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= STALE_AFTER)
            || name.to_str().is_some_and(|n| abandoned(&path, n));
        if !stale {
            continue;
        }
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

#[cfg(all(test, unix))]
mod tests {
    use std::fs::File;

    use super::*;

    #[test]
    fn only_this_tools_names_count() {
        for ok in [
            temp_name().as_str(),
            ".bloomlanes-12-0123456789abcdef.tmp",
            ".bloomlanes-a1B2c3.tmp",
            ".bloomlanes-hdl-Zz09aa",
        ] {
            assert!(is_temp_name(OsStr::new(ok)), "{ok}");
        }
        for other in [
            ".bloomlanes-notes.tmp",
            ".bloomlanes-12-0123456789abcdeg.tmp",
            ".bloomlanes-12-0123456789abcdef",
            "bloomlanes-a1B2c3.tmp",
            ".bloomlanes-hdl-Zz09a",
            ".bloomlanes--0123456789abcdef.tmp",
            "f.blf",
        ] {
            assert!(!is_temp_name(OsStr::new(other)), "{other}");
        }
    }

    #[test]
    fn old_temporary_files_and_folders_go_young_ones_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(60);
        let age = |p: &Path| {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap()
        };
        let stale_file = dir.path().join(temp_name());
        std::fs::write(&stale_file, b"left by a killed run").unwrap();
        age(&stale_file);
        let young_file = dir.path().join(temp_name());
        std::fs::write(&young_file, b"being written").unwrap();
        let user_file = dir.path().join(".bloomlanes-notes.tmp");
        std::fs::write(&user_file, b"not ours").unwrap();
        age(&user_file);
        let stale_dir = dir.path().join(".bloomlanes-hdl-abc123");
        std::fs::create_dir(&stale_dir).unwrap();
        std::fs::write(stale_dir.join("bank.hex"), b"0\n").unwrap();
        age(&stale_dir.join("bank.hex"));
        // A folder whose own time is old but whose file is fresh is still in use.
        let busy_dir = dir.path().join(temp_name());
        std::fs::create_dir(&busy_dir).unwrap();
        std::fs::write(busy_dir.join("synth.log"), b"...").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("keep");
        std::fs::write(&target, b"outside").unwrap();
        let stale_link = dir.path().join(temp_name());
        std::os::unix::fs::symlink(&target, &stale_link).unwrap();
        std::process::Command::new("touch")
            .args(["-h", "-d", "2 hours ago"])
            .arg(&stale_link)
            .status()
            .unwrap();
        // Folder times: set after their entries were written.
        File::open(&stale_dir)
            .unwrap()
            .set_modified(old)
            .unwrap_or(());

        assert_eq!(clean_stale(dir.path()), 3);
        assert!(!stale_file.exists() && !stale_dir.exists() && !stale_link.exists());
        assert!(young_file.exists() && user_file.exists() && busy_dir.exists());
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"outside",
            "links are not followed"
        );
    }

    #[test]
    fn those_of_a_process_that_is_gone_go_at_once_unless_someone_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let name = |pid: u32| format!("{TEMP_PREFIX}{pid}-0123456789abcdef{TEMP_SUFFIX}");
        // A staging folder of a killed export (issue #24: it waited an hour).
        let orphan = dir.path().join(name(gone));
        std::fs::create_dir(&orphan).unwrap();
        std::fs::write(orphan.join("bank.hex"), b"0\n").unwrap();
        // One of a live process (this one), and one whose lock is held (a writer elsewhere).
        let live = dir.path().join(name(std::process::id()));
        std::fs::write(&live, b"").unwrap();
        let held = dir.path().join(name(gone).replace("0123", "4567"));
        std::fs::write(&held, b"").unwrap();
        let holder = File::open(&held).unwrap();
        hold(&holder);
        assert_eq!(clean_stale(dir.path()), 1);
        assert!(!orphan.exists() && live.exists() && held.exists());
        drop(holder);
        assert_eq!(clean_stale(dir.path()), 1);
        assert!(!held.exists());
    }
}
