//! `electd compare`: messages per election against N for every algorithm (and ring
//! order) with a formula in the literature, beside that formula; as a table, JSON or
//! CSV, and as an SVG plot.

use crate::algorithm::AlgorithmKind;
use crate::formulas::{self, Case};
use crate::sim::runner::{simulate, SimulateError, SimulateParams};
use crate::sim::scenario::{Initiator, Scenario};
use plotters::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub case: String,
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    pub measured: u64,
    pub formula: Option<f64>,
    /// measured / formula (1.00 means the literature's count exactly).
    pub ratio: Option<f64>,
    pub agreed: bool,
    pub leader: Option<crate::NodeId>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub nodes: Vec<usize>,
    pub cases: Vec<CaseInfo>,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CaseInfo {
    pub label: String,
    pub algorithm: AlgorithmKind,
    pub formula: &'static str,
    pub exact: bool,
}

/// Run the startup election, lowest id initiating, for every case and N.
/// `progress` is called after each N with (done, total).
pub fn run(
    algorithms: &[AlgorithmKind],
    nodes: &[usize],
    seed: u64,
    mut progress: impl FnMut(usize, usize),
) -> Result<Comparison, SimulateError> {
    let cases: Vec<Case> = algorithms
        .iter()
        .flat_map(|&a| formulas::cases(a))
        .collect();
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

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Draw messages against N: measured points, formula as a dashed line.
    pub fn plot(&self, path: &Path) -> Result<(), String> {
        let max_n = self.nodes.iter().copied().max().unwrap_or(2) as f64;
        let min_n = self.nodes.iter().copied().min().unwrap_or(1) as f64;
        let max_y = self
            .points
            .iter()
            .map(|p| (p.measured as f64).max(p.formula.unwrap_or(0.0)))
            .fold(1.0, f64::max);
        let root = SVGBackend::new(path, (1100, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Messages per election vs. number of nodes (lowest id initiates)",
                ("sans-serif", 24),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(min_n..max_n, (1.0..max_y * 1.5).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("nodes N")
            .y_desc("messages per election (log scale)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        // Formulas first, as wide translucent bands; measured points and lines on top,
        // so a measurement that matches its formula sits inside its band.
        for (i, c) in self.cases.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let formula: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.case == c.label)
                .filter_map(|p| p.formula.map(|f| (p.nodes as f64, f.max(1.0))))
                .collect();
            if !formula.is_empty() {
                let band = color.mix(0.25).stroke_width(9);
                chart
                    .draw_series(LineSeries::new(formula, band))
                    .map_err(|e| e.to_string())?
                    .label(format!("{} formula: {}", c.label, c.formula))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], band));
            }
        }
        for (i, c) in self.cases.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.case == c.label)
                .map(|p| (p.nodes as f64, (p.measured as f64).max(1.0)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(1)))
                .map_err(|e| e.to_string())?
                .label(format!("{} measured", c.label))
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, color.filled()));
            chart
                .draw_series(
                    pts.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    }
}

fn fmt_num(f: f64) -> String {
    if (f - f.round()).abs() < 1e-9 {
        format!("{}", f.round() as i64)
    } else {
        format!("{f:.1}")
    }
}
