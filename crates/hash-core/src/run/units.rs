//! Sizes, durations and counts as people read them: one way to write each,
//! used by every line a person reads (`--stats`, the progress line, the
//! harness's logs), so that two lines never disagree on how "3 minutes" or
//! "12 KiB" looks.
//!
//! - Sizes are binary (`512 B`, `12.00 KiB`, `3.38 GiB`): indicatif's
//!   `HumanBytes`, which the progress bars draw anyway.
//! - Durations keep two or three significant figures and grow their unit:
//!   `0.8 ms`, `12 ms`, `4.2 s`, `42 s`, `3m05s`, `1h02m`. [`parse_duration`]
//!   reads back exactly what [`duration`] writes (the harness reads the
//!   hashers' progress lines).
//! - Counts get their plural right: `1 file`, `2 files`.
//!
//! Machine-read output (JSON, results files) keeps plain numbers in fixed
//! units; this module is only for text.

use std::time::Duration;

/// `n` bytes in binary units: `512 B`, `8.00 MiB`.
pub fn bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}

/// A byte rate: `727.30 MiB/s`.
pub fn rate(bytes_per_second: f64) -> String {
    format!("{}/s", bytes(bytes_per_second.max(0.0) as u64))
}

/// `d` in the largest unit that keeps it short: `0.8 ms`, `12 ms`, `4.2 s`,
/// `42 s`, `3m05s`, `1h02m`. Each step is chosen on the rounded value, so
/// 9.96 s is `10 s`, never `10.0 s`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 9.95 {
        format!("{ms:.1} ms")
    } else if ms < 999.5 {
        format!("{ms:.0} ms")
    } else if ms < 9950.0 {
        format!("{:.1} s", ms / 1e3)
    } else if ms < 59_500.0 {
        format!("{:.0} s", ms / 1e3)
    } else {
        let s = (ms / 1e3).round() as u64;
        if s < 3600 {
            format!("{}m{:02}s", s / 60, s % 60)
        } else {
            let m = (s + 30) / 60;
            format!("{}h{:02}m", m / 60, m % 60)
        }
    }
}

/// [`duration`] of `secs` seconds (a negative or non-finite value is zero).
pub fn seconds(secs: f64) -> String {
    duration(Duration::try_from_secs_f64(secs).unwrap_or_default())
}

/// [`duration`] of a time left, or `--` when it is not known yet.
pub fn eta(left: Option<Duration>) -> String {
    left.map_or_else(|| "--".to_owned(), duration)
}

/// Read back what [`duration`] writes (to its precision); `None` for
/// anything else, including [`eta`]'s `--`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let number = |s: &str| -> Option<f64> {
        let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        ok.then(|| s.parse().ok()).flatten()
    };
    let whole = |s: &str| -> Option<u64> {
        let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        ok.then(|| s.parse().ok()).flatten()
    };
    let secs = if let Some(v) = text.strip_suffix(" ms") {
        number(v)? / 1e3
    } else if let Some(v) = text.strip_suffix(" s") {
        number(v)?
    } else if let Some((m, s)) = text.strip_suffix('s').and_then(|t| t.split_once('m')) {
        (whole(m)? * 60 + whole(s)?) as f64
    } else if let Some((h, m)) = text.strip_suffix('m').and_then(|t| t.split_once('h')) {
        ((whole(h)? * 60 + whole(m)?) * 60) as f64
    } else {
        return None;
    };
    Some(Duration::from_secs_f64(secs))
}

/// `n` and its noun, plural unless `n` is 1: `1 file`, `0 errors`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: f64) -> Duration {
        Duration::from_secs_f64(n / 1e3)
    }

    #[test]
    fn durations_grow_their_unit_on_the_rounded_value() {
        let cases = [
            (0.0, "0.0 ms"),
            (0.84, "0.8 ms"),
            (9.949, "9.9 ms"),
            (9.95, "10 ms"),
            (12.4, "12 ms"),
            (999.4, "999 ms"),
            (999.5, "1.0 s"),
            (4_240.0, "4.2 s"),
            (9_960.0, "10 s"),
            (42_400.0, "42 s"),
            (59_600.0, "1m00s"),
            (185_000.0, "3m05s"),
            (3_599_400.0, "59m59s"),
            (3_599_600.0, "1h00m"),
            (3_720_000.0, "1h02m"),
            (3_749_000.0, "1h02m"),
            (3_751_000.0, "1h03m"),
            (90_000_000.0, "25h00m"),
        ];
        for (n, text) in cases {
            assert_eq!(duration(ms(n)), text, "{n} ms");
        }
    }

    #[test]
    fn parse_reads_back_what_duration_writes() {
        // Every value from 1 ms to about 28 hours, in steps of about 1 %: two
        // figures, so within 5 % (below 1 ms, `0.1 ms` steps are coarser).
        let mut n = 1.0_f64;
        while n < 1e8 {
            let text = duration(ms(n));
            let back = parse_duration(&text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(duration(back), text, "{n} ms");
            let err = (back.as_secs_f64() * 1e3 - n).abs() / n;
            assert!(err < 0.06, "{n} ms read back as {back:?} from {text}");
            n *= 1.01;
        }
    }

    #[test]
    fn parse_refuses_what_duration_never_writes() {
        for bad in [
            "", "--", "5", "5s", "4.2s", "1:05", "m05s", "1m s", "-1 s", "1h", "x ms",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(eta(None), "--");
        assert_eq!(eta(Some(ms(4_240.0))), "4.2 s");
    }

    #[test]
    fn sizes_are_binary_and_counts_plural() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12 << 10), "12.00 KiB");
        assert_eq!(bytes(8 << 20), "8.00 MiB");
        assert_eq!(rate(1.5 * (1 << 20) as f64), "1.50 MiB/s");
        assert_eq!(rate(-1.0), "0 B/s");
        assert_eq!(seconds(185.0), "3m05s");
        assert_eq!(seconds(f64::NAN), "0.0 ms");
        assert_eq!(count(0, "file"), "0 files");
        assert_eq!(count(1, "file"), "1 file");
        assert_eq!(count(2, "worker"), "2 workers");
    }
}
