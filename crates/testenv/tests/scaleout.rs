//! `--list`, `--shard` and `--merge` on one machine: whatever the binary, the
//! shard count, the list form or the order the shards are given in, merging must
//! give exactly what one run gives, whose lines come from GNU `find | sort |
//! xargs sha256sum`. The real engines (Slurm, GNU parallel) are in `engines.rs`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use testenv::*;

fn args<'a>(a: &[&'a str]) -> Vec<&'a OsStr> {
    a.iter().map(|s| OsStr::new(*s)).collect()
}

/// Run `bin` with `a` and then `extra` (paths), expecting success.
fn ok(bin: &Path, a: &[&OsStr]) -> Vec<u8> {
    let out = hash(bin.to_str().unwrap(), a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{bin:?} {a:?}: {}",
        show(&out.stderr)
    );
    out.stdout
}

/// The nasty tree plus enough files of varied sizes that every shard gets some.
fn tree() -> Tree {
    let t = Tree::nasty();
    for i in 0..60 {
        t.file(
            format!("many/{}/f{i}", i % 5).as_bytes(),
            &pattern(i * i * 53),
        );
    }
    t
}

fn write(dir: &Tree, name: &str, data: &[u8]) -> PathBuf {
    dir.file(name.as_bytes(), data)
}

#[test]
fn merged_shards_are_the_single_machine_output() {
    let t = tree();
    let root = t.root().as_os_str();
    let threads = binary("hash-threads");
    let gnu = reference("-H", &[t.root()]);
    let work = Tree::new();
    let list = write(&work, "list", &ok(&threads, &[OsStr::new("--list"), root]));
    let list0 = write(
        &work,
        "list0",
        &ok(&threads, &[OsStr::new("--list"), OsStr::new("-z"), root]),
    );
    for style in [
        &[][..],
        &["--tag"],
        &["-z"],
        &["--tree"],
        &["--tree", "--tag"],
    ] {
        let single = ok(&threads, &[args(style), vec![root]].concat());
        if style.is_empty() {
            assert_eq!(show(&single), show(&gnu), "the single run is GNU's");
        }
        for (bin, n) in [
            ("hash-serial", 1),
            ("hash-threads", 3),
            ("hash-procs", 4),
            ("hash-async", 7),
        ] {
            let bin = binary(bin);
            // From the tree, from the text list, from the NUL list.
            let sources: [Vec<&OsStr>; 3] = [
                vec![root],
                vec![OsStr::new("--files-from"), list.as_os_str()],
                vec![
                    OsStr::new("--files-from"),
                    list0.as_os_str(),
                    OsStr::new("-0"),
                ],
            ];
            for (s, source) in sources.iter().enumerate() {
                let mut shards: Vec<OsString> = Vec::new();
                for k in 0..n {
                    let spec = format!("{k}/{n}");
                    let a = [args(style), args(&["--shard", &spec]), source.clone()].concat();
                    let name = format!("s{s}-{n}-{k}-{}", style.join(""));
                    shards.push(write(&work, &name, &ok(&bin, &a)).into());
                }
                shards.reverse(); // the order they finished in does not matter
                let mut a = args(style);
                a.push(OsStr::new("--merge"));
                a.extend(shards.iter().map(OsString::as_os_str));
                let merged = ok(&bin, &a);
                assert_eq!(
                    show(&merged),
                    show(&single),
                    "{bin:?} {style:?} N={n} source {s}"
                );
            }
        }
    }
}

#[test]
fn a_shard_is_still_a_manifest_for_gnu_sha256sum() {
    let t = tree();
    let work = Tree::new();
    let threads = binary("hash-threads");
    for style in ["--tree", "--tag"] {
        let shard = ok(
            &threads,
            &[args(&[style, "--shard", "1/3"]), vec![t.root().as_os_str()]].concat(),
        );
        assert!(shard.starts_with(b"# hashrace-shard v2 1/3 "));
        let f = write(&work, &format!("shard{style}"), &shard);
        let out = run(Command::new("sha256sum").args(["-c", "--strict"]).arg(&f));
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
        let verified = show(&out.stdout).lines().count();
        let lines = show(&shard).lines().filter(|l| !l.starts_with('#')).count();
        assert!(verified > 0 && verified == lines, "{verified} of {lines}");
    }
}

#[test]
fn the_merge_refuses_incomplete_overlapping_and_foreign_sets_naming_them() {
    let t = tree();
    let root = t.root().as_os_str();
    let bin = binary("hash-async");
    let work = Tree::new();
    let shard = |spec: &str, name: &str, extra: &[&str]| -> PathBuf {
        let a = [args(extra), args(&["--shard", spec]), vec![root]].concat();
        write(&work, name, &ok(&bin, &a))
    };
    let s0 = shard("0/3", "s0", &[]);
    let s1 = shard("1/3", "s1", &[]);
    let s2 = shard("2/3", "s2", &[]);
    let other_n = shard("1/2", "n2", &[]);
    t.file(b"many/new-file", b"the tree changed");
    let other_tree = shard("2/3", "changed", &[]);
    let full = std::fs::read(&s2).unwrap();
    let cut = write(&work, "cut", &full[..full.len() / 2]);
    let merge = |files: &[&Path]| {
        let mut a = vec![OsStr::new("--merge")];
        a.extend(files.iter().map(|p| p.as_os_str()));
        hash(bin.to_str().unwrap(), &a)
    };
    let d = |p: &Path| p.display().to_string();
    let empty = t.path(b"empty");
    // Shard 1 changed after its run: two digest lines swapped; and one line
    // deleted with its '# f' line and the end line's count lowered to match.
    // (Bytes: some names are not UTF-8.)
    let text = std::fs::read(&s1).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines.pop(); // after the last newline
    let digest_lines: Vec<usize> = (0..lines.len()).filter(|&i| lines[i][0] != b'#').collect();
    assert!(digest_lines.len() >= 2, "shard 1/3 has two lines to swap");
    let joined = |lines: &[Vec<u8>]| [lines.join(&b'\n'), vec![b'\n']].concat();
    let mut swapped = lines.clone();
    swapped.swap(digest_lines[0], digest_lines[1]);
    let swapped = write(&work, "swapped", &joined(&swapped));
    let hashed = digest_lines.len();
    let first_f = lines.iter().position(|l| l.starts_with(b"# f ")).unwrap();
    lines.remove(first_f);
    lines.remove(digest_lines[0]);
    let end = lines.pop().unwrap();
    let end = show(&end).replace(
        &format!("hashed={hashed}"),
        &format!("hashed={}", hashed - 1),
    );
    lines.push(end.into_bytes());
    let deleted = write(&work, "deleted", &joined(&lines));
    // Shard 2's header says the plan has one file more.
    let text = std::fs::read(&s2).unwrap();
    let at = text.iter().position(|&b| b == b'\n').unwrap();
    let head = show(&text[..at]);
    let files: usize = head
        .split(' ')
        .find_map(|w| w.strip_prefix("files="))
        .unwrap()
        .parse()
        .unwrap();
    let head = head.replace(&format!("files={files}"), &format!("files={}", files + 1));
    let recounted = write(&work, "recounted", &[head.as_bytes(), &text[at..]].concat());
    let cases: Vec<(Vec<&Path>, Vec<String>)> = vec![
        (
            vec![&s0, &s2],
            vec!["hash-async: shard 1/3: missing (plan ".to_owned()],
        ),
        (
            vec![&s0, &s1, &s1, &s2],
            vec![format!("hash-async: shard 1/3: given more than once ({}, {})", d(&s1), d(&s1))],
        ),
        (
            vec![&s0, &s1, &cut],
            vec![format!(
                "hash-async: {}: shard 2/3 is incomplete (no end line: killed, still running or cut short); rerun it",
                d(&cut)
            )],
        ),
        (
            vec![&s0, &s1, &s2, &other_n],
            vec![format!(
                "hash-async: {}: shard 1/2 does not belong: split in 2 shards, {} in 3",
                d(&other_n),
                d(&s0)
            )],
        ),
        (
            vec![&s0, &s1, &other_tree],
            vec![
                format!("hash-async: {}: shard 2/3 does not belong: made from a different file list or tree", d(&other_tree)),
                "hash-async: shard 2/3: missing".to_owned(),
            ],
        ),
        (
            vec![&s0, &swapped, &s2],
            vec![format!("hash-async: {}: its lines are out of order", d(&swapped))],
        ),
        (
            vec![&s0, &deleted, &s2],
            vec![format!(
                "hash-async: {}: its lines do not match the sha256 of its end line",
                d(&deleted)
            )],
        ),
        (
            vec![&s0, &s1, &recounted],
            vec![format!(
                "hash-async: {}: shard 2/3 does not belong: its header says files={}, {} says files={files}",
                d(&recounted),
                files + 1,
                d(&s0)
            )],
        ),
        (
            vec![&s0, &s1, &empty],
            vec![format!(
                "hash-async: {}: not a hashrace shard output",
                d(&empty)
            )],
        ),
    ];
    for (files, wants) in cases {
        let out = merge(&files);
        assert_eq!(out.status.code(), Some(1), "{files:?}");
        assert!(out.stdout.is_empty(), "a refused merge prints nothing");
        let err = show(&out.stderr);
        for want in wants {
            assert!(
                err.lines().any(|l| l.starts_with(&want)),
                "{files:?}: stderr\n{err}\nhas no line starting with\n{want}"
            );
        }
    }
    let whole = merge(&[&s2, &s0, &s1]);
    assert_eq!(whole.status.code(), Some(0), "{}", show(&whole.stderr));
    assert!(whole.stderr.is_empty());
}

#[test]
fn shard_errors_are_merged_like_the_single_run_and_fail_it() {
    let t = tree();
    let bin = binary("hash-threads");
    let work = Tree::new();
    let list = write(
        &work,
        "list",
        &ok(&bin, &[OsStr::new("--list"), t.root().as_os_str()]),
    );
    std::fs::remove_file(t.path(b"many/0/f0")).unwrap();
    let from = [OsStr::new("--files-from"), list.as_os_str()];
    let single = hash(bin.to_str().unwrap(), &from);
    assert_eq!(single.status.code(), Some(1));
    let mut shards = Vec::new();
    for k in 0..2 {
        let spec = format!("{k}/2");
        let out = hash(
            bin.to_str().unwrap(),
            &[args(&["--shard", &spec]), from.to_vec()].concat(),
        );
        shards.push(write(&work, &format!("s{k}"), &out.stdout));
    }
    let mut a = vec![OsStr::new("--merge")];
    a.extend(shards.iter().map(|p| p.as_os_str()));
    let merged = hash(bin.to_str().unwrap(), &a);
    assert_eq!(show(&merged.stdout), show(&single.stdout));
    assert_eq!(merged.status.code(), Some(1));
    assert!(show(&merged.stderr).contains("reported 1 error when it ran"));
}

#[test]
fn a_list_keeps_any_name_and_hashes_like_the_tree() {
    let t = Tree::nasty();
    let bin = binary("hash-serial");
    let work = Tree::new();
    for (z, extra) in [(&[][..], &[][..]), (&["-z"], &["-0"])] {
        let list = ok(
            &bin,
            &[args(z), args(&["--list"]), vec![t.root().as_os_str()]].concat(),
        );
        let f = write(&work, &format!("list{}", z.len()), &list);
        let from = [
            args(&["--tree", "--files-from"]),
            vec![f.as_os_str()],
            args(extra),
        ]
        .concat();
        let want = ok(&bin, &[OsStr::new("--tree"), t.root().as_os_str()]);
        assert_eq!(show(&ok(&bin, &from)), show(&want));
    }
    // The wrong separator is named, not read as one huge path.
    let list = ok(
        &bin,
        &[args(&["--list", "-z"]), vec![t.root().as_os_str()]].concat(),
    );
    let f = write(&work, "nul-list", &list);
    let out = hash(
        bin.to_str().unwrap(),
        &[OsStr::new("--files-from"), f.as_os_str()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        show(&out.stderr),
        format!(
            "hash-serial: {}: a NUL-separated hashrace list; read it with -0\n",
            f.display()
        )
    );
}

#[test]
fn shard_auto_takes_k_and_n_from_the_engine() {
    let t = tree();
    let bin = binary("hash-procs");
    let header = |spec: &str, env: &[(&str, &str)]| -> Result<String, String> {
        let mut cmd = Command::new(&bin);
        cmd.args(["--shard", spec]).arg(t.root());
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_COUNT",
            "SLURM_ARRAY_TASK_STEP",
            "JOB_COMPLETION_INDEX",
            "PARALLEL_SEQ",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        let out = run(&mut cmd);
        match out.status.code() {
            Some(0) => Ok(show(&out.stdout).lines().next().unwrap()[20..24].to_owned()),
            _ => Err(format!("{:?} {}", out.status.code(), show(&out.stderr))),
        }
    };
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "12"),
        ("SLURM_ARRAY_TASK_MIN", "10"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ];
    assert_eq!(header("auto", &slurm).unwrap(), "2/4 ");
    assert_eq!(
        header("auto/5", &[("JOB_COMPLETION_INDEX", "4")]).unwrap(),
        "4/5 "
    );
    assert_eq!(header("auto/3", &[("PARALLEL_SEQ", "3")]).unwrap(), "2/3 ");
    let e = header("auto", &[("PARALLEL_SEQ", "1")]).unwrap_err();
    assert_eq!(
        e,
        "Some(2) hash-procs: --shard: GNU parallel does not tell the number of jobs: use --shard auto/N\n"
    );
    assert!(header("auto", &[]).unwrap_err().starts_with("Some(2) "));
    assert!(header("3/3", &[]).unwrap_err().starts_with("Some(2) "));
}

#[test]
fn a_list_read_from_stdin_cannot_name_stdin_and_the_rest_is_hashed() {
    let t = Tree::new();
    let a = t.file(b"a", b"kept\n");
    let want = sha256sum(&[a.as_path()]);
    for bin in hash_core::Strategy::ALL.map(|s| s.binary()) {
        let list = format!("-\n{}\n", a.display());
        let mut cmd = Command::new(binary(bin));
        cmd.args(["--files-from", "-"]);
        let out = run_with_input(&mut cmd, list.as_bytes());
        assert_eq!(out.status.code(), Some(1), "{bin}: {}", show(&out.stderr));
        assert_eq!(show(&out.stdout), show(&want), "{bin}");
        assert_eq!(
            show(&out.stderr),
            format!("{bin}: -: file name '-' not allowed when reading names from standard input\n"),
        );
    }
}
