//! What the workspace's test crates share (a dev-dependency, never published): the one way a
//! test says it was skipped, and the one way a test spreads its independent runs over the cores.

use std::fmt::Display;
use std::io::Write;

/// Writes `SKIP: {reason}` as one line straight to the process's standard error, past
/// libtest's output capture (which holds `println!` and `eprintln!` of a passing test), so that
/// a test that could not run (no GPU, no simulator, no root) shows in a plain `cargo test` run
/// instead of passing silently. `reason` names the test and what it lacked.
pub fn skip(reason: impl Display) {
    // One write of the whole line, so that lines of tests running at once do not interleave.
    let line = format!("SKIP: {reason}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Calls `work` on every item of `items`, as many at a time as the machine has cores, each
/// thread taking the next item until none is left. For tests whose items run external tools
/// (simulators, Yosys, a Verilator build) or compilers (NVRTC) on one core each: walked one by
/// one, they left the other core idle once the binary's other tests had finished. A panic in
/// `work` fails the caller with its message.
pub fn each_in_parallel<T: Sync>(items: &[T], work: impl Fn(&T) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        let run = || loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { return };
            work(item);
        };
        let helpers: Vec<_> = (1..workers.min(items.len()))
            .map(|_| s.spawn(run))
            .collect();
        run();
        for h in helpers {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}
