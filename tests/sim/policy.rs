//! The policy layer on the seeded simulator: priorities (0 = never leader), no
//! preemption and `preempt_delay`, for every algorithm that implements them.

use electd::config::Config;
use electd::contract::algorithm::{AlgorithmKind, Options};
use electd::contract::policy::{Policy, Preempt};
use electd::sim::{Sim, SimConfig};
use electd::NodeId;
use std::time::Duration;

const SETTLE: Duration = Duration::from_secs(10);

fn sim(kind: AlgorithmKind, n: usize, seed: u64, policy: Policy) -> Sim {
    let mut cfg = SimConfig::new(kind, n, seed);
    cfg.options = Options {
        policy,
        ..Options::default()
    };
    Sim::new(cfg).expect("sim")
}

fn with_priorities(pairs: &[(NodeId, u8)]) -> Policy {
    Policy {
        priority: pairs.iter().copied().collect(),
        ..Policy::default()
    }
}

fn start_all(s: &mut Sim) {
    for id in s.ids().to_vec() {
        s.start(id, true).expect("start");
    }
}

/// Run until every live node agrees on one leader (bounded); the leader.
fn settle(s: &mut Sim, what: &str) -> NodeId {
    assert!(s.run_until_settled(SETTLE), "{what}: did not settle");
    s.agreement(s.config().algorithms[0])
        .unwrap_or_else(|| panic!("{what}: no agreement"))
}

/// The node leading of `live` ranked highest by `policy` among eligible ones.
fn expected_winner(policy: &Policy, live: &[NodeId]) -> Option<NodeId> {
    policy.best(live.iter().copied().filter(|&id| policy.eligible(id)))
}

/// The algorithms whose rule is "the highest-ranked live node leads".
fn ranked_kinds() -> Vec<AlgorithmKind> {
    AlgorithmKind::ALL
        .into_iter()
        .filter(|k| k.elects_highest_id())
        .collect()
}

#[test]
fn the_highest_priority_leads_not_the_highest_id() {
    // Node 2 has the highest priority, node 5 (highest id) is a never-leader.
    let policy = with_priorities(&[(2, 200), (5, 0)]);
    for kind in ranked_kinds() {
        for seed in 0..4 {
            let mut s = sim(kind, 5, seed, policy.clone());
            start_all(&mut s);
            let want = expected_winner(&policy, &s.live_ids());
            assert_eq!(want, Some(2));
            assert_eq!(Some(settle(&mut s, &format!("{kind} seed {seed}"))), want);
            // Crash the leader: the next by rank is 4 (5 never leads).
            s.crash(2).expect("crash");
            let want = expected_winner(&policy, &s.live_ids());
            assert_eq!(want, Some(4));
            s.detect(4).ok();
            let got = settle(&mut s, &format!("{kind} seed {seed} after crash"));
            assert_eq!(Some(got), want, "{kind} seed {seed}");
        }
    }
}

#[test]
fn a_never_leader_never_leads_even_when_it_is_the_last_one_left() {
    let policy = with_priorities(&[(3, 0)]);
    for kind in AlgorithmKind::ALL {
        for seed in 0..3 {
            let mut s = sim(kind, 3, seed, policy.clone());
            start_all(&mut s);
            let first = settle(&mut s, &format!("{kind} seed {seed}"));
            assert_ne!(first, 3, "{kind} seed {seed}");
            // Take down every eligible node: the never-leader is left alone.
            s.crash(1).expect("crash");
            s.crash(2).expect("crash");
            s.run_for(Duration::from_secs(3));
            let n3 = s.node(3).expect("node 3 alive");
            assert_ne!(n3.leader(kind), Some(3), "{kind} seed {seed}");
            // An eligible node returns: it leads, the never-leader follows it.
            s.start(1, true).expect("restart");
            assert_eq!(settle(&mut s, &format!("{kind} seed {seed} back")), 1);
        }
    }
}

fn term_of(s: &Sim, id: NodeId, kind: AlgorithmKind) -> u64 {
    s.node(id)
        .and_then(|n| n.group_status(kind))
        .map(|g| g.term)
        .expect("live node")
}

fn no_preempt(delay: Option<Duration>) -> Policy {
    Policy {
        preempt: match delay {
            None => Preempt {
                preempt: false,
                delay: Duration::ZERO,
            },
            Some(delay) => Preempt {
                preempt: true,
                delay,
            },
        },
        ..Policy::default()
    }
}

/// The kinds that implement `preempt = false` / `preempt_delay`, Raft excepted (it
/// never preempts whatever the switch; see its own test).
fn preempt_kinds() -> Vec<AlgorithmKind> {
    AlgorithmKind::ALL
        .into_iter()
        .filter(|k| k.info().policy_preempt && *k != AlgorithmKind::Raft)
        .collect()
}

#[test]
fn without_preemption_the_returning_top_node_follows_the_healthy_leader() {
    for kind in preempt_kinds() {
        for seed in 0..4 {
            let what = format!("{kind} seed {seed}");
            let mut s = sim(kind, 5, seed, no_preempt(None));
            start_all(&mut s);
            assert_eq!(settle(&mut s, &what), 5, "{what}");
            s.crash(5).expect("crash");
            s.detect(4).ok();
            assert_eq!(settle(&mut s, &what), 4, "{what}");
            let term = term_of(&s, 4, kind);
            // The top node comes back and calls an election, as a restarted node does.
            s.start(5, true).expect("restart");
            assert_eq!(settle(&mut s, &what), 4, "{what}: 5 took over");
            // And stays behind it: no election later either.
            s.run_for(Duration::from_secs(5));
            assert_eq!(s.agreement(kind), Some(4), "{what}: 5 took over later");
            assert_eq!(term_of(&s, 4, kind), term, "{what}: new term");
            // When the leader fails, the top node leads again.
            s.crash(4).expect("crash");
            s.detect(5).ok();
            assert_eq!(settle(&mut s, &what), 5, "{what}");
        }
    }
}

#[test]
fn with_preempt_delay_the_top_node_takes_over_only_after_the_delay() {
    let delay = Duration::from_secs(2);
    for kind in preempt_kinds() {
        for seed in 0..4 {
            let what = format!("{kind} seed {seed}");
            let mut s = sim(kind, 5, seed, no_preempt(Some(delay)));
            start_all(&mut s);
            assert_eq!(settle(&mut s, &what), 5, "{what}");
            s.crash(5).expect("crash");
            s.detect(4).ok();
            assert_eq!(settle(&mut s, &what), 4, "{what}");
            s.start(5, true).expect("restart");
            let back = s.now();
            assert_eq!(settle(&mut s, &what), 4, "{what}: 5 took over at once");
            s.run_for(delay / 2);
            assert_eq!(s.agreement(kind), Some(4), "{what}: 5 took over early");
            // After the delay (plus one election) the top node leads.
            s.run_for(delay);
            assert_eq!(settle(&mut s, &what), 5, "{what}: 5 never took over");
            assert!(s.last_leader_change() >= back + delay, "{what}");
        }
    }
}

#[test]
fn raft_a_never_leader_never_stands() {
    let kind = AlgorithmKind::Raft;
    for seed in 0..8 {
        let what = format!("raft seed {seed}");
        let mut s = sim(kind, 5, seed, with_priorities(&[(5, 0)]));
        start_all(&mut s);
        // Crash two leaders in turn: three nodes stay (a majority), the never-leader
        // among them; every leader elected is an eligible node.
        for _ in 0..2 {
            let leader = settle(&mut s, &what);
            assert_ne!(leader, 5, "{what}");
            s.crash(leader).expect("crash");
        }
        let leader = settle(&mut s, &what);
        assert_ne!(leader, 5, "{what}");
        assert_eq!(s.live_ids().len(), 3);
    }
}

// ---- Configuration ----

fn config(name: &str, algorithms: &str, extra: &str, prio: [&str; 2]) -> Result<Config, String> {
    let dir = crate::common::scratch(&format!("policy-{name}"));
    let text = format!(
        "cluster = \"c\"\nalgorithms = [{algorithms}]\nnode_id = 2\n\n[security]\ninsecure = true\n\
         [state]\nephemeral = true\n\n{extra}\n\n\
         [[peer]]\nid = 1\naddr = \"127.0.0.1:7001\"\nhttp = \"127.0.0.1:8001\"\n{}\n\n\
         [[peer]]\nid = 2\naddr = \"127.0.0.1:7002\"\nhttp = \"127.0.0.1:8002\"\n{}\n",
        prio[0], prio[1]
    );
    let path = dir.join("electd.toml");
    std::fs::write(&path, text).expect("write");
    let r = Config::load(&path, Vec::new(), None).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[test]
fn config_without_policy_is_the_textbook() {
    let c = config("default", "\"bully\", \"ring\", \"raft\"", "", ["", ""]).expect("load");
    assert_eq!(c.options.policy, Policy::default());
    for kind in AlgorithmKind::ALL {
        assert!(c.options.policy.preempt_for(kind).is_textbook());
    }
}

#[test]
fn config_reads_priorities_and_policy_tables() {
    let c = config(
        "full",
        "\"bully\", \"raft\"",
        "[policy]\npreempt = false\n[policy.bully]\npreempt = true\npreempt_delay = \"30s\"",
        ["priority = 0", "priority = 250"],
    )
    .expect("load");
    let p = &c.options.policy;
    assert!(!p.eligible(1) && p.eligible(2) && p.outranks(2, 1));
    assert_eq!(
        p.preempt_for(AlgorithmKind::Bully).after(),
        Some(Duration::from_secs(30))
    );
    assert_eq!(p.preempt_for(AlgorithmKind::Raft).after(), None);
}

#[test]
fn config_errors_name_the_key() {
    let cases = [
        (
            "prio",
            "\"bully\"",
            "",
            ["priority = 300", ""],
            "peer[0].priority",
        ),
        (
            "nobody",
            "\"bully\"",
            "",
            ["priority = 0", "priority = 0"],
            "never leader",
        ),
        (
            "badkey",
            "\"bully\"",
            "[policy]\nweight = 1",
            ["", ""],
            "policy.weight",
        ),
        (
            "badalg",
            "\"bully\"",
            "[policy.paxos]\npreempt = false",
            ["", ""],
            "policy.paxos",
        ),
        (
            "delay",
            "\"bully\"",
            "[policy]\npreempt = false\npreempt_delay = \"5s\"",
            ["", ""],
            "preempt_delay needs preempt = true",
        ),
    ];
    for (name, algorithms, extra, prio, want) in cases {
        let err = config(name, algorithms, extra, prio).expect_err(name);
        assert!(err.contains(want), "{name}: {err}");
    }
    // Every algorithm implements the switches: no preemption for all is accepted.
    let all = "\"bully\", \"improved-bully\", \"ring\", \"lcr\", \"hs\", \"raft\"";
    config("all", all, "[policy]\npreempt = false", ["", ""]).expect("every algorithm");
}

// ---- Chaos ----

/// Under the full chaos campaign's faults (crashes, restarts, loss, partitions,
/// duplication, reordering, pauses) a never-leader never claims leadership, in any
/// algorithm; and once the faults stop the cluster still elects an eligible leader.
#[test]
fn a_never_leader_never_leads_under_the_chaos_campaign() {
    use electd::node::link::LinkConfig;
    use electd::sim::chaos::{self, FaultSet};
    for kind in AlgorithmKind::ALL {
        for seed in 0..6u64 {
            let n = 5;
            // The highest id never leads; the lowest has the highest priority.
            let policy = with_priorities(&[(5, 0), (1, 200)]);
            let mut cfg = SimConfig::new(kind, n, seed);
            cfg.net = chaos::clean_net();
            cfg.options = Options {
                policy,
                ..Options::default()
            };
            let bound = chaos::recovery_bound(kind, &cfg.timing, &LinkConfig::default(), n);
            let ops = chaos::plan(seed, &cfg.ids, &FaultSet::Full.params(), bound);
            let mut s = Sim::new(cfg).expect("sim");
            s.run_ops(&ops).expect("ops");
            assert!(!s.claims.is_empty(), "{kind} seed {seed}: nobody ever led");
            let bad: Vec<_> = s.claims.iter().filter(|c| c.node == 5).collect();
            assert!(
                bad.is_empty(),
                "{kind} seed {seed}: the never-leader claimed leadership: {bad:?}\n{}",
                chaos::describe(&ops)
            );
            // Faults stopped: an eligible live node leads (Raft: if a majority lives).
            let live = s.live_ids();
            if kind == AlgorithmKind::Raft && live.len() < n / 2 + 1 {
                continue;
            }
            if live.iter().any(|&id| id != 5) {
                let leader = settle(&mut s, &format!("{kind} seed {seed} after chaos"));
                assert_ne!(leader, 5, "{kind} seed {seed}");
            }
        }
    }
}
