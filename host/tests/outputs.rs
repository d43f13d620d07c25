//! Output files of the `bloomlanes` binary: modes and the umask, symbolic links, FIFOs and
//! devices, `-` for standard output, nothing left behind by a killed `build` (every catchable
//! signal and SIGKILL, with unnamed and named temporary files), full disks (a 1 MiB tmpfs, when
//! this test may mount one), and filter paths that are not regular files.

use bloomlanes_testkit::skip;

mod common;

use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{at, bl, build, built, fails, fifo, files, lines, s, tmp, write};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("bloomlanes")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o777
}

/// Runs the binary under `sh` with `umask` set first.
fn with_umask(umask: &str, args: &[&str]) {
    let mut script = format!("umask {umask}; exec \"$0\"");
    for i in 0..args.len() {
        script.push_str(&format!(" \"${}\"", i + 1));
    }
    let st = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(bin())
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{args:?}");
}

#[test]
fn outputs_honour_the_umask_and_keep_a_replaced_files_mode() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 100));
    let f = at(&d, "f.blf");
    with_umask("022", &["build", s(&keys), "-o", s(&f)]);
    assert_eq!(mode(&f), 0o644);
    let g = at(&d, "g.blf");
    with_umask("027", &["build", s(&keys), "-o", s(&g)]);
    assert_eq!(mode(&g), 0o640);
    // Replaced under another umask: the old mode stays (0644 does not become 0600 or 0640).
    with_umask("077", &["build", s(&keys), "-o", s(&f)]);
    assert_eq!(mode(&f), 0o644);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o604)).unwrap();
    with_umask("022", &["merge", s(&f), s(&g), "-o", s(&f)]);
    assert_eq!(mode(&f), 0o604);
    // Every writer: import, export --parquet, query --bitmap.
    let pq = at(&d, "f.parquet-bloom");
    let bm = at(&d, "answers.bits");
    let imp = at(&d, "imported.blf");
    let k8 = at(&d, "k8.blf");
    with_umask(
        "027",
        &["build", s(&keys), "-o", s(&k8), "--layout", "8x32"],
    );
    with_umask("027", &["export", s(&k8), "--parquet", s(&pq)]);
    with_umask("027", &["import", s(&pq), "-o", s(&imp)]);
    with_umask("027", &["query", s(&f), s(&keys), "--bitmap", s(&bm)]);
    for p in [&pq, &imp, &bm] {
        assert_eq!(mode(p), 0o640, "{}", p.display());
    }
    // The HDL export: a new folder and its files, then replaced files keep their mode.
    let hdl = at(&d, "hdl");
    with_umask("027", &["export", s(&k8), "--hdl", s(&hdl)]);
    assert_eq!(mode(&hdl), 0o750);
    let bank = hdl.join("bloomlanes_bank00.hex");
    assert_eq!(mode(&bank), 0o640);
    std::fs::set_permissions(&bank, std::fs::Permissions::from_mode(0o600)).unwrap();
    with_umask("022", &["export", s(&k8), "--hdl", s(&hdl)]);
    assert_eq!(mode(&bank), 0o600);
    assert_eq!(mode(&hdl.join("bloomlanes.v")), 0o640);
}

#[test]
fn outputs_write_through_symbolic_links() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 50));
    std::fs::create_dir(at(&d, "store")).unwrap();
    let real = at(&d, "store/real.blf");
    std::fs::write(&real, b"old").unwrap();
    let link = at(&d, "current.blf");
    symlink("store/real.blf", &link).unwrap();
    build(&keys, &link, "");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let v = common::json(&["stats", s(&real)]);
    assert_eq!(v["recorded_keys"], 50);
    assert_eq!(files(&d), ["current.blf", "k.txt", "store"]);
}

#[test]
fn fifos_and_devices_are_refused_as_outputs() {
    let d = tmp();
    let keys = write(&d, "k.txt", "a\n");
    let fifo = fifo(&d, "pipe");
    let to_fifo = at(&d, "to-pipe");
    symlink(&fifo, &to_fifo).unwrap();
    for out in [&fifo, &to_fifo, &PathBuf::from("/dev/null")] {
        let e = fails(&["build", s(&keys), "-o", s(out)], 1);
        assert!(e.contains("not a regular file") && e.contains("`-`"), "{e}");
    }
    let e = fails(&["query", s(&keys), s(&keys), "--bitmap", s(&fifo)], 2);
    assert!(e.contains("named pipe"), "{e}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(&to_fifo)
        .unwrap()
        .file_type()
        .is_symlink());
    let e = fails(&["build", s(&keys), "-o", s(d.path())], 1);
    assert!(e.contains("is a directory"), "{e}");
}

#[test]
fn dash_is_standard_output_and_never_a_file() {
    let (d, _, f) = built("k.txt", lines("key", 300), "f.blf", "--layout 8x32");
    let file_bytes = std::fs::read(&f).unwrap();
    let run = |args: &[&str]| {
        let o = bl().current_dir(d.path()).args(args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    let o = run(&["build", "k.txt", "-o", "-", "--layout", "8x32"]);
    assert_eq!(o.stdout, file_bytes, "the filter, byte for byte");
    let report = String::from_utf8_lossy(&o.stderr);
    assert!(report.contains("built -: 300 keys"), "{report}");
    let o = run(&["--json", "build", "k.txt", "-o", "-", "--layout", "8x32"]);
    assert_eq!(o.stdout, file_bytes);
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(v["keys"], 300);

    let o = run(&["query", "f.blf", "k.txt", "--bitmap", "-"]);
    let mut every_key = vec![0xffu8; 300 / 8];
    every_key.push(0x0f); // keys 296..300
    assert_eq!(
        o.stdout, every_key,
        "the bitmap: all 300 keys may be present"
    );
    let o = run(&["export", "f.blf", "--parquet", "-"]);
    let pq = write(&d, "f.pq", &o.stdout);
    let o = run(&["import", s(&pq), "-o", "-"]);
    assert_eq!(o.stdout, {
        let back = at(&d, "back.blf");
        run(&["import", s(&pq), "-o", s(&back)]);
        std::fs::read(&back).unwrap()
    });
    let o = run(&["merge", "f.blf", "f.blf", "-o", "-"]);
    assert_eq!(o.stdout.len(), file_bytes.len());
    let e = fails(&["export", s(&f), "--hdl", "-"], 2);
    assert!(e.contains("standard output"), "{e}");
    assert!(!at(&d, "-").exists(), "no file named -");
}

/// Whether `pid` holds open a file in `dir` that is none of `known` (its output being written).
fn writing_in(pid: u32, dir: &Path, known: &[PathBuf]) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .is_ok_and(|t| t.starts_with(dir) && !known.contains(&t) && t != dir)
    })
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: sends a signal to a child process this test started and has not yet reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

/// Starts a `build` of a large (64 MB) filter over `out` and signals it with `sig` while it
/// writes: stopped (SIGSTOP) as soon as it holds its output open, checked to be mid-write,
/// signalled, continued. Returns the names in `dir` while it was stopped, or `None` when the
/// build finished before it could be stopped (the caller retries).
/// Starts the child with the terminating signals at their default action. A process started in
/// the background by a non-interactive shell, or under `nohup`, inherits SIGINT/SIGQUIT/SIGHUP
/// ignored, and bloomlanes rightly leaves ignored signals alone; these tests need them to act.
fn with_default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls only `signal`, which is
    // async-signal-safe, with valid signal numbers and SIG_DFL; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

fn kill_during_write(
    dir: &Path,
    keys: &Path,
    out: &Path,
    sig: libc::c_int,
    named: bool,
) -> Option<Vec<String>> {
    let mut cmd = Command::new(bin());
    cmd.args(["build", s(keys), "-o", s(out), "--capacity", "40000000"])
        .args(["--bits-per-key", "12.8", "--backend", "scalar", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if named {
        cmd.env("BLOOMLANES_TEMP_FILES", "named");
    }
    let mut child = with_default_signals(&mut cmd).spawn().unwrap();
    let pid = child.id();
    // The output's lock file (held from the start) is not the output being written.
    let known = [
        keys.to_path_buf(),
        out.to_path_buf(),
        bloomlanes_guard::lock_file_of(out),
    ];
    let start = Instant::now();
    while !writing_in(pid, dir, &known) {
        if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    signal(pid, libc::SIGSTOP);
    // Stopped: still writing (the output not yet in place)?
    std::thread::sleep(Duration::from_millis(20));
    let still = writing_in(pid, dir, &known);
    let during = names(dir);
    signal(pid, sig);
    signal(pid, libc::SIGCONT);
    let status = child.wait().unwrap();
    if !still {
        return None;
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(sig),
        "ended by the signal: {status:?}"
    );
    Some(during)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_killed_build_leaves_nothing_behind_and_the_old_output_intact() {
    let (d, keys, out) = built("k.txt", "a\nb\n", "f.blf", "");
    let before = std::fs::read(&out).unwrap();
    let listing = files(&d);
    let signals = [
        ("SIGINT", libc::SIGINT),
        ("SIGTERM", libc::SIGTERM),
        ("SIGHUP", libc::SIGHUP),
        ("SIGKILL", libc::SIGKILL),
    ];
    for named in [false, true] {
        for (name, sig) in signals {
            let during = (0..5)
                .find_map(|_| {
                    let caught = kill_during_write(d.path(), &keys, &out, sig, named);
                    if caught.is_none() {
                        // Finished before it could be stopped: put the old output back, retry.
                        std::fs::write(&out, &before).unwrap();
                    }
                    caught
                })
                .unwrap_or_else(|| panic!("{name}: could not catch the build while writing"));
            // The write lock's file exists while the build writes (issue #24).
            let mut during = during;
            let locked = during.iter().position(|n| n == "f.blf.lock");
            assert!(locked.is_some(), "{name}: {during:?}");
            during.remove(locked.unwrap());
            if named {
                assert_eq!(during.len(), listing.len() + 1, "{name}: {during:?}");
            } else {
                assert_eq!(during, listing, "{name}: an unnamed file shows no name");
            }
            assert_eq!(
                std::fs::read(&out).unwrap(),
                before,
                "{name}: old output intact"
            );
            let after = files(&d);
            if sig == libc::SIGKILL {
                // SIGKILL cannot be caught: the lock file stays, naming a dead process, and
                // so does a named temporary file. The next write into this folder takes the
                // lock over and removes it, and removes the temporary file at once (its process
                // is gone and nobody holds its lock; issue #24: it used to wait an hour).
                let left: Vec<_> = after.iter().filter(|n| !listing.contains(n)).collect();
                assert!(after.contains(&"f.blf.lock".to_string()), "{after:?}");
                assert_eq!(left.len(), 1 + usize::from(named), "{after:?}");
                bl().args(["build", s(&keys), "-o", s(&out)])
                    .assert()
                    .success();
                assert_eq!(
                    std::fs::read(&out).unwrap(),
                    before,
                    "the same keys, the same file"
                );
                assert_eq!(files(&d), listing, "{name} (named: {named}): all removed");
            } else {
                assert_eq!(
                    after, listing,
                    "{name} (named: {named}): nothing left behind"
                );
            }
        }
    }
}

#[test]
fn a_killed_hdl_export_leaves_the_previous_files_and_no_staging_folder() {
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 100));
    let small = at(&d, "small.blf");
    let large = at(&d, "large.blf");
    for (f, capacity) in [(&small, "100"), (&large, "200000")] {
        bl().args(["build", s(&keys), "-o", s(f), "--layout", "8x32"])
            .args(["--capacity", capacity])
            .assert()
            .success();
    }
    let hdl = at(&d, "hdl");
    let export_small = || {
        bl().args(["export", s(&small), "--hdl", s(&hdl)])
            .assert()
            .success();
    };
    export_small();
    let before = contents(&hdl);
    let signals = [
        ("SIGINT", libc::SIGINT),
        ("SIGTERM", libc::SIGTERM),
        ("SIGKILL", libc::SIGKILL),
    ];
    for (name, sig) in signals {
        let caught = (0..5).any(|_| {
            let mut child = with_default_signals(
                Command::new(bin())
                    .args(["export", s(&large), "--hdl", s(&hdl)])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            )
            .spawn()
            .unwrap();
            let staging = || names(&hdl).iter().any(|n| n.starts_with(".bloomlanes-"));
            let start = Instant::now();
            while !staging() && child.try_wait().unwrap().is_none() {
                assert!(start.elapsed() < Duration::from_secs(60));
                std::thread::sleep(Duration::from_micros(200));
            }
            signal(child.id(), libc::SIGSTOP);
            let mid_export = staging();
            signal(child.id(), sig);
            signal(child.id(), libc::SIGCONT);
            let status = child.wait().unwrap();
            if !mid_export {
                export_small(); // it finished first: put the small export back and retry
                return false;
            }
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
            true
        });
        assert!(caught, "{name}: could not catch the export while staging");
        if sig == libc::SIGKILL {
            // SIGKILL cannot be caught: the staging folder stays, its process gone and its lock
            // released, so the next export into the folder removes it at once (issue #24: it
            // used to wait an hour).
            assert!(
                names(&hdl).iter().any(|n| n.starts_with(".bloomlanes-")),
                "{name}: left behind"
            );
            export_small();
        }
        assert_same_files(&hdl, &before, name);
    }
}

/// A 1 MiB tmpfs mounted on a fresh folder, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount() -> Option<SmallDisk> {
        let dir = tmp();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Asserts that `dir` holds exactly the files of `before`, byte for byte (naming what differs,
/// without printing the bytes).
fn assert_same_files(dir: &Path, before: &[(String, Vec<u8>)], why: &str) {
    let now = contents(dir);
    let names_now: Vec<&String> = now.iter().map(|(n, _)| n).collect();
    let names_before: Vec<&String> = before.iter().map(|(n, _)| n).collect();
    assert_eq!(names_now, names_before, "{why}: the same names");
    for ((name, a), (_, b)) in now.iter().zip(before) {
        assert!(a == b, "{why}: {name} changed");
    }
}

fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    names(dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap_or_default();
            (n, bytes)
        })
        .collect()
}

#[test]
fn a_full_disk_leaves_previous_outputs_intact_and_no_partial_file() {
    let Some(disk) = SmallDisk::mount() else {
        skip(format_args!(
            "cannot mount a 1 MiB tmpfs here (needs root); full-disk test not run"
        ));
        return;
    };
    let root = disk.dir.path();
    let d = tmp();
    let keys = write(&d, "k.txt", lines("k", 200));
    // Filters: a small one, and one too large for the disk.
    let small = at(&d, "small.blf");
    bl().args(["build", s(&keys), "-o", s(&small), "--layout", "8x32"])
        .args(["--capacity", "2000"])
        .assert()
        .success();
    let large = at(&d, "large.blf");
    bl().args(["build", s(&keys), "-o", s(&large), "--layout", "8x32"])
        .args(["--capacity", "60000"])
        .assert()
        .success();
    for named in ["unnamed", "named"] {
        let out = root.join("f.blf");
        std::fs::copy(&small, &out).unwrap();
        let before = contents(root);
        let o = bl()
            .env("BLOOMLANES_TEMP_FILES", named)
            .args(["build", s(&keys), "-o", s(&out), "--capacity", "2000000"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{named}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("f.blf") && e.contains("No space left"), "{e}");
        assert_same_files(root, &before, named);
        std::fs::remove_file(&out).unwrap();
    }
    // HDL export: a first export fits, a larger one into the same folder does not.
    let hdl = root.join("hdl");
    bl().args(["export", s(&small), "--hdl", s(&hdl)])
        .assert()
        .success();
    let before = contents(&hdl);
    assert!(before.len() >= 8 + 3, "{:?}", names(&hdl));
    let e = fails(&["export", s(&large), "--hdl", s(&hdl)], 1);
    assert!(e.contains("No space left"), "{e}");
    assert_same_files(&hdl, &before, "every previous file intact, no partial one");
    assert_eq!(names(root), ["hdl"], "no staging folder left");
    // A new folder that does not fit is not created at all.
    let e = fails(&["export", s(&large), "--hdl", s(&root.join("new"))], 1);
    assert!(e.contains("No space left"), "{e}");
    assert_eq!(names(root), ["hdl"]);
}

#[test]
fn filter_paths_that_are_not_files() {
    let e = fails(&["stats", "/dev/zero"], 1);
    assert!(e.contains("character device"), "{e}");
    let (d, _, f) = built("k.txt", lines("k", 20), "f.blf", "");
    let fifo = fifo(&d, "pipe");
    // A filter through a FIFO is read (bounded by its header).
    let bytes = std::fs::read(&f).unwrap();
    let feeder = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, bytes).unwrap())
    };
    let v = common::json(&["stats", s(&fifo)]);
    feeder.join().unwrap();
    assert_eq!(v["recorded_keys"], 20);
    assert_eq!(v["memory_mapped"], false);
    // Endless zeros through a FIFO: refused after the header, not read forever.
    let feeder = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            while w.write_all(&[0; 65536]).is_ok() {}
        })
    };
    let e = fails(&["stats", s(&fifo)], 1);
    feeder.join().unwrap();
    assert!(e.contains("bad magic"), "{e}");
}

#[test]
fn the_payload_check_can_be_skipped_and_says_what_it_cost() {
    let (d, keys, f) = built("k.txt", lines("k", 1000), "f.blf", "");
    let v = common::json(&["stats", s(&f)]);
    assert_eq!(v["payload_verified"], true);
    assert!(v["open_seconds"].as_f64().unwrap() >= 0.0);
    // Damage one payload bit (a bit that was clear: the keys still answer).
    let mut bytes = std::fs::read(&f).unwrap();
    let at_byte = (64..bytes.len()).find(|&i| bytes[i] != 0xff).unwrap();
    let bit = (0..8).find(|b| bytes[at_byte] >> b & 1 == 0).unwrap();
    bytes[at_byte] |= 1 << bit;
    std::fs::write(&f, &bytes).unwrap();
    for cmd in [
        vec!["stats", s(&f)],
        vec!["query", s(&f), s(&keys), "--count"],
        vec!["merge", s(&f), s(&f), "-o", s(&at(&d, "m.blf"))],
        vec!["export", s(&f), "--parquet", s(&at(&d, "x"))],
    ] {
        // `query`'s errors are 2, as grep's.
        let e = fails(&cmd, if cmd[0] == "query" { 2 } else { 1 });
        assert!(e.contains("checksum"), "{cmd:?}: {e}");
    }
    let v = common::json(&["stats", s(&f), "--no-verify-payload"]);
    assert_eq!(v["payload_verified"], false);
    assert!(v["open_seconds"].as_f64().unwrap() >= 0.0);
    let v = common::json(&["query", s(&f), s(&keys), "--count", "--no-verify-payload"]);
    assert_eq!(v["matches"], 1000);
    assert_eq!(v["payload_verified"], false);
    let m = at(&d, "m.blf");
    bl().args(["merge", s(&f), s(&f), "-o", s(&m), "--no-verify-payload"])
        .assert()
        .success();
    let out = bl()
        .args(["stats", s(&f), "--no-verify-payload"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("not verified"));
}
