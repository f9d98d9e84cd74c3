//! The report: `report.md` (Markdown tables, SVG plots) and `results.json`, written
//! from one [`Results`] with the targets' verdicts beside the text that explains them.
//!
//! `model.rs` holds the timing model and the per-algorithm targets, `targets.rs` every
//! verdict, `failover.rs` and `sections.rs` one function per section of the page; the
//! plots are in `plot.rs`.

use super::{plot, Results};
use std::fmt::Write as _;
use std::path::Path;

mod failover;
mod model;
mod sections;
mod targets;
#[cfg(test)]
mod tests;

pub use targets::{targets, NOT_SELECTED};

pub(super) fn fmt2(x: f64) -> String {
    format!("{x:.2}")
}

fn keepalived_plot(r: &Results, dir: &Path) -> anyhow::Result<()> {
    super::keepalived::plot(&r.keepalived, &dir.join("keepalived.svg"))
        .map_err(|e| anyhow::anyhow!("plot keepalived.svg: {e}"))
}

pub(super) fn row(s: &mut String, cells: &[String]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
}

pub(super) fn header(s: &mut String, cells: &[&str]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cells.len()));
}

/// Write `results.json`, the plots and `report.md` into `dir`.
pub fn write(r: &Results, dir: &Path) -> anyhow::Result<()> {
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(r)?)?;
    let mut plots = Vec::new();
    for mode in super::failover::MODES {
        let name = format!("failover-{mode}.svg");
        plot::failover(&r.failover, mode, 1.10, &dir.join(&name))
            .map_err(|e| anyhow::anyhow!("plot {name}: {e}"))?;
        plots.push(name);
    }
    plot::messages(&r.messages, &dir.join("messages.svg"))
        .map_err(|e| anyhow::anyhow!("plot messages.svg: {e}"))?;
    plot::scale(
        &r.scale.sim,
        "Simulator wall time of one startup election",
        "wall time, ms (log)",
        |p| p.wall_ms,
        &dir.join("scale-wall.svg"),
    )
    .map_err(|e| anyhow::anyhow!("plot scale-wall.svg: {e}"))?;
    plot::scale(
        &r.scale.sim,
        "Simulator peak resident memory of one startup election",
        "peak RSS, MiB (log)",
        |p| p.peak_rss_mib,
        &dir.join("scale-memory.svg"),
    )
    .map_err(|e| anyhow::anyhow!("plot scale-memory.svg: {e}"))?;
    keepalived_plot(r, dir)?;
    std::fs::write(dir.join("report.md"), markdown(r))?;
    Ok(())
}

/// The Markdown report: one section after the other.
pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    sections::intro(&mut s, r);
    sections::targets_table(&mut s, r);
    // A section that measured nothing (left out by `--only`) is left out of the page:
    // its prose would describe runs that did not happen, above empty tables.
    if !r.failover.runs.is_empty() {
        failover::failover(&mut s, r);
    }
    failover::etcd_section(&mut s, &r.etcd);
    failover::keepalived_section(&mut s, r);
    if r.detect.skipped.as_deref() != Some(NOT_SELECTED) {
        super::detect::markdown(&mut s, &r.detect);
    }
    if !(r.messages.points.is_empty() && r.messages.incomplete.is_empty()) {
        sections::messages(&mut s, r);
    }
    if !(r.scale.sim.is_empty() && r.scale.udp.is_empty()) {
        let _ = writeln!(s, "## Scale\n");
    }
    if !r.scale.sim.is_empty() {
        sections::scale_simulator(&mut s, r);
    }
    if !r.scale.udp.is_empty() {
        sections::scale_udp(&mut s, r);
    }
    s.push_str(&super::coldstart::markdown(&r.cold));
    if !r.cost.runs.is_empty() {
        sections::cost(&mut s, r);
    }
    if !r.codec.points.is_empty() {
        sections::codec(&mut s, r);
    }
    sections::reproduce(&mut s);
    s
}
