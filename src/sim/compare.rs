//! `electd compare`: messages per election against N for every algorithm (and ring
//! order) with a formula in the literature, beside that formula; as a table, JSON or
//! CSV, and as an SVG plot.

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::formulas::Case;
use crate::sim::runner::{simulate, SimulateError, SimulateParams};
use crate::sim::scenario::{Initiator, Scenario};
use plotters::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// The case's label (algorithm and ring order), as in [`CaseInfo::label`].
    pub case: String,
    /// The algorithm measured.
    pub algorithm: AlgorithmKind,
    /// Roster size N.
    pub nodes: usize,
    /// Election messages of the startup election (liveness traffic excluded).
    pub measured: u64,
    /// The literature's count for N, when the case has a formula.
    pub formula: Option<f64>,
    /// measured / formula (1.00 means the literature's count exactly).
    pub ratio: Option<f64>,
    /// Every node agreed on one live leader at the end.
    pub agreed: bool,
    /// That leader, if any.
    pub leader: Option<crate::NodeId>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The roster sizes measured, ascending as given.
    pub nodes: Vec<usize>,
    /// The cases (algorithm × ring order), in table column order.
    pub cases: Vec<CaseInfo>,
    /// One point per case and N.
    pub points: Vec<Point>,
}

/// One column of the comparison: an algorithm in one ring order, and its formula.
#[derive(Clone, Debug, Serialize)]
pub struct CaseInfo {
    /// Short label for tables and the plot legend.
    pub(crate) label: String,
    /// The algorithm.
    pub algorithm: AlgorithmKind,
    /// Human form of the formula, with its source.
    pub(crate) formula: &'static str,
    /// Is the formula an exact count (true) or an upper bound / average (false)?
    pub(crate) exact: bool,
}

/// Run the startup election, lowest id initiating, for every case and N.
/// `progress` is called after each N with (done, total).
pub fn run(
    algorithms: &[AlgorithmKind],
    nodes: &[usize],
    seed: u64,
    mut progress: impl FnMut(usize, usize),
) -> Result<Comparison, SimulateError> {
    let cases: Vec<Case> = algorithms.iter().flat_map(|&a| a.cases()).collect();
    let mut points = Vec::new();
    let total = cases.len() * nodes.len();
    let mut done = 0;
    for case in &cases {
        for &n in nodes {
            let mut p = SimulateParams::new(case.algorithm, n);
            p.ids = case.order.ids(n, seed);
            p.initiator = Initiator::Lowest;
            p.scenario = Scenario::Startup;
            p.seed = seed;
            let r = simulate(&p)?;
            let formula = case.expected.map(|f| f(n as u64));
            points.push(Point {
                case: case.label.clone(),
                algorithm: case.algorithm,
                nodes: n,
                measured: r.messages.total,
                formula,
                ratio: formula
                    .filter(|f| *f > 0.0)
                    .map(|f| r.messages.total as f64 / f),
                agreed: r.agreed,
                leader: r.leader,
            });
            done += 1;
            progress(done, total);
        }
    }
    Ok(Comparison {
        nodes: nodes.to_vec(),
        cases: cases
            .iter()
            .map(|c| CaseInfo {
                label: c.label.clone(),
                algorithm: c.algorithm,
                formula: c.formula,
                exact: c.exact,
            })
            .collect(),
        points,
    })
}

impl Comparison {
    fn point(&self, case: &str, n: usize) -> Option<&Point> {
        self.points.iter().find(|p| p.case == case && p.nodes == n)
    }

    /// The comparison as a text table, `measured / formula` per cell, then the formulas.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Messages per election (startup, lowest id initiates), measured / formula:"
        );
        let _ = write!(s, "{:>5}", "N");
        for c in &self.cases {
            let _ = write!(s, " {:>24}", c.label);
        }
        let _ = writeln!(s);
        for &n in &self.nodes {
            let _ = write!(s, "{n:>5}");
            for c in &self.cases {
                let cell = match self.point(&c.label, n) {
                    Some(p) => match p.formula {
                        Some(f) => format!("{} / {}", p.measured, fmt_num(f)),
                        None => p.measured.to_string(),
                    },
                    None => "-".into(),
                };
                let _ = write!(s, " {cell:>24}");
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "\nFormulas:");
        for c in &self.cases {
            let kind = if c.exact { "exact" } else { "bound/average" };
            let _ = writeln!(s, "  {:<24} {} [{kind}]", c.label, c.formula);
        }
        s
    }

    /// The comparison as CSV, one row per point.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("case,algorithm,nodes,measured,formula,ratio,agreed,leader\n");
        for p in &self.points {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{}",
                p.case,
                p.algorithm,
                p.nodes,
                p.measured,
                p.formula.map(fmt_num).unwrap_or_default(),
                p.ratio.map(|r| format!("{r:.4}")).unwrap_or_default(),
                p.agreed,
                p.leader.map(|l| l.to_string()).unwrap_or_default()
            );
        }
        s
    }

    /// The comparison as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Draw messages against N: measured points, formula as a dashed line.
    pub fn plot(&self, path: &Path) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        let max_n = self.nodes.iter().copied().max().unwrap_or(2) as f64;
        let min_n = self.nodes.iter().copied().min().unwrap_or(1) as f64;
        let max_y = self
            .points
            .iter()
            .map(|p| (p.measured as f64).max(p.formula.unwrap_or(0.0)))
            .fold(1.0, f64::max);
        // Sized and lettered for a projector: the legend has its own column right of
        // the data, so no curve is ever hidden behind it.
        let root = SVGBackend::new(path, (1400, 820)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_horizontally(930);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                "Messages per election vs. N (lowest id initiates)",
                ("sans-serif", 28),
            )
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(min_n..max_n, (1.0..max_y * 1.5).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("nodes N")
            .y_desc("messages per election (log scale)")
            .axis_desc_style(("sans-serif", 20))
            .label_style(("sans-serif", 18))
            .light_line_style(RGBColor(238, 238, 238))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(err)?;
        // One hue per algorithm for its band and its points; the ring orders of one
        // algorithm differ by marker shape.
        let style: Vec<(RGBColor, usize)> = self
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let variant = self.cases[..i]
                    .iter()
                    .filter(|o| o.algorithm == c.algorithm)
                    .count();
                (hue(c.algorithm), variant)
            })
            .collect();
        // Formulas first, as wide translucent bands; measured points and lines on top,
        // so a measurement that matches its formula sits inside its band.
        for c in &self.cases {
            let color = hue(c.algorithm);
            let formula: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.case == c.label)
                .filter_map(|p| p.formula.map(|f| (p.nodes as f64, f.max(1.0))))
                .collect();
            if !formula.is_empty() {
                chart
                    .draw_series(LineSeries::new(formula, color.mix(0.22).stroke_width(12)))
                    .map_err(err)?;
            }
        }
        let mut ends: Vec<(f64, usize)> = Vec::new();
        for (i, c) in self.cases.iter().enumerate() {
            let (color, variant) = style[i];
            let pts: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.case == c.label)
                .map(|p| (p.nodes as f64, (p.measured as f64).max(1.0)))
                .collect();
            if let Some(&(_, y)) = pts.last() {
                ends.push((y, i));
            }
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?;
            let filled = color.filled();
            let at = pts.iter().copied();
            match variant % 4 {
                0 => chart
                    .draw_series(at.map(|p| Circle::new(p, 5, filled)))
                    .map(|_| ()),
                1 => chart
                    .draw_series(at.map(|p| TriangleMarker::new(p, 7, filled)))
                    .map(|_| ()),
                2 => {
                    chart
                        .draw_series(at.map(|p| {
                            EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], filled)
                        }))
                        .map(|_| ())
                }
                _ => chart
                    .draw_series(at.map(|p| Cross::new(p, 5, color.stroke_width(2))))
                    .map(|_| ()),
            }
            .map_err(err)?;
        }
        // The legend, ordered as the curves are at the largest N (top to bottom).
        ends.sort_by(|a, b| b.0.total_cmp(&a.0));
        let row = (760 / ends.len().max(1)).clamp(40, 84) as i32;
        let mut y = 40;
        legend_area
            .draw(&Text::new(
                "band: formula · points: measured",
                (10, 14),
                ("sans-serif", 16).into_font().color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
        for &(_, i) in &ends {
            let c = &self.cases[i];
            let (color, variant) = style[i];
            legend_area
                .draw(&PathElement::new(
                    vec![(10, y + 10), (50, y + 10)],
                    color.mix(0.22).stroke_width(12),
                ))
                .map_err(err)?;
            legend_area
                .draw(&PathElement::new(
                    vec![(10, y + 10), (50, y + 10)],
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            legend_area
                .draw(&marker(variant, (30, y + 10), color))
                .map_err(err)?;
            legend_area
                .draw(&Text::new(
                    c.label.clone(),
                    (60, y),
                    ("sans-serif", 19).into_font().color(&color),
                ))
                .map_err(err)?;
            for (k, line) in wrap(c.formula, 52).iter().take(3).enumerate() {
                legend_area
                    .draw(&Text::new(
                        line.clone(),
                        (60, y + 22 + 16 * k as i32),
                        ("sans-serif", 14).into_font().color(&RGBColor(70, 70, 70)),
                    ))
                    .map_err(err)?;
            }
            y += row;
        }
        root.present().map_err(err)?;
        Ok(())
    }
}

/// The plot colour of an algorithm (colour-blind-safe hues, distinct when projected).
fn hue(a: AlgorithmKind) -> RGBColor {
    match a {
        AlgorithmKind::Bully => RGBColor(213, 62, 0),
        AlgorithmKind::ImprovedBully => RGBColor(230, 159, 0),
        AlgorithmKind::Ring => RGBColor(0, 150, 105),
        AlgorithmKind::Lcr => RGBColor(0, 100, 178),
        AlgorithmKind::Hs => RGBColor(190, 80, 160),
        AlgorithmKind::Raft => RGBColor(50, 50, 50),
    }
}

/// Marker of the `variant`-th case of one algorithm: circle, triangle, square, diamond.
fn marker<DB: DrawingBackend>(
    variant: usize,
    at: (i32, i32),
    color: RGBColor,
) -> DynElement<'static, DB, (i32, i32)> {
    let style = color.filled();
    match variant % 4 {
        0 => Circle::new(at, 5, style).into_dyn(),
        1 => TriangleMarker::new(at, 7, style).into_dyn(),
        2 => Rectangle::new([(at.0 - 5, at.1 - 5), (at.0 + 5, at.1 + 5)], style).into_dyn(),
        _ => Cross::new(at, 5, color.stroke_width(2)).into_dyn(),
    }
}

/// Split `s` into lines of at most about `width` characters at spaces.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in s.split(' ') {
        let cur = lines.last_mut().expect("never empty");
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
    }
    lines
}

fn fmt_num(f: f64) -> String {
    if (f - f.round()).abs() < 1e-9 {
        format!("{}", f.round() as i64)
    } else {
        format!("{f:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_sits_right_of_the_data_one_entry_per_case() {
        let cmp = run(&AlgorithmKind::available(), &[2, 3, 4], 1, |_, _| {}).unwrap();
        let path = std::env::temp_dir().join(format!("electd-plot-{}.svg", std::process::id()));
        cmp.plot(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        for c in &cmp.cases {
            // Each case is named once, in the legend column (x ≥ 930, the data ends there).
            let needle = format!(">\n{}\n</text>", c.label);
            let hits: Vec<usize> = svg.match_indices(&needle).map(|(i, _)| i).collect();
            assert_eq!(hits.len(), 1, "{} named {} times", c.label, hits.len());
            let tag_start = svg[..hits[0]].rfind("<text").unwrap();
            let tag = &svg[tag_start..hits[0]];
            let x: f64 = tag
                .split("x=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse().ok())
                .unwrap();
            assert!(
                x >= 930.0,
                "{} labelled at x = {x}, inside the data",
                c.label
            );
        }
    }

    #[test]
    fn wrap_breaks_at_spaces() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("", 6), vec![""]);
    }
}
