//! `electd bench --quick` runs the whole benchmark pipeline (real processes, real
//! UDP, simulator, codec) in seconds and writes a report with every section and a
//! JSON file with every key. The figures of a quick run are not checked against the
//! targets (CI machines are loaded and the test profile is barely optimised); the
//! structure and the invariants that do not depend on timing are.

use serde_json::Value;
use std::time::{Duration, Instant};

#[test]
fn bench_quick_writes_the_report_and_the_results() {
    // Several clusters and the simulator at once: no cluster test beside it.
    let _alone = crate::common::alone();
    let out = crate::common::scratch("bench-quick");
    let started = Instant::now();
    let run = crate::common::electd_command(&["bench", "--quick", "--out"])
        .arg(&out)
        .env("ELECTD_LOG", "warn")
        .output()
        .expect("run electd bench");
    assert!(
        run.status.success(),
        "electd bench --quick failed: {}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let progress = String::from_utf8_lossy(&run.stderr);
    for step in ["codec", "failover", "writing report"] {
        assert!(
            progress.contains(step),
            "no progress line for {step}: {progress}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the quick bench took {:?}",
        started.elapsed()
    );

    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    for section in [
        "## Targets",
        "## Failover",
        "### sigkill",
        "### pause",
        "### sigterm",
        "## Message efficiency",
        "## Scale",
        "## Cost per node",
        "## Codec",
        "## Reproduce",
    ] {
        assert!(report.contains(section), "report.md lacks {section}");
    }
    for svg in [
        "failover-sigkill.svg",
        "failover-pause.svg",
        "failover-sigterm.svg",
        "messages.svg",
        "scale-wall.svg",
        "scale-memory.svg",
    ] {
        let text = std::fs::read_to_string(out.join(svg)).unwrap_or_default();
        assert!(text.contains("<svg"), "{svg} is not an SVG");
        assert!(report.contains(svg), "report.md does not show {svg}");
    }

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json is JSON");
    for key in [
        "meta", "codec", "scale", "messages", "cost", "failover", "targets",
    ] {
        assert!(json.get(key).is_some(), "results.json lacks {key}");
    }
    assert_eq!(json["meta"]["quick"], true);

    // Failover: every mode measured for every algorithm of the quick plan, each
    // sample at least the time a survivor needs to notice (SIGKILL and pause: the
    // failure timeout minus one heartbeat period).
    let fo = &json["failover"];
    let failure = fo["timing"]["failure_ms"].as_f64().unwrap();
    let heartbeat = fo["timing"]["heartbeat_ms"].as_f64().unwrap();
    let runs = fo["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for r in runs {
        let samples = r["samples_ms"].as_array().unwrap();
        assert_eq!(
            samples.len() + r["timeouts"].as_u64().unwrap() as usize,
            fo["per_mode"].as_u64().unwrap() as usize,
            "{r}"
        );
        for key in ["min", "median", "p90", "p99", "max"] {
            assert!(
                r["stats"][key].is_number() && r["ratio"][key].is_number(),
                "{r}"
            );
        }
        if r["mode"] != "sigterm" {
            for s in samples {
                assert!(s.as_f64().unwrap() >= failure - heartbeat, "{r}");
            }
        }
    }
    for mode in ["sigkill", "pause", "sigterm"] {
        assert!(runs.iter().any(|r| r["mode"] == mode), "no {mode} run");
    }

    // Message efficiency: the daemons over UDP send what the simulator sends, and on
    // a clean loopback nothing is retransmitted; one ack per message.
    let points = json["messages"]["points"].as_array().unwrap();
    assert!(!points.is_empty());
    for p in points {
        assert_eq!(p["complete"], true, "{p}");
        assert_eq!(p["udp_messages"], p["sim_messages"], "{p}");
        assert_eq!(p["acks"], p["udp_messages"], "{p}");
        assert!(p["bytes"].as_u64().unwrap() > 0, "{p}");
    }

    for key in ["sim", "udp"] {
        assert!(
            !json["scale"][key].as_array().unwrap().is_empty(),
            "scale.{key}"
        );
    }
    for p in json["scale"]["sim"].as_array().unwrap() {
        assert_eq!(p["agreed"], true, "{p}");
        assert!(p["messages"].as_u64().unwrap() > 0, "{p}");
    }
    let cost = json["cost"]["runs"].as_array().unwrap();
    assert!(!cost.is_empty());
    for n in cost[0]["nodes"].as_array().unwrap() {
        assert!(n["rss_mib"].as_f64().unwrap() > 0.0, "{n}");
    }
    let codec = json["codec"]["points"].as_array().unwrap();
    assert!(codec.iter().all(|p| p["total_ns"].as_f64().unwrap() > 0.0));
    let targets = json["targets"].as_array().unwrap();
    assert!(targets.iter().all(|t| t["met"].is_boolean()));
    let _ = std::fs::remove_dir_all(&out);
}
