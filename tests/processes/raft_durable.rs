//! Raft's persistent state on real processes (Ongaro & Ousterhout 2014, Figure 2:
//! currentTerm and votedFor are written to stable storage before answering). A node
//! killed with SIGKILL comes back with the term it had, so it cannot vote twice in a
//! term it already voted in.

use crate::common::{Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind;
use std::time::{Duration, Instant};

const TIMING: Timing = Timing::LOOPBACK;

fn raft_term(c: &Cluster, id: u32) -> Option<u64> {
    c.group(id, "raft")?["term"].as_u64()
}

#[test]
fn term_and_vote_survive_sigkill() {
    let mut c = Cluster::new("raft-durable", 3, &[AlgorithmKind::Raft], &TIMING);
    c.append_config("[raft]\nstate_file = \"raft-{node}.state\"\n");
    c.start_all();
    let (leaders, _) = c
        .wait_agreement(Duration::from_secs(15), |l| l.contains_key("raft"))
        .unwrap_or_else(|e| panic!("no raft leader: {e}\n{}", c.log(1)));
    let leader = leaders["raft"];
    let follower = c
        .ids()
        .into_iter()
        .find(|&i| i != leader)
        .expect("a follower");
    let term = raft_term(&c, follower).expect("follower term");
    assert!(term >= 1);

    let file = c.dir.join(format!("raft-{follower}.state"));
    let stored = electd::daemon::durable::load(&file).expect("state file written and intact");
    let raft = stored
        .iter()
        .find(|(k, _)| *k == AlgorithmKind::Raft)
        .map(|(_, d)| d.term);
    assert_eq!(raft, Some(term), "{stored:?}");

    // Kill everyone and bring the follower back alone: it hears nobody, and pre-vote
    // keeps a lone node from raising its term, so the term it shows can only come
    // from its state file.
    for id in c.ids() {
        c.kill(id);
    }
    c.start(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    let restored = loop {
        if let Some(t) = raft_term(&c, follower) {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "restarted node never answered /status"
        );
        std::thread::sleep(Duration::from_millis(5)); // poll interval, not a synchronisation
    };
    assert!(
        restored >= term,
        "restarted with term {restored}, had {term}"
    );

    // A corrupt state file is a clear startup error, not a silent reset.
    c.kill(follower);
    std::fs::write(&file, "{not json").unwrap();
    c.start(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.log(follower).contains("not a state file of electd") {
        assert!(
            Instant::now() < deadline,
            "no clear error:\n{}",
            c.log(follower)
        );
        std::thread::sleep(Duration::from_millis(5)); // poll interval
    }
}
