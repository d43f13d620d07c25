//! Filter files that several processes use at once, without lost updates or signal deaths.
//!
//! - [`WriteLock`]: the exclusive advisory lock a writer holds for its whole read-modify-write
//!   of a file. It is taken on a lock file beside the target (`t.blf` → `t.blf.lock`), not on
//!   the target itself: writers replace the target by renaming a new file over it, and a lock on
//!   the old inode would not protect the renamed-in one (SQLite's lock files answer the same
//!   problem). A second writer waits ([`Wait::Block`]) or fails at once ([`Wait::Fail`]),
//!   naming the process that holds the lock. The lock file is removed on release when it is
//!   still ours; a lock file left by a killed process is reused, never trusted.
//! - [`read_lock`]: the shared lock a reader holds on the file it maps, for as long as the map
//!   lives. Writers of this project never take it (they rename instead of writing in place), so
//!   it only makes a reader wait for another program that rewrites the file in place under
//!   `flock -x`.
//! - [`GuardedMap`]: a read-only memory map whose file may shrink or change underneath. A page
//!   that faults (`SIGBUS`: the file was truncated) is replaced by zeros and the map marked
//!   damaged; [`GuardedMap::check`] then reports it, as it reports a file whose size or change
//!   time moved since it was mapped. Callers check before they trust answers computed from the
//!   map, so a file changed underneath is an error naming the file, never a signal death.
//!
//! The crate depends on no other bloomlanes crate: the host library and the Python package
//! share it, so that a `bloomlanes insert` and a Python `Filter.save` exclude each other.

#![warn(missing_docs)]

mod lock;
mod map;
#[cfg(unix)]
mod sigbus;

pub use lock::{lock_file_of, read_lock, try_lock, Busy, LockError, Wait, WriteLock};
pub use map::{Changed, GuardedMap};
