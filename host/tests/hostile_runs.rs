//! Hostile runs of the filter files' writers and readers (issue #24; the figures of
//! RELIABILITY.md): writers killed at random moments, writers on a full disk, and files of every
//! kind crafted with valid checksums. Each counts crashes (a signal or panic the run did not
//! ask for), hangs (no exit within a minute) and lost keys (keys of the filter before the run
//! that are absent after it). `cargo test` runs a few of each; `-- --ignored` the long runs.

use bloomlanes_testkit::skip;

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bloomlanes_host::bloomlanes_core::xxh64;
use common::*;

/// What a series of runs counted.
#[derive(Debug, Default)]
struct Tally {
    runs: u64,
    crashes: u64,
    hangs: u64,
    lost: u64,
}

impl Tally {
    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} runs, {} crashes, {} hangs, {} lost keys",
            self.runs, self.crashes, self.hangs, self.lost
        );
        assert_eq!((self.crashes, self.hangs, self.lost), (0, 0, 0), "{what}");
    }
}

/// A small deterministic generator (the runs are reproducible).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn start(args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("bloomlanes"))
        .arg("-q")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` up to a minute: `None` (killed) when it hangs, else its status and
/// standard error.
fn finish(mut child: Child) -> Option<(std::process::ExitStatus, String)> {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    Some((
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Counts `status` into `t`: a crash is a signal death or a panic; an error exit (1 or 2 with
/// a `bloomlanes: error:` line) is an answer.
fn count(t: &mut Tally, ran: Option<(std::process::ExitStatus, String)>) {
    t.runs += 1;
    match ran {
        None => t.hangs += 1,
        Some((status, err)) => {
            let answered = status.success()
                || (matches!(status.code(), Some(1 | 2)) && err.contains("bloomlanes: error:"));
            if !answered || err.contains("panicked") {
                eprintln!("crash: {status:?}: {err}");
                t.crashes += 1;
            }
        }
    }
}

fn present(f: &Path, keys: &Path) -> u64 {
    json(&["query", s(f), s(keys), "--count"])["matches"]
        .as_u64()
        .unwrap()
}

/// The kinds, each with its sizing flags for `keys` keys.
fn kinds(keys: u64) -> [(&'static str, Vec<String>); 5] {
    let n = |k: u64| k.to_string();
    [
        ("static", vec!["--capacity".into(), n(keys)]),
        ("counting", vec!["--capacity".into(), n(keys)]),
        ("stable", vec!["--capacity".into(), n(10 * keys)]),
        ("window", vec!["--window-keys".into(), n(keys)]),
        ("scalable", vec!["--capacity".into(), n(keys / 4)]),
    ]
}

/// Builds a filter of every kind from `keys` in `d`, sized for `capacity` keys.
fn filters(d: &tempfile::TempDir, keys: &Path, capacity: u64) -> Vec<std::path::PathBuf> {
    kinds(capacity)
        .iter()
        .map(|(kind, sizing)| {
            let f = at(d, &format!("{kind}.blf"));
            let mut args = vec!["build", s(keys), "-o", s(&f), "--kind", kind];
            args.extend(sizing.iter().map(String::as_str));
            json(&args);
            f
        })
        .collect()
}

/// `insert` killed (SIGKILL) at a random moment, `trials` times per kind: the filter is whole
/// afterwards (its keys all present), and the next insert succeeds and leaves no file behind.
fn killed_writers(trials: usize) {
    let d = tmp();
    let base = write(&d, "base.txt", lines("base", 1000));
    let more = write(&d, "more.txt", lines("more", 300_000));
    let few = write(&d, "few.txt", lines("few", 10));
    let mut t = Tally::default();
    let mut rng = Lcg(24);
    for f in filters(&d, &base, 1_000_000) {
        let work = tmp();
        let target = at(&work, "t.blf");
        for _ in 0..trials {
            std::fs::copy(&f, &target).unwrap();
            let child = start(&["insert", s(&target), s(&more)]);
            std::thread::sleep(Duration::from_millis(rng.next(400)));
            // SAFETY: a signal to a child this test started and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
            let ran = finish(child);
            t.runs += 1;
            if ran.is_none() {
                t.hangs += 1;
            }
            t.lost += 1000 - present(&target, &base);
            count(&mut t, finish(start(&["insert", s(&target), s(&few)])));
            let left: Vec<String> = files(&work).into_iter().filter(|n| n != "t.blf").collect();
            assert!(left.is_empty(), "left behind: {left:?}");
        }
    }
    t.report("insert killed at a random moment (SIGKILL), every kind");
}

#[test]
fn killed_writers_leave_a_whole_filter() {
    killed_writers(4);
}

/// The long run of [`killed_writers_leave_a_whole_filter`] (RELIABILITY.md).
#[test]
#[ignore]
fn killed_writers_leave_a_whole_filter_long() {
    killed_writers(100);
}

/// A tmpfs of `size` mounted on a fresh folder (root only), unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tmp();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// `insert` and `delete` into filters of every kind on a disk that cannot hold the new file
/// beside the old one, `trials` times each: an error, the old file byte for byte, nothing left.
fn full_disks(trials: usize) {
    let Some(disk) = SmallDisk::mount("6m") else {
        skip(format_args!(
            "cannot mount a tmpfs here (needs root); full-disk runs not made"
        ));
        return;
    };
    let d = tmp();
    let base = write(&d, "base.txt", lines("base", 1000));
    let mut t = Tally::default();
    for f in filters(&d, &base, 40_000) {
        let target = disk.0.path().join("t.blf");
        for trial in 0..trials {
            std::fs::copy(&f, &target).unwrap();
            // Fill the disk to a little less than the file's size again.
            let room = fs_free(disk.0.path());
            let size = std::fs::metadata(&target).unwrap().len();
            let filler = disk.0.path().join("filler");
            std::fs::write(&filler, vec![0u8; room.saturating_sub(size / 2) as usize])
                .unwrap_or(());
            let before = std::fs::read(&target).unwrap();
            let op = if trial % 2 == 0 { "insert" } else { "delete" };
            let ran = finish(start(&[op, s(&target), s(&base)]));
            if let Some((status, err)) = &ran {
                // The write fails for want of room (a delete from a kind without deletions is
                // refused before anything is written).
                let refused = op == "delete" && !s(&f).contains("counting");
                assert!(
                    !status.success() && (refused || err.contains("No space left")),
                    "{op} {}: {status:?}: {err}",
                    s(&f)
                );
            }
            count(&mut t, ran);
            let after = std::fs::read(&target).unwrap();
            if after != before {
                t.lost += 1000 - present(&target, &base).min(1000);
                assert_eq!(after, before, "{op}: the old file, byte for byte");
            }
            std::fs::remove_file(&filler).unwrap_or(());
            let left: Vec<String> = std::fs::read_dir(disk.0.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n != "t.blf")
                .collect();
            assert!(left.is_empty(), "left behind: {left:?}");
        }
    }
    t.report("insert and delete on a full disk, every kind");
}

/// Free bytes on the file system of `dir`.
fn fs_free(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(s(dir)).unwrap();
    // SAFETY: a NUL-terminated path and a zeroed statvfs the call fills.
    unsafe {
        let mut v: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut v), 0);
        v.f_bavail as u64 * v.f_frsize as u64
    }
}

#[test]
fn a_full_disk_leaves_every_kind_whole() {
    full_disks(2);
}

/// The long run of [`a_full_disk_leaves_every_kind_whole`] (RELIABILITY.md).
#[test]
#[ignore]
fn a_full_disk_leaves_every_kind_whole_long() {
    full_disks(40);
}

/// Gives `file` (a whole filter file) valid checksums again after a change.
fn reseal(file: &mut [u8]) {
    let payload = xxh64(&file[64..], 0);
    file[48..56].copy_from_slice(&payload.to_le_bytes());
    let header = xxh64(&file[..56], 0);
    file[56..64].copy_from_slice(&header.to_le_bytes());
}

/// Files of every kind changed at random (bytes of the header, the metadata and the arrays,
/// the kind byte, lengths cut or grown) and sealed with valid checksums, `trials` per kind,
/// each read by `stats`, `query` and `insert -o`: every run exits with an answer or an error.
fn crafted_files(trials: usize) {
    let d = tmp();
    let base = write(&d, "base.txt", lines("base", 200));
    let small = tmp();
    let mut t = Tally::default();
    let mut rng = Lcg(7);
    let originals: Vec<Vec<u8>> = filters(&small, &base, 400)
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let f = at(&d, "crafted.blf");
    let out = at(&d, "out.blf");
    for original in &originals {
        for _ in 0..trials {
            let mut b = original.clone();
            match rng.next(4) {
                0 => b[26] = rng.next(8) as u8, // the kind
                1 => {
                    let i = 24 + rng.next(40) as usize; // header fields past the layout
                    b[i] ^= 1 << rng.next(8);
                }
                2 => {
                    let i = 64 + rng.next((b.len() - 64) as u64) as usize;
                    b[i] = rng.next(256) as u8;
                }
                _ => {
                    let n = 64 + rng.next((b.len() - 64) as u64 * 2) as usize;
                    b.resize(n, rng.next(256) as u8);
                }
            }
            reseal(&mut b);
            std::fs::write(&f, &b).unwrap();
            for args in [
                vec!["stats", s(&f)],
                vec!["query", s(&f), s(&base), "--count"],
                vec!["insert", s(&f), s(&base), "-o", s(&out)],
            ] {
                count(&mut t, finish(start(&args)));
            }
        }
    }
    t.report("files of every kind crafted with valid checksums (stats, query, insert)");
}

#[test]
fn crafted_files_of_every_kind_are_answered_or_refused() {
    crafted_files(10);
}

/// The long run of [`crafted_files_of_every_kind_are_answered_or_refused`] (RELIABILITY.md).
#[test]
#[ignore]
fn crafted_files_of_every_kind_are_answered_or_refused_long() {
    crafted_files(400);
}
