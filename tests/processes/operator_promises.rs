//! Operator failures of issue 28 (§3, items 1, 2, 4, 7, 8, 11 and 12) on real
//! `electd run` processes over UDP on 127.0.0.1: a drain survives a restart, a
//! `clock_drift` that leaves no lease is refused, the client's `--timeout` bounds the
//! whole request, a state file holding a term out of reach is refused or reported, a
//! transfer to a drained node is refused by it, and `electd transfer` without
//! `--algorithm` hands over every group the node leads. Every wait is on a condition
//! with a deadline; every process is stopped by its PID.

use crate::common::{
    counter_sum, electd_command, run_electd, scratch, wait_for, with_admin_token, Cluster, Timing,
    DEADLINE,
};
use electd::contract::algorithm::AlgorithmKind::{Bully, Raft};
use electd::http::client::http_request;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

const TIMING: Timing = Timing::LOOPBACK;
const TOKEN: &str = "operator-promises-token";

/// Node `id`'s view of `algorithm`: (leader, electing, ineligible reasons).
fn view(c: &Cluster, id: u32, algorithm: &str) -> Option<(Option<u64>, bool, Vec<String>)> {
    let g = c.group(id, algorithm)?;
    let why = crate::common::cluster::ineligible(&g)?;
    Some((g["leader"].as_u64(), g["electing"] == true, why))
}

fn url(c: &Cluster, id: u32) -> String {
    format!("http://{}", c.http(id).expect("a node"))
}

/// Item 1 (and 11's metric): a drain is written to the state file and holds across a
/// restart — the restarted node starts drained and does not take the leadership back,
/// though it outranks the leader and Bully preempts — until undrain, which is kept
/// across the next restart too.
#[test]
fn a_drain_survives_a_restart_until_undrain() {
    let mut c = Cluster::new("drain-restart", 3, &[Bully, Raft], &TIMING);
    let token = with_admin_token(&c, TOKEN, "");
    let token = token.to_str().unwrap().to_string();
    c.start_all();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .expect("node 3 leads bully");
    let (ok, out, err) = run_electd(&["drain", "--url", &url(&c, 3), "--token-file", &token]);
    assert!(ok, "drain failed:\n{out}\n{err}\n{}", c.log(3));
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&2))
        .expect("node 2 leads bully");
    let drained_before_restart = c.metric(3, "electd_drained", &[("algorithm", "bully")]);

    // A restart (SIGTERM, then the same command and state file).
    assert_eq!(c.terminate(3, DEADLINE), Some(0), "{}", c.log(3));
    c.start(3);
    let (leader, _, why) = wait_for("node 3 to know the bully leader again", || {
        view(&c, 3, "bully").filter(|v| v.0.is_some() && !v.1)
    });
    assert_eq!(
        leader,
        Some(2),
        "the restarted node took the leadership back:\n{}",
        c.log(3)
    );
    assert_eq!(why, vec!["drained".to_string()], "{}", c.log(3));
    let (_, _, raft_why) = view(&c, 3, "raft").expect("raft");
    assert_eq!(raft_why, vec!["drained".to_string()]);
    assert_eq!(drained_before_restart, Some(1.0));
    assert_eq!(
        c.metric(3, "electd_drained", &[("algorithm", "bully")]),
        Some(1.0)
    );
    assert!(c.log(3).contains("drained"), "{}", c.log(3));
    // Not campaigning either: a whole failure timeout and more later, node 2 leads on
    // and node 3 has won nothing since its start.
    let settle = Duration::from_millis(3 * TIMING.failure_ms);
    let start = Instant::now();
    while start.elapsed() < settle {
        let l = c.agreement();
        assert!(
            l.as_ref().map_or(true, |l| l.get("bully") == Some(&2)),
            "{l:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        c.metric(3, "electd_elections_won_total", &[("algorithm", "bully")]),
        Some(0.0)
    );

    // Undrain: eligible, takes bully back (preempt), and that too survives a restart.
    let (ok, out, err) = run_electd(&["undrain", "--url", &url(&c, 3), "--token-file", &token]);
    assert!(ok, "undrain failed:\n{out}\n{err}");
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .expect("node 3 leads bully again");
    assert_eq!(c.terminate(3, DEADLINE), Some(0), "{}", c.log(3));
    c.start(3);
    wait_for(
        "node 3 eligible and leading after the second restart",
        || view(&c, 3, "bully").filter(|v| v.0 == Some(3) && v.2.is_empty()),
    );
    assert_eq!(
        c.metric(3, "electd_drained", &[("algorithm", "bully")]),
        Some(0.0)
    );
    // Item 11: nodes 1 and 2, never drained, export the series at 0 (from the start:
    // nothing ever set it there).
    for id in 1..=2 {
        let text = c.metrics(id).expect("metrics");
        for alg in ["bully", "raft"] {
            let series = format!("electd_drained{{algorithm=\"{alg}\"");
            assert!(text.contains(&series), "node {id}: no {series}:\n{text}");
            assert_eq!(
                counter_sum(&text, "electd_drained", &[("algorithm", alg)]),
                0.0
            );
        }
    }
}

/// Item 8: Bully with `preempt = false`, node 2 drained, `electd transfer --to 2` at
/// the leader: node 2 refuses, the request answers 409 with why, and node 3 leads on
/// (no failover anywhere; before, the leader fell silent and node 1 was elected).
#[test]
fn a_transfer_to_a_drained_node_is_refused_and_the_leader_leads_on() {
    let mut c = Cluster::new("transfer-drained", 3, &[Bully], &TIMING);
    let token = with_admin_token(&c, TOKEN, "[policy]\npreempt = false\n");
    let token = token.to_str().unwrap().to_string();
    c.start_all();
    // Without preemption the first leader may be any node: make it node 3's way.
    let (leaders, _) = c
        .wait_agreement(DEADLINE, |l| l.contains_key("bully"))
        .expect("a bully leader");
    let leader = leaders["bully"];
    let target = (1..=3).find(|&i| i != leader).unwrap();
    let other = (1..=3).find(|&i| i != leader && i != target).unwrap();
    let (ok, out, err) = run_electd(&["drain", "--url", &url(&c, target), "--token-file", &token]);
    assert!(ok, "drain of a follower:\n{out}\n{err}");
    let changes = |c: &Cluster, id| {
        c.metric(id, "electd_leader_changes_total", &[("algorithm", "bully")])
            .expect("metrics")
    };
    let before = [changes(&c, other), changes(&c, target)];
    let started = Instant::now();
    let (ok, out, err) = run_electd(&[
        "transfer",
        "--algorithm",
        "bully",
        "--to",
        &target.to_string(),
        "--url",
        &url(&c, leader),
        "--token-file",
        &token,
    ]);
    let took = started.elapsed();
    assert!(!ok, "a transfer to a drained node must fail:\n{out}");
    assert!(
        err.contains("409") && err.contains(&format!("node {target} refused the hand-over")),
        "{out}\n{err}"
    );
    // Refused in a round trip, not after the hand-over bound.
    assert!(
        took < Duration::from_millis(TIMING.failure_ms),
        "{took:?}: {err}"
    );
    // Two failure timeouts later nobody has changed leader.
    let watch = Duration::from_millis(2 * TIMING.failure_ms);
    let start = Instant::now();
    while start.elapsed() < watch {
        let l = c.agreement();
        assert!(
            l.as_ref().map_or(true, |l| l.get("bully") == Some(&leader)),
            "{l:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        [changes(&c, other), changes(&c, target)],
        before,
        "no leader change anywhere"
    );
    let (_, _, why) = view(&c, leader, "bully").expect("status");
    assert!(why.is_empty(), "the leader is eligible again: {why:?}");
}

/// Item 12: `electd transfer --to N` without `--algorithm` hands over every group the
/// node leads, as its `--help` says (before: the daemon answered 400).
#[test]
fn transfer_without_algorithm_hands_over_every_group_the_node_leads() {
    let mut c = Cluster::new("transfer-all", 3, &[Bully, Raft], &TIMING);
    let token = with_admin_token(&c, TOKEN, "[policy]\npreempt = false\n");
    let token = token.to_str().unwrap().to_string();
    c.start_all();
    let (leaders, _) = c
        .wait_agreement(DEADLINE, |l| l.len() == 2)
        .expect("both groups lead");
    let from = leaders["bully"];
    let to = (1..=3).find(|&i| i != from).unwrap();
    let led: Vec<&str> = leaders
        .iter()
        .filter(|(_, &l)| l == from)
        .map(|(a, _)| a.as_str())
        .collect();
    let (ok, out, err) = run_electd(&[
        "transfer",
        "--to",
        &to.to_string(),
        "--url",
        &url(&c, from),
        "--token-file",
        &token,
    ]);
    assert!(ok, "transfer failed:\n{out}\n{err}\n{}", c.log(from));
    for alg in &led {
        assert!(
            out.lines().any(|l| l.contains(alg) && l.contains("done")),
            "{alg}: {out}"
        );
    }
    c.wait_agreement(DEADLINE, |l| led.iter().all(|a| l.get(*a) == Some(&to)))
        .expect("the target leads every group the old leader led");
    // Asked at a node that leads nothing: refused with the reason.
    let now = c.agreement().expect("agreement");
    if let Some(idle) = (1..=3).find(|i| now.values().all(|l| l != i)) {
        let (ok, _, err) = run_electd(&[
            "transfer",
            "--to",
            &to.to_string(),
            "--url",
            &url(&c, idle),
            "--token-file",
            &token,
        ]);
        assert!(!ok && err.contains("leads no group"), "{err}");
    }
    // And the help says what it does.
    let (help_ok, help, _) = run_electd(&["transfer", "--help"]);
    assert!(
        help_ok && help.contains("every group the node leads"),
        "{help}"
    );
}

/// An endpoint that answers one byte every 10 ms (each read is quick, the answer never
/// ends) to each connection, for at most `max` connections; stops writing to one once
/// the client has gone.
fn trickler(max: usize) -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..max {
            let Ok((mut c, _)) = l.accept() else { return };
            std::thread::spawn(move || {
                let mut req = [0u8; 2048];
                let _ = c.read(&mut req);
                let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{";
                let body = head.iter().chain(std::iter::repeat(&b' ')).take(3_000);
                for b in body {
                    if c.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        }
    });
    addr
}

/// Run electd with `args`; wait at most `within` for it to exit (killed by its PID
/// otherwise). Returns (exited by itself, success, stderr).
fn run_bounded(args: &[&str], within: Duration) -> (bool, bool, String) {
    let mut child = electd_command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn electd");
    let deadline = Instant::now() + within;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.is_some(), status.is_some_and(|s| s.success()), err)
}

/// Item 4: `--timeout` of `status`, `drain`, `undrain` and `transfer` bounds the whole
/// request. Against an endpoint trickling one byte every 10 ms (30 s for its answer),
/// each command gives up near its 500 ms and exits 1 saying so; before, each read
/// was bounded and the command hung as long as the bytes kept coming.
#[test]
fn the_client_timeout_bounds_the_whole_request() {
    let dir = scratch("trickle");
    let token = dir.join("admin.token");
    std::fs::write(&token, TOKEN).unwrap();
    let token = token.to_str().unwrap().to_string();
    let roster = dir.join("c.toml");
    let status_addr = trickler(1);
    std::fs::write(
        &roster,
        format!("cluster = \"t\"\n[[peer]]\nid = 1\nhttp = \"{status_addr}\"\n"),
    )
    .unwrap();
    let admin = |route: &'static str| -> Vec<String> {
        let addr = trickler(1);
        let mut v = vec![
            route.to_string(),
            "--url".into(),
            format!("http://{addr}"),
            "--token-file".into(),
            token.clone(),
            "--timeout".into(),
            "500ms".into(),
        ];
        if route == "transfer" {
            v.extend(["--to".into(), "2".into()]);
        }
        v
    };
    let mut runs: Vec<(String, Vec<String>)> = vec![(
        "status".into(),
        vec![
            "status".into(),
            "--config".into(),
            roster.to_str().unwrap().into(),
            "--timeout".into(),
            "500ms".into(),
        ],
    )];
    for route in ["drain", "undrain", "transfer"] {
        runs.push((route.into(), admin(route)));
    }
    // Far below the trickle's 30 s, generous for a loaded machine.
    let within = Duration::from_secs(8);
    for (name, args) in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let start = Instant::now();
        let (exited, ok, err) = run_bounded(&args, within);
        assert!(
            exited,
            "electd {name} --timeout 500ms still running after {within:?} against a trickling endpoint"
        );
        assert!(!ok, "electd {name}: no answer must be a failure: {err}");
        assert!(start.elapsed() >= Duration::from_millis(500), "{name}");
        if name != "status" {
            assert!(
                err.contains("no complete answer within 500ms"),
                "{name}: {err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 2: a `clock_drift` at or above the lease base is refused by `config check` and
/// by `run`, naming the key (before: accepted, and no leader ever held a lease).
#[test]
fn a_clock_drift_that_leaves_no_lease_is_refused_at_check_and_run() {
    let c = Cluster::new("drift", 3, &[Raft], &TIMING);
    // Raft's lease base is election_timeout min; the default timing's is below 1 s.
    c.append_config("[state]\nephemeral = true\n\n[lease]\nclock_drift = \"10s\"\n");
    let config = c.config.to_str().unwrap().to_string();
    let (ok, out, err) = run_electd(&["config", "check", "--config", &config, "--node-id", "1"]);
    assert!(!ok, "config check must refuse it:\n{out}");
    let said = format!("{out}{err}");
    assert!(
        said.contains("lease.clock_drift") && said.contains("no leader would ever hold a lease"),
        "{said}"
    );
    let (exited, ok, err) = run_bounded(
        &["run", "--config", &config, "--node-id", "1"],
        Duration::from_secs(10),
    );
    assert!(exited && !ok, "run must refuse it: {err}");
    assert!(err.contains("lease.clock_drift"), "{err}");
}

/// Write node `id`'s state file (the format of earlier versions, still read) holding
/// `term` for raft.
fn write_term(c: &Cluster, id: u32, term: u64) {
    std::fs::write(
        c.dir.join(format!("{id}.state")),
        format!(r#"{{"version":1,"groups":{{"raft":{{"term":{term},"voted_for":null}}}}}}"#),
    )
    .unwrap();
}

/// Item 7: a state file holding a term no fencing token carries (2^40, u64::MAX) is
/// refused at start with the file, group and term named, before the node says it runs
/// or tells systemd it is ready; one below 2^32 but out of
/// the peers' reach (they drop datagrams more than 2^31 ahead) starts, and `/healthz`
/// says so (`term`) instead of answering 200 for a node that takes part in nothing.
#[test]
fn a_state_file_term_out_of_reach_is_refused_or_reported() {
    let mut c = Cluster::new("huge-term", 3, &[Raft], &TIMING);
    let notify = c.dir.join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&notify).expect("bind the notify socket");
    sock.set_nonblocking(true).unwrap();
    for term in [1u64 << 40, u64::MAX] {
        write_term(&c, 1, term);
        c.start_with_env(
            1,
            &[
                ("NOTIFY_SOCKET", notify.to_str().unwrap()),
                ("ELECTD_LOG", "info"),
            ],
        );
        let status = c.wait_exit(1, DEADLINE);
        assert!(
            status.is_some_and(|s| !s.success()),
            "term {term} must be refused:\n{}",
            c.log(1)
        );
        let log = c.log(1);
        assert!(
            log.contains(&format!("term {term}")) && log.contains("1.state"),
            "{log}"
        );
        assert!(!log.contains("electd running"), "said it runs:\n{log}");
        let mut buf = [0u8; 64];
        let sent = sock.recv(&mut buf).map(|n| buf[..n].to_vec());
        assert!(
            sent.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
            "notified systemd before refusing its state file: {sent:?}"
        );
    }
    let far = (1u64 << 31) + 1_000;
    write_term(&c, 1, far);
    c.start_all();
    let http = c.http(1).unwrap();
    let body = wait_for("node 1's /healthz to report the term", || {
        let (code, body) = http_request(http, "GET", "/healthz", None)?;
        (code == 503 && body.contains("\"term\"")).then_some(body)
    });
    assert!(body.contains(&far.to_string()), "{body}");
    assert_eq!(
        c.metric(1, "electd_health", &[("check", "term")]),
        Some(0.0)
    );
    // The peers are healthy: their terms are their own. (Node 1 answering says nothing
    // of node 2's HTTP server: wait for its /metrics, or a loaded machine reads `None`.)
    let peer = wait_for("node 2's /metrics", || {
        c.metric(2, "electd_health", &[("check", "term")])
    });
    assert_eq!(peer, 1.0, "{}", c.log(2));
}
