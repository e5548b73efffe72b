//! `hash-serial` as built by this crate. What every binary must do is tested on
//! all of them at once in `crates/testenv/tests/conformance.rs`; this checks
//! that those tests find this build and that it runs the serial strategy. (An
//! integration test is also what has `cargo test` build the binary at all.)

#[test]
fn is_the_binary_the_conformance_tests_run_and_runs_its_strategy() {
    testenv::check_built_binary(
        hash_core::Strategy::Serial,
        env!("CARGO_BIN_EXE_hash-serial"),
    );
}

/// `--progress` on a pipe, over a few large files and many small ones: every
/// line's time left is a time (or not one yet) and its percentages of bytes and
/// of files never fall. The run is paced by its stdout, read a pipe's worth
/// after each progress line, so that it draws lines on a fast machine too; no
/// time is checked.
#[test]
fn progress_lines_show_a_time_left_and_rising_percentages() {
    use std::io::{BufRead, Read};
    let t = testenv::Tree::new();
    let big = testenv::pattern(4 << 20);
    for i in 0..3 {
        t.file(format!("big{i}").as_bytes(), &big);
    }
    let small = testenv::pattern(512);
    for i in 0..5000 {
        t.file(format!("small/{:02}/{i:04}", i % 50).as_bytes(), &small);
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hash-serial"))
        .arg("--progress")
        .arg(t.root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (mut out, mut err) = (Vec::new(), String::new());
    let mut chunk = vec![0; 64 << 10];
    loop {
        // A line comes every tick, the run blocked on its stdout or not.
        let drew = stderr.read_line(&mut err).unwrap();
        let n = stdout.read(&mut chunk).unwrap();
        out.extend_from_slice(&chunk[..n]);
        if drew == 0 || n == 0 {
            break;
        }
    }
    stdout.read_to_end(&mut out).unwrap();
    stderr.read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out).lines().count(), 5003);
    let mut last = (0, 0);
    for line in err.lines() {
        let percents = percents(line).unwrap_or_else(|| panic!("{line:?}"));
        assert!(percents.0 >= last.0 && percents.1 >= last.1, "{err}");
        last = percents;
        let left = line.rsplit_once(", ETA ").expect(line).1;
        // `--` before the first estimate, then a duration as units writes it.
        let read = hash_core::units::parse_duration(left);
        assert!(left == "--" || read.is_some(), "{line:?}");
    }
    assert!(err.lines().count() >= 2, "{err}");
    eprintln!("{err}");
}

/// The percent of bytes and the percent of files in
/// `B / T (P%), F/N files (Q%), …`.
fn percents(line: &str) -> Option<(u32, u32)> {
    let (bytes, rest) = line.split_once("%), ")?;
    let (files, _) = rest.split_once("%), ")?;
    let last = |s: &str| s.rsplit_once(" (")?.1.parse().ok();
    Some((last(bytes)?, last(files)?))
}
