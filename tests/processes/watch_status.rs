//! `electd watch` and `electd status` say what is wrong with a node (issue 28, §3 item
//! 10): watch reports a stopped node within three keep-alive periods, with a message a
//! person can act on (not EAGAIN), and never a quiet healthy one; status tells a
//! refused connection, a silent node and an invalid reply apart.

use crate::common::{electd_command, scratch, Cluster, Timing, DEADLINE};
use electd::contract::algorithm::AlgorithmKind::Bully;
use electd::http::WATCH_KEEP_ALIVE;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `electd watch`'s idle limit: three keep-alive periods (src/cli/status.rs).
fn idle() -> Duration {
    3 * WATCH_KEEP_ALIVE
}

/// The next JSON line of `lines` of type `kind`, with its arrival, within `within`.
fn next_of(
    lines: &mpsc::Receiver<(Instant, serde_json::Value)>,
    kind: &str,
    within: Duration,
) -> Option<(Instant, serde_json::Value)> {
    let end = Instant::now() + within;
    loop {
        let left = end.checked_duration_since(Instant::now())?;
        match lines.recv_timeout(left) {
            Ok((at, v)) if v["type"] == kind => return Some((at, v)),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

#[test]
fn watch_reports_a_stopped_node_within_three_keep_alives_and_a_quiet_one_never() {
    let mut c = Cluster::new("watch-stop", 1, &[Bully], &Timing::LOOPBACK);
    c.start(1);
    assert!(c.wait_http(1, DEADLINE), "{}", c.log(1));
    let mut watch = electd_command(&["watch", "--format", "json", "--duration", "60s", "--config"])
        .arg(&c.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electd watch");
    let out = watch.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if tx.send((Instant::now(), v)).is_err() {
                    return;
                }
            }
        }
    });
    let connected = next_of(&lines, "connected", DEADLINE);
    assert!(connected.is_some(), "watch never connected");
    // A quiet, healthy node: nothing happens for longer than the idle limit, and it
    // is not called unreachable (its keep-alive comes every period).
    let quiet = idle() + 2 * WATCH_KEEP_ALIVE;
    if let Some((_, v)) = next_of(&lines, "unreachable", quiet) {
        panic!("a healthy quiet node was reported: {v}");
    }
    // SIGSTOP: the kernel still accepts and holds the connection; only silence tells.
    c.signal(1, libc::SIGSTOP);
    let stopped = Instant::now();
    let report = next_of(&lines, "unreachable", idle() + Duration::from_secs(5));
    c.signal(1, libc::SIGCONT);
    let (at, v) = report.expect("the stopped node was not reported");
    let took = at - stopped;
    assert!(
        took <= idle() + Duration::from_secs(2),
        "reported {took:?} after SIGSTOP (idle limit {:?})",
        idle()
    );
    let why = v["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("silent for") && why.contains("stopped, hung or cut off"),
        "{why}"
    );
    assert!(!why.contains("os error"), "{why}");
    // Back after SIGCONT.
    assert!(
        next_of(&lines, "connected", DEADLINE).is_some(),
        "not reconnected after SIGCONT"
    );
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(c.terminate(1, DEADLINE), Some(0), "{}", c.log(1));
}

#[test]
fn status_tells_refused_silent_and_invalid_apart() {
    let dir = scratch("status-errors");
    // 1: nothing listens (a port that was just free).
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // 2: listens (the kernel accepts) but never answers, like a stopped process.
    let silent_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = silent_listener.local_addr().unwrap();
    // 3: answers with something that is not HTTP.
    let garbage_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage = garbage_listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        if let Ok((mut s, _)) = garbage_listener.accept() {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n\r\nnot http at all");
        }
    });
    let config = dir.join("c.toml");
    std::fs::write(
        &config,
        format!(
            "cluster = \"c\"\n[[peer]]\nid = 1\nhttp = \"{refused}\"\n[[peer]]\nid = 2\n\
             http = \"{silent}\"\n[[peer]]\nid = 3\nhttp = \"{garbage}\"\n"
        ),
    )
    .unwrap();
    let out = electd_command(&[
        "status",
        "--format",
        "json",
        "--timeout",
        "500ms",
        "--config",
    ])
    .arg(&config)
    .output()
    .expect("run electd status");
    let _ = server.join();
    drop(silent_listener);
    assert_eq!(out.status.code(), Some(1), "nobody answered");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let error = |id: u64| -> String {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .and_then(|n| n["error"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (e1, e2, e3) = (error(1), error(2), error(3));
    assert!(e1.contains("connection refused"), "{e1}");
    assert!(
        e2.contains("no complete answer") && e2.contains("500ms"),
        "{e2}"
    );
    assert!(e3.contains("invalid reply"), "{e3}");
    let _ = std::fs::remove_dir_all(&dir);
}
