//! `electd demo` end to end: real UDP nodes, the chaos loop takes leaders down and
//! brings them back, every algorithm fails over, and the process stops by itself
//! (`--duration`) with exit code 0. Output is not a terminal here, so the demo prints
//! one line per change.

use std::process::Command;

#[test]
fn demo_runs_chaos_and_stops_cleanly() {
    let out = Command::new(env!("CARGO_BIN_EXE_electd"))
        .args([
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
        .output()
        .expect("run electd demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("http://127.0.0.1:").count(), 4, "{stdout}");
    for kind in electd::algorithm::AlgorithmKind::available() {
        assert!(
            stdout.contains(&format!("{kind}: failover to node")),
            "{kind} never failed over:\n{stdout}"
        );
    }
    assert!(stdout.contains("restarts (new incarnation)"), "{stdout}");
    assert!(stdout.contains("summary after"), "{stdout}");
}
