//! `electd demo` end to end: real UDP nodes, the chaos loop takes leaders down and
//! brings them back, every algorithm fails over, and the process stops by itself
//! (`--duration`) with exit code 0. Output is not a terminal here, so the demo prints
//! one line per change.

use std::process::Stdio;
use std::time::{Duration, Instant};

/// The demo also writes a Prometheus file_sd file naming each node's HTTP address
/// with labels `cluster="demo"` and `node`, while it runs, and removes it at exit.
#[test]
fn demo_runs_chaos_and_stops_cleanly() {
    // Four nodes under chaos: no cluster test beside it.
    let _alone = crate::common::alone();
    let dir = crate::common::scratch("demo-sd");
    let sd = dir.join("electd-demo.json");
    let child = crate::common::electd_command(&[
        "demo",
        "--nodes",
        "4",
        "--duration",
        "6",
        "--chaos-every",
        "1",
        "--down-for",
        "0.5",
    ])
    .arg("--prometheus-file-sd")
    .arg(&sd)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run electd demo");
    // Its nodes' state files, in a directory of the temp dir named after its PID.
    let state = std::env::temp_dir().join(format!("electd-demo-{}", child.id()));
    let deadline = Instant::now() + Duration::from_secs(10);
    let written = loop {
        if let Ok(text) = std::fs::read_to_string(&sd) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no file_sd file at {}",
            sd.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        state.is_dir(),
        "no state directory at {} while the demo runs",
        state.display()
    );
    let out = child.wait_with_output().expect("demo output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("http://127.0.0.1:").count(), 4, "{stdout}");
    for kind in electd::contract::algorithm::AlgorithmKind::available() {
        assert!(
            stdout.contains(&format!("{kind}: failover to node")),
            "{kind} never failed over:\n{stdout}"
        );
    }
    assert!(stdout.contains("restarts (new incarnation)"), "{stdout}");
    assert!(stdout.contains("summary after"), "{stdout}");
    // No failover is quicker than its detection: a paused leader is missed a failure
    // timeout (less a heartbeat) after its last heartbeat at the soonest, Raft's after
    // the election timeout's lower bound. (The demo stamped the take-down before
    // awaiting the pause, and at 64 nodes printed "failover … in 0 ms".)
    let t = electd::testkit::procs::ClusterTiming::failover().timing();
    let soonest = t
        .failure_timeout
        .min(t.election_timeout_min)
        .saturating_sub(t.heartbeat);
    for line in stdout.lines().filter(|l| l.contains(": failover to node")) {
        let ms: f64 = line
            .rsplit(" in ")
            .next()
            .and_then(|r| r.trim_end_matches(" ms").trim().parse().ok())
            .unwrap_or_else(|| panic!("no time in {line:?}"));
        assert!(
            ms >= soonest.as_secs_f64() * 1e3,
            "{line:?}: sooner than a detection ({soonest:?})"
        );
    }
    let groups: serde_json::Value = serde_json::from_str(&written).expect("file_sd is JSON");
    let groups = groups.as_array().expect("a list of target groups");
    assert_eq!(groups.len(), 4, "{written}");
    for (i, g) in groups.iter().enumerate() {
        let target = g["targets"][0].as_str().expect("a target");
        assert!(
            stdout.contains(&format!("http://{target}/status")),
            "{target} is not a node's HTTP address:\n{stdout}"
        );
        assert_eq!(g["labels"]["cluster"], "demo", "{written}");
        assert_eq!(g["labels"]["node"], (i + 1).to_string(), "{written}");
    }
    assert!(!sd.exists(), "the file_sd file outlives the demo");
    assert!(
        !state.exists(),
        "the demo's state files outlive it: {}",
        state.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The demo's output paths are checked before it starts: a trace that cannot be
/// written failed only when the demo stopped (its recording lost), and an existing
/// file given as the file_sd path was overwritten, then removed at the end.
#[test]
fn the_demo_checks_its_output_paths_before_it_starts() {
    let dir = crate::common::scratch("demo-paths");
    let missing = dir.join("no-such-dir").join("t.jsonl");
    let out = crate::common::electd_command(&["demo", "--duration", "30", "--trace"])
        .arg(&missing)
        .output()
        .expect("run electd demo");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot create the trace file"), "{err}");
    let theirs = dir.join("targets.json");
    std::fs::write(&theirs, "[]\n").unwrap();
    let out = crate::common::electd_command(&["demo", "--duration", "30", "--prometheus-file-sd"])
        .arg(&theirs)
        .output()
        .expect("run electd demo");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "[]\n",
        "untouched"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGTERM (kill, `timeout`, systemd, `docker stop`) ends the demo as Ctrl-C does:
/// exit 0, the trace written, the file_sd file and the state directory removed. It
/// handled SIGINT alone: SIGTERM left both behind, exit 143, no trace (the audit).
#[test]
fn sigterm_stops_the_demo_as_ctrl_c_does() {
    let _alone = crate::common::alone();
    let dir = crate::common::scratch("demo-term");
    let sd = dir.join("sd.json");
    let trace = dir.join("demo.jsonl");
    let mut child = crate::common::electd_command(&["demo", "--nodes", "3", "--duration", "120"])
        .arg("--prometheus-file-sd")
        .arg(&sd)
        .arg("--trace")
        .arg(&trace)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run electd demo");
    let state = std::env::temp_dir().join(format!("electd-demo-{}", child.id()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sd.exists() {
        assert!(Instant::now() < deadline, "no file_sd file");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the demo did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(status.success(), "{status:?}: {err}");
    assert!(!sd.exists(), "the file_sd file outlives a SIGTERM");
    assert!(!state.exists(), "the state directory outlives a SIGTERM");
    let written = std::fs::read_to_string(&trace).expect("the trace is written");
    assert!(written.lines().count() > 1, "the trace holds records");
    let _ = std::fs::remove_dir_all(&dir);
}
