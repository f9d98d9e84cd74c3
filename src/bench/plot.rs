//! SVG plots of the report (plotters, as `electd compare --plot` draws).

use super::failover::FailoverResults;
use super::messages::MessageResults;
use super::scale::SimPoint;
use super::Stats;
use electd::contract::algorithm::AlgorithmKind;
use plotters::prelude::*;
use std::path::Path;

fn e<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Box (p25–p75, median bar), whiskers (min–max) and every sample as a jittered dot,
/// one column per algorithm, in multiples of the failure timeout; dashed lines at 1.0
/// and at the target median.
pub fn failover(r: &FailoverResults, mode: &str, target: f64, path: &Path) -> Result<(), String> {
    let runs: Vec<_> = r.runs.iter().filter(|x| x.mode == mode).collect();
    if runs.is_empty() {
        return Ok(());
    }
    let failure = r.timing.failure_ms as f64;
    let ratios: Vec<Vec<f64>> = runs
        .iter()
        .map(|x| x.samples_ms.iter().map(|s| s / failure).collect())
        .collect();
    let top = ratios
        .iter()
        .flatten()
        .copied()
        .fold(target, f64::max)
        .max(1.0)
        * 1.08;
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let caption = format!(
        "Failover ({mode}), {} nodes: action → all survivors agree, ÷ failure_timeout ({} ms)",
        r.nodes, r.timing.failure_ms
    );
    let k = runs.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..k - 0.5, 0.0..top)
        .map_err(e)?;
    let names: Vec<String> = runs.iter().map(|x| x.algorithm.to_string()).collect();
    chart
        .configure_mesh()
        .x_labels(runs.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc("× failure_timeout")
        .y_label_formatter(&|y| format!("{y:.2}"))
        .disable_x_mesh()
        .draw()
        .map_err(e)?;
    for (y, color, label) in [
        (1.0, BLACK.mix(0.5), "failure_timeout".to_string()),
        (target, RED.mix(0.6), format!("target median {target:.2}×")),
    ] {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.5, y), (k - 0.5, y)],
                6,
                4,
                color.stroke_width(1),
            ))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    for (i, xs) in ratios.iter().enumerate() {
        let x = i as f64;
        let color = Palette99::pick(i).to_rgba();
        let s = Stats::of(xs);
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| {
            if sorted.is_empty() {
                0.0
            } else {
                sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
            }
        };
        let (q1, q3) = (q(0.25), q(0.75));
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.25, q1), (x + 0.25, q3)],
                color.mix(0.2).filled(),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.25, q1), (x + 0.25, q3)],
                color.stroke_width(1),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x - 0.25, s.median), (x + 0.25, s.median)],
                color.stroke_width(3),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, s.min), (x, q1)],
                color.stroke_width(1),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, q3), (x, s.max)],
                color.stroke_width(1),
            )))
            .map_err(e)?;
        // Deterministic jitter: a dot's offset depends on its index only.
        chart
            .draw_series(xs.iter().enumerate().map(|(j, &y)| {
                let jitter = ((j as f64 * 0.618_034) % 1.0 - 0.5) * 0.36;
                Circle::new((x + jitter, y), 2, color.mix(0.8).filled())
            }))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

/// Messages per election on real UDP (dots) against the formula (band), log scale.
pub fn messages(r: &MessageResults, path: &Path) -> Result<(), String> {
    let min_n = r.nodes.iter().copied().min().unwrap_or(1) as f64;
    let max_n = r.nodes.iter().copied().max().unwrap_or(2) as f64;
    let max_y = r
        .points
        .iter()
        .map(|p| (p.udp_messages as f64).max(p.formula.unwrap_or(0.0)))
        .fold(10.0, f64::max);
    let root = SVGBackend::new(path, (1000, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Messages per election over real UDP (dots) vs. the literature (bands)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (min_n * 0.9..max_n * 1.1).log_scale(),
            (1.0..max_y * 2.0).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("nodes N (log)")
        .y_desc("election messages (log)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(e)?;
    let mut cases: Vec<&str> = Vec::new();
    for p in &r.points {
        if !cases.contains(&p.case.as_str()) {
            cases.push(&p.case);
        }
    }
    for (i, case) in cases.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<_> = r.points.iter().filter(|p| p.case == *case).collect();
        let formula: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| p.formula.map(|f| (p.nodes as f64, f.max(1.0))))
            .collect();
        if !formula.is_empty() {
            chart
                .draw_series(LineSeries::new(formula, color.mix(0.25).stroke_width(8)))
                .map_err(e)?;
        }
        chart
            .draw_series(pts.iter().map(|p| {
                Circle::new(
                    (p.nodes as f64, (p.udp_messages as f64).max(1.0)),
                    4,
                    color.filled(),
                )
            }))
            .map_err(e)?
            .label(case.to_string())
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

/// One simulator figure (`value`) against N per algorithm, log–log.
pub fn scale(
    points: &[SimPoint],
    title: &str,
    y_desc: &str,
    value: impl Fn(&SimPoint) -> f64,
    path: &Path,
) -> Result<(), String> {
    if points.is_empty() {
        return Ok(());
    }
    let min_n = points.iter().map(|p| p.nodes).min().unwrap_or(1) as f64;
    let max_n = points.iter().map(|p| p.nodes).max().unwrap_or(2) as f64;
    let ys: Vec<f64> = points.iter().map(&value).filter(|v| *v > 0.0).collect();
    let min_y = ys.iter().copied().fold(f64::INFINITY, f64::min).min(1.0);
    let max_y = ys.iter().copied().fold(1.0, f64::max);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (min_n * 0.9..max_n * 1.1).log_scale(),
            (min_y * 0.5..max_y * 2.0).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("nodes N (log)")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| {
            if *y >= 10.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.2}")
            }
        })
        .draw()
        .map_err(e)?;
    for (i, kind) in AlgorithmKind::available().into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.algorithm == kind)
            .map(|p| (p.nodes as f64, value(p).max(min_y * 0.5)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(e)?
            .label(kind.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}
