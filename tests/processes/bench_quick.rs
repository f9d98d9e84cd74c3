//! `electd bench --quick` runs the whole benchmark pipeline (real processes, real
//! UDP, simulator, codec) in seconds and writes a report with every section and a
//! JSON file with every key. The figures of a quick run are not checked against the
//! targets (CI machines are loaded and the test profile is barely optimised); the
//! structure and the invariants that do not depend on timing are.

use electd::testkit::procs::children_of;
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

/// A bench ended by SIGTERM (`timeout`, `kill`) kills the nodes it started, removes its
/// temporary directories and exits with 128 + 15; its nodes start with no signal
/// blocked (they must see the SIGTERM of the failover section's graceful stops).
#[test]
fn a_bench_stopped_by_sigterm_stops_its_nodes() {
    let _alone = crate::common::alone();
    let out = crate::common::scratch("bench-sigterm");
    let err = std::fs::File::create(out.join("stderr")).expect("stderr file");
    let mut bench = crate::common::electd_command(&["bench", "--quick", "--only", "failover"])
        .arg("--out")
        .arg(out.join("report"))
        .env("ELECTD_LOG", "warn")
        .stderr(err)
        .spawn()
        .expect("run electd bench");
    let pid = bench.id();
    // Its `electd run` children, once five of them run.
    let deadline = Instant::now() + Duration::from_secs(30);
    let nodes = loop {
        let nodes: Vec<u32> = children_of(pid, std::path::Path::new("/proc"))
            .into_iter()
            .filter(|c| {
                std::fs::read(format!("/proc/{c}/cmdline"))
                    .is_ok_and(|b| String::from_utf8_lossy(&b).contains("run\0--config"))
            })
            .collect();
        if nodes.len() >= 5 {
            break nodes;
        }
        assert!(
            Instant::now() < deadline,
            "the bench started no cluster within 30 s (children: {nodes:?})"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for n in &nodes {
        let status = std::fs::read_to_string(format!("/proc/{n}/status")).unwrap_or_default();
        let blocked = status.lines().find(|l| l.starts_with("SigBlk:"));
        assert_eq!(
            blocked.and_then(|l| l.split_whitespace().nth(1)),
            Some("0000000000000000"),
            "node {n} started with signals blocked (or has no SigBlk line)"
        );
    }
    // SAFETY: kill(2) on the bench this test started and has not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = bench.try_wait().expect("wait for the bench") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = bench.kill();
            let _ = bench.wait();
            panic!("the bench did not exit within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its nodes were killed and reaped before it left: their PIDs are free. One that
    // outlived it is stopped here by its PID, then reported.
    let outlived: Vec<u32> = nodes
        .iter()
        .copied()
        .filter(|n| {
            std::fs::read(format!("/proc/{n}/cmdline"))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains("run\0--config"))
        })
        .collect();
    for &n in &outlived {
        // SAFETY: kill(2) on a node the bench started (checked by its command line).
        unsafe {
            libc::kill(n as libc::pid_t, libc::SIGKILL);
        }
    }
    let stderr = std::fs::read_to_string(out.join("stderr")).unwrap_or_default();
    assert!(
        outlived.is_empty(),
        "nodes {outlived:?} outlived the bench: {stderr}"
    );
    assert_eq!(status.code(), Some(128 + 15), "{status}: {stderr}");
    assert!(stderr.contains("SIGTERM received"), "{stderr}");
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("electd-bench-") && n.ends_with(&format!("-{pid}")))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&out);
}
