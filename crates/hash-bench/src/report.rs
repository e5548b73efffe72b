//! A sweep's one-page answer, `report.md`, and its charts, generated from its
//! `results.json` alone (so they can always be made again, and say nothing the data
//! does not).
//!
//! The first screen answers "which strategy wins here, by how much, and why": one
//! line per workload (small or large files, warm or cold, over a network link, under
//! a memory limit, and Python's pure-Python work), each with the fastest hashrace
//! binary, its ratio to `hash-serial` and to the fastest SHA-256 peer, and the limit
//! measured in the same sweep that bounds it. Every ratio carries its spread: the
//! ratio of the two programs' first quartiles against their third, crosswise, from
//! every timed run (`1.94× [1.90–1.98]`), so a difference inside the noise shows as
//! a range across 1×.
//!
//! Charts answer one question each ([`workload_svg`], [`flip_svg`]): rows of fixed
//! height, one per contestant, so no label can overlap another; the axis is scaled to
//! the contestants, and a limit off the scale is an arrow with its value.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::plan::{Cache, Kind};
use crate::predict;
use crate::results::{BenchmarkResult, Results};

/// A ratio of two programs' times, with its spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Median against median.
    pub mid: f64,
    /// First quartile of the slower against third of the faster, and the reverse.
    pub lo: f64,
    pub hi: f64,
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}× [{:.2}–{:.2}]", self.mid, self.lo, self.hi)
    }
}

/// The quartiles (first, median, third) of `times` (linear interpolation).
fn quartiles(times: &[f64]) -> (f64, f64, f64) {
    let mut t: Vec<f64> = times.iter().copied().filter(|x| x.is_finite()).collect();
    t.sort_by(f64::total_cmp);
    let at = |q: f64| -> f64 {
        if t.is_empty() {
            return f64::NAN;
        }
        let pos = q * (t.len() - 1) as f64;
        let (i, frac) = (pos.floor() as usize, pos.fract());
        let next = t[(i + 1).min(t.len() - 1)];
        t[i] + (next - t[i]) * frac
    };
    (at(0.25), at(0.5), at(0.75))
}

/// How many times faster `fast` is than `slow`.
pub fn ratio(slow: &BenchmarkResult, fast: &BenchmarkResult) -> Ratio {
    let (s1, _, s3) = quartiles(&slow.times_s);
    let (f1, _, f3) = quartiles(&fast.times_s);
    Ratio {
        mid: slow.median_s / fast.median_s,
        lo: s1 / f3,
        hi: s3 / f1,
    }
}

/// What a workload is, in the words of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// `small files, warm`, `large files, cold`, ...
    pub name: String,
    pub dataset: String,
    pub cache: Cache,
}

/// Files of at most this mean size make a dataset one of small files: their cost is
/// per file (open, read, close), not per byte.
const SMALL_MEAN: u64 = 256 * 1024;

/// The workloads of `r`: each dataset with data, in each cache state it was raced.
pub fn workloads(r: &Results) -> Vec<Workload> {
    let mut out = Vec::new();
    let prefix = place(r);
    for d in &r.datasets {
        if d.files == 0 || d.bytes == 0 {
            continue;
        }
        let size = if d.bytes / d.files <= SMALL_MEAN {
            "small files"
        } else {
            "large files"
        };
        for &cache in &d.caches {
            out.push(Workload {
                name: format!("{prefix}{size}, {}", cache.name()),
                dataset: d.name.clone(),
                cache,
            });
        }
    }
    out
}

/// Where the sweep read its data, as a prefix of its workloads' names: over a
/// network link, beyond memory, or nothing for a local sweep.
fn place(r: &Results) -> String {
    let mut p = String::new();
    if let Some(l) = r.settings.location.as_ref().filter(|l| l.is_network()) {
        p.push_str(&format!("{} ", l.name));
    }
    if let Some(m) = r.settings.memory_limit_bytes {
        p.push_str(&format!("beyond memory ({} MiB), ", m >> 20));
    }
    p
}

/// The valid rows of one workload.
fn rows<'r>(r: &'r Results, w: &Workload) -> impl Iterator<Item = &'r BenchmarkResult> + 'r {
    let (dataset, cache) = (w.dataset.clone(), w.cache);
    r.benchmarks
        .iter()
        .filter(move |b| b.dataset == dataset && b.cache == cache && b.valid && b.median_s > 0.0)
}

fn fastest<'r>(rows: impl Iterator<Item = &'r BenchmarkResult>) -> Option<&'r BenchmarkResult> {
    rows.min_by(|a, b| a.median_s.total_cmp(&b.median_s))
}

/// A row's name as the report prints it: the program and its `-j`.
pub fn label(b: &BenchmarkResult) -> String {
    match (b.jobs, b.default_jobs) {
        (Some(j), _) => format!("{} -j {j}", b.program),
        (None, true) => format!("{} (default -j)", b.program),
        (None, false) => b.program.clone(),
    }
}

/// One line of the answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub workload: Workload,
    pub winner: String,
    pub winner_median_s: f64,
    pub vs_serial: Option<Ratio>,
    /// The fastest SHA-256 peer and how many times faster the winner is.
    pub vs_peer: Option<(String, Ratio)>,
    /// What bounds it: the limit's name and the winner's share of it, in per cent.
    pub bound: Option<(String, f64)>,
    /// Whether the verdict's written prediction held (`None`: none was written for
    /// this workload, or for where the sweep read its data).
    pub prediction: Option<String>,
}

/// The limit a workload is measured against: for warm data SHA-256 on every core
/// (with nothing else to do: the in-memory compute limit, or for small files the
/// hash floor, which opens and reads each file too); for cold data, or over a
/// network, the fastest read of the same files without hashing.
fn bound_of<'r>(r: &'r Results, w: &Workload) -> Option<(&'static str, &'r BenchmarkResult)> {
    let network = r.settings.location.as_ref().is_some_and(|l| l.is_network());
    let find = |p: &str| rows(r, w).find(|b| b.program == p);
    if w.cache == Cache::Cold || network {
        let floor = fastest(rows(r, w).filter(|b| b.program == "ref-read-floor"))?;
        return Some(("read floor", floor));
    }
    if let Some(h) = find("ref-hash-floor-allcores") {
        return Some(("hash floor, all cores", h));
    }
    // One file is one SHA-256 chain: one core's worth, whatever the machine has.
    let one_file = r
        .datasets
        .iter()
        .any(|d| d.name == w.dataset && d.files == 1);
    if one_file {
        if let Some(c) = find("ref-sha256-1core") {
            return Some(("compute limit, one core", c));
        }
    }
    find("ref-sha256-allcores").map(|c| ("compute limit, all cores", c))
}

/// The answer of one workload; `None` if no hashrace binary has a valid row there.
pub fn answer(r: &Results, w: &Workload) -> Option<Answer> {
    let winner = fastest(rows(r, w).filter(|b| b.kind == Kind::Hashrace))?;
    let serial = rows(r, w).find(|b| b.program == "hash-serial");
    let peer = fastest(rows(r, w).filter(|b| b.kind == Kind::Peer && b.algorithm == "sha256"));
    let bound = bound_of(r, w).map(|(name, limit)| {
        (
            format!("{name} ({:.1} ms)", limit.median_s * 1e3),
            100.0 * limit.median_s / winner.median_s,
        )
    });
    let vs_serial = serial
        .filter(|s| s.id != winner.id)
        .map(|s| ratio(s, winner));
    let local = place(r).is_empty();
    let prediction = predict::find(&w.dataset, w.cache)
        .filter(|_| local)
        .map(|p| p.verdict(&winner.program, vs_serial.map_or(1.0, |x| x.mid)));
    Some(Answer {
        workload: w.clone(),
        winner: label(winner),
        winner_median_s: winner.median_s,
        vs_serial,
        vs_peer: peer.map(|p| (label(p), ratio(p, winner))),
        bound,
        prediction,
    })
}

/// Python's strategies with hashlib (C, the GIL released) and with pure-Python work
/// (the GIL held): the flip the race was made for, on one dataset, warm.
#[derive(Debug, Clone)]
pub struct Flip {
    pub dataset: String,
    /// Per kind of work (`hashlib`, `pure Python`): each strategy's best row, and
    /// its ratio to that work's serial row.
    pub works: Vec<(&'static str, Vec<(String, Ratio)>)>,
}

/// The flip on the largest dataset (in bytes) where Python's threads did pure-Python
/// work, if the sweep raced Python: there the GIL, not the files' count, decides.
pub fn flip(r: &Results) -> Option<Flip> {
    let bytes = |w: &Workload| {
        r.datasets
            .iter()
            .find(|d| d.name == w.dataset)
            .map_or(0, |d| d.bytes)
    };
    let warm = workloads(r)
        .into_iter()
        .filter(|w| w.cache == Cache::Warm)
        .filter(|w| rows(r, w).any(|b| b.program == "python-threads-pysum"))
        .max_by_key(bytes)?;
    let mut works = Vec::new();
    for (work, suffix) in [("hashlib", ""), ("pure Python", "-pysum")] {
        let of = |strategy: &str| {
            let name = format!("python-{strategy}{suffix}");
            fastest(rows(r, &warm).filter(move |b| b.program == name))
        };
        let Some(serial) = of("serial") else { continue };
        let mut line = Vec::new();
        for s in crate::python::PYHASH_STRATEGIES {
            if let Some(b) = of(s) {
                line.push((label(b), ratio(serial, b)));
            }
        }
        works.push((work, line));
    }
    let serial = rows(r, &warm).find(|b| b.program == "hash-serial")?;
    let mut ours = Vec::new();
    for p in crate::plan::programs::hashers() {
        let p = p.as_str();
        if let Some(b) = fastest(rows(r, &warm).filter(|b| b.program == p)) {
            ours.push((label(b), ratio(serial, b)));
        }
    }
    works.push(("hashrace", ours));
    (works.len() > 1).then_some(Flip {
        dataset: warm.dataset,
        works,
    })
}

/// Whether the flip's prediction held: Python's processes over its threads with
/// pure-Python work, and its threads over its processes with hashlib.
pub fn flip_prediction(f: &Flip) -> Option<String> {
    let speed = |work: &str, strategy: &str| {
        let (_, line) = f.works.iter().find(|(w, _)| *w == work)?;
        let prefix = format!("python-{strategy}");
        line.iter()
            .find(|(l, _)| l.starts_with(&prefix))
            .map(|(_, x)| x.mid)
    };
    let pysum = speed("pure Python", "procs")? / speed("pure Python", "threads")?;
    let hashlib = speed("hashlib", "threads")? / speed("hashlib", "procs")?;
    Some(predict::flip_verdict(pysum, hashlib))
}

/// The machine, in one line a reader can compare with another report's.
pub fn machine_line(r: &Results) -> String {
    let m = &r.machine;
    let id = m.cpu_id.as_ref().map_or_else(String::new, |c| {
        format!(" (family {}, model {})", c.family, c.model)
    });
    format!(
        "{}{id}, {} CPUs, {:.0} GiB, {}",
        m.cpu_model,
        m.available_cpus,
        m.mem_total_kib as f64 / (1 << 20) as f64,
        m.kernel
    )
}

/// The winner lines, as `scripts/bench.sh` prints them at the end of a sweep.
pub fn winner_lines(r: &Results) -> Vec<String> {
    workloads(r)
        .iter()
        .filter_map(|w| answer(r, w))
        .map(|a| {
            let mut line = format!("{} ({}): {}", a.workload.name, a.workload.dataset, a.winner);
            if let Some(s) = a.vs_serial {
                let _ = write!(line, ", {s} hash-serial");
            }
            if let Some((p, x)) = &a.vs_peer {
                let _ = write!(line, ", {x} {p}");
            }
            if let Some((b, pct)) = &a.bound {
                let _ = write!(line, ", {pct:.0} % of the {b}");
            }
            if let Some(p) = &a.prediction {
                let _ = write!(line, "; prediction {p}");
            }
            line
        })
        .collect()
}

/// The chart file of a workload, relative to the report.
fn chart_name(w: &Workload) -> String {
    format!("charts/{}-{}.svg", w.dataset, w.cache.name())
}

/// The heading of a report: the machine, the sweep, how the figures were made.
fn heading(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# The race on {}", machine_line(r));
    let _ = writeln!(s);
    let commit = r
        .commit
        .as_deref()
        .map_or("unknown", |c| &c[..c.len().min(7)]);
    let jobs: Vec<String> = r.settings.jobs.iter().map(u32::to_string).collect();
    let _ = writeln!(
        s,
        "Sweep `{}` of {}, commit `{commit}`, `-j` {}. Generated by `hash-bench report` \
         from `results.json` in this folder; times are medians of every timed run, ratios \
         `mid [low–high]` from their quartiles.",
        r.sweep,
        r.date,
        jobs.join(",")
    );
    let _ = writeln!(s);
    s
}

/// The answer table: one line per workload.
pub fn answer_table(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | winner | × `hash-serial` | × fastest SHA-256 peer | share of the limit \
         | prediction |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for w in &workloads(r) {
        let Some(a) = answer(r, w) else { continue };
        let serial = a.vs_serial.map_or("(is serial)".into(), |x| x.to_string());
        let peer = a
            .vs_peer
            .as_ref()
            .map_or("no peer".into(), |(p, x)| format!("{x} `{p}`"));
        let bound = a.bound.as_ref().map_or("not measured".into(), |(b, pct)| {
            format!("{pct:.0} % of the {b}")
        });
        let prediction = a.prediction.as_deref().unwrap_or("none written");
        let _ = writeln!(
            s,
            "| {} (`{}`) | `{}` ({:.1} ms) | {serial} | {peer} | {bound} | {prediction} |",
            w.name,
            w.dataset,
            a.winner,
            a.winner_median_s * 1e3
        );
    }
    s
}

/// The report's Markdown.
pub fn markdown(r: &Results) -> String {
    let mut s = heading(r);
    let _ = writeln!(s, "## The answer");
    let _ = writeln!(s);
    s.push_str(&answer_table(r));
    if let Some(f) = flip(r) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "**Python's four strategies** (`{}`, warm), each × its own serial row:",
            f.dataset
        );
        let _ = writeln!(s);
        for (work, line) in &f.works {
            let parts: Vec<String> = line.iter().map(|(l, x)| format!("`{l}` {x}")).collect();
            let _ = writeln!(s, "- {work}: {}", parts.join(", "));
        }
        if let Some(v) = flip_prediction(&f) {
            let _ = writeln!(s);
            let _ = writeln!(s, "Prediction of the flip: {v}.");
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "![each strategy against its own serial](charts/flip.svg)"
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "## One chart per question");
    let _ = writeln!(s);
    for w in charted(r) {
        let _ = writeln!(s, "![{}]({})", w.name, chart_name(&w));
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## The machine");
    let _ = writeln!(s);
    let m = &r.machine;
    let _ = writeln!(s, "- CPU: {}", machine_line(r));
    let _ = writeln!(
        s,
        "- SHA-NI: {}; AVX-512: {}; virtualized: {}",
        yes(m.sha_ni),
        yes(m.cpu_id.as_ref().is_some_and(|c| c.avx512)),
        yes(m.virtualized)
    );
    if let Some(o) = m.openssl_sha256_mib_s {
        let _ = writeln!(
            s,
            "- `openssl speed sha256` (16 KiB, one core): {o:.0} MiB/s"
        );
    }
    let _ = writeln!(s, "- OS: {}, {}", m.os, m.arch);
    let invalid = r.benchmarks.iter().filter(|b| !b.valid).count();
    let _ = writeln!(
        s,
        "- {} benchmarks, {invalid} flagged invalid (left out above)",
        r.benchmarks.len()
    );
    s
}

/// The workloads that get a chart: one per question (small or large files, warm or
/// cold), on the dataset of that kind with the most files.
fn charted(r: &Results) -> Vec<Workload> {
    let mut best: Vec<(Workload, u64)> = Vec::new();
    for w in workloads(r) {
        let files = r
            .datasets
            .iter()
            .find(|d| d.name == w.dataset)
            .map_or(0, |d| d.files);
        match best.iter_mut().find(|(b, _)| b.name == w.name) {
            Some(slot) if slot.1 < files => *slot = (w, files),
            Some(_) => {}
            None => best.push((w, files)),
        }
    }
    best.into_iter().map(|(w, _)| w).collect()
}

/// The generated sections of a Markdown document, `<!-- answer:begin DIR -->` …
/// `<!-- answer:end -->`, rewritten from the sweep folder DIR (relative to `root`).
pub fn update_doc(doc: &str, root: &Path) -> Result<String> {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(at) = rest.find(ANSWER_BEGIN) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let line_end = from
            .find('\n')
            .context("an answer marker without a line end")?;
        let marker = &from[..line_end];
        let dir = marker[ANSWER_BEGIN.len()..].trim_end_matches("-->").trim();
        let end = from
            .find(ANSWER_END)
            .with_context(|| format!("{marker}: no {ANSWER_END}"))?;
        let r = crate::results::validate_file(&root.join(dir).join(crate::layout::RESULTS_FILE))?;
        out.push_str(marker);
        out.push('\n');
        let _ = writeln!(out, "*{}, `{dir}`:*", machine_line(&r));
        out.push('\n');
        out.push_str(&answer_table(&r));
        rest = &from[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The markers of a generated answer table in a document.
pub const ANSWER_BEGIN: &str = "<!-- answer:begin ";
pub const ANSWER_END: &str = "<!-- answer:end -->";

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// One bar of a chart: a label, the throughput of the median run and of the slowest
/// and fastest runs (the whiskers).
#[derive(Debug, Clone)]
struct Bar {
    label: String,
    value: f64,
    low: f64,
    high: f64,
    ours: bool,
}

/// A labelled vertical line.
#[derive(Debug, Clone)]
struct Limit {
    label: String,
    value: f64,
}

const ROW: f64 = 22.0;
const LABEL_W: f64 = 280.0;
const PLOT_W: f64 = 520.0;
const CHAR_W: f64 = 6.6;
const FONT: &str = "font-family=\"sans-serif\" font-size=\"11\"";

/// A horizontal bar chart: one row per bar; `unit` names the axis. The axis ends at
/// 1.25 times the longest whisker; a limit beyond it is drawn as an arrow at the
/// right edge, its value in its label. Limits' labels each get a line of their own
/// above the plot.
fn bars_svg(title: &str, unit: &str, bars: &[Bar], limits: &[Limit]) -> String {
    let top = 28.0 + ROW * limits.len() as f64;
    let height = top + ROW * bars.len() as f64 + 34.0;
    let width = LABEL_W + PLOT_W + 20.0;
    let max = bars.iter().map(|b| b.high.max(b.value)).fold(0.0, f64::max) * 1.25;
    let max = if max > 0.0 { max } else { 1.0 };
    let x = |v: f64| LABEL_W + PLOT_W * (v / max).min(1.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\">"
    );
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"8\" y=\"18\" {FONT} font-weight=\"bold\">{}</text>",
        esc(title)
    );
    for (i, l) in limits.iter().enumerate() {
        let y = 28.0 + ROW * i as f64 + 14.0;
        let off = l.value > max;
        let lx = x(l.value);
        let text = if off {
            format!("{} {:.0} {unit} →", l.label, l.value)
        } else {
            format!("{} ({:.0} {unit})", l.label, l.value)
        };
        let _ = writeln!(
            s,
            "<line x1=\"{lx:.1}\" y1=\"{:.1}\" x2=\"{lx:.1}\" y2=\"{:.1}\" stroke=\"#c0392b\" \
             stroke-dasharray=\"4 3\"/>",
            y + 4.0,
            top + ROW * bars.len() as f64
        );
        // The label sits left of its line (right of it when the line is near the left).
        let tw = text.chars().count() as f64 * CHAR_W;
        let tx = if lx - 6.0 - tw >= 8.0 {
            lx - 6.0 - tw
        } else {
            lx + 6.0
        };
        let _ = writeln!(
            s,
            "<text x=\"{tx:.1}\" y=\"{y:.1}\" {FONT} fill=\"#c0392b\">{}</text>",
            esc(&text)
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + ROW * i as f64;
        let fill = if b.ours { "#2e86c1" } else { "#aab7b8" };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y + 15.0,
            esc(&b.label)
        );
        let _ = writeln!(
            s,
            "<rect x=\"{LABEL_W:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"/>",
            y + 4.0,
            x(b.value) - LABEL_W,
            ROW - 8.0
        );
        let (wl, wh, wy) = (x(b.low), x(b.high), y + ROW / 2.0);
        let _ = writeln!(
            s,
            "<path d=\"M{wl:.1} {:.1}V{:.1}M{wl:.1} {wy:.1}H{wh:.1}M{wh:.1} {:.1}V{:.1}\" \
             stroke=\"black\" fill=\"none\"/>",
            wy - 4.0,
            wy + 4.0,
            wy - 4.0,
            wy + 4.0
        );
    }
    let axis_y = top + ROW * bars.len() as f64 + 4.0;
    let _ = writeln!(
        s,
        "<line x1=\"{LABEL_W:.1}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"black\"/>",
        LABEL_W + PLOT_W
    );
    let prec = if max < 10.0 { 1 } else { 0 };
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\">{v:.prec$}</text>",
            x(v),
            axis_y + 14.0
        );
    }
    s.push_str("</svg>\n");
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Throughput of `b` at time `t` (MiB/s, or files/s for a dataset of small files).
fn rate(amount: f64, t: f64) -> f64 {
    if t > 0.0 {
        amount / t
    } else {
        0.0
    }
}

/// "Who wins this workload": every hashrace row, the SHA-256 peers, and Python's
/// hashlib rows, fastest first; the limits as lines.
pub fn workload_svg(r: &Results, w: &Workload) -> Option<String> {
    let d = r.datasets.iter().find(|d| d.name == w.dataset)?;
    let mib = d.bytes as f64 / (1u64 << 20) as f64;
    let mut bars: Vec<Bar> = rows(r, w)
        .filter(|b| {
            b.kind == Kind::Hashrace
                || (b.kind == Kind::Peer && b.algorithm == "sha256")
                || (b.program.starts_with("python-") && !b.program.ends_with("-pysum"))
        })
        .map(|b| Bar {
            label: label(b),
            value: rate(mib, b.median_s),
            low: rate(mib, b.max_s),
            high: rate(mib, b.min_s),
            ours: b.kind == Kind::Hashrace,
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    bars.sort_by(|a, b| b.value.total_cmp(&a.value));
    let mut limits = Vec::new();
    if let Some((name, limit)) = bound_of(r, w) {
        limits.push(Limit {
            label: name.to_string(),
            value: rate(mib, limit.median_s),
        });
    }
    let title = format!("{} ({}): MiB/s, higher is faster", w.name, w.dataset);
    Some(bars_svg(&title, "MiB/s", &bars, &limits))
}

/// The flip: each Python strategy and each hashrace binary, × its own serial row,
/// for hashlib work and pure-Python work side by side.
pub fn flip_svg(f: &Flip) -> String {
    let mut bars = Vec::new();
    for (work, line) in &f.works {
        for (l, x) in line {
            bars.push(Bar {
                label: format!("{work}: {l}"),
                value: x.mid,
                low: x.lo,
                high: x.hi,
                ours: *work == "hashrace",
            });
        }
    }
    let limits = [Limit {
        label: "serial".into(),
        value: 1.0,
    }];
    let title = format!(
        "Each strategy × its own serial ({}, warm): the GIL's flip",
        f.dataset
    );
    bars_svg(&title, "× serial", &bars, &limits)
}

/// Write `report.md` and `charts/` for the results in `dir/results.json`; the
/// report's path.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let file = dir.join("results.json");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let r: Results =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    write_for(&r, dir)
}

/// [`write`] for results already read.
pub fn write_for(r: &Results, dir: &Path) -> Result<PathBuf> {
    let charts = dir.join("charts");
    if charts.exists() {
        std::fs::remove_dir_all(&charts)?;
    }
    std::fs::create_dir_all(&charts)?;
    for w in charted(r) {
        if let Some(svg) = workload_svg(r, &w) {
            std::fs::write(dir.join(chart_name(&w)), svg)?;
        }
    }
    if let Some(f) = flip(r) {
        std::fs::write(charts.join("flip.svg"), flip_svg(&f))?;
    }
    let report = dir.join("report.md");
    std::fs::write(&report, markdown(r))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(v: &[f64]) -> BenchmarkResult {
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut b: BenchmarkResult = serde_json::from_value(serde_json::json!({
            "id": "d.warm.x", "dataset": "d", "cache": "warm", "program": "x",
            "kind": "hashrace", "algorithm": "sha256", "jobs": null, "default_jobs": false,
            "command": "x", "prepare": "", "runs": v.len(), "warmup": 0,
            "times_s": v, "median_s": 0.0, "mean_s": 0.0, "stddev_s": null,
            "min_s": sorted[0], "max_s": sorted[v.len() - 1], "user_s": 0.0,
            "system_s": 0.0, "exit_codes": [], "mib_per_s": 0.0, "files_per_s": 0.0,
            "speedup_vs_serial": null, "peak_rss_kib": null,
            "residency": {"per_run_percent": [], "min_percent": 0.0,
                          "median_percent": 0.0, "max_percent": 0.0},
            "valid": true, "flags": []
        }))
        .unwrap();
        b.median_s = quartiles(v).1;
        b
    }

    #[test]
    fn quartiles_interpolate_between_runs() {
        assert_eq!(quartiles(&[4.0, 1.0, 3.0, 2.0, 5.0]), (2.0, 3.0, 4.0));
        assert_eq!(quartiles(&[1.0, 2.0]), (1.25, 1.5, 1.75));
    }

    #[test]
    fn a_ratio_spans_the_quartiles_crosswise() {
        let slow = times(&[2.0, 2.0, 2.0, 2.0, 2.0]);
        let fast = times(&[0.9, 1.0, 1.0, 1.0, 1.1]);
        let x = ratio(&slow, &fast);
        assert_eq!(x.mid, 2.0);
        assert_eq!((x.lo, x.hi), (2.0, 2.0));
        let noisy = times(&[0.8, 0.9, 1.0, 1.1, 1.2]);
        let x = ratio(&slow, &noisy);
        assert!(x.lo < 2.0 && x.hi > 2.0, "{x}");
        assert_eq!(x.to_string(), "2.00× [1.82–2.22]");
    }

    /// A box: left, top, right, bottom.
    type Box4 = (f64, f64, f64, f64);

    /// The boxes of the texts and rectangles of an SVG this module drew.
    fn boxes(svg: &str) -> (Vec<Box4>, Vec<Box4>) {
        let doc = roxmltree::Document::parse(svg).unwrap();
        let num = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
        let mut texts = Vec::new();
        let mut rects = Vec::new();
        for n in doc.descendants() {
            match n.tag_name().name() {
                "text" => {
                    let w = n.text().unwrap_or("").chars().count() as f64 * CHAR_W;
                    let (x, y) = (num(n, "x"), num(n, "y"));
                    let x0 = match n.attribute("text-anchor") {
                        Some("end") => x - w,
                        Some("middle") => x - w / 2.0,
                        _ => x,
                    };
                    texts.push((x0, y - 11.0, x0 + w, y + 2.0));
                }
                "rect" if n.attribute("x").is_some() => {
                    let (x, y) = (num(n, "x"), num(n, "y"));
                    rects.push((x, y, x + num(n, "width"), y + num(n, "height")));
                }
                _ => {}
            }
        }
        (texts, rects)
    }

    fn overlap(a: Box4, b: Box4) -> bool {
        a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
    }

    #[test]
    fn no_label_overlaps_another_or_a_bar_and_bars_fill_the_plot() {
        let bars: Vec<Bar> = (0..12)
            .map(|i| Bar {
                label: format!("hash-threads -j {i} with a long name"),
                value: 3000.0 + 10.0 * i as f64,
                low: 2900.0,
                high: 3200.0,
                ours: i % 2 == 0,
            })
            .collect();
        // One limit on the scale, one far off it (the read floor of warm data).
        let limits = [
            Limit {
                label: "compute limit".into(),
                value: 3300.0,
            },
            Limit {
                label: "read floor".into(),
                value: 12_250.0,
            },
        ];
        let svg = bars_svg("title", "MiB/s", &bars, &limits);
        let (texts, rects) = boxes(&svg);
        for (i, a) in texts.iter().enumerate() {
            for b in &texts[i + 1..] {
                assert!(!overlap(*a, *b), "labels {a:?} and {b:?} overlap\n{svg}");
            }
            for r in &rects {
                assert!(!overlap(*a, *r), "label {a:?} overlaps bar {r:?}");
            }
        }
        // The axis is scaled to the contestants, not to a limit off the scale: the
        // fastest bar takes most of the plot, and these close ones over half of it.
        let longest = rects.iter().map(|r| r.2 - r.0).fold(0.0, f64::max);
        assert!(longest > PLOT_W * 0.75, "{longest}");
        for r in &rects {
            assert!(r.2 - r.0 > PLOT_W / 2.0, "{r:?}");
        }
        assert!(
            svg.contains("read floor 12250 MiB/s →"),
            "the off-scale limit is an arrow"
        );
    }
}
