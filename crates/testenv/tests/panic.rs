//! A hashing thread that panics (a bug, simulated with a debug-only hook)
//! must cost only the files it held unfinished, each reported as an error:
//! the run must neither hang waiting for them nor print anything wrong, and
//! its exit status must say so.

use std::process::Command;

use hash_core::Strategy;
use testenv::*;

/// The hook (see `hash_core::strategy::queue`): panic on a path ending so.
const HOOK: &str = "HASHRACE_TEST_THREAD_PANIC";

#[test]
fn a_panicking_hashing_thread_fails_its_files_and_the_run_goes_on() {
    let t = Tree::new();
    for i in 0..40 {
        t.file(format!("d{}/f{i}", i % 3).as_bytes(), &pattern(i * 101));
    }
    let boom = t.file(b"d1/boom", b"x");
    // GNU's lines: each file is there, or reported as lost.
    let gnu = show(&reference("-H", &[t.root()]));
    assert_eq!(gnu.lines().count(), 41);
    // Asked of the kernel, not of the binary under test.
    let uring = io_uring_usable().is_ok();
    // Where only the file being hashed is unfinished when the thread dies:
    // threads with another thread left to take the rest, and the pool (a
    // task is replaced). A ring thread also loses the files in its other
    // slots, and a lone thread everything nobody took yet.
    let mut ways = vec![
        (Strategy::Threads, vec![], ["2", "5"].as_slice()),
        (Strategy::Async, vec!["--io", "pool"], &["1", "2", "5"]),
    ];
    if uring {
        ways.push((Strategy::Async, vec!["--io", "uring"], &[]));
    } else {
        eprintln!("io_uring unavailable here: hash-async --io uring not tested");
    }
    for (s, extra, one_lost) in ways {
        for workers in ["1", "2", "5"] {
            let mut cmd = Command::new(binary(s.binary()));
            cmd.env(HOOK, "/boom").args(["-j", workers]).args(&extra);
            let out = run(cmd.arg(t.root()));
            let what = format!("{} -j {workers} {extra:?}", s.binary());
            assert_eq!(out.status.code(), Some(1), "{what}");
            let (got, err) = (show(&out.stdout), show(&out.stderr));
            let lost = |path: &str| {
                let line = format!(
                    "{}: {path}: not hashed: a hashing thread panicked\n",
                    s.binary()
                );
                err.contains(&line)
            };
            assert!(lost(&boom.display().to_string()), "{what}: {err}");
            let mut printed = got.lines().peekable();
            for line in gnu.lines() {
                if printed.peek() == Some(&line) {
                    printed.next();
                } else {
                    let path = line.split_once("  ").unwrap().1;
                    assert!(
                        lost(path),
                        "{what}: {path} neither printed nor lost:\n{got}\n{err}"
                    );
                }
            }
            assert_eq!(
                printed.next(),
                None,
                "{what}: a line GNU does not print:\n{got}"
            );
            if one_lost.contains(&workers) {
                let lost = err.matches("not hashed: a hashing thread panicked").count();
                assert_eq!(lost, 1, "{what}: more than the panicking file lost:\n{err}");
            }
        }
    }
}
