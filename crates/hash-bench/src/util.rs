//! Small helpers shared by the subcommands: statistics, hex, shell quoting, UTC dates,
//! PATH lookup, and reading a command's version line.
//!
//! The parts with rules of their own come from well-kept crates: quoting from `shlex`,
//! dates from `jiff`, PATH lookup from `which`. What is left here is the project's
//! policy around them (which words stay bare, the two date layouts), tested below.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::progress::Progress;

pub use hash_core::hasher::hex;

/// Run `task(i, buf)` for every `i` in `0..count` on `threads` threads (each with
/// its own 1 MiB buffer), drawing `progress` meanwhile. Stops handing out tasks at
/// the first error, which is returned.
pub fn parallel_for(
    count: usize,
    threads: usize,
    progress: &Progress,
    task: impl Fn(usize, &mut [u8]) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<()> {
    let next = AtomicUsize::new(0);
    let first_err: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        s.spawn(|| progress.run());
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut buf = vec![0u8; 1 << 20];
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || first_err.lock().unwrap().is_some() {
                            break;
                        }
                        if let Err(e) = task(i, &mut buf) {
                            first_err.lock().unwrap().get_or_insert(e);
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        progress.finish();
    });
    match first_err.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Relative tolerance for a stored number that can be recomputed from others (a median
/// from `times_s`, MiB/s from bytes and the median). The stored value was computed by the
/// same arithmetic; the slack is for what can move it by a few ulps (serde_json's default
/// float parser is not always correctly rounded, a sum may run in another order), far
/// below 1e-9, while any edited or mismatched number is off by much more.
pub const REL_TOLERANCE: f64 = 1e-9;

/// Whether `a` and `b` agree within [`REL_TOLERANCE`] of the larger.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL_TOLERANCE * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// Median of `values` (mean of the two middle values for an even count); `None` if empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Arithmetic mean; `None` if empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// Sample standard deviation (n − 1, as hyperfine computes it); `None` below two values.
pub fn stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    Some(var.sqrt())
}

/// Quote `s` for a POSIX shell, and for hyperfine's `-N` word splitting, which follows
/// the same rules. Plain words stay unquoted so that recorded commands stay readable;
/// the plain set is wider than `shlex`'s (`=`, `,` and `%` too), which keeps the commands
/// recorded in results and the plan id (a hash over them) as they were.
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'_' | b'-' | b'.' | b'/' | b':' | b'=' | b',' | b'+' | b'@' | b'%'
                )
        });
    if plain {
        return s.to_string();
    }
    // A NUL (the only thing `quote` refuses) cannot be part of an argument anyway: argv
    // strings are C strings. Allowing it keeps this function total.
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(s)
        .map_or_else(|_| s.to_string(), |q| q.into_owned())
}

/// Join an argv into one shell-quoted command line.
pub fn sh_join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| sh_quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Seconds since the Unix epoch, as a float (for residency samples).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// UTC time as RFC 3339 (`2025-01-31T12:34:56Z`) and as a file-name stamp
/// (`20250131T123456Z`), to the second (truncated). A clock before 1970 counts as 1970.
pub fn utc_stamps(t: SystemTime) -> (String, String) {
    let ts = jiff::Timestamp::try_from(t.max(UNIX_EPOCH)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    (
        ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        ts.strftime("%Y%m%dT%H%M%SZ").to_string(),
    )
}

/// First line of `program args...` stdout (or stderr, for tools that print versions
/// there), or `None` if it cannot be run or fails.
pub fn version_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// Where `name` is on PATH (or, when it contains a `/`, `name` itself), if it is an
/// executable file.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    which::which(name).ok()
}

/// [`which`] in `search` (a PATH-style list of directories) instead of the process's
/// PATH when it is given: the plan looks programs up through this, so a test can hand
/// it a directory of fakes and get the same plan on every machine.
pub fn which_in(name: &str, search: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    match search {
        None => which(name),
        Some(dirs) => {
            let cwd = std::env::current_dir().ok()?;
            which::which_in(name, Some(dirs), cwd).ok()
        }
    }
}

/// Append `value` to `path` as one JSON line (a record read back by [`read_json_lines`]).
pub fn append_json_line<T: serde::Serialize>(
    path: &std::path::Path,
    value: &T,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    f.write_all(line.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// Every line of a JSON-lines record (a missing file has none).
pub fn read_json_lines<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> anyhow::Result<Vec<T>> {
    use anyhow::Context;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("bad line in {}", path.display())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 3.0]), Some(2.0));
        let sd = stddev(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((sd - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert_eq!(stddev(&[1.0]), None);
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("shards"), "shards");
        assert_eq!(sh_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        // Bare in recorded commands, although shlex alone would quote them.
        assert_eq!(sh_quote("--x=1,2%"), "--x=1,2%");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_join(&["sh", "-c", "find x | y"]), "sh -c 'find x | y'");
        assert_eq!(
            sh_join(&[
                "sh",
                "-c",
                "find -H small -type f -print0 | LC_ALL=C sort -z"
            ]),
            "sh -c 'find -H small -type f -print0 | LC_ALL=C sort -z'"
        );
    }

    /// Run `script` with `sh -c` and return its stdout (`None` without a shell); a
    /// hang fails the test (testenv's deadline).
    fn sh_stdout(script: &str) -> Option<Vec<u8>> {
        let out = testenv::try_run(Command::new("sh").arg("-c").arg(script)).ok()?;
        assert!(out.status.success(), "sh -c {script:?}: {}", out.status);
        Some(out.stdout)
    }

    /// The shell is the judge of quoting: every word must come back from `sh` unchanged.
    #[test]
    fn quoted_words_survive_the_shell() {
        let words = [
            "it's",
            "a b",
            "back\\slash",
            "ca^ret",
            "^start",
            "x]",
            "a!b",
            "$HOME",
            "`id`",
            "\"dq\"",
            "tab\there",
            "new\nline",
            "ünïcode",
            "*",
            "~root",
            "{a,b}",
            "a;b&c|d",
            "--x=1,2%",
            "",
        ];
        let script = format!("printf '%s\\000' {}", sh_join(&words));
        let Some(out) = sh_stdout(&script) else {
            eprintln!("skipping: cannot run sh here");
            return;
        };
        let back: Vec<&[u8]> = out.split(|&b| b == 0).collect();
        let expected: Vec<&[u8]> = words
            .iter()
            .map(|w| w.as_bytes())
            .chain([&b""[..]])
            .collect();
        assert_eq!(back, expected, "script: {script}");
    }

    #[test]
    fn dates() {
        let (iso, stamp) = utc_stamps(UNIX_EPOCH);
        assert_eq!(iso, "1970-01-01T00:00:00Z");
        assert_eq!(stamp, "19700101T000000Z");
        // Expected values from GNU date: `date -u -d @EPOCH +%Y-%m-%dT%H:%M:%SZ`.
        for (secs, iso_want, stamp_want) in [
            // A leap day in a century year divisible by 400.
            (951_827_696, "2000-02-29T12:34:56Z", "20000229T123456Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z", "20240229T235959Z"),
            (1_735_689_599, "2024-12-31T23:59:59Z", "20241231T235959Z"),
            // 2100 is not a leap year.
            (4_107_542_399, "2100-02-28T23:59:59Z", "21000228T235959Z"),
        ] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(
                utc_stamps(t),
                (iso_want.into(), stamp_want.into()),
                "{secs}"
            );
            // Sub-second parts are cut, not rounded.
            let t = t + Duration::from_millis(999);
            assert_eq!(utc_stamps(t).0, iso_want, "{secs}.999");
        }
        // A clock before 1970 counts as 1970.
        let before = UNIX_EPOCH - Duration::from_secs(86_400);
        assert_eq!(utc_stamps(before).0, "1970-01-01T00:00:00Z");
    }

    #[test]
    fn which_finds_executables_only() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tool");
        let plain = dir.path().join("data");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::write(&plain, "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(which(exe.to_str().unwrap()), Some(exe.clone()));
        assert_eq!(which(plain.to_str().unwrap()), None);
        assert_eq!(which(dir.path().join("nosuch").to_str().unwrap()), None);
        // A directory is not a program.
        assert_eq!(which(dir.path().to_str().unwrap()), None);
        // `sh` is on PATH on any machine that runs these tests.
        assert!(which("sh").is_some_and(|p| p.is_absolute()));
        assert_eq!(which("hash-bench-no-such-program"), None);
        // Only the directories given: `sh` is not in an empty one.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(which_in("sh", Some(empty.path().as_os_str())), None);
        assert_eq!(which_in("tool", Some(dir.path().as_os_str())), Some(exe));
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
