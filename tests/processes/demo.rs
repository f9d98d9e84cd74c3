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
