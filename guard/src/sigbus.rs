//! The `SIGBUS` handler behind [`GuardedMap`](crate::GuardedMap): a fault inside a registered
//! map (its file was truncated under it) is answered by mapping zero pages over the rest of the
//! map and marking it damaged; the faulting load then reads zeros and the program goes on, to
//! report the damage at its next check. Any other fault goes to the handler that was installed
//! before (Rust's own, or the default action, which ends the process as it always did).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Maps guarded at once at most; a map beyond them is not guarded (the caller copies instead).
const SLOTS: usize = 256;

struct Slot {
    used: AtomicBool,
    /// First byte of the map; 0 while the slot holds no map.
    start: AtomicUsize,
    /// One past the last byte.
    end: AtomicUsize,
    damaged: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    used: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    damaged: AtomicBool::new(false),
};

static REGISTRY: [Slot; SLOTS] = [EMPTY; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();

/// The action that was installed before ours, written once before ours is installed.
struct Previous(UnsafeCell<Option<libc::sigaction>>);
// SAFETY: written once inside `INSTALL.call_once`, before the handler that reads it can run;
// only read afterwards.
unsafe impl Sync for Previous {}
static PREVIOUS: Previous = Previous(UnsafeCell::new(None));

/// Installs the handler (once per process).
fn install() {
    INSTALL.call_once(|| {
        // SAFETY: `sysconf` has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: a zeroed `sigaction` is a valid value to fill in; `sigaction` reads `new`
        // and writes `old`, both live locals; `PREVIOUS` is written before our handler is
        // installed (this closure runs once), so the handler never reads it half-written.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0 {
                *PREVIOUS.0.get() = Some(old);
                libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut());
            }
        }
    });
}

/// Registers the map `[start, start + len)`; `None` when every slot is taken.
pub(crate) fn register(start: usize, len: usize) -> Option<usize> {
    install();
    for (i, s) in REGISTRY.iter().enumerate() {
        if s.used
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            s.damaged.store(false, Ordering::Relaxed);
            s.end.store(start + len, Ordering::Relaxed);
            s.start.store(start, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// Whether a fault was answered in slot `i`'s map.
pub(crate) fn damaged(i: usize) -> bool {
    REGISTRY[i].damaged.load(Ordering::Acquire)
}

/// Frees slot `i` (before its map is unmapped).
pub(crate) fn unregister(i: usize) {
    let s = &REGISTRY[i];
    s.start.store(0, Ordering::Release);
    s.used.store(false, Ordering::Release);
}

/// The signal handler: only atomics and `mmap`, a system call, so it is safe in a handler.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for s in &REGISTRY {
        let start = s.start.load(Ordering::Acquire);
        let end = s.end.load(Ordering::Relaxed);
        if start == 0 || addr < start || addr >= end {
            continue;
        }
        let from = addr & !(page - 1);
        // SAFETY: `[from, end)` lies inside a read-only map this process made and still holds
        // (its slot is cleared before it is unmapped); replacing those pages by private zero
        // pages changes what the map reads, never memory outside it. `MAP_FIXED` over our own
        // range is the documented way to do so.
        let p = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            s.damaged.store(true, Ordering::Release);
            return; // the load runs again and reads zeros
        }
        break;
    }
    // SAFETY: `PREVIOUS` was written before this handler was installed. Calling the previous
    // handler with our arguments is what it would have received; resetting to the default
    // action and returning makes the fault happen again, now ending the process as before.
    unsafe {
        match *PREVIOUS.0.get() {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                if old.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(old.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                    f(sig);
                }
            }
            _ => {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            }
        }
    }
}
