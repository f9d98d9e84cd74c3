//! Drain and undrain on real `electd run` processes over UDP (issue 18, item 3):
//! `electd drain` / `POST /admin/drain` makes the leader ineligible, it steps down and
//! the call returns once another node leads; `electd undrain` makes it eligible again
//! (Bully, which preempts, gives it the leadership back). Every wait is on a condition
//! with a deadline.

use crate::common::{run_electd, with_admin_token, Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind::{Bully, Raft};
use electd::http::client::http_request_within;
use std::time::Duration;

const TIMING: Timing = Timing::LOOPBACK;
const DEADLINE: Duration = Duration::from_secs(20);

/// Why node `id` is ineligible in group `algorithm` (empty: it may lead).
fn ineligible(c: &Cluster, id: u32, algorithm: &str) -> Vec<String> {
    c.ineligible(id, algorithm)
        .expect("the group shows its standing")
}

#[test]
fn a_drained_leader_hands_over_and_an_undrained_one_takes_back_where_it_preempts() {
    let mut c = Cluster::new("drain", 3, &[Bully, Raft], &TIMING);
    let token = with_admin_token(&c, "drain-test-token", "");
    let token_arg = token.to_str().unwrap().to_string();
    c.start_all();
    let (leaders, _) = c
        .wait_agreement(DEADLINE, |l| l.len() == 2 && l["bully"] == 3)
        .expect("startup");
    let url = |id: u32| format!("http://{}", c.http(id).unwrap());

    // Without the token: refused, nothing changes.
    let (ok, _, err) = run_electd(&["drain", "--algorithm", "bully", "--url", &url(3)]);
    assert!(!ok, "a drain without the token must fail");
    assert!(err.contains("401") || err.contains("token"), "{err}");
    assert!(ineligible(&c, 3, "bully").is_empty());

    // Bully: the CLI drains node 3; the call returns once node 2 leads.
    let (ok, out, err) = run_electd(&[
        "drain",
        "--algorithm",
        "bully",
        "--url",
        &url(3),
        "--token-file",
        &token_arg,
    ]);
    assert!(ok, "drain failed:\n{out}\n{err}\n{}", c.log(3));
    assert!(out.contains("bully") && out.contains("done"), "{out}");
    assert_eq!(ineligible(&c, 3, "bully"), vec!["drained".to_string()]);
    assert!(
        ineligible(&c, 3, "raft").is_empty(),
        "only bully was drained"
    );
    let (after, _) = c
        .wait_agreement(DEADLINE, |l| l.get("bully") == Some(&2))
        .expect("node 2 leads bully");
    assert_eq!(after["bully"], 2);

    // Raft: drain its leader through the HTTP API.
    let raft = leaders["raft"];
    let (code, body) = http_request_within(
        c.http(raft).unwrap(),
        "POST",
        "/admin/drain?algorithm=raft",
        Some("drain-test-token"),
        Duration::from_secs(1),
        DEADLINE,
    )
    .expect("an answer");
    assert_eq!(code, 200, "{body}\n{}", c.log(raft));
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["done"], true, "{body}");
    let new_raft = v["groups"][0]["leader"].as_u64().expect("a leader") as u32;
    assert_ne!(new_raft, raft, "{body}");
    c.wait_agreement(DEADLINE, |l| l.get("raft").is_some_and(|&r| r != raft))
        .expect("the cluster follows the new raft leader");

    // Undrain bully on node 3: preempt = true (the default), so it takes over again.
    let (ok, out, err) = run_electd(&[
        "undrain",
        "--algorithm",
        "bully",
        "--url",
        &url(3),
        "--token-file",
        &token_arg,
    ]);
    assert!(ok, "undrain failed:\n{out}\n{err}");
    assert!(ineligible(&c, 3, "bully").is_empty());
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .expect("node 3 leads bully again");
}
