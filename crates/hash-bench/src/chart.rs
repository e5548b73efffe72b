//! `hash-bench chart`: SVG charts of a [`Comparison`], drawn with `plotters`' SVG backend
//! only, so no system library (fontconfig, freetype) is needed and every label stays a
//! `<text>` element, searchable and readable on a code-hosting site's file view.
//!
//! Two kinds of chart:
//! - **throughput**, one per dataset × cache state: a horizontal bar per program (rows in
//!   the table's order), one bar per results file side by side, the median in the table's
//!   unit at the bar's end with its rank; flagged bars are pale and say so. Reference
//!   programs (SHA-256 rate of one core and of all cores, the read floor, BLAKE3) are not
//!   bars but lines across the chart, each labelled in its own lane above the bars, since
//!   they bound the contestants rather than compete with them.
//! - **scaling**, one per results file, dataset and cache state that has a jobs sweep
//!   (a contestant measured at two or more `-j`; a reference swept alone compares nothing,
//!   so it makes no chart): throughput against `-j` on a log₂ axis, one line per
//!   contestant, with `hash-serial` and the references (one per `-j`) as horizontal lines.
//!
//! No two labels may overlap (the tests check every `<text>`'s box): labels of lines
//! close together are spread apart in the lines' order rather than drawn over each other.
//!
//! Bars, rather than a log axis, because the question is "how much faster", which a
//! linear axis answers at a glance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::compare::{fmt_num, jobs_sweeps, Cell, Comparison, Row, Table, BASELINE};
use crate::util::REL_TOLERANCE;

const FONT: &str = "sans-serif";
/// One colour per results file (column); the Tableau palette, legible on white.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];
/// Colours of the scaling chart's program lines.
const LINES: [RGBColor; 6] = PALETTE;
const GREY: RGBColor = RGBColor(110, 110, 110);

/// The smallest top of a value axis, so that a chart of all-zero values still has a
/// range to draw in. Not a tolerance: nothing is compared against it.
const MIN_AXIS_MAX: f64 = 1e-9;

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing: {e:?}")
}

/// A file name part from free text: letters, digits, `-`, `_`, `.` kept, the rest `_`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// File stem of a table's throughput chart: `<dataset>-<cache>`, with the spec hash
/// when the same dataset name appears with different specs.
pub fn table_stem(t: &Table) -> String {
    let mut s = format!("{}-{}", slug(&t.dataset), t.cache.name());
    if t.note.is_some() {
        s.push('-');
        s.push_str(t.spec_hash.get(..8).unwrap_or(&t.spec_hash));
    }
    s
}

/// The throughput chart of one table: a bar per program and file, the reference rows
/// as dashed vertical lines labelled in lanes above the bars.
pub fn throughput_svg(c: &Comparison, t: &Table) -> Result<String> {
    let bars: Vec<&Row> = t.rows.iter().filter(|r| !r.reference).collect();
    // One lane per (reference row, column) line above the bars.
    let refs: Vec<(usize, &Row, usize)> = t
        .rows
        .iter()
        .filter(|r| r.reference)
        .flat_map(|r| t.present.iter().map(move |&ci| (ci, r)))
        .filter(|(ci, r)| r.cells[*ci].is_some())
        .enumerate()
        .map(|(lane, (ci, r))| (lane, r, ci))
        .collect();
    let ncol = t.present.len().max(1);
    let row_px = 12 * ncol as u32 + 14;
    let lane_px = 18u32;
    let legend_px = 22 * t.present.len() as u32 + 8;
    let plot_h = row_px * bars.len().max(1) as u32 + lane_px * refs.len() as u32;
    let height = plot_h + legend_px + 100;
    let width = 960u32;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, body) = root.split_vertically(legend_px + 34);
        let title = format!(
            "{}, {}: median throughput ({}), {} files, {}",
            t.dataset,
            t.cache.name(),
            t.unit.name(),
            crate::compare::fmt_count(t.files),
            hash_core::units::bytes(t.bytes)
        );
        top.draw(&Text::new(
            title,
            (12, 8),
            TextStyle::from((FONT, 20).into_font()).pos(Pos::new(HPos::Left, VPos::Top)),
        ))
        .map_err(err)?;
        draw_legend(&top, c, &t.present, 36)?;

        let max = t
            .rows
            .iter()
            .flat_map(|r| t.present.iter().filter_map(|&ci| r.cells[ci].as_ref()))
            .map(|cell| cell.value)
            .fold(0.0f64, f64::max)
            .max(MIN_AXIS_MAX);
        let nrows = bars.len() as f64;
        let lanes = refs.len() as f64 * lane_px as f64 / row_px as f64;
        let lane_h = lane_px as f64 / row_px as f64;
        let label_chars = bars.iter().map(|r| r.label.len()).max().unwrap_or(8);
        let mut chart = ChartBuilder::on(&body)
            .margin_left(12)
            .margin_right(24)
            .margin_bottom(8)
            .x_label_area_size(48)
            .y_label_area_size((label_chars as u32) * 10 + 16)
            .build_cartesian_2d(0.0..max * 1.18, 0.0..(nrows + lanes).max(1.0))
            .map_err(err)?;
        let desc = format!("median throughput, {} (higher is better)", t.unit.name());
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(8)
            .bold_line_style(RGBColor(225, 225, 225))
            .x_desc(desc)
            .x_label_formatter(&|x| fmt_num(*x))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        draw_bars(&root, &mut chart, &bars, &t.present)?;
        for (lane, row, ci) in &refs {
            let top_y = nrows + (*lane as f64 + 0.5) * lane_h;
            draw_reference_line(&root, &mut chart, t, row, *ci, top_y, max)?;
        }
        root.present().map_err(err)?;
    }
    svg.push('\n');
    Ok(svg)
}

/// The whole SVG canvas.
type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;
/// A chart on it with two linear axes.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The bars of a throughput chart: a row per program (top to bottom), a bar per present
/// column within it, pale and marked when flagged, the value and rank after each.
fn draw_bars(root: &Area, chart: &mut Chart, bars: &[&Row], present: &[usize]) -> Result<()> {
    let label_style = TextStyle::from((FONT, 16).into_font());
    let nrows = bars.len() as f64;
    let slot = 0.8 / present.len().max(1) as f64;
    for (i, row) in bars.iter().enumerate() {
        let base = nrows - 1.0 - i as f64;
        let (lx, ly) = chart.backend_coord(&(0.0, base + 0.5));
        root.draw(&Text::new(
            row.label.clone(),
            (lx - 8, ly),
            label_style.pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(err)?;
        for (k, &ci) in present.iter().enumerate() {
            let Some(cell) = row.cells[ci].as_ref() else {
                continue;
            };
            let y1 = base + 0.9 - k as f64 * slot;
            let y0 = y1 - slot * 0.9;
            let col = color(ci);
            let fill = if cell.valid {
                col.filled()
            } else {
                col.mix(0.25).filled()
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y0), (cell.value, y1)],
                    fill,
                )))
                .map_err(err)?;
            let mut text = fmt_num(cell.value);
            if !cell.valid {
                text.push_str("  flagged, not ranked");
            } else if let Some(r) = cell.rank {
                text.push_str(&format!("  #{r}"));
            }
            let (px, py) = chart.backend_coord(&(cell.value, (y0 + y1) / 2.0));
            root.draw(&Text::new(
                text,
                (px + 5, py),
                TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// A reference row's value in column `ci` as a dashed vertical line up to `top_y` (its
/// lane above the bars), labelled on the side with more room.
fn draw_reference_line(
    root: &Area,
    chart: &mut Chart,
    t: &Table,
    row: &Row,
    ci: usize,
    top_y: f64,
    max: f64,
) -> Result<()> {
    let Some(cell) = row.cells[ci].as_ref() else {
        return Ok(());
    };
    let style = ShapeStyle::from(&color(ci)).stroke_width(2);
    chart
        .draw_series(std::iter::once(DashedPathElement::new(
            vec![(cell.value, 0.0), (cell.value, top_y)],
            6,
            4,
            style,
        )))
        .map_err(err)?;
    let algo = if row.algorithm.is_empty() || row.algorithm == "sha256" {
        String::new()
    } else {
        format!(" ({})", row.algorithm)
    };
    let mut text = format!(
        "{}{algo}: {} {}",
        row.label,
        fmt_num(cell.value),
        t.unit.name()
    );
    if !cell.valid {
        text.push_str(" (flagged)");
    }
    let right = cell.value > max * 0.55;
    let (px, py) = chart.backend_coord(&(cell.value, top_y));
    root.draw(&Text::new(
        text,
        (if right { px - 5 } else { px + 5 }, py),
        TextStyle::from((FONT, 14).into_font()).pos(Pos::new(
            if right { HPos::Right } else { HPos::Left },
            VPos::Center,
        )),
    ))
    .map_err(err)?;
    Ok(())
}

/// A legend line per results file: a colour swatch and the file's label with its machine.
fn draw_legend(
    area: &DrawingArea<SVGBackend, Shift>,
    c: &Comparison,
    present: &[usize],
    y0: i32,
) -> Result<()> {
    for (k, &ci) in present.iter().enumerate() {
        let col = &c.columns[ci];
        let y = y0 + 22 * k as i32;
        area.draw(&Rectangle::new(
            [(14, y + 3), (28, y + 17)],
            color(ci).filled(),
        ))
        .map_err(err)?;
        let text = format!(
            "{} ({}, {} CPUs)",
            col.label, col.machine.cpu_model, col.machine.available_cpus
        );
        area.draw(&Text::new(
            text,
            (36, y + 10),
            TextStyle::from((FONT, 16).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The scaling chart of one table and one column, if that column swept `-j`.
pub fn scaling_svg(c: &Comparison, t: &Table, column: usize) -> Result<Option<String>> {
    // Only contestants' sweeps make a chart: a reference measured at two -j (the read
    // floor, say) bounds the contestants but compares none of them, so it stays a
    // horizontal line per -j, like the other references.
    let mut sweeps = jobs_sweeps(t, column);
    sweeps.retain(|program, _| !t.rows.iter().any(|r| r.reference && &r.program == program));
    if sweeps.is_empty() {
        return Ok(None);
    }
    // Horizontal lines: hash-serial (solid) and the references (dashed).
    let flat: Vec<(String, f64, bool)> = t
        .rows
        .iter()
        .filter(|r| r.reference || (r.program == BASELINE && r.jobs.is_none()))
        .filter_map(|r| {
            r.cells[column]
                .as_ref()
                .map(|c| (r.label.clone(), c.value, r.reference))
        })
        .collect();
    let all = sweeps
        .values()
        .flatten()
        .map(|(_, c)| c.value)
        .chain(flat.iter().map(|f| f.1));
    let max = all.fold(0.0f64, f64::max).max(MIN_AXIS_MAX);
    let jmax = sweeps
        .values()
        .flatten()
        .map(|(j, _)| *j)
        .max()
        .unwrap_or(1)
        .max(2);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let col = &c.columns[column];
        let title = format!(
            "{}, {}: throughput against -j ({}, {})",
            t.dataset,
            t.cache.name(),
            col.label,
            col.machine.cpu_model
        );
        // x is log2(jobs) on a linear axis, so every power of two gets a labelled tick.
        let x1 = (jmax as f64).log2() + 0.3;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 20))
            .margin(16)
            .margin_right(150)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.3f64..x1, 0.0..max * 1.15)
            .map_err(err)?;
        let tick_fmt = |x: &f64| {
            let k = x.round();
            // Ticks are log2(jobs), of order 1: the relative tolerance serves as absolute.
            if (x - k).abs() <= REL_TOLERANCE && k >= 0.0 {
                format!("{}", 1u64 << (k as u32))
            } else {
                String::new()
            }
        };
        let ydesc = format!("median throughput, {}", t.unit.name());
        chart
            .configure_mesh()
            .x_desc("jobs (-j), log scale")
            .y_desc(ydesc)
            .x_labels(((jmax as f64).log2().ceil() as usize) + 2)
            .x_label_formatter(&tick_fmt)
            .y_label_formatter(&|y| fmt_num(*y))
            .disable_x_mesh()
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(err)?;
        draw_flat_lines(&root, &mut chart, &flat, -0.3, x1)?;
        draw_sweeps(&root, &mut chart, &sweeps)?;
        root.present().map_err(err)?;
    }
    svg.push('\n');
    Ok(Some(svg))
}

/// Horizontal lines across the scaling chart from `x0` to `x1`, labelled at the left:
/// hash-serial solid, the references dashed, all grey.
fn draw_flat_lines(
    root: &Area,
    chart: &mut Chart,
    flat: &[(String, f64, bool)],
    x0: f64,
    x1: f64,
) -> Result<()> {
    // Each label sits just above its line at the left, unless lines are too close for
    // that: then the labels are spread apart, in the lines' order, within the plot.
    let (_, top) = chart.backend_coord(&(x0, chart.y_range().end));
    let (_, bottom) = chart.backend_coord(&(x0, chart.y_range().start));
    let mut labels: Vec<(i32, usize)> = flat
        .iter()
        .enumerate()
        .map(|(i, f)| (chart.backend_coord(&(x0, f.1)).1 - FLAT_LABEL_PX / 2 - 3, i))
        .collect();
    labels.sort();
    let mut ys: Vec<i32> = labels.iter().map(|l| l.0).collect();
    spread(
        &mut ys,
        FLAT_LABEL_PX + 3,
        top + FLAT_LABEL_PX,
        bottom - FLAT_LABEL_PX,
    );
    let mut label_y = vec![0; flat.len()];
    for ((_, i), y) in labels.iter().zip(ys) {
        label_y[*i] = y;
    }
    for ((label, value, reference), y) in flat.iter().zip(label_y) {
        let style = ShapeStyle::from(&GREY).stroke_width(1);
        let line = vec![(x0, *value), (x1, *value)];
        if *reference {
            chart
                .draw_series(std::iter::once(DashedPathElement::new(line, 6, 4, style)))
                .map_err(err)?;
        } else {
            chart
                .draw_series(std::iter::once(PathElement::new(line, style)))
                .map_err(err)?;
        }
        let (px, _) = chart.backend_coord(&(x0, *value));
        root.draw(&Text::new(
            format!("{label}: {}", fmt_num(*value)),
            (px + 6, y),
            TextStyle::from((FONT, 14).into_font())
                .color(&GREY)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// One line per program against log2(-j), with a dot per point (hollow: flagged).
/// Lines are labelled at their right end (no legend box to hide a line), pushed apart
/// vertically where two ends are close.
fn draw_sweeps(
    root: &Area,
    chart: &mut Chart,
    sweeps: &BTreeMap<String, Vec<(u32, Cell)>>,
) -> Result<()> {
    let mut ends: Vec<(i32, i32, String, RGBColor)> = Vec::new();
    for (i, (program, points)) in sweeps.iter().enumerate() {
        let col = LINES[i % LINES.len()];
        let style = ShapeStyle::from(&col).stroke_width(3);
        let pts: Vec<(f64, f64)> = points
            .iter()
            .map(|(j, c)| ((*j as f64).log2(), c.value))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), style))
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|(j, c)| {
                let style = if c.valid {
                    col.filled()
                } else {
                    col.stroke_width(2)
                };
                Circle::new(((*j as f64).log2(), c.value), 5, style)
            }))
            .map_err(err)?;
        if let Some(last) = pts.last() {
            let (px, py) = chart.backend_coord(last);
            ends.push((px, py, program.clone(), col));
        }
    }
    ends.sort_by_key(|e| e.1);
    let (_, top) = chart.backend_coord(&(0.0, chart.y_range().end));
    let (_, bottom) = chart.backend_coord(&(0.0, chart.y_range().start));
    let mut ys: Vec<i32> = ends.iter().map(|e| e.1).collect();
    spread(&mut ys, 18, top + 9, bottom - 9);
    for ((px, _, program, col), py) in ends.into_iter().zip(ys) {
        root.draw(&Text::new(
            program,
            (px + 12, py),
            TextStyle::from((FONT, 16).into_font())
                .color(&col)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// Pixel height of a horizontal line's label in the scaling chart (plotters draws a
/// font of size 14 at 14 / 1.24 px).
const FLAT_LABEL_PX: i32 = 12;

/// Move label centres `ys` (sorted, top to bottom) apart to at least `gap` pixels,
/// each as little as it can, and all within `lo..=hi` where there is room for them:
/// pushed down from the top, then, if the last is past `hi`, back up from the bottom.
fn spread(ys: &mut [i32], gap: i32, lo: i32, hi: i32) {
    for i in 0..ys.len() {
        let min = if i == 0 { lo } else { ys[i - 1] + gap };
        ys[i] = ys[i].max(min);
    }
    for i in (0..ys.len()).rev() {
        let max = if i + 1 == ys.len() {
            hi
        } else {
            ys[i + 1] - gap
        };
        ys[i] = ys[i].min(max);
    }
}

/// Write every chart of a comparison into `out`; returns the files written.
pub fn write_all(c: &Comparison, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("{}", out.display()))?;
    let mut written = Vec::new();
    let mut put = |name: String, svg: String| -> Result<()> {
        let p = out.join(name);
        std::fs::write(&p, svg).with_context(|| format!("writing {}", p.display()))?;
        written.push(p);
        Ok(())
    };
    for t in &c.tables {
        put(format!("{}.svg", table_stem(t)), throughput_svg(c, t)?)?;
        for &ci in &t.present {
            if let Some(svg) = scaling_svg(c, t, ci)? {
                let suffix = if t.present.len() > 1 {
                    format!("-{}", slug(&c.columns[ci].label))
                } else {
                    String::new()
                };
                put(format!("{}-scaling{suffix}.svg", table_stem(t)), svg)?;
            }
        }
    }
    Ok(written)
}

/// `hash-bench chart FILE|DIR... --out DIR`: write the SVG charts, print their paths.
pub fn run_chart(args: &[PathBuf], out: &Path) -> Result<()> {
    let c = crate::compare::compare_paths(args);
    if !c.columns.is_empty() {
        for p in write_all(&c, out)? {
            println!("{}", p.display());
        }
    }
    crate::compare::report_refused(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare_paths;
    use crate::plan::Cache;

    fn comparison() -> Comparison {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare");
        compare_paths(&[dir.join("a.json"), dir.join("b.json")])
    }

    /// Parse as XML (it must be well-formed SVG) and return every `<text>`'s content.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_string())
            .collect()
    }

    fn table<'a>(c: &'a Comparison, dataset: &str, cache: Cache) -> &'a Table {
        c.tables
            .iter()
            .find(|t| t.dataset == dataset && t.cache == cache && t.present.contains(&0))
            .unwrap()
    }

    #[test]
    fn throughput_chart_names_every_series_as_text() {
        let c = comparison();
        let t = table(&c, "big", Cache::Warm);
        let all = texts(&throughput_svg(&c, t).unwrap());
        for want in [
            "big, warm: median throughput (MiB/s), 4 files, 64.00 MiB",
            "a (Test CPU A, 2 CPUs)",
            "b (Test CPU B, 8 CPUs)",
            "hash-serial",
            "hash-threads -j2",
            "hash-threads (default -j)",
            "hash-threads -j8",
            "2,000  #1",
            "1,600  #2",
            "b3sum -j2 (blake3): 4,000 MiB/s",
            "ref-sha256-1core: 1,250 MiB/s",
            "median throughput, MiB/s (higher is better)",
        ] {
            assert!(
                all.iter().any(|t| t == want),
                "no <text>{want}</text> in {all:?}"
            );
        }
        // References are lines, not bars with a row label.
        assert!(!all.iter().any(|t| t == "ref-sha256-1core"));
    }

    #[test]
    fn flagged_bars_say_so() {
        let c = comparison();
        let all = texts(&throughput_svg(&c, table(&c, "small", Cache::Cold)).unwrap());
        assert!(
            all.iter().any(|t| t == "1,000  flagged, not ranked"),
            "{all:?}"
        );
        assert!(all.iter().any(|t| t == "625  #1"), "{all:?}");
    }

    #[test]
    fn scaling_chart_only_where_jobs_were_swept() {
        let c = comparison();
        let t = table(&c, "big", Cache::Warm);
        // a ran hash-threads at one -j only.
        assert!(scaling_svg(&c, t, 0).unwrap().is_none());
        let all = texts(&scaling_svg(&c, t, 1).unwrap().unwrap());
        for want in [
            "hash-threads",
            "hash-serial: 500",
            "ref-sha256-1core: 1,250",
            "jobs (-j), log scale",
            "median throughput, MiB/s",
            "1",
            "8",
        ] {
            assert!(
                all.iter().any(|t| t == want),
                "no <text>{want}</text> in {all:?}"
            );
        }
    }

    #[test]
    fn a_reference_swept_alone_makes_no_scaling_chart() {
        let c = comparison();
        let mut t = table(&c, "big", Cache::Warm).clone();
        // Only hash-threads was swept in b; as a reference it compares no contestant.
        for r in t.rows.iter_mut().filter(|r| r.program == "hash-threads") {
            r.reference = true;
        }
        assert!(scaling_svg(&c, &t, 1).unwrap().is_none());
    }

    #[test]
    fn spread_keeps_order_gap_and_bounds() {
        let mut ys = [10, 50, 52, 53, 200];
        spread(&mut ys, 18, 20, 180);
        assert_eq!(ys, [20, 50, 68, 86, 180]);
        // No room below: pushed back up from the bottom, still in order.
        let mut ys = [170, 171, 172];
        spread(&mut ys, 18, 0, 180);
        assert_eq!(ys, [144, 162, 180]);
    }

    #[test]
    fn write_all_names_files_after_dataset_and_cache() {
        let c = comparison();
        let dir = tempfile::tempdir().unwrap();
        let mut names: Vec<String> = write_all(&c, dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "big-cold.svg",
                "big-warm-scaling-b.svg",
                "big-warm.svg",
                "small-cold-aaaaaaaa.svg",
                "small-warm-aaaaaaaa.svg",
                "small-warm-cccccccc.svg",
            ]
        );
    }
}
