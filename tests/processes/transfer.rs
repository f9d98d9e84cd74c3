//! Leadership transfer on real `electd run` processes over UDP (issue 18, item 3):
//! `electd transfer` / `POST /admin/transfer` hands the leadership to a chosen node,
//! which then leads with a higher token (Bully without preemption: HANDOFF; Raft:
//! TimeoutNow); refusals say why. Every wait is on a condition with a deadline.

use crate::common::{run_electd, with_admin_token, Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind::{Bully, Raft};
use electd::http::client::http_request_within;
use std::time::Duration;

const TIMING: Timing = Timing::LOOPBACK;
const DEADLINE: Duration = Duration::from_secs(20);
const TOKEN: &str = "transfer-test-token";

fn term(c: &Cluster, id: u32, algorithm: &str) -> u64 {
    c.group(id, algorithm)
        .and_then(|g| g["term"].as_u64())
        .expect("a term")
}

#[test]
fn leadership_goes_to_the_chosen_node_with_a_higher_token() {
    let mut c = Cluster::new("transfer", 3, &[Bully, Raft], &TIMING);
    let token = with_admin_token(&c, TOKEN, "[policy.bully]\npreempt = false\n");
    let token_arg = token.to_str().unwrap().to_string();
    c.start_all();
    let (leaders, _) = c
        .wait_agreement(DEADLINE, |l| l.len() == 2)
        .expect("startup");
    let url = |id: u32| format!("http://{}", c.http(id).unwrap());

    // Bully: from its leader to the lowest other node, with the CLI.
    let old = leaders["bully"];
    let to = (1..=3).find(|&i| i != old).unwrap();
    let before = term(&c, old, "bully");
    // Asked at a node that does not lead: refused, with the reason.
    let (ok, _, err) = run_electd(&[
        "transfer",
        "--algorithm",
        "bully",
        "--to",
        &old.to_string(),
        "--url",
        &url(to),
        "--token-file",
        &token_arg,
    ]);
    assert!(!ok);
    assert!(err.contains("does not lead"), "{err}");
    let (ok, out, err) = run_electd(&[
        "transfer",
        "--algorithm",
        "bully",
        "--to",
        &to.to_string(),
        "--url",
        &url(old),
        "--token-file",
        &token_arg,
    ]);
    assert!(ok, "transfer failed:\n{out}\n{err}\n{}", c.log(old));
    assert!(out.contains("transferred"), "{out}");
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&to))
        .expect("the target leads bully");
    assert!(term(&c, to, "bully") > before, "the token must grow");

    // Raft: through the HTTP API, to a follower.
    let raft = leaders["raft"];
    let target = (1..=3).find(|&i| i != raft).unwrap();
    let before = term(&c, raft, "raft");
    let post = |path: &str| {
        http_request_within(
            c.http(raft).unwrap(),
            "POST",
            path,
            Some(TOKEN),
            Duration::from_secs(1),
            DEADLINE,
        )
        .expect("an answer")
    };
    let (code, body) = post("/admin/transfer?algorithm=raft&to=99");
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("not on the roster"), "{body}");
    let (code, body) = post(&format!("/admin/transfer?algorithm=raft&to={target}"));
    assert_eq!(code, 200, "{body}\n{}", c.log(raft));
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["done"], true, "{body}");
    assert_eq!(v["leader"].as_u64(), Some(u64::from(target)), "{body}");
    assert!(v["term"].as_u64().unwrap() > before, "{body}");
    c.wait_agreement(DEADLINE, |l| l.get("raft") == Some(&target))
        .expect("the cluster follows the raft target");
}
