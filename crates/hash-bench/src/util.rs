//! Small helpers shared by the subcommands: statistics, hex, shell quoting, UTC dates,
//! and reading a command's version line.
//!
//! Kept dependency-free on purpose (no chrono, no shell-words): each helper is a few
//! lines and is unit-tested here.

use std::path::Path;
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
/// the same rules. Plain words stay unquoted so that recorded commands stay readable.
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
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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

/// Civil date (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), so that dates need no extra crate.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// UTC time as RFC 3339 (`2025-01-31T12:34:56Z`) and as a file-name stamp
/// (`20250131T123456Z`).
pub fn utc_stamps(t: SystemTime) -> (String, String) {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z"),
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

/// Where `name` is on PATH, if anywhere.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    if name.contains('/') {
        let p = Path::new(name);
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

pub use crate::progress::human_bytes;

/// Human-readable duration: `42 s`, `3m05s`, `1h02m`.
pub fn human_secs(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    }
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
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_join(&["sh", "-c", "find x | y"]), "sh -c 'find x | y'");
    }

    #[test]
    fn dates() {
        let (iso, stamp) = utc_stamps(UNIX_EPOCH);
        assert_eq!(iso, "1970-01-01T00:00:00Z");
        assert_eq!(stamp, "19700101T000000Z");
        // 2000-02-29 (a leap day in a century year) 12:34:56 = 951827696.
        let (iso, _) = utc_stamps(UNIX_EPOCH + Duration::from_secs(951_827_696));
        assert_eq!(iso, "2000-02-29T12:34:56Z");
        // 2024-12-31T23:59:59Z = 1735689599.
        let (iso, _) = utc_stamps(UNIX_EPOCH + Duration::from_secs(1_735_689_599));
        assert_eq!(iso, "2024-12-31T23:59:59Z");
    }

    #[test]
    fn humans() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(8 << 20), "8.0 MiB");
        assert_eq!(human_secs(42.4), "42 s");
        assert_eq!(human_secs(185.0), "3m05s");
        assert_eq!(human_secs(3720.0), "1h02m");
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
