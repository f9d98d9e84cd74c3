//! The operator's commands against a real loopback cluster of `electd run` processes:
//! `electd status` (exit 0 only when every answering node agrees), `electd watch`
//! (leader changes cluster-wide), systemd readiness on `$NOTIFY_SOCKET`, JSON logs.

use crate::common::{electd, electd_command, Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const TIMING: Timing = Timing::LOOPBACK;

/// Generous: the machine may be loaded by parallel builds.
const WITHIN: Duration = Duration::from_secs(20);

fn status_json(c: &Cluster) -> (Option<i32>, Value) {
    let out = electd(&[
        "status",
        "--config",
        c.config.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status --format json is not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v)
}

fn wait_http(c: &Cluster, id: u32) {
    let start = Instant::now();
    while c.status(id).is_none() {
        assert!(start.elapsed() < WITHIN, "node {id} never answered /status");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn status_exits_0_only_when_every_answering_node_agrees() {
    let algos = [AlgorithmKind::Bully, AlgorithmKind::Raft];
    let mut c = Cluster::new("opsstatus", 3, &algos, &TIMING);

    // One node of three: Raft has no majority, so its group cannot agree; the two
    // others are reported unreachable.
    c.start(1);
    wait_http(&c, 1);
    let (code, v) = status_json(&c);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["agreed"], false);
    assert_eq!(v["answered"], 1);
    assert_eq!(v["unreachable"], serde_json::json!([2, 3]));
    let raft = v["algorithms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["algorithm"] == "raft")
        .expect("raft reported");
    assert_eq!(raft["agreed"], false, "{v:#}");
    let down = &v["nodes"].as_array().unwrap()[1];
    assert_eq!(down["reachable"], false);
    assert!(
        down["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{v:#}"
    );

    // All three: once the harness sees agreement, `status` says so too, with the same
    // leaders, and exits 0.
    c.start(2);
    c.start(3);
    let (leaders, _) = c
        .wait_agreement(WITHIN, |l| l.len() == algos.len())
        .expect("agreement");
    let start = Instant::now();
    let v = loop {
        let (code, v) = status_json(&c);
        if code == Some(0) {
            break v;
        }
        assert!(start.elapsed() < WITHIN, "status never exited 0: {v:#}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(v["agreed"], true);
    assert_eq!(v["answered"], 3);
    for a in v["algorithms"].as_array().unwrap() {
        let name = a["algorithm"].as_str().unwrap();
        assert_eq!(a["agreed"], true, "{v:#}");
        assert_eq!(a["nodes"].as_array().unwrap().len(), 3);
        assert_eq!(
            a["leader"].as_u64(),
            leaders.get(name).map(|&l| l as u64),
            "{name}: the harness saw {leaders:?}; status said {v:#}"
        );
        assert!(a["nodes"][0]["token"].as_u64().is_some(), "{v:#}");
    }
    // Bully: the highest id leads.
    assert_eq!(leaders["bully"], 3);

    let out = electd(&["status", "--config", c.config.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.starts_with("cluster opsstatus · 3 nodes · 3 answered"),
        "{table}"
    );
    assert!(
        table.contains("ALGORITHM") && table.contains("bully"),
        "{table}"
    );

    // Nobody answering is not agreement.
    c.kill(1);
    c.kill(2);
    c.kill(3);
    let (code, v) = status_json(&c);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["answered"], 0);
}

#[test]
fn status_errors_are_exit_1_and_usage_errors_exit_2() {
    let out = electd(&["status", "--config", "/nonexistent/electd.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/electd.toml"));
    let out = electd(&["status", "--config", "x.toml", "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Lines of a child's stdout, as they come.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Wait for a JSON line satisfying `want`; panics with everything seen after `within`.
fn wait_line(rx: &mpsc::Receiver<String>, within: Duration, want: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("watch printed a non-JSON line ({e}): {line}"));
                if want(&v) {
                    return;
                }
                seen.push(line);
            }
            Err(_) => panic!("not seen within {within:?}; got:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn watch_streams_leader_changes_cluster_wide() {
    let mut c = Cluster::new("opswatch", 3, &[AlgorithmKind::Bully], &TIMING);
    c.start_all();
    c.wait_agreement(WITHIN, |l| l.get("bully") == Some(&3))
        .expect("agreement on 3");
    let mut watch = electd_command(&["watch", "--format", "json", "--config"])
        .arg(&c.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electd watch");
    let rx = lines_of(&mut watch);
    let cluster_leader = |leader: u64| {
        move |v: &Value| {
            v["type"] == "cluster" && v["algorithm"] == "bully" && v["leader"] == leader
        }
    };
    wait_line(&rx, WITHIN, cluster_leader(3));
    // The leader dies: its stream closes, the survivors elect 2, watch reports both.
    c.kill(3);
    wait_line(&rx, WITHIN, |v| {
        v["type"] == "unreachable" && v["node"] == 3
    });
    wait_line(&rx, WITHIN, |v| {
        v["type"] == "leader" && v["leader"] == 2 && v["initial"] == false
    });
    wait_line(&rx, WITHIN, cluster_leader(2));
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn run_notifies_systemd_ready_reloading_and_stopping() {
    let mut c = Cluster::new("opsnotify", 1, &[AlgorithmKind::Bully], &TIMING);
    let sock_path = c.dir.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind the notify socket");
    sock.set_read_timeout(Some(WITHIN)).unwrap();
    c.start_with_env(1, &[("NOTIFY_SOCKET", sock_path.to_str().unwrap())]);
    let recv = || {
        let mut buf = [0u8; 256];
        let n = sock
            .recv(&mut buf)
            .expect("a notification within the deadline");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert_eq!(recv(), "READY=1");
    // Ready means bound: the HTTP API answers right away.
    assert!(c.status(1).is_some(), "READY=1 before /status answers");
    c.signal(1, libc::SIGHUP);
    assert_eq!(recv(), "RELOADING=1");
    assert_eq!(recv(), "READY=1");
    assert!(c.status(1).is_some(), "SIGHUP killed the node");
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| tx.send(recv()).unwrap());
        assert_eq!(c.terminate(1, WITHIN), Some(0));
    });
    assert_eq!(rx.recv().unwrap(), "STOPPING=1");
}

#[test]
fn an_insecure_node_survives_sighup_and_logs_json_lines() {
    let mut c = Cluster::new("opsjson", 1, &[AlgorithmKind::Bully], &TIMING);
    let text = std::fs::read_to_string(&c.config).unwrap();
    let insecure = text.replace("key_file = \"cluster.key\"", "insecure = true");
    assert_ne!(text, insecure, "the harness' config names its key file");
    std::fs::write(&c.config, insecure).unwrap();
    c.start_with_env(1, &[("ELECTD_LOG", "info"), ("ELECTD_LOG_FORMAT", "json")]);
    wait_http(&c, 1);
    let log = c.dir.join("node1.log");
    c.signal(1, libc::SIGHUP);
    // The SIGHUP is logged (no keys to reload) and the node keeps answering.
    let start = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("no keys to reload") {
            break text;
        }
        assert!(start.elapsed() < WITHIN, "no SIGHUP line in:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(c.status(1).is_some(), "SIGHUP killed an insecure node");
    // The process' CPU time is exported with sub-second resolution (a node that has just
    // started has used a fraction of a second, which whole seconds would show as 0).
    let metrics = c.metrics(1).expect("/metrics");
    let cpu = electd::http::client::metric_sum(&metrics, "process_cpu_seconds_total", &[]);
    assert!(
        cpu > 0.0 && cpu.fract() != 0.0,
        "process_cpu_seconds_total {cpu}"
    );
    let mut running = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            v["timestamp"].is_string() && v["level"].is_string(),
            "{line}"
        );
        if v["message"] == "electd running" {
            running = true;
            assert_eq!(v["level"], "INFO");
            assert_eq!(v["node"], 1, "fields are top-level keys: {line}");
        }
    }
    assert!(running, "no 'electd running' line in:\n{text}");
}
