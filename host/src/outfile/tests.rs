use bloomlanes_testkit::skip;

use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};

use super::*;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The process's umask, from `/proc/self/status` (reading it with `umask(2)` would change it
/// for the other tests' threads meanwhile).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

fn write_with(path: &Path, unnamed: bool, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create_with(path, unnamed)?;
    assert_eq!(f.is_unnamed(), unnamed && cfg!(target_os = "linux"));
    f.write_all(bytes).unwrap();
    f.commit()
}

#[test]
fn new_files_honour_the_umask_and_replaced_files_keep_their_mode() {
    for unnamed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.blf");
        write_with(&new, unnamed, b"one").unwrap();
        assert_eq!(fs::read(&new).unwrap(), b"one");
        let mode = fs::metadata(&new).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask(), "unnamed: {unnamed}");

        let old = dir.path().join("old.blf");
        fs::write(&old, b"before").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o640)).unwrap();
        let ino = fs::metadata(&old).unwrap().ino();
        write_with(&old, unnamed, b"after").unwrap();
        let m = fs::metadata(&old).unwrap();
        assert_eq!(fs::read(&old).unwrap(), b"after");
        assert_eq!(m.mode() & 0o777, 0o640, "unnamed: {unnamed}");
        assert_ne!(
            m.ino(),
            ino,
            "replaced by a new file, not rewritten in place"
        );
        assert_eq!(names(dir.path()), ["new.blf", "old.blf"]);
    }
}

#[test]
fn nothing_is_visible_until_commit_and_nothing_stays_without_it() {
    for unnamed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("f.blf");
        fs::write(&out, b"old").unwrap();
        let mut f = AtomicFile::create_with(&out, unnamed).unwrap();
        f.write_all(&[7; 100_000]).unwrap();
        let mut during = names(dir.path());
        // The write lock's file, while the write lasts (crate::store::lock).
        assert!(during.contains(&"f.blf.lock".to_string()), "{during:?}");
        during.retain(|n| n != "f.blf.lock");
        if unnamed {
            assert_eq!(during, ["f.blf"], "an unnamed file has no name");
        } else {
            assert_eq!(during.len(), 2);
            assert!(
                during.iter().any(|n| is_temp_name(n.as_ref())),
                "{during:?}"
            );
        }
        assert_eq!(fs::read(&out).unwrap(), b"old");
        drop(f);
        assert_eq!(names(dir.path()), ["f.blf"], "unnamed: {unnamed}");
        assert_eq!(fs::read(&out).unwrap(), b"old");
    }
}

#[test]
fn links_are_written_through_to_their_target() {
    for unnamed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = dir.path().join("real");
        fs::create_dir(&real_dir).unwrap();
        let target = real_dir.join("f.blf");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o604)).unwrap();
        // A chain: abs -> rel -> real/f.blf (the relative link resolved from its own folder).
        let rel = real_dir.join("rel.blf");
        symlink("f.blf", &rel).unwrap();
        let abs = dir.path().join("abs.blf");
        symlink(&rel, &abs).unwrap();
        assert_eq!(resolve_output_file(&abs).unwrap(), target);
        write_with(&abs, unnamed, b"new").unwrap();
        assert!(fs::symlink_metadata(&abs).unwrap().file_type().is_symlink());
        assert!(fs::symlink_metadata(&rel).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o777, 0o604);
        assert_eq!(names(&real_dir), ["f.blf", "rel.blf"]);

        // A dangling link creates the file it names.
        let dangling = dir.path().join("dangling.blf");
        symlink("real/later.blf", &dangling).unwrap();
        write_with(&dangling, unnamed, b"later").unwrap();
        assert_eq!(fs::read(real_dir.join("later.blf")).unwrap(), b"later");

        // A loop is an error, not a hang.
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        symlink(&b, &a).unwrap();
        symlink(&a, &b).unwrap();
        let e = AtomicFile::create(&a).unwrap_err().to_string();
        assert!(e.contains("symbolic links"), "{e}");
    }
}

#[test]
fn folders_pipes_and_devices_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let link_to_fifo = dir.path().join("to-fifo");
    symlink(&fifo, &link_to_fifo).unwrap();
    for (path, what) in [
        (fifo.as_path(), "named pipe (FIFO)"),
        (link_to_fifo.as_path(), "named pipe (FIFO)"),
        (Path::new("/dev/null"), "character device"),
        (dir.path(), "is a directory"),
    ] {
        let e = AtomicFile::create(path).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
        assert!(e.contains(&*path.to_string_lossy()), "{e}");
        if what.contains("pipe") || what.contains("device") {
            assert!(
                e.contains("`-`"),
                "the error says how to write to a pipe: {e}"
            );
        }
    }
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    let e = AtomicFile::create(&dir.path().join("no/such/f.blf"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not exist") && e.contains("no/such"), "{e}");
    let e = resolve_output_file(Path::new("-")).unwrap_err().to_string();
    assert!(e.contains("standard output"), "{e}");
}

#[test]
fn stale_temporary_files_go_when_the_folder_is_next_written() {
    let dir = tempfile::tempdir().unwrap();
    let left = dir.path().join(stale::temp_name());
    fs::write(&left, vec![0u8; 4096]).unwrap();
    let old = std::time::SystemTime::now() - STALE_AFTER - std::time::Duration::from_secs(1);
    File::options()
        .write(true)
        .open(&left)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let young = dir.path().join(stale::temp_name());
    fs::write(&young, b"in use").unwrap();
    write_with(&dir.path().join("f.blf"), true, b"x").unwrap();
    assert!(!left.exists() && young.exists());
}

#[test]
fn staging_folders_are_removed_unless_placed() {
    let dir = tempfile::tempdir().unwrap();
    let s = StagingDir::create_in(dir.path()).unwrap();
    assert!(is_temp_name(s.path().file_name().unwrap()));
    assert_eq!(
        fs::metadata(s.path()).unwrap().mode() & 0o777,
        0o777 & !umask()
    );
    fs::write(s.path().join("a.v"), b"module").unwrap();
    drop(s);
    assert!(names(dir.path()).is_empty());
    let s = StagingDir::create_in(dir.path()).unwrap();
    fs::write(s.path().join("a.v"), b"module").unwrap();
    s.rename_to(&dir.path().join("out")).unwrap();
    assert_eq!(names(dir.path()), ["out"]);
    assert_eq!(names(&dir.path().join("out")), ["a.v"]);
}

#[test]
fn links_planted_by_others_in_sticky_folders_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("tmp");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, b"precious").unwrap();
    let mine = shared.join("mine.blf");
    symlink(&victim, &mine).unwrap();
    assert_eq!(
        resolve_output_file(&mine).unwrap(),
        victim,
        "own links are followed"
    );
    let planted = shared.join("planted.blf");
    symlink(&victim, &planted).unwrap();
    if std::os::unix::fs::lchown(&planted, Some(54321), None).is_err() {
        skip(format_args!(
            "not root: cannot make a link owned by another user"
        ));
        return;
    }
    let e = AtomicFile::create(&planted).unwrap_err().to_string();
    assert!(
        e.contains("another user") && e.contains("planted.blf"),
        "{e}"
    );
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    // Outside a sticky world-writable folder, the same link is followed.
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(resolve_output_file(&planted).unwrap(), victim);
}

#[test]
fn replaced_files_keep_their_owner_where_permitted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shared.blf");
    fs::write(&out, b"old").unwrap();
    if std::os::unix::fs::chown(&out, Some(54321), Some(54322)).is_err() {
        skip(format_args!("not root: cannot give a file to another user"));
        return;
    }
    for unnamed in [true, false] {
        write_with(&out, unnamed, b"new").unwrap();
        let m = fs::metadata(&out).unwrap();
        assert_eq!((m.uid(), m.gid()), (54321, 54322), "unnamed: {unnamed}");
        assert_eq!(fs::read(&out).unwrap(), b"new");
    }
}

/// A named pipe `fifo` made in `dir` (for the tests of readers and writers that refuse or bound
/// them).
pub(crate) fn make_fifo(dir: &Path) -> PathBuf {
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    fifo
}
