//! The fencing token (`electd::contract::algorithm::Token`: term, then leader id) on the
//! simulator, for every algorithm: after a cold start, a leader crash, the highest id
//! coming back with and without its disk, and a 3 + 2 partition and its heal, every
//! live node reports the same leader and term, and every new leadership's token is above
//! every token the cluster has seen before.

use electd::contract::algorithm::{AlgorithmKind, Token};
use electd::sim::network::NetConfig;
use electd::sim::{Sim, SimConfig};
use electd::NodeId;
use std::time::Duration;

const N: usize = 5;

fn sim(kind: AlgorithmKind, seed: u64) -> Sim {
    let mut cfg = SimConfig::new(kind, N, seed);
    cfg.net = NetConfig {
        delay_min: Duration::from_millis(1),
        delay_max: Duration::from_millis(2),
        ..NetConfig::default()
    };
    Sim::new(cfg).expect("sim")
}

/// Several failure (or election) timeouts: long enough for every step to settle and for
/// followers to hear heartbeats after it.
fn settle_time(kind: AlgorithmKind) -> Duration {
    match kind {
        AlgorithmKind::Raft => Duration::from_secs(3),
        _ => Duration::from_secs(2),
    }
}

/// (leader, term) of every live node.
fn tokens(s: &Sim, kind: AlgorithmKind) -> Vec<(NodeId, Option<NodeId>, u64)> {
    s.live_ids()
        .into_iter()
        .map(|id| {
            let st = s
                .node(id)
                .and_then(|n| n.group_status(kind))
                .expect("status");
            (id, st.leader, st.term)
        })
        .collect()
}

/// Every live node follows `want` (if given; else any one live node) with one term.
/// A leadership other than `prev` must hold a token above `above`; the same leadership
/// keeps its token. Returns the agreed token.
fn agreed(
    s: &Sim,
    kind: AlgorithmKind,
    want: Option<NodeId>,
    prev: Token,
    above: Token,
    step: &str,
) -> Token {
    let t = tokens(s, kind);
    let leader = t[0].1;
    let term = t[0].2;
    assert!(
        t.iter().all(|&(_, l, tm)| l == leader && tm == term),
        "{kind}, {step}: nodes disagree on (leader, term): {t:?}"
    );
    assert!(
        leader.is_some_and(|l| s.is_alive(l)),
        "{kind}, {step}: no live leader: {t:?}"
    );
    if want.is_some() {
        assert_eq!(leader, want, "{kind}, {step}: {t:?}");
    }
    let token = Token::new(term, leader.unwrap_or(0));
    if token != prev {
        assert!(
            token > above,
            "{kind}, {step}: {token:?} is not above the highest seen before ({above:?}): {t:?}"
        );
    }
    token
}

/// Highest token any node holds now (dead ones included: the cluster has seen it).
fn highest(s: &Sim, kind: AlgorithmKind) -> Token {
    s.ids()
        .iter()
        .filter_map(|&id| s.node(id).and_then(|n| n.group_status(kind)))
        .map(|st| Token::new(st.term, st.leader.unwrap_or(0)))
        .max()
        .unwrap_or_default()
}

fn scenario(kind: AlgorithmKind, seed: u64) {
    let mut s = sim(kind, seed);
    let wait = settle_time(kind);
    let expect = |id: NodeId| kind.elects_highest_id().then_some(id);
    for id in 1..=N as NodeId {
        s.start(id, true).unwrap();
    }
    s.run_for(wait);
    let t1 = agreed(
        &s,
        kind,
        expect(5),
        Token::default(),
        Token::default(),
        "cold start",
    );

    // The leader crashes; the next one takes a higher term.
    s.crash(t1.leader).unwrap();
    s.run_for(wait);
    let t2 = agreed(&s, kind, expect(4), t1, t1, "leader crashed");
    assert_ne!(t2.leader, t1.leader);

    // The old leader comes back with its disk (Bully and ring: it leads again, above
    // every term seen; Raft: it follows).
    let before = highest(&s, kind);
    s.start(t1.leader, true).unwrap();
    s.run_for(wait);
    let t3 = agreed(&s, kind, expect(5), t2, before, "old leader restarted");

    // The leader loses its disk: a new leadership is still above every term seen.
    s.crash(t3.leader).unwrap();
    s.run_for(wait);
    let t4 = agreed(&s, kind, expect(4), t3, t3, "leader crashed again");
    let before = highest(&s, kind);
    s.start_blank(t3.leader, true).unwrap();
    s.run_for(wait);
    let t5 = agreed(
        &s,
        kind,
        expect(5),
        t4,
        before,
        "leader back with an empty disk",
    );

    // The leader restarts at once with an empty disk, before anyone noticed it was
    // gone: the others still follow its old token and answer its new, lower claim.
    let before = highest(&s, kind);
    let leader = s.agreement(kind).unwrap();
    s.crash(leader).unwrap();
    s.start_blank(leader, true).unwrap();
    s.run_for(wait);
    let t5 = agreed(
        &s,
        kind,
        expect(5),
        t5,
        before,
        "leader back at once, empty disk",
    );

    // A 3 + 2 partition: each side may elect (Raft only on the majority side), the
    // two leaders never sharing a token. After the heal: one leader, and a new
    // leadership above every term seen.
    s.cuts_mut().partition(&[vec![1, 2, 3], vec![4, 5]]);
    s.run_for(wait);
    let before = highest(&s, kind);
    assert!(before >= t5);
    // The leadership of the side of node 1 (Raft: the majority) may simply go on.
    let side = s.node(1).and_then(|n| n.group_status(kind)).unwrap();
    let kept = Token::new(side.term, side.leader.unwrap_or(0));
    s.cuts_mut().heal();
    s.run_for(wait);
    agreed(&s, kind, expect(5), kept, before, "partition healed");
    assert_eq!(
        s.tokens.count, 0,
        "{kind}: token safety: {:?}",
        s.tokens.violations
    );
}

#[test]
fn tokens_agree_and_grow_for_every_algorithm() {
    for kind in AlgorithmKind::available() {
        for seed in 1..=3 {
            scenario(kind, seed);
        }
    }
}

/// The report of the issue: five nodes cold-started with Bully reported terms
/// 1, 1, 1, 1, 5 once they agreed (a 3-node cluster 1, 2, 3); every node must report
/// the leader's term.
#[test]
fn followers_report_the_leaders_term() {
    for kind in AlgorithmKind::available() {
        for n in [3, 5] {
            let mut cfg = SimConfig::new(kind, n, 7);
            cfg.net = NetConfig {
                delay_min: Duration::from_millis(1),
                delay_max: Duration::from_millis(2),
                ..NetConfig::default()
            };
            let mut s = Sim::new(cfg).expect("sim");
            for id in 1..=n as NodeId {
                s.start(id, true).unwrap();
            }
            s.run_for(settle_time(kind));
            let t = agreed(
                &s,
                kind,
                kind.elects_highest_id().then_some(n as NodeId),
                Token::default(),
                Token::default(),
                "cold start",
            );
            assert!(t.term >= 1, "{kind} N={n}: {t:?}");
        }
    }
}

/// Seed 620 of the chaos properties (improved-bully, basic faults): two leaderships of
/// one term. Node 3 comes back with the disk of term t − 1 while 1 and 2 follow (t, 5);
/// cut off from them, it announces (t, 3), below their token but at the same term. With
/// 4 and 5 dead, 1 and 2 elect, 3 answers OK and, handed the election, reasserts its
/// unchanged (t, 3), which they refuse as stale, over and over: the answer to 3's
/// heartbeats must carry the token held, not only its term, for 3 to learn that its
/// leadership is behind and take a term above it.
#[test]
fn a_leader_below_a_token_of_its_own_term_takes_a_new_term() {
    let ms = Duration::from_millis;
    // 3 goes down before 5 does, so that its disk holds the term below the one 5
    // takes back (the precondition below checks that the case is reached).
    for (kind, three_down_early) in [
        (AlgorithmKind::Bully, true),
        (AlgorithmKind::ImprovedBully, true),
    ] {
        let mut s = sim(kind, 620);
        for id in 1..=N as NodeId {
            s.start(id, true).unwrap();
        }
        s.run_for(ms(500));
        assert_eq!(s.agreement(kind), Some(5), "{kind}: cold start");
        if three_down_early {
            s.crash(3).unwrap();
        }
        s.crash(5).unwrap();
        s.run_for(ms(500));
        assert_eq!(s.agreement(kind), Some(4), "{kind}: 5 crashed");
        if !three_down_early {
            s.crash(3).unwrap();
        }
        s.start(5, true).unwrap();
        s.run_for(ms(500));
        assert_eq!(s.agreement(kind), Some(5), "{kind}: 5 back");
        let held = highest(&s, kind);
        assert_eq!(held.leader, 5, "{kind}");
        s.crash(4).unwrap();
        s.crash(5).unwrap();
        s.run_for(ms(5)); // what was in flight to 3 is dropped (3 is down)
        s.cuts_mut().partition(&[vec![3], vec![1, 2]]);
        s.start(3, true).unwrap();
        // It listens first (a restarted node waits its rank's turn), then leads alone.
        for _ in 0..1000 {
            s.run_for(ms(1));
            if s.node(3).and_then(|n| n.leader(kind)) == Some(3) {
                break;
            }
        }
        let three = s.node(3).and_then(|n| n.group_status(kind)).unwrap();
        assert_eq!(
            (three.leader, three.term),
            (Some(3), held.term),
            "{kind}: node 3 should lead at the term of (3, 5) for this test"
        );
        s.cuts_mut().heal();
        s.run_for(ms(1500));
        agreed(
            &s,
            kind,
            Some(3),
            Token::default(),
            held,
            "same-term leaderships",
        );
        assert_eq!(s.tokens.count, 0, "{kind}: {:?}", s.tokens.violations);
    }
}
