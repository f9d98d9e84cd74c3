//! Traces and `electd view` from the command line: `simulate --trace` records what the
//! report counts, `demo --trace` records real nodes on one clock, `view` writes one
//! self-contained page and refuses bad traces with the line that is wrong.

use crate::common::{electd, electd_command, scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    scratch(&format!("view-test-{name}"))
}

fn lines(path: &Path) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut it = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = it.next().expect("a header line");
    (header, it.collect())
}

fn ev<'a>(recs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    recs.iter().filter(|r| r["ev"] == kind).collect()
}

#[test]
fn simulate_trace_records_what_the_report_counts() {
    let dir = tmp("sim");
    let trace = dir.join("bully.jsonl");
    for (alg, n) in [("bully", 5usize), ("lcr", 6), ("raft", 5)] {
        let out = electd(&[
            "simulate",
            "-a",
            alg,
            "-n",
            &n.to_string(),
            "--scenario",
            "leader-crash",
            "--format",
            "json",
            "--trace",
            trace.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let (header, recs) = lines(&trace);
        assert_eq!(header["format"], "electd-trace");
        assert_eq!(header["version"], 1);
        assert_eq!(header["clock"], "virtual");
        assert_eq!(header["nodes"].as_array().unwrap().len(), n);
        // First sends of election messages (heartbeats apart) are the report's count.
        let election = ev(&recs, "send")
            .iter()
            .filter(|r| !r["type"].as_str().unwrap().starts_with("heartbeat"))
            .count() as u64;
        assert_eq!(
            election,
            report["messages"]["total"].as_u64().unwrap(),
            "{alg}"
        );
        // Every datagram with a body ends exactly once, delivered or dropped; the run
        // stops once no election message is on the way, so only liveness datagrams
        // (heartbeats and their acks) sent within one network delay (1 ms, the
        // default network) of the end may still be on the way.
        let end_t = ev(&recs, "end")[0]["t"].as_u64().unwrap();
        let sends: Vec<&Value> = ev(&recs, "send")
            .into_iter()
            .chain(ev(&recs, "retransmit"))
            .collect();
        let mut ended: Vec<u64> = ev(&recs, "deliver")
            .iter()
            .chain(ev(&recs, "drop").iter())
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        ended.sort_unstable();
        let mut dedup = ended.clone();
        dedup.dedup();
        assert_eq!(dedup, ended, "{alg}: a datagram ended twice");
        let mut sent: Vec<u64> = Vec::new();
        for r in &sends {
            let id = r["id"].as_u64().unwrap();
            if ended.binary_search(&id).is_ok() {
                sent.push(id);
                continue;
            }
            let ty = r["type"].as_str().unwrap();
            let t = r["t"].as_u64().unwrap();
            assert!(
                ty.starts_with("heartbeat") && t + 1_000_000 >= end_t,
                "{alg}: {r} never ended (the run ended at {end_t} ns)"
            );
        }
        sent.sort_unstable();
        assert_eq!(sent, ended, "{alg}: ended without being sent");
        // The crash of the first leader, leader changes, states and the result.
        assert_eq!(ev(&recs, "crash").len(), 1, "{alg}");
        assert!(!ev(&recs, "leader").is_empty() && !ev(&recs, "state").is_empty());
        let end = ev(&recs, "end");
        assert_eq!(end.len(), 1);
        assert_eq!(end[0]["leader"], report["leader"], "{alg}");
        // Virtual time never goes back.
        let times: Vec<u64> = recs.iter().map(|r| r["t"].as_u64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{alg}");
    }
    // A chaos plan (crashes, restarts, loss): timers fire and the link retransmits.
    let out = electd(&[
        "simulate",
        "-a",
        "raft",
        "-n",
        "5",
        "--scenario",
        "chaos",
        "--loss",
        "0.2",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let (_, recs) = lines(&trace);
    assert!(!ev(&recs, "timer").is_empty());
    assert!(!ev(&recs, "retransmit").is_empty());
    assert!(ev(&recs, "drop").iter().any(|r| r["reason"] == "loss"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn view_writes_one_self_contained_page() {
    let dir = tmp("page");
    let html = dir.join("v.html");
    let out = electd(&[
        "view",
        "--simulate",
        "--nodes",
        "4",
        "--algorithms",
        "bully,ring",
        "--save-traces",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--no-open",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for external in ["src=", "href=", "http://", "https://", "@import"] {
        assert!(!page.contains(external), "the page references {external}");
    }
    // Both traces were saved and can be viewed again from the files.
    let again = dir.join("again.html");
    let out = electd(&[
        "view",
        dir.join("bully.jsonl").to_str().unwrap(),
        dir.join("ring.jsonl").to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
        "--no-open",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&again)
        .unwrap()
        .contains("\"alg\":\"ring\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_traces_are_clear_errors() {
    let dir = tmp("bad");
    let header = r#"{"format":"electd-trace","version":1,"source":"simulate","clock":"virtual","algorithms":["bully"],"nodes":[1,2]}"#;
    let cases = [
        ("empty.jsonl", String::new(), "empty file"),
        (
            "other.jsonl",
            r#"{"format":"pcap"}"#.to_string(),
            "is not \"electd-trace\"",
        ),
        (
            "newer.jsonl",
            header.replace("\"version\":1", "\"version\":99"),
            "newer than this electd reads",
        ),
        (
            "garbage.jsonl",
            format!("{header}\n{{\"ev\":\"send\"}}\n"),
            "line 2",
        ),
    ];
    for (name, text, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let out = electd(&[
            "view",
            p.to_str().unwrap(),
            "-o",
            dir.join("x.html").to_str().unwrap(),
            "--no-open",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} accepted");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(
            stderr.contains(needle) && stderr.contains(name),
            "{name}: {stderr}"
        );
    }
    let out = electd(&["view", "-o", dir.join("x.html").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("give trace files"));
    // A simulation far over the page's bound is refused at its first algorithm (it
    // simulated and held all six, 30 M records, before refusing).
    let out = electd(&[
        "view",
        "--simulate",
        "--loss",
        "0.99",
        "-o",
        dir.join("x.html").to_str().unwrap(),
        "--no-open",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("with bully") && stderr.contains("a view draws at most"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("improved-bully:"),
        "simulated on: {stderr}"
    );
    assert!(
        !dir.join("x.html").exists(),
        "no page is written from a bad trace"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_trace_records_real_nodes_on_one_clock() {
    let dir = tmp("demo");
    let trace = dir.join("demo.jsonl");
    let out = electd_command(&[
        "demo",
        "--nodes",
        "3",
        "--duration",
        "3",
        "--chaos-every",
        "1",
        "--down-for",
        "0.5",
        "--trace",
        trace.to_str().unwrap(),
    ])
    .output()
    .expect("run electd demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (header, recs) = lines(&trace);
    assert_eq!(header["source"], "demo");
    assert_eq!(header["clock"], "monotonic");
    assert_eq!(header["nodes"], serde_json::json!([1, 2, 3]));
    for kind in [
        "start", "send", "deliver", "timer", "state", "leader", "crash",
    ] {
        assert!(
            !ev(&recs, kind).is_empty(),
            "no {kind} record in the demo trace"
        );
    }
    let times: Vec<u64> = recs.iter().map(|r| r["t"].as_u64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "one clock, in order"
    );
    // A delivery comes after its send, on the same clock.
    let sent: std::collections::HashMap<u64, u64> = ev(&recs, "send")
        .iter()
        .map(|r| (r["id"].as_u64().unwrap(), r["t"].as_u64().unwrap()))
        .collect();
    for d in ev(&recs, "deliver") {
        let id = d["id"].as_u64().unwrap();
        if let Some(&t0) = sent.get(&id) {
            assert!(d["t"].as_u64().unwrap() >= t0);
        }
    }
    let html = dir.join("demo.html");
    let out = electd(&[
        "view",
        trace.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--no-open",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
