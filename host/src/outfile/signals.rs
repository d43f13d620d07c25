//! Removing this process's named temporary files when a signal ends it.
//!
//! A named temporary file (the fallback where `O_TMPFILE` is unavailable, a staging folder of
//! `export --hdl`, the instant between linking an unnamed file and renaming it) is *armed* here:
//! its directory's descriptor and its name are copied into a fixed table. The first time
//! something is armed, a handler is installed for the signals whose default action ends the
//! process (`SIGINT`, `SIGTERM`, `SIGHUP`, `SIGQUIT`, `SIGXFSZ`), but only for those still at
//! their default action: a signal the process ignores (`nohup`) or handles itself is left alone.
//!
//! The handler does only what is async-signal-safe: it reads the table through atomics (no lock,
//! no allocation), `unlinkat`s each armed file (for a folder: `getdents64` and `unlinkat` its
//! entries and those of its subfolders, then the folder), restores the default action and raises
//! the signal again, so the process ends exactly as it would have (its exit status names the
//! signal). `SIGKILL` cannot be caught: what it leaves behind is removed by
//! [`super::clean_stale`] when a later run writes into the same folder.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::Once;

use libc::c_int;

/// How many temporary files can be armed at once (more are simply not armed: the stale-file
/// cleanup still catches them).
const SLOTS: usize = 32;
/// Longest name (bytes, without the terminating NUL) a slot holds.
const NAME_CAP: usize = 95;

const FREE: u8 = 0;
const FILLING: u8 = 1;
const ARMED: u8 = 2;
/// Claimed by the handler: never reused.
const TAKEN: u8 = 3;

/// One armed temporary file: `name` in the folder open as `dir_fd`.
struct Slot {
    state: AtomicU8,
    dir_fd: AtomicI32,
    is_dir: AtomicBool,
    /// NUL-terminated.
    name: [AtomicU8; NAME_CAP + 1],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(FREE),
            dir_fd: AtomicI32::new(-1),
            is_dir: AtomicBool::new(false),
            name: [const { AtomicU8::new(0) }; NAME_CAP + 1],
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static INSTALL: Once = Once::new();

/// The signals whose default action ends the process and that a user or the system sends to
/// stop a program: interrupt, terminate, hang-up, quit, and file-size limit exceeded (a write
/// past `ulimit -f`).
const SIGNALS: [c_int; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGXFSZ,
];

/// An armed temporary file; dropping it disarms it (the file itself is the owner's to remove).
#[derive(Debug)]
pub(crate) struct Armed {
    slot: usize,
}

impl Drop for Armed {
    fn drop(&mut self) {
        // If the handler took the slot meanwhile, it stays taken: the process is ending.
        let _ = TABLE[self.slot].state.compare_exchange(
            ARMED,
            FREE,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}

/// Arms `name` (a file, or with `is_dir` a folder of files) in the folder open as `dir_fd`: a
/// terminating signal removes it. `dir_fd` must stay open while the returned guard lives.
/// Returns `None` when the name is too long or every slot is in use.
pub(crate) fn arm(dir_fd: RawFd, name: &[u8], is_dir: bool) -> Option<Armed> {
    if name.is_empty() || name.len() > NAME_CAP || name.contains(&0) {
        return None;
    }
    INSTALL.call_once(install);
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .state
            .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.dir_fd.store(dir_fd, Ordering::Relaxed);
            slot.is_dir.store(is_dir, Ordering::Relaxed);
            for (j, byte) in slot.name.iter().enumerate() {
                byte.store(name.get(j).copied().unwrap_or(0), Ordering::Relaxed);
            }
            slot.state.store(ARMED, Ordering::Release);
            return Some(Armed { slot: i });
        }
    }
    None
}

fn install() {
    for sig in SIGNALS {
        // SAFETY: `sigaction` is given a valid signal number, a null new action (so it only reads)
        // and a pointer to a zeroed `sigaction` struct it fills with the current action.
        let current = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            old
        };
        if current.sa_sigaction != libc::SIG_DFL {
            continue; // ignored (nohup) or handled by someone else: theirs to decide
        }
        // SAFETY: the new action is fully initialised (zeroed, then its handler, an emptied mask
        // that then blocks the other handled signals while the handler runs, and flags);
        // `on_signal` has the `extern "C" fn(c_int)` signature a handler without SA_SIGINFO
        // needs and does only async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            for other in SIGNALS {
                libc::sigaddset(&mut action.sa_mask, other);
            }
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_signal(sig: c_int) {
    remove_armed();
    // SAFETY: `signal` and `raise` are async-signal-safe. With the default action restored, the
    // raised signal (blocked while this handler runs) is delivered when it returns and ends the
    // process as if no handler had been installed.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Removes every armed file (the handler's work).
fn remove_armed() {
    for slot in &TABLE {
        remove_slot(slot);
    }
}

/// Removes the file or folder armed in `slot`, if it is armed, and marks the slot taken.
fn remove_slot(slot: &Slot) {
    if slot
        .state
        .compare_exchange(ARMED, TAKEN, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    let mut name = [0u8; NAME_CAP + 1];
    for (b, a) in name.iter_mut().zip(&slot.name) {
        *b = a.load(Ordering::Relaxed);
    }
    let dir_fd = slot.dir_fd.load(Ordering::Relaxed);
    if slot.is_dir.load(Ordering::Relaxed) {
        remove_flat_dir(dir_fd, &name);
    } else {
        // SAFETY: `name` is NUL-terminated (its last byte is never written) and lives on this
        // stack frame; `unlinkat` is async-signal-safe and at worst fails.
        unsafe { libc::unlinkat(dir_fd, name.as_ptr().cast(), 0) };
    }
}

/// A buffer for `getdents64` records, aligned as they need.
#[cfg(target_os = "linux")]
#[repr(C, align(8))]
struct DirentBuf([u8; 4096]);

/// How deep [`remove_flat_dir`] descends: a staging folder of `export --hdl` holds files and one
/// level of subfolders (board constraints, the cocotb and formal kits); one more for safety.
#[cfg(target_os = "linux")]
const REMOVE_DEPTH: u32 = 3;

/// Removes the folder `name` (NUL-terminated) in `dir_fd`, its files and its subfolders up to
/// [`REMOVE_DEPTH`] levels, with system calls only (no allocation, no lock).
#[cfg(target_os = "linux")]
fn remove_flat_dir(dir_fd: RawFd, name: &[u8; NAME_CAP + 1]) {
    remove_tree(dir_fd, name, REMOVE_DEPTH);
}

/// Removes the folder `name` (NUL-terminated somewhere in the slice) in `dir_fd` and what is in
/// it, descending at most `depth` more levels into subfolders.
#[cfg(target_os = "linux")]
fn remove_tree(dir_fd: RawFd, name: &[u8], depth: u32) {
    // SAFETY: `name` is NUL-terminated (callers pass a name whose terminator is inside the
    // slice); `openat` is async-signal-safe.
    let fd = unsafe {
        libc::openat(
            dir_fd,
            name.as_ptr().cast(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return;
    }
    let mut buf = DirentBuf([0; 4096]);
    // A few passes: removing entries while listing may make the listing skip some.
    for _ in 0..4 {
        let mut removed = 0;
        // SAFETY: rewinds the folder descriptor opened above.
        unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        loop {
            // SAFETY: `getdents64` writes at most `buf.0.len()` bytes of records into `buf`,
            // which is 8-byte aligned as `struct linux_dirent64` requires.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    fd,
                    buf.0.as_mut_ptr(),
                    buf.0.len() as libc::c_uint,
                )
            };
            if n <= 0 {
                break;
            }
            let records = &buf.0[..n as usize];
            let mut at = 0;
            // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
            while at + 19 < records.len() {
                let reclen = usize::from(u16::from_ne_bytes([records[at + 16], records[at + 17]]));
                if reclen == 0 || at + reclen > records.len() {
                    break;
                }
                let is_dir = records[at + 18] == libc::DT_DIR;
                let entry = &records[at + 19..at + reclen];
                let len = entry.iter().position(|&b| b == 0).unwrap_or(entry.len());
                if len < entry.len() && entry[..len] != *b"." && entry[..len] != *b".." {
                    if is_dir {
                        if depth > 0 {
                            remove_tree(fd, entry, depth - 1);
                            removed += 1;
                        }
                    // SAFETY: the entry name is NUL-terminated inside `buf` (checked above).
                    } else if unsafe { libc::unlinkat(fd, entry.as_ptr().cast(), 0) } == 0 {
                        removed += 1;
                    }
                }
                at += reclen;
            }
        }
        if removed == 0 {
            break;
        }
    }
    // SAFETY: closes the descriptor opened above and removes the (now empty) folder; both calls
    // are async-signal-safe.
    unsafe {
        libc::close(fd);
        libc::unlinkat(dir_fd, name.as_ptr().cast(), libc::AT_REMOVEDIR);
    }
}

/// Removes the folder `name` (NUL-terminated) in `dir_fd` if it is empty (listing a folder
/// without allocating needs a Linux system call).
#[cfg(not(target_os = "linux"))]
fn remove_flat_dir(dir_fd: RawFd, name: &[u8; NAME_CAP + 1]) {
    // SAFETY: `name` is NUL-terminated; `unlinkat` is async-signal-safe.
    unsafe { libc::unlinkat(dir_fd, name.as_ptr().cast(), libc::AT_REMOVEDIR) };
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn armed_files_and_folders_are_removed_and_disarmed_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let fd = File::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join("kept.tmp"), b"x").unwrap();
        let staged = dir.path().join("stage.tmp");
        std::fs::create_dir(&staged).unwrap();
        for i in 0..300 {
            std::fs::write(staged.join(format!("bank{i:03}.hex")), b"0\n").unwrap();
        }
        // Subfolders, as `export --hdl` stages them (fpga/, cocotb/, formal/).
        for sub in ["fpga", "cocotb", "cocotb/deeper"] {
            std::fs::create_dir(staged.join(sub)).unwrap();
            std::fs::write(staged.join(sub).join("f.txt"), b"x").unwrap();
        }
        let a = arm(fd.as_raw_fd(), b"a.tmp", false).unwrap();
        let kept = arm(fd.as_raw_fd(), b"kept.tmp", false).unwrap();
        let stage = arm(fd.as_raw_fd(), b"stage.tmp", true).unwrap();
        drop(kept);
        // (Only this test's slots: other tests arm files of their own meanwhile.)
        for guard in [&a, &stage] {
            remove_slot(&TABLE[guard.slot]);
        }
        remove_slot(&TABLE[a.slot]); // a second time: already taken, nothing happens
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["kept.tmp"]);
        // Taken slots stay taken; dropping their guards is harmless.
        drop((a, stage));
        assert!(arm(fd.as_raw_fd(), &[b'x'; NAME_CAP + 1], false).is_none());
        assert!(arm(fd.as_raw_fd(), b"a\0b", false).is_none());
    }
}
