//! `--exclude`, `--exclude-from` and `-x`, held to GNU `find`.
//!
//! The expected set comes from `find ROOT -xdev -mindepth 1 \( -name … -o
//! -type d -name … \) -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0
//! sha256sum` on the same tree: the patterns below are ones whose `find`
//! spelling means the same (a name at any depth; a directory name at any
//! depth). The tree holds a tmpfs mount (tests run as root here; elsewhere
//! the mount is left out and said so) and names with a newline and bytes
//! that are not UTF-8.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use testenv::*;

/// A tmpfs mounted for the life of the value.
struct Mount(PathBuf);

impl Mount {
    /// Mount a tmpfs at `dir` (which exists), or say why not.
    fn tmpfs(dir: &Path) -> Result<Mount, String> {
        let out = run(Command::new("mount")
            .args(["-t", "tmpfs", "hashrace-test"])
            .arg(dir));
        if out.status.success() {
            Ok(Mount(dir.to_path_buf()))
        } else {
            Err(show(&out.stderr))
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = run(Command::new("umount").arg("-l").arg(&self.0));
    }
}

/// The nasty tree, with files and directories the patterns below pick out,
/// and a tmpfs at `mnt` if one can be mounted.
fn tree() -> (Tree, Option<Mount>) {
    let t = Tree::nasty();
    t.file(b"a.tmp", b"tmp\n");
    t.file(b"deep/a/b/c.tmp", b"deep tmp\n");
    t.file(b"new\nline.tmp", b"newline tmp\n");
    t.file(b"bad-\xff.tmp", b"not utf-8 tmp\n");
    t.file(b"dir.tmp/inside", b"in a directory named *.tmp\n");
    t.file(b"cache/entry", b"cache\n");
    t.file(b"deep/a/cache/entry", b"deep cache\n");
    t.file(b"files/cache", b"a file named cache stays\n");
    t.file(b"cache-not/entry", b"stays\n");
    std::fs::create_dir(t.path(b"mnt")).unwrap();
    let mount = match Mount::tmpfs(&t.path(b"mnt")) {
        Ok(m) => Some(m),
        Err(why) => {
            eprintln!("no tmpfs mount in the tree (not root?): {why}");
            None
        }
    };
    t.file(b"mnt/on-tmpfs", b"another file system\n");
    t.file(b"mnt/sub/deeper", b"below the mount\n");
    t.file(b"mnt/x.tmp", b"excluded on tmpfs too\n");
    (t, mount)
}

/// GNU's files under `root` with these `find` options (`-H`, `-L`, then
/// perhaps `-xdev`, which goes after the root) and prune expression.
fn find(root: &Path, opts: &str, prune: &str) -> Vec<u8> {
    let (opts, xdev) = match opts.strip_suffix(" -xdev") {
        Some(opts) => (opts, "-xdev"),
        None => (opts, ""),
    };
    let expr = if prune.is_empty() {
        String::new()
    } else {
        format!("\\( {prune} \\) -prune -o")
    };
    let script = format!(
        "find {opts} \"$1\" {xdev} -mindepth 1 {expr} -type f -print0 2>/dev/null \
         | LC_ALL=C sort -z | xargs -0 -r sha256sum"
    );
    run(Command::new("sh").arg("-c").arg(script).arg("sh").arg(root)).stdout
}

#[test]
fn exclude_and_one_file_system_give_finds_set() {
    let (t, mount) = tree();
    let root = t.root();
    let patterns = "-name '*.tmp' -o -type d -name cache";
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["--exclude", "*.tmp", "--exclude", "cache/"],
            "-H",
            patterns,
        ),
        (&["-x"], "-H -xdev", ""),
        (
            &["-x", "--exclude", "*.tmp", "--exclude", "cache/"],
            "-H -xdev",
            patterns,
        ),
        (
            &["-L", "--exclude", "*.tmp", "--exclude", "cache/"],
            "-L",
            patterns,
        ),
        (&["-L", "--one-file-system"], "-L -xdev", ""),
    ];
    let all = find(root, "-H", "");
    for (_, opts, prune) in cases {
        let want = find(root, opts, prune);
        assert!(
            want.len() < all.len(),
            "{opts} {prune}: the case leaves something out"
        );
    }
    if mount.is_some() {
        assert!(show(&all).contains("mnt/sub/deeper"));
        assert!(!show(&find(root, "-H -xdev", "")).contains("mnt/"));
    }
    each_binary(|env| {
        for (args, opts, prune) in cases {
            let want = find(root, opts, prune);
            for variant in env.variants() {
                let out = env.run(&[&variant[..], args].concat(), &[root]);
                assert_eq!(show(&out.stdout), show(&want), "{args:?} {variant:?}");
                assert_eq!(out.stdout, want, "{args:?} {variant:?}: byte for byte");
            }
        }
    });
}

#[test]
fn exclude_from_reads_patterns_a_line_with_comments() {
    let (t, _mount) = tree();
    let list = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(list.path(), b"# build output\n*.tmp\n\ncache/\n").unwrap();
    let want = find(t.root(), "-H", "-name '*.tmp' -o -type d -name cache");
    let list = list.path().as_os_str();
    each_binary(|env| {
        let out = env.run_os(&[OsStr::new("--exclude-from"), list, t.root().as_os_str()]);
        assert_eq!(show(&out.stdout), show(&want));
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
    });
}

#[test]
fn an_excluded_directory_is_never_read() {
    // As nobody, a directory it may not read is an error, unless excluded.
    let t = Tree::new();
    let kept = t.file(b"kept", b"k");
    t.file(b"closed/inside", b"i");
    std::fs::set_permissions(t.path(b"closed"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let want = sha256sum(&[&kept]);
    each_binary(|env| {
        let (_dir, bin) = env.nobody_copy();
        let out = run(as_nobody(&bin).arg(t.root()));
        assert_eq!(
            out.status.code(),
            Some(1),
            "without the exclude, reading it fails"
        );
        let out = run(as_nobody(&bin).args(["--exclude", "closed/"]).arg(t.root()));
        assert_eq!(show(&out.stdout), show(&want));
        assert_eq!(show(&out.stderr), "");
        assert_eq!(out.status.code(), Some(0));
    });
}

#[test]
fn the_filter_applies_to_stats_tree_and_list() {
    // The same kept files, made apart: its --tree digest and file count are
    // what the filtered run must give.
    let kept = Tree::new();
    kept.file(b"x/keep", b"kept\n");
    kept.file(b"x/sub/also", b"also\n");
    let full = Tree::new();
    full.file(b"x/keep", b"kept\n");
    full.file(b"x/sub/also", b"also\n");
    full.file(b"x/sub/drop.tmp", b"dropped\n");
    full.file(b"x/cache/entry", b"dropped\n");
    let serial = TestEnv::new(hash_core::Strategy::Serial);
    let want = serial.run(&["--tree", "--stats"], &[&kept.path(b"x")]);
    let tree_line = |out: &[u8]| {
        show(out)
            .lines()
            .find(|l| l.starts_with("# tree-sha256 "))
            .map(str::to_owned)
    };
    // "hash-x: 2 files, ...": the count, without the binary's name.
    let files = |err: &[u8]| {
        let stats = show(err);
        let line = stats.lines().find(|l| l.contains(" files, "))?.to_owned();
        Some(line.split_once(": ")?.1.split(',').next()?.to_owned())
    };
    assert!(tree_line(&want.stdout).is_some());
    let filter = ["--exclude", "*.tmp", "--exclude", "cache/"];
    each_binary(|env| {
        let out = env.run(
            &[&filter[..], &["--tree", "--stats"]].concat(),
            &[&full.path(b"x")],
        );
        assert_eq!(tree_line(&out.stdout), tree_line(&want.stdout));
        assert_eq!(
            files(&out.stderr),
            files(&want.stderr),
            "{}",
            show(&out.stderr)
        );
        let listed = env.run(&[&filter[..], &["--list"]].concat(), &[&full.path(b"x")]);
        let listed = show(&listed.stdout);
        assert!(
            listed.contains("keep") && listed.contains("also"),
            "{listed}"
        );
        assert!(
            !listed.contains("drop.tmp") && !listed.contains("cache/"),
            "{listed}"
        );
    });
}

#[test]
fn a_bad_pattern_or_unreadable_exclude_file_is_a_usage_error() {
    let t = Tree::new();
    t.file(b"f", b"x");
    each_binary(|env| {
        let n = env.name();
        let out = env.run(&["--exclude", "a["], &[t.root()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(show(&out.stderr).starts_with(&format!("{n}: --exclude: invalid pattern 'a[': ")));
        assert!(out.stdout.is_empty());
        let missing = t.path(b"no-such-list");
        let out = env.run_os(&[
            OsStr::new("--exclude-from"),
            missing.as_os_str(),
            t.root().as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        let want = format!("{n}: {}: No such file or directory\n", missing.display());
        assert_eq!(show(&out.stderr), want);
    });
}
