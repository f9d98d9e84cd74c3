//! The keepalived section of the report: its tables, its targets and its plot.

use super::*;

pub(super) fn fmt_stats(s: &Stats) -> String {
    if s.n == 0 {
        "—".into()
    } else {
        format!("{:.1} / {:.1} / {:.1}", s.median, s.p99, s.max)
    }
}

/// The section of report.md.
pub fn markdown(s: &mut String, k: &VersusKeepalived) {
    use std::fmt::Write;
    let _ = writeln!(s, "\n## Beside keepalived (virtual IP)\n");
    if let Some(why) = &k.skipped {
        let _ = writeln!(s, "Not run: {why}.\n");
        return;
    }
    let _ = writeln!(
        s,
        "{} (VRRPv3, `advert_int 0.01`) beside electd Bully twice: *electd* holds the VIP \
         itself (`[[vip]]`: one netlink request and a gratuitous ARP from a packet socket, \
         in-process as keepalived does), *electd-hook* with the hook \
         `deploy/hooks/electd-vip` (docs/keepalived.md); {HOSTS} hosts and a client in network \
         namespaces on one bridge; the client pings the VIP every 1 ms and records which MAC \
         answers. Interval {} ms for all; electd: `{}`. {} rounds per fault, each fault held \
         {} ms. Figures in ms, median / p99 / max; *takeover*: fault → first reply from \
         another host; *outage*: longest stretch without a reply during the fault; *dual*: \
         time with the VIP on two or more hosts; *VIP added*: fault → the VIP on a host that \
         did not hold it (detection, election, then the address change: in-process for \
         keepalived and electd, the hook's `sh` and `ip` for electd-hook); *first GARP*: \
         fault → the first gratuitous ARP at the client; *return*: from the restore (restart, \
         SIGCONT, link up, heal) until the VIP is on host {HOSTS} alone and answering. \
         Load average {:.1} before, {:.1} after{}. The targets compare electd's `[[vip]]` \
         with keepalived; the hook's rows show what processes add.\n",
        k.keepalived_version,
        k.advert_ms,
        k.electd_env.join(" "),
        k.rounds,
        k.hold_ms,
        k.load.0,
        k.load.1,
        if k.load.0.max(k.load.1) > 1.0 {
            " — a loaded machine: the hook starts processes (`sh`, `ip`, `arping`) that \
             wait for a core"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "| fault | system | takeover | VIP added | first GARP | outage | dual (fault) | return: dual | return: outage | return: GARPs | unsettled | not made |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for fault in FAULTS {
        for sys in ["keepalived", "electd", "electd-hook"] {
            if let Some(r) = k.row(sys, fault) {
                let _ = writeln!(
                    s,
                    "| {fault} | {sys} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    fmt_stats(&r.takeover),
                    if r.no_takeover > 0 {
                        format!(" ({} without)", r.no_takeover)
                    } else {
                        String::new()
                    },
                    fmt_stats(&r.added),
                    fmt_stats(&r.garp),
                    fmt_stats(&r.outage),
                    fmt_stats(&r.dual),
                    fmt_stats(&r.return_dual),
                    fmt_stats(&r.return_outage),
                    fmt_stats(&r.return_garps),
                    r.unsettled,
                    r.not_started
                );
            }
        }
    }
    let _ = writeln!(s, "\n![VIP takeover beside keepalived](keepalived.svg)\n");
}

/// The targets: electd's takeover median and p99 ≤ keepalived's per fault, and
/// the VIP never on two hosts after a return (outside a partition).
pub fn targets(k: &VersusKeepalived) -> Vec<crate::bench::Target> {
    let mut out = Vec::new();
    if k.skipped.is_some() {
        return out;
    }
    for fault in FAULTS {
        let (Some(ka), Some(el)) = (k.row("keepalived", fault), k.row("electd", fault)) else {
            continue;
        };
        let (a, b) = if fault == "sigkill" || fault == "sigstop" {
            (&ka.takeover, &el.takeover)
        } else {
            (&ka.outage, &el.outage)
        };
        let what = if fault == "sigkill" || fault == "sigstop" {
            "takeover"
        } else {
            "outage"
        };
        out.push(crate::bench::Target {
            name: format!("VIP {what} after {fault}, electd ÷ keepalived"),
            target: "median and p99 ≤ 1.00".into(),
            measured: format!(
                "median {:.1} vs {:.1} ms, p99 {:.1} vs {:.1} ms",
                b.median, a.median, b.p99, a.p99
            ),
            met: b.n > 0 && a.n > 0 && b.median <= a.median && b.p99 <= a.p99,
            note: String::new(),
        });
        if fault == "partition" {
            out.push(crate::bench::Target {
                name: "VIP on two hosts during a 3+2 partition (electd)".into(),
                target: format!("≤ keepalived's ({:.1} ms median)", ka.dual.median),
                measured: format!("median {:.1}, max {:.1} ms", el.dual.median, el.dual.max),
                met: el.dual.n > 0 && el.dual.median <= ka.dual.median,
                note: "require_quorum: the minority's leader steps down (no majority answered \
                       for a failure timeout) and deletes the address; the majority's new \
                       leader has taken it a failure timeout and an answer timeout after the \
                       cut"
                .into(),
            });
        } else {
            out.push(crate::bench::Target {
                name: format!("VIP on two hosts after the return from {fault} (electd)"),
                target: format!("≤ keepalived's ({:.1} ms median)", ka.return_dual.median),
                measured: format!(
                    "median {:.1}, max {:.1} ms",
                    el.return_dual.median, el.return_dual.max
                ),
                met: el.return_dual.median <= ka.return_dual.median,
                note: String::new(),
            });
        }
    }
    out
}

/// Every round's takeover (kill, stop) or outage (link, partition) per system, one
/// column per fault and system.
pub fn plot(k: &VersusKeepalived, path: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    if k.rows.is_empty() {
        return Ok(());
    }
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let value = |r: &Row| -> Vec<f64> {
        r.rounds
            .iter()
            .filter_map(|x| {
                if r.fault == "sigkill" || r.fault == "sigstop" {
                    x.takeover_ms
                } else {
                    Some(x.outage_ms)
                }
            })
            .collect()
    };
    let top = k
        .rows
        .iter()
        .flat_map(value)
        .fold(4.0 * ADVERT_MS as f64, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let n = k.rows.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "VIP failover beside keepalived ({} ms interval): takeover (kill, stop) / outage (link, partition)",
                k.advert_ms
            ),
            ("sans-serif", 16),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)
        .map_err(|x| e(&x))?;
    let names: Vec<String> = k
        .rows
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.fault,
                match r.system.as_str() {
                    "electd" => "E",
                    "electd-hook" => "H",
                    _ => "K",
                }
            )
        })
        .collect();
    chart
        .configure_mesh()
        .x_labels(k.rows.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc("ms (K = keepalived, E = electd [[vip]], H = electd hook)")
        .disable_x_mesh()
        .draw()
        .map_err(|x| e(&x))?;
    for (i, r) in k.rows.iter().enumerate() {
        let color = match r.system.as_str() {
            "electd" => BLUE,
            "electd-hook" => GREEN,
            _ => RED,
        };
        let vs = value(r);
        let m = vs.len().max(1) as f64;
        chart
            .draw_series(vs.iter().enumerate().map(|(j, v)| {
                let x = i as f64 - 0.25 + 0.5 * (j as f64 + 0.5) / m;
                Circle::new((x, *v), 3, color.mix(0.7).filled())
            }))
            .map_err(|x| e(&x))?;
        let med = Stats::of(&vs).median;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(i as f64 - 0.3, med), (i as f64 + 0.3, med)],
                color.stroke_width(2),
            )))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
