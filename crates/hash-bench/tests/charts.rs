//! The charts as a reader sees them: every committed chart under `results/*/charts/`, and
//! every chart `chart::write_all` draws from the committed results files and from the test
//! fixtures, is rendered to a PNG (it must have the SVG's declared size and not be blank),
//! has no two `<text>` elements overlapping, and — for the committed ones and those of the
//! committed results — names a parallel hashrace binary, since a chart that does not show
//! one compares nothing this project is about. No timing: nothing here is a benchmark.
//!
//! Text is checked as XML rather than as pixels because the rendering has no fonts (resvg
//! is built without its text feature, so no system font lookup), and because a bounding box
//! per `<text>` says *which* labels collide.

use std::path::{Path, PathBuf};

use hash_bench::chart::write_all;
use hash_bench::compare::compare_paths;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare")
}

/// Files in `dir` whose name ends with `ext`, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

/// Every committed chart: `results/*/charts/*.svg`.
fn committed_charts() -> Vec<PathBuf> {
    let results = repo().join("results");
    let mut v = Vec::new();
    for e in std::fs::read_dir(&results).unwrap() {
        let charts = e.unwrap().path().join("charts");
        if charts.is_dir() {
            v.extend(files(&charts, ".svg"));
        }
    }
    v.sort();
    assert!(
        !v.is_empty(),
        "no committed charts under {}",
        results.display()
    );
    v
}

/// The committed sweeps' `results.json` files.
fn committed_results() -> Vec<PathBuf> {
    let (sweeps, _) = hash_bench::layout::check(&repo().join("results")).unwrap();
    let v: Vec<PathBuf> = sweeps.iter().map(|d| d.join("results.json")).collect();
    assert!(!v.is_empty(), "no committed sweeps");
    v
}

/// The charts drawn from each committed results file: those of its report (as
/// `hash-bench report DIR` draws them) and those `write_all` draws (one comparison per
/// file, as `hash-bench chart FILE` does), written under `dir`.
fn drawn_from_results(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for (i, json) in committed_results().iter().enumerate() {
        let c = compare_paths(std::slice::from_ref(json));
        assert!(c.refused.is_empty(), "{}: {:?}", json.display(), c.refused);
        v.extend(write_all(&c, &dir.join(i.to_string())).unwrap());
        let r: hash_bench::results::Results =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        let out = dir.join(format!("report-{i}"));
        hash_bench::report::write_for(&r, &out).unwrap();
        v.extend(files(&out.join("charts"), ".svg"));
    }
    v
}

/// The charts `write_all` draws from the fixtures, alone and together.
fn drawn_from_fixtures(dir: &Path) -> Vec<PathBuf> {
    let (a, b) = (fixtures().join("a.json"), fixtures().join("b.json"));
    let mut v = Vec::new();
    for (i, set) in [vec![a.clone()], vec![b.clone()], vec![a, b]]
        .iter()
        .enumerate()
    {
        v.extend(write_all(&compare_paths(set), &dir.join(format!("f{i}"))).unwrap());
    }
    v
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One `<text>`: its content and its box on the canvas, `[x0, y0, x1, y1]` in pixels.
#[derive(Debug)]
struct Label {
    text: String,
    bbox: [f64; 4],
}

/// A length in `em` or `ex` (plotters' `dy`) in pixels; `ex` taken as half an em.
fn length(s: &str, size: f64) -> f64 {
    if let Some(n) = s.strip_suffix("em") {
        n.parse::<f64>().unwrap() * size
    } else if let Some(n) = s.strip_suffix("ex") {
        n.parse::<f64>().unwrap() * size * 0.5
    } else {
        s.trim_end_matches("px").parse().unwrap()
    }
}

/// Estimated width of a text: 0.6 × font size per character. Conservative for the
/// faces `sans-serif` resolves to in browsers (Helvetica, Arial, Liberation Sans): digits
/// there are 0.556 em, space, comma and period 0.278 em, and a label's mix of lowercase,
/// digits, punctuation and spaces averages about 0.5 em; only runs of wide capitals (M, W)
/// exceed 0.6 em, and the labels have few.
const EM_PER_CHAR: f64 = 0.6;

/// Every `<text>` of an SVG with its box: from `x`, `y` (+ `dy`) as the anchor point,
/// `font-size`, `text-anchor`, and a `rotate(270|90, cx, cy)` transform if any. The box
/// spans 0.8 em above the baseline and 0.2 em below it (ascenders and descenders).
fn labels(svg: &str) -> Vec<Label> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let mut v = Vec::new();
    for n in doc.descendants().filter(|n| n.has_tag_name("text")) {
        let text = n.text().unwrap_or("").trim().to_string();
        if text.is_empty() {
            continue;
        }
        let num = |a: &str| n.attribute(a).map(|s| s.parse::<f64>().unwrap());
        let size = num("font-size").expect("font-size");
        let (x, y) = (num("x").unwrap(), num("y").unwrap());
        let base = y + n.attribute("dy").map_or(0.0, |d| length(d, size));
        let w = EM_PER_CHAR * size * text.chars().count() as f64;
        let x0 = match n.attribute("text-anchor").unwrap_or("start") {
            "middle" => x - w / 2.0,
            "end" => x - w,
            _ => x,
        };
        let mut bbox = [x0, base - 0.8 * size, x0 + w, base + 0.2 * size];
        if let Some(t) = n.attribute("transform") {
            let args: Vec<f64> = t
                .trim_start_matches("rotate(")
                .trim_end_matches(')')
                .split(',')
                .map(|s| s.trim().parse().unwrap())
                .collect();
            assert!(
                args.len() == 3 && (args[0] == 270.0 || args[0] == 90.0),
                "{t}"
            );
            // A quarter turn about (cx, cy) maps the box to its transpose about that point.
            let (cx, cy) = (args[1], args[2]);
            let [a, b, c, d] = bbox;
            let (p, q) = ((a - cx, b - cy), (c - cx, d - cy));
            bbox = [
                cx + p.1.min(q.1),
                cy + p.0.min(q.0),
                cx + p.1.max(q.1),
                cy + p.0.max(q.0),
            ];
        }
        v.push(Label { text, bbox });
    }
    v
}

/// Pixels two boxes may share on each axis before they count as overlapping.
const TOLERANCE_PX: f64 = 2.0;

/// Every pair of `<text>`s whose boxes intersect by more than the tolerance.
fn overlaps(svg: &str) -> Vec<String> {
    let ls = labels(svg);
    let mut v = Vec::new();
    for (i, a) in ls.iter().enumerate() {
        for b in &ls[i + 1..] {
            let dx = a.bbox[2].min(b.bbox[2]) - a.bbox[0].max(b.bbox[0]);
            let dy = a.bbox[3].min(b.bbox[3]) - a.bbox[1].max(b.bbox[1]);
            if dx > TOLERANCE_PX && dy > TOLERANCE_PX {
                v.push(format!(
                    "{:?} {:?} and {:?} {:?}",
                    a.text, a.bbox, b.text, b.bbox
                ));
            }
        }
    }
    v
}

/// Render to PNG and back; the PNG must have the `<svg>`'s declared `width` × `height`
/// and some pixels other than the background (the top-left one).
fn check_renders(p: &Path, svg: &str) {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let dim = |a: &str| -> u32 { doc.root_element().attribute(a).unwrap().parse().unwrap() };
    let (w, h) = (dim("width"), dim("height"));
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let png = pixmap.encode_png().unwrap();
    let back = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
    assert_eq!((back.width(), back.height()), (w, h), "{}", p.display());
    let bg = back.pixels()[0];
    let ink = back.pixels().iter().filter(|&&px| px != bg).count();
    assert!(ink > 0, "{}: blank", p.display());
}

/// Every check but the parallel-binary one; failures collected over all charts.
fn check_all(charts: &[PathBuf]) -> Vec<String> {
    let mut bad = Vec::new();
    for p in charts {
        let svg = read(p);
        check_renders(p, &svg);
        bad.extend(
            overlaps(&svg)
                .into_iter()
                .map(|o| format!("{}: {o}", p.display())),
        );
    }
    bad
}

fn names_parallel_binary(svg: &str) -> bool {
    labels(svg).iter().any(|l| {
        let mut parallel = hash_core::Strategy::ALL.iter().filter(|s| s.is_parallel());
        parallel.any(|s| l.text.contains(s.binary()))
    })
}

#[test]
fn committed_charts_render_without_overlapping_text() {
    let bad = check_all(&committed_charts());
    assert!(bad.is_empty(), "overlapping text:\n{}", bad.join("\n"));
}

#[test]
fn committed_charts_name_a_parallel_binary() {
    let bad: Vec<_> = committed_charts()
        .into_iter()
        .filter(|p| !names_parallel_binary(&read(p)))
        .collect();
    assert!(bad.is_empty(), "no parallel hashrace binary in {bad:?}");
}

#[test]
fn charts_drawn_from_committed_results_render_and_name_a_parallel_binary() {
    let dir = tempfile::tempdir().unwrap();
    let charts = drawn_from_results(dir.path());
    assert!(!charts.is_empty());
    let bad = check_all(&charts);
    assert!(bad.is_empty(), "overlapping text:\n{}", bad.join("\n"));
    for p in &charts {
        assert!(names_parallel_binary(&read(p)), "{}", p.display());
    }
}

#[test]
fn charts_drawn_from_fixtures_render_without_overlapping_text() {
    let dir = tempfile::tempdir().unwrap();
    let charts = drawn_from_fixtures(dir.path());
    assert!(!charts.is_empty());
    let bad = check_all(&charts);
    assert!(bad.is_empty(), "overlapping text:\n{}", bad.join("\n"));
}

/// Every chart the documents show exists (a deleted chart must not leave a broken link).
#[test]
fn charts_linked_from_the_documents_exist() {
    let root = repo();
    let mut docs = vec![root.join("README.md")];
    docs.extend(files(&root.join("results"), ".md"));
    for sweep in committed_results() {
        docs.push(sweep.with_file_name("report.md"));
    }
    for doc in docs {
        let text = read(&doc);
        for (i, _) in text.match_indices(".svg)") {
            let start = text[..i].rfind('(').unwrap() + 1;
            let target = doc.parent().unwrap().join(&text[start..i + 4]);
            assert!(target.is_file(), "{}: {}", doc.display(), target.display());
        }
    }
}

/// The overlap check finds a collision it must find, and passes two labels side by side.
#[test]
fn overlap_check_sees_collisions() {
    let t = |x: u32, y: u32, s: &str| {
        format!(r#"<text x="{x}" y="{y}" font-size="14" text-anchor="start">{s}</text>"#)
    };
    let svg = |a: String, b: String| {
        format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9">{a}{b}</svg>"#)
    };
    let hit = svg(t(100, 100, "hash-serial: 13,816"), t(150, 105, "b3sum -j2"));
    assert_eq!(overlaps(&hit).len(), 1, "{:?}", labels(&hit));
    let clear = svg(t(100, 100, "hash-serial: 13,816"), t(100, 118, "b3sum -j2"));
    assert!(overlaps(&clear).is_empty(), "{:?}", labels(&clear));
}
