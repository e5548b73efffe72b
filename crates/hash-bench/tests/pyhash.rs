//! scripts/pyhash.py (the Python reference programs the harness races): each of its
//! four strategies must print exactly what GNU `find | sort | xargs sha256sum` prints,
//! since the harness checks them against the hashers before timing them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use testenv::run;

mod common;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pyhash.py")
}

#[test]
fn four_strategies_print_what_gnu_sha256sum_prints() {
    if !common::have_all(&["python3", "sha256sum", "find", "sort", "xargs"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    let mut names: Vec<Vec<u8>> = vec![
        b"plain".to_vec(),
        b"with space".to_vec(),
        b"back\\slash".to_vec(),
        b"new\nline".to_vec(),
        b"-dash".to_vec(),
        b"\xffnot-utf8".to_vec(),
        b"sub/empty".to_vec(),
        b"sub/deeper/big".to_vec(),
        b"B-upper".to_vec(),
    ];
    names.extend((0..40).map(|i| format!("sub/n{i:02}").into_bytes()));
    for (i, n) in names.iter().enumerate() {
        let size = match n.as_slice() {
            b"sub/empty" => 0,
            b"sub/deeper/big" => (3 << 20) + 5,
            _ => i * 37,
        };
        let bytes: Vec<u8> = (0..size).map(|k| (k * 7 + i) as u8).collect();
        std::fs::write(root.join(OsStr::from_bytes(n)), bytes).unwrap();
    }
    // Not regular files: never listed (and the FIFO never opened).
    std::os::unix::fs::symlink("plain", root.join("link")).unwrap();
    testenv::mkfifo(&root.join("fifo"), 0o600);

    let gnu = common::gnu_sha256sum(t.path(), "tree");
    assert_eq!(
        gnu.stdout.iter().filter(|&&c| c == b'\n').count(),
        names.len()
    );
    for strategy in ["serial", "threads", "procs", "asyncio"] {
        for jobs in [None, Some("3")] {
            let mut cmd = Command::new("python3");
            cmd.arg(script()).arg(strategy);
            if let Some(j) = jobs {
                cmd.args(["-j", j]);
            }
            let out = run(cmd.arg("tree").current_dir(t.path()));
            assert!(out.status.success(), "{strategy} {jobs:?}: {out:?}");
            assert!(out.stderr.is_empty(), "{strategy}: {out:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&gnu.stdout),
                "{strategy} -j {jobs:?}"
            );
            assert_eq!(out.stdout, gnu.stdout, "{strategy} -j {jobs:?}");
        }
    }
    // A missing path is reported, the rest still hashed, and the exit status says so.
    let out = run(Command::new("python3")
        .arg(script())
        .args(["threads", "nosuch", "tree/plain"])
        .current_dir(t.path()));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "pyhash: nosuch: No such file or directory\n"
    );
    assert_eq!(out.stdout.iter().filter(|&&c| c == b'\n').count(), 1);
}

#[test]
fn pysum_is_the_byte_sum_in_every_strategy_and_matches_hash_bench() {
    if !common::have_all(&["python3"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(root.join("d")).unwrap();
    // Sizes: empty, across a 1 MiB chunk boundary, and one whose sum passes 2^32
    // (0xff × 17,000,000 = 4,335,000,000).
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("d/empty", vec![]),
        ("abc", b"abc".to_vec()),
        (
            "d/chunks",
            (0..(1u32 << 20) + 999).map(|i| (i % 253) as u8).collect(),
        ),
        ("wraps", vec![0xff; 17_000_000]),
    ];
    for (name, bytes) in &files {
        std::fs::write(root.join(name), bytes).unwrap();
    }
    // What each line must say, computed here: the sum in u64, then mod 2^32.
    let mut want: Vec<(String, String)> = files
        .iter()
        .map(|(name, bytes)| {
            let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
            let path = format!("tree/{name}");
            (path.clone(), format!("{:08x}  {path}\n", sum % (1 << 32)))
        })
        .collect();
    // Sorted by path bytes, as `LC_ALL=C sort` does.
    want.sort();
    let want: String = want.into_iter().map(|(_, line)| line).collect();
    assert!(want.contains("00000126  tree/abc"));
    assert!(want.contains(&format!("{:08x}  tree/wraps", 4_335_000_000u64 - (1 << 32))));
    let ours = hash_bench::manifest::manifest_of(
        t.path(),
        "tree",
        hash_bench::manifest::Work::Pysum,
        2,
        false,
    )
    .unwrap();
    assert_eq!(ours.text, want);
    for strategy in ["serial", "threads", "procs", "asyncio"] {
        for jobs in [None, Some("2")] {
            let mut cmd = Command::new("python3");
            cmd.arg(script()).args([strategy, "--work", "pysum"]);
            if let Some(j) = jobs {
                cmd.args(["-j", j]);
            }
            let out = run(cmd.arg("tree").current_dir(t.path()));
            assert!(out.status.success(), "{strategy} {jobs:?}: {out:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                want,
                "{strategy} -j {jobs:?}"
            );
        }
    }
}

#[test]
fn pysum_lines_escape_names_as_gnu_does() {
    if !common::have_all(&["python3", "sha256sum", "find", "sort", "xargs"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(&root).unwrap();
    for name in [&b"new\nline"[..], b"back\\slash", b"plain", b"\xffbad"] {
        std::fs::write(root.join(OsStr::from_bytes(name)), b"x").unwrap();
    }
    let gnu = common::gnu_sha256sum(t.path(), "tree");
    let out = run(Command::new("python3")
        .arg(script())
        .args(["serial", "--work", "pysum", "tree"])
        .current_dir(t.path()));
    assert!(out.status.success(), "{out:?}");
    // Same lines but for the value: a leading backslash where GNU has one, the 64 hex
    // digits replaced by 8 ("x" sums to 0x78).
    let strip = |text: &[u8], width: usize| -> Vec<Vec<u8>> {
        text.split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let esc = usize::from(l[0] == b'\\');
                assert_eq!(&l[esc + width..esc + width + 2], b"  ");
                [&l[..esc], &l[esc + width..]].concat()
            })
            .collect()
    };
    assert_eq!(strip(&out.stdout, 8), strip(&gnu.stdout, 64));
    assert!(
        out.stdout.starts_with(b"\\00000078  tree/back\\\\slash\n"),
        "{out:?}"
    );
}
