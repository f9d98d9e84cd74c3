//! Exploration (temporary).
use electd::contract::algorithm::{AlgorithmKind, Timing};
use electd::node::link::LinkConfig;
use electd::sim::network::NetConfig;
use electd::sim::scenario::Op;
use electd::sim::{Sim, SimConfig};
use electd::NodeId;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn nemesis_timing() -> (Timing, LinkConfig) {
    let t = Timing {
        heartbeat: ms(20),
        failure_timeout: ms(200),
        answer_timeout: ms(60),
        coordinator_timeout: ms(200),
        election_timeout_min: ms(200),
        election_timeout_max: ms(400),
    };
    let mut l = LinkConfig::for_failure_timeout(t.failure_timeout);
    l.retransmit = ms(20);
    l.rto_min = ms(20);
    l.rto_max = ms(40);
    (t, l)
}

fn sim(kind: AlgorithmKind, n: usize, seed: u64) -> Sim {
    let mut cfg = SimConfig::new(kind, n, seed);
    let (t, l) = nemesis_timing();
    cfg.timing = t;
    cfg.link = l;
    let mut s = Sim::new(cfg).unwrap();
    for id in 1..=n as NodeId {
        s.start(id, false).unwrap();
    }
    s.elect(1).unwrap();
    assert!(s.run_until_settled(Duration::from_secs(10)));
    s.run_for(ms(300));
    s
}

/// Time from now until every live node agrees on a live leader (stepping 1 ms).
fn leaderless(s: &mut Sim, kind: AlgorithmKind, max: Duration) -> Option<Duration> {
    let start = s.now();
    while s.now() - start < max {
        if s.agreement(kind).is_some() {
            return Some(s.now() - start);
        }
        s.run_for(ms(1));
    }
    None
}

#[test]
fn explore_leader_kill_under_loss() {
    for kind in [AlgorithmKind::Hs, AlgorithmKind::Lcr, AlgorithmKind::Ring] {
        let mut worst = Vec::new();
        for seed in 0..200u64 {
            let mut s = sim(kind, 5, seed);
            let leader = s.agreement(kind).unwrap();
            s.run_ops(&[Op::Net(NetConfig { loss: 0.3, ..NetConfig::default() })]).unwrap();
            s.crash(leader).unwrap();
            let t = leaderless(&mut s, kind, Duration::from_secs(10));
            worst.push((t.unwrap_or(Duration::MAX), seed));
        }
        worst.sort();
        worst.reverse();
        eprintln!("{kind}: worst {:?}", &worst[..8]);
    }
}

fn dump(kind: AlgorithmKind, seed: u64) {
    use electd::trace::{Record, Recorder};
    let mut s = sim(kind, 5, seed);
    let leader = s.agreement(kind).unwrap();
    s.run_ops(&[Op::Net(NetConfig { loss: 0.3, ..NetConfig::default() })]).unwrap();
    s.set_trace(Recorder::default());
    let t0 = s.now();
    s.crash(leader).unwrap();
    let t = leaderless(&mut s, kind, Duration::from_secs(10));
    eprintln!("{kind} seed {seed}: leader {leader} killed, leaderless {t:?}");
    if std::env::var("LONG").is_ok() {
        s.run_for(Duration::from_secs(3));
    }
    let recs = s.take_trace().unwrap().finish();
    let t0 = t0.as_nanos() as u64;
    for r in recs {
        let line = format!("{r:?}");
        if (line.contains("Heartbeat") && std::env::var("HB").is_err()) || line.starts_with("Ack") {
            continue;
        }
        eprintln!("{line}");
    }
    let _ = t0;
}

#[test]
fn explore_dump() {
    let seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    let kind = match std::env::var("KIND").as_deref() {
        Ok("lcr") => AlgorithmKind::Lcr,
        Ok("ring") => AlgorithmKind::Ring,
        _ => AlgorithmKind::Hs,
    };
    dump(kind, seed);
}

fn term_of(s: &Sim, kind: AlgorithmKind, id: NodeId) -> u64 {
    s.node(id).and_then(|n| n.leadership(kind)).map(|(_, t)| t).unwrap_or(0)
}

#[test]
fn explore_lower_claims_under_loss() {
    for kind in [AlgorithmKind::Hs, AlgorithmKind::Lcr, AlgorithmKind::Ring] {
        let mut bad = Vec::new();
        for seed in 0..200u64 {
            let mut s = sim(kind, 5, seed);
            let leader = s.agreement(kind).unwrap();
            let t0 = s.term_max(kind);
            let c0 = s.claims.len();
            s.run_ops(&[Op::Net(NetConfig { loss: 0.3, ..NetConfig::default() })]).unwrap();
            s.crash(leader).unwrap();
            s.run_for(Duration::from_secs(3));
            let lower: Vec<_> = s.claims[c0..].iter().filter(|c| c.node < 4).map(|c| (c.node, c.term)).collect();
            let bumps = s.term_max(kind) - t0;
            if !lower.is_empty() || bumps > 3 {
                bad.push((seed, lower, bumps));
            }
        }
        eprintln!("{kind}: {} bad: {:?}", bad.len(), &bad[..bad.len().min(8)]);
    }
}

trait TermMax { fn term_max(&self, kind: AlgorithmKind) -> u64; }
impl TermMax for Sim {
    fn term_max(&self, kind: AlgorithmKind) -> u64 {
        self.ids().iter().map(|&i| term_of(self, kind, i)).max().unwrap()
    }
}

#[test]
fn explore_one_way() {
    for kind in [AlgorithmKind::Hs, AlgorithmKind::Lcr, AlgorithmKind::Ring] {
        for (name, from, to) in [("5->rest", vec![5], vec![1, 2, 3, 4]), ("rest->5", vec![1, 2, 3, 4], vec![5])] {
            let mut res = Vec::new();
            for seed in 0..10u64 {
                let mut s = sim(kind, 5, seed);
                assert_eq!(s.agreement(kind), Some(5));
                let t5 = term_of(&s, kind, 5);
                s.run_ops(&[Op::OneWay { from: from.clone(), to: to.clone() }]).unwrap();
                s.run_for(Duration::from_secs(2));
                let grow = term_of(&s, kind, 5) - t5;
                let before: Vec<_> = (1..=5).map(|i| s.node(i).unwrap().leadership(kind).unwrap()).collect();
                s.run_ops(&[Op::Heal]).unwrap();
                let t = leaderless(&mut s, kind, Duration::from_secs(10));
                res.push((grow, t, before));
            }
            eprintln!("{kind} {name}: {:?}", &res[..4]);
            eprintln!("{kind} {name}: grow {:?} heal {:?}", res.iter().map(|r| r.0).collect::<Vec<_>>(), res.iter().map(|r| r.1.unwrap_or(Duration::MAX).as_millis()).collect::<Vec<_>>());
        }
    }
}
