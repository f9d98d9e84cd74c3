//! Raft election (`electd::algorithms::raft`) against the paper and the thesis, on the
//! deterministic simulator.
//!
//! References: Ongaro & Ousterhout, "In Search of an Understandable Consensus
//! Algorithm" (2014) §5.1–§5.2 (terms, RequestVote, Election Safety: at most one leader
//! per term), §9.3 (randomized timeouts); Ongaro's thesis (2014) §9.6 (pre-vote),
//! §6.2 (check-quorum), §4.2.3 (leader stickiness).
//!
//! Expected counts are computed here from the protocol, not taken from a run: on a
//! clean start with one initiator every one of the N−1 peers receives one request and
//! answers once per round, and there are two rounds with pre-vote (pre-vote, vote).
//!
//! # Layout
//! One module of the `sim` test binary for every property of Raft election on the
//! simulator (the paper's rules, the fault campaign, restarts and hand-overs), sharing
//! the same helpers; the vote rules driven through the sans-IO trait without the
//! simulator are its child `rules` (`tests/sim/raft/rules.rs`); the unit tests of the
//! state machine are in `src/algorithms/tests/raft.rs`.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::MessageType;
use electd::contract::rng::Rng;
use electd::node::link::LinkConfig;
use electd::sim::network::NetConfig;
use electd::sim::scenario::Op;
use electd::sim::{Sim, SimConfig};
use electd::NodeId;
use std::collections::BTreeMap;
use std::time::Duration;

const RAFT: AlgorithmKind = AlgorithmKind::Raft;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn sim(n: usize, seed: u64, options: Options) -> Sim {
    let mut cfg = SimConfig::new(RAFT, n, seed);
    cfg.options = options;
    Sim::new(cfg).expect("sim")
}

fn opts(pre_vote: bool, check_quorum: bool) -> Options {
    Options {
        pre_vote,
        check_quorum,
        ..Options::default()
    }
}

/// Live nodes that believe they lead.
fn leaders(sim: &Sim) -> Vec<NodeId> {
    sim.live_ids()
        .into_iter()
        .filter(|&id| sim.node(id).and_then(|n| n.leader(RAFT)) == Some(id))
        .collect()
}

fn state(sim: &Sim, id: NodeId) -> &'static str {
    sim.node(id)
        .and_then(|n| n.group_status(RAFT))
        .map(|s| s.state)
        .unwrap_or("-")
}

fn term(sim: &Sim, id: NodeId) -> u64 {
    sim.node(id)
        .and_then(|n| n.group_status(RAFT))
        .map(|s| s.term)
        .unwrap_or(0)
}

fn leader_of(sim: &Sim, id: NodeId) -> Option<NodeId> {
    sim.node(id).and_then(|n| n.leader(RAFT))
}

/// Boot `n` nodes, let node 1 campaign, and settle: node 1 leads term 1.
fn elected(n: usize, seed: u64, options: Options) -> Sim {
    let mut s = sim(n, seed, options);
    let settled = s
        .run_ops(&[Op::StartAll, Op::Elect(1), Op::Settle { max: ms(1000) }])
        .expect("ops");
    assert!(settled, "seed {seed}: first election did not settle");
    assert_eq!(s.agreement(RAFT), Some(1));
    assert_eq!(term(&s, 1), 1);
    s
}

/// Advance in 1 ms steps until `cond` holds; the time it first held, or None.
fn time_until(
    sim: &mut Sim,
    max: Duration,
    mut cond: impl FnMut(&Sim) -> bool,
) -> Option<Duration> {
    let end = sim.now() + max;
    while sim.now() <= end {
        if cond(sim) {
            return Some(sim.now());
        }
        sim.run_for(ms(1));
    }
    None
}

/// Reference: §5.2 (RequestVote to every other server, one reply each) and thesis §9.6
/// (a pre-vote round of the same shape before it). Heartbeats are counted apart.
#[test]
fn clean_election_sends_one_request_and_one_reply_per_peer_and_round() {
    for n in [1usize, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64] {
        for pre_vote in [true, false] {
            let mut s = sim(n, 7, opts(pre_vote, true));
            s.run_ops(&[
                Op::StartAll,
                Op::Measure("startup".into()),
                Op::Elect(1),
                Op::Settle { max: ms(1000) },
            ])
            .expect("ops");
            let e = &s.elections[0];
            let peers = n as u64 - 1;
            let rounds = if pre_vote { 2 } else { 1 };
            assert_eq!(e.leader, Some(1), "N={n} pre_vote={pre_vote}");
            assert_eq!(e.messages.of(MessageType::RequestVote), peers, "N={n}");
            assert_eq!(e.messages.of(MessageType::Vote), peers, "N={n}");
            let pre = if pre_vote { peers } else { 0 };
            assert_eq!(e.messages.of(MessageType::PreVote), pre, "N={n}");
            assert_eq!(e.messages.of(MessageType::PreVoteResponse), pre, "N={n}");
            assert_eq!(
                e.messages.total,
                2 * rounds * peers,
                "N={n} {:?}",
                e.messages
            );
            assert_eq!(term(&s, 1), 1, "N={n}: one campaign, one term");
            // Then only heartbeats: the election messages do not grow any more.
            let before = s.totals(RAFT);
            s.run_for(ms(500));
            let after = s.totals(RAFT);
            for t in MessageType::ALL {
                if t.is_liveness() {
                    continue;
                }
                assert_eq!(before[t as usize], after[t as usize], "N={n} {t} grew");
            }
            let hb = after[MessageType::Heartbeat as usize];
            // 500 ms at one heartbeat per `heartbeat` period to each of the N−1 peers.
            let periods = 500 / Timing::default().heartbeat.as_millis() as u64;
            assert!(hb >= periods * peers, "N={n}: {hb} heartbeats");
            assert_eq!(s.agreement(RAFT), Some(1));
            assert_eq!(s.claims.len(), 1, "N={n}: one leadership claim");
        }
    }
}

/// `electd simulate -a raft` and `compare` use the same path: a deterministic clean
/// election from the lowest id (Reference: §5.2).
#[test]
fn simulate_reports_raft_beside_the_others() {
    use electd::sim::runner::{simulate, SimulateParams};
    for n in [3usize, 5, 9] {
        let r = simulate(&SimulateParams::new(RAFT, n)).expect("simulate");
        assert!(r.agreed);
        assert_eq!(r.leader, Some(1));
        assert_eq!(r.messages.total, 4 * (n as u64 - 1));
        assert_eq!(r.messages.of(MessageType::PreVote), n as u64 - 1);
    }
    let cmp = electd::sim::compare::run(&AlgorithmKind::available(), &[4, 6], 1, |_, _| {})
        .expect("compare");
    let raft: Vec<_> = cmp.points.iter().filter(|p| p.algorithm == RAFT).collect();
    assert_eq!(raft.len(), 2);
    for p in raft {
        assert_eq!(p.measured, 4 * (p.nodes as u64 - 1));
        assert_eq!(p.formula, Some(4.0 * (p.nodes as f64 - 1.0)));
    }
}

/// Reference: thesis §9.6. A follower cut off alone keeps failing its pre-vote, so its
/// term never rises; reconnected, it rejoins the leader without an election. Without
/// pre-vote the same node raises its term and deposes the leader (the disruption that
/// pre-vote exists to prevent), which shows the check can fail.
#[test]
fn isolated_node_rejoining_neither_raises_the_term_nor_deposes_the_leader() {
    for seed in 0..20 {
        let mut s = elected(5, seed, opts(true, true));
        let t0 = term(&s, 1);
        s.run_ops(&[
            Op::Partition(vec![vec![5], vec![1, 2, 3, 4]]),
            Op::RunFor(ms(2000)),
        ])
        .expect("ops");
        assert_eq!(
            term(&s, 5),
            t0,
            "seed {seed}: isolated node raised its term"
        );
        s.run_ops(&[Op::Heal, Op::RunFor(ms(1000))]).expect("ops");
        for id in 1..=5 {
            assert_eq!(term(&s, id), t0, "seed {seed}: node {id} term moved");
            assert_eq!(leader_of(&s, id), Some(1), "seed {seed}: node {id}");
        }
        assert_eq!(s.claims.len(), 1, "seed {seed}: a new election happened");
    }
    // Control: without pre-vote the rejoining node disrupts the cluster.
    let mut disrupted = 0;
    for seed in 0..20 {
        let mut s = elected(5, seed, opts(false, true));
        s.run_ops(&[
            Op::Partition(vec![vec![5], vec![1, 2, 3, 4]]),
            Op::RunFor(ms(2000)),
            Op::Heal,
            Op::RunFor(ms(1000)),
        ])
        .expect("ops");
        if term(&s, 1) > 1 && s.claims.len() > 1 {
            disrupted += 1;
        }
    }
    assert_eq!(
        disrupted, 20,
        "without pre-vote the rejoin should force an election"
    );
}

/// Reference: thesis §6.2 (check-quorum). A leader cut off from the majority — both
/// ways, or only its inbound links — steps down once no majority answered during a
/// whole minimum election timeout (as etcd: a loss burst shorter than that must not
/// unseat it): checks every min/2 over the last two periods, so within 1.5 · min plus
/// one delivery delay for the last acks in flight. The majority side may elect its new
/// leader meanwhile, always in a later term (election safety). Without check-quorum it
/// stays leader (the control).
#[test]
fn leader_cut_off_from_the_majority_steps_down_within_one_election_timeout() {
    let t = Timing::default();
    let bound = t.election_timeout_min * 3 / 2 + NetConfig::default().delay_max;
    for seed in 0..20 {
        for one_way in [false, true] {
            let mut s = elected(5, seed, opts(true, true));
            // Leader 1 with follower 2 on the minority side.
            let cut = if one_way {
                Op::OneWay {
                    from: vec![3, 4, 5],
                    to: vec![1, 2],
                }
            } else {
                Op::Partition(vec![vec![1, 2], vec![3, 4, 5]])
            };
            let claims_before = s.claims.len();
            s.run_ops(&[cut]).expect("ops");
            let c = s.now();
            let down = time_until(&mut s, ms(1000), |s| leader_of(s, 1) != Some(1))
                .unwrap_or_else(|| panic!("seed {seed} one_way={one_way}: never stepped down"));
            assert!(
                down - c <= bound,
                "seed {seed} one_way={one_way}: stepped down after {:?} > {bound:?}",
                down - c
            );
            s.run_for(ms(2000));
            let new: Vec<_> = s.claims[claims_before..].to_vec();
            assert!(!new.is_empty(), "seed {seed}: majority elected nobody");
            for claim in &new {
                assert!(
                    [3, 4, 5].contains(&claim.node),
                    "seed {seed} one_way={one_way}: minority node {} claimed",
                    claim.node
                );
                assert!(
                    claim.at > down || claim.term > 1,
                    "seed {seed}: a new leader in the old leader's term"
                );
            }
        }
    }
    let mut s = elected(5, 1, opts(true, false));
    s.run_ops(&[Op::Partition(vec![vec![1, 2], vec![3, 4, 5]])])
        .expect("ops");
    s.run_for(ms(2000));
    assert_eq!(
        leader_of(&s, 1),
        Some(1),
        "without check-quorum it stays leader"
    );
}

/// Reference: §5.2 (a candidate needs votes from a majority). For every split of five
/// nodes into a minority and a majority side, with the leader on either side: the
/// minority never elects anyone and (with check-quorum, the default) ends without a
/// leader; the majority ends with exactly one, within the recovery bound.
#[test]
fn minority_side_has_no_leader_and_majority_side_has_one() {
    let splits: Vec<(Vec<NodeId>, Vec<NodeId>)> = vec![
        (vec![1, 2], vec![3, 4, 5]),
        (vec![4, 5], vec![1, 2, 3]),
        (vec![1], vec![2, 3, 4, 5]),
        (vec![3], vec![1, 2, 4, 5]),
    ];
    for (pre_vote, check_quorum) in [(true, true), (false, true), (true, false), (false, false)] {
        for seed in 0..10 {
            for (minority, majority) in &splits {
                let ctx = format!(
                    "seed {seed} pre_vote={pre_vote} check_quorum={check_quorum} \
                     minority={minority:?}"
                );
                let mut s = elected(5, seed, opts(pre_vote, check_quorum));
                let claims_before = s.claims.len();
                s.run_ops(&[Op::Partition(vec![minority.clone(), majority.clone()])])
                    .expect("ops");
                // Liveness bound of the majority side (see `recovery_bound`).
                s.run_for(recovery_bound(&Timing::default(), 5));
                for c in &s.claims[claims_before..] {
                    assert!(!minority.contains(&c.node), "{ctx}: minority claim {c:?}");
                }
                let maj_leaders: Vec<_> = leaders(&s)
                    .into_iter()
                    .filter(|id| majority.contains(id))
                    .collect();
                assert_eq!(
                    maj_leaders.len(),
                    1,
                    "{ctx}: majority leaders {maj_leaders:?}"
                );
                for &id in majority {
                    assert_eq!(leader_of(&s, id), Some(maj_leaders[0]), "{ctx}: node {id}");
                }
                // The one exception needs check-quorum off: the old leader cut off in
                // the minority keeps believing it leads (thesis §6.2 is the cure).
                let stale_leader_kept = !check_quorum && minority.contains(&1);
                for &id in minority {
                    let expected = if stale_leader_kept { Some(1) } else { None };
                    assert_eq!(leader_of(&s, id), expected, "{ctx}: node {id}");
                }
            }
        }
    }
}

/// How long after faults stop until exactly one leader is guaranteed (with high
/// probability), derived from the timeouts. From the moment the network heals:
/// 1. leftover traffic drains: a reliable message is retried for at most
///    `give_up_after`, a reordered datagram lags at most 5·delay_max;
/// 2. a stale leader hears a higher term within one `heartbeat` + round trip, and the
///    leases of its followers expire `election_timeout_min` after its last heartbeat;
/// 3. then election rounds: a follower's randomized timeout fires within
///    `election_timeout_max`, and a campaign (pre-vote and vote round trips) takes
///    4·delay_max. A round fails only if another timer fires within that window: with
///    N−1 other timers spread uniformly over max−min, p ≤ (N−1)·4·delay_max/(max−min)
///    (≈ 0.32 for five nodes with a 2 ms delay and a 100 ms spread). Ten rounds make a
///    failure less likely than p¹⁰ ≈ 10⁻⁵.
fn recovery_bound(t: &Timing, _n: usize) -> Duration {
    let delay_max = ms(5);
    let campaign = delay_max * 4;
    LinkConfig::default().give_up_after()
        + delay_max * 5
        + t.heartbeat
        + t.election_timeout_min
        + (t.election_timeout_max + campaign) * 10
}

/// Exactly one leader: every live node follows the same live leader in the same term,
/// nobody campaigns and no election message is in flight (a node with a higher term
/// would still force an election, so terms must agree too).
fn one_leader_everywhere(s: &Sim) -> bool {
    let Some(l) = s.agreement(RAFT) else {
        return false;
    };
    let t = term(s, l);
    s.settled() && leaders(s) == [l] && s.live_ids().iter().all(|&id| term(s, id) == t)
}

/// The network once faults stop.
fn clean_net() -> NetConfig {
    NetConfig {
        delay_min: ms(1),
        delay_max: ms(2),
        ..NetConfig::default()
    }
}

/// How long faults last in the property tests (virtual time).
const FAULT_TIME: Duration = Duration::from_millis(1500);

/// A seeded fault plan over nodes 1..=n: crashes, restarts (with the durable term and
/// vote, as from a disk), graceful resignations, operator elections, symmetric and
/// one-way partitions, 30% loss with duplication and reordering; then the network
/// heals and every crashed node restarts.
fn fault_plan(seed: u64, n: usize, fault_time: Duration) -> Vec<Op> {
    let mut rng = Rng::new(seed ^ 0x5AF3_7E57);
    let ids: Vec<NodeId> = (1..=n as NodeId).collect();
    let mut ops = vec![Op::StartAllElecting];
    let mut dead: Vec<NodeId> = Vec::new();
    let mut elapsed = Duration::ZERO;
    while elapsed < fault_time {
        let step = ms(5 + rng.below(120));
        ops.push(Op::RunFor(step));
        elapsed += step;
        let pick = |rng: &mut Rng| ids[rng.below(n as u64) as usize];
        match rng.below(12) {
            0 | 1 => {
                let id = pick(&mut rng);
                if !dead.contains(&id) {
                    dead.push(id);
                    ops.push(Op::Crash(id));
                }
            }
            2 | 3 if !dead.is_empty() => {
                let id = dead.swap_remove(rng.below(dead.len() as u64) as usize);
                ops.push(Op::Restart {
                    node: id,
                    elect: rng.chance(0.5),
                });
            }
            4 => {
                let mut s = ids.clone();
                rng.shuffle(&mut s);
                let cut = 1 + rng.below(n as u64 - 1) as usize;
                let (a, b) = s.split_at(cut);
                ops.push(Op::Partition(vec![a.to_vec(), b.to_vec()]));
            }
            5 => {
                let mut s = ids.clone();
                rng.shuffle(&mut s);
                let cut = 1 + rng.below(n as u64 - 1) as usize;
                let (a, b) = s.split_at(cut);
                ops.push(Op::OneWay {
                    from: a.to_vec(),
                    to: b.to_vec(),
                });
            }
            6 => ops.push(Op::Heal),
            7 | 8 => ops.push(Op::Net(NetConfig {
                delay_min: ms(1),
                delay_max: ms(1 + rng.below(5)),
                loss: 0.3,
                duplicate: 0.2,
                reorder: 0.3,
            })),
            9 => ops.push(Op::Elect(pick(&mut rng))),
            10 => {
                let id = pick(&mut rng);
                if !dead.contains(&id) {
                    dead.push(id);
                    ops.push(Op::Resign(id));
                }
            }
            _ => ops.push(Op::Detect(pick(&mut rng))),
        }
    }
    ops.push(Op::Heal);
    ops.push(Op::Net(clean_net()));
    for id in dead {
        ops.push(Op::Restart {
            node: id,
            elect: false,
        });
    }
    ops
}

fn describe(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| match op {
            Op::RunFor(d) => format!("+{}ms", d.as_millis()),
            Op::Net(n) => format!(
                "net(delay≤{}ms,loss={:.2},dup={:.2},reorder={:.2})",
                n.delay_max.as_millis(),
                n.loss,
                n.duplicate,
                n.reorder
            ),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One seed: faults, then the recovery bound on a clean network. Checks Election
/// Safety over the whole run (no two nodes claim the same term, §5.2 / Figure 3) and,
/// once faults stop, liveness: exactly one leader, followed by every live node,
/// holding the highest term, and still so one maximal election timeout later.
/// Returns the number of leadership claims in the run.
fn check_seed(seed: u64, options: &Options) -> Result<usize, String> {
    const N: usize = 5;
    let ops = fault_plan(seed, N, FAULT_TIME);
    let mut cfg = SimConfig::new(RAFT, N, seed);
    cfg.options = options.clone();
    cfg.net = clean_net();
    let timing = cfg.timing.clone();
    let mut s = Sim::new(cfg).map_err(|e| e.to_string())?;
    let fail = |s: &Sim, what: String| {
        format!(
            "seed {seed} {options:?}: {what}\n  claims (ms, node, term) {:?}\n  ops: {}\n  \
             replay: RAFT_SEED={seed} cargo test --test sim raft::replay_one_seed -- --ignored --nocapture",
            s.claims
                .iter()
                .map(|c| (c.at.as_millis(), c.node, c.term))
                .collect::<Vec<_>>(),
            describe(&ops)
        )
    };
    s.run_ops(&ops).map_err(|e| e.to_string())?;
    // Faults stop now. Watch in 1 ms steps for the bound plus one maximal election
    // timeout; `since` is when the one-leader condition last became true.
    let healed = s.now();
    let bound = recovery_bound(&timing, N);
    let end = healed + bound + timing.election_timeout_max;
    let mut since = None;
    while s.now() <= end {
        match (one_leader_everywhere(&s), since) {
            (true, None) => since = Some(s.now()),
            (false, Some(_)) => since = None,
            _ => {}
        }
        s.run_for(ms(1));
    }
    // Safety: at most one leader per term, over the whole run.
    let mut by_term: BTreeMap<u64, NodeId> = BTreeMap::new();
    for c in &s.claims {
        if let Some(&other) = by_term.get(&c.term) {
            if other != c.node {
                return Err(fail(
                    &s,
                    format!("two leaders in term {}: {other} and {}", c.term, c.node),
                ));
            }
        }
        by_term.insert(c.term, c.node);
    }
    // Liveness: one leader from at most `bound` after the faults stopped, and still the
    // same one a maximal election timeout after the bound.
    let late = since.map_or(0, |t| s.claims.iter().filter(|c| c.at > t).count());
    match since {
        Some(t) if t <= healed + bound && late == 0 => Ok(()),
        _ => {
            let beliefs: Vec<_> = s
                .live_ids()
                .into_iter()
                .map(|id| (id, leader_of(&s, id), term(&s, id)))
                .collect();
            Err(fail(
                &s,
                format!(
                    "no stable single leader within {bound:?} after faults stopped at {healed:?} \
                     (since {since:?}); (node, leader, term): {beliefs:?}"
                ),
            ))
        }
    }?;
    Ok(s.claims.len())
}

/// Every combination of the switches in turn.
fn options_for(seed: u64) -> Options {
    Options {
        ranked_timeouts: seed % 8 < 4,
        ..opts(seed % 2 == 0, seed % 4 < 2)
    }
}

/// Safety and liveness over `seeds`, every switch combination in turn.
fn property(seeds: std::ops::Range<u64>) {
    let mut failures = Vec::new();
    let mut claims = 0;
    for seed in seeds.clone() {
        let options = options_for(seed);
        match check_seed(seed, &options) {
            Ok(c) => claims += c,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} seeds failed; first ones:\n{}",
        failures.len(),
        seeds.end - seeds.start,
        failures
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Not vacuous: the faults force many elections (several per run on average).
    let runs = (seeds.end - seeds.start) as usize;
    assert!(
        claims > 3 * runs,
        "only {claims} leadership claims in {runs} runs"
    );
}

// 10,000 seeds in four tests so the harness runs them in parallel.
/// Reference: §5.2 Election Safety; thesis §9.6 / §6.2 for the switches.
#[test]
fn safety_and_liveness_under_faults_seeds_0_to_2500() {
    property(0..2500);
}
/// Reference: §5.2 Election Safety; thesis §9.6 / §6.2 for the switches.
#[test]
fn safety_and_liveness_under_faults_seeds_2500_to_5000() {
    property(2500..5000);
}
/// Reference: §5.2 Election Safety; thesis §9.6 / §6.2 for the switches.
#[test]
fn safety_and_liveness_under_faults_seeds_5000_to_7500() {
    property(5000..7500);
}
/// Reference: §5.2 Election Safety; thesis §9.6 / §6.2 for the switches.
#[test]
fn safety_and_liveness_under_faults_seeds_7500_to_10000() {
    property(7500..10_000);
}

/// Replays one seed of the property with a state trace (one line per change):
/// `RAFT_SEED=S cargo test --test sim raft::replay_one_seed -- --ignored --nocapture`.
#[test]
#[ignore = "replay helper for a failing seed of the property tests"]
fn replay_one_seed() {
    let seed: u64 = std::env::var("RAFT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("set RAFT_SEED to the seed to replay");
    let options = options_for(seed);
    let mut ops = fault_plan(seed, 5, FAULT_TIME);
    let recovery = recovery_bound(&Timing::default(), 5) + Timing::default().election_timeout_max;
    ops.push(Op::RunFor(recovery));
    let mut cfg = SimConfig::new(RAFT, 5, seed);
    cfg.options = options.clone();
    cfg.net = clean_net();
    let mut s = Sim::new(cfg).expect("sim");
    let mut last = String::new();
    let mut trace = |s: &Sim| {
        let line: Vec<_> = (1..=5)
            .map(|id| {
                let alive = if s.is_alive(id) { "" } else { "(down)" };
                format!(
                    "{id}:{}/{:?}/t{}{alive}",
                    state(s, id),
                    leader_of(s, id),
                    term(s, id)
                )
            })
            .collect();
        let line = line.join(" ");
        if line != last {
            println!("{:>5}ms {line}", s.now().as_millis());
            last = line;
        }
    };
    for op in &ops {
        if let Op::RunFor(d) = op {
            for _ in 0..d.as_millis() {
                trace(&s);
                s.run_for(ms(1));
            }
        } else {
            println!("{:>5}ms {op:?}", s.now().as_millis());
            s.run_ops(std::slice::from_ref(op)).expect("op");
            trace(&s);
        }
    }
    check_seed(seed, &options).unwrap_or_else(|e| panic!("{e}"));
}

// ---- The vote rules, driven directly through the sans-IO trait ----

mod rules;

// ---- Graceful leave, operator election, restart ----

/// Reference: Ongaro's thesis §3.10 (leadership transfer; etcd's TimeoutNow). When the
/// leader resigns, its followers campaign after only the randomized part of the
/// timeout, max − min, so the next leader is known within (max − min) plus a
/// campaign (pre-vote and vote round trips, 4 × 1 ms) and the first heartbeat (1 ms);
/// an ordinary failover cannot finish before the minimum election timeout.
#[test]
fn resignation_hands_over_faster_than_a_timeout() {
    let t = Timing::default();
    let net = NetConfig::default();
    let bound = (t.election_timeout_max - t.election_timeout_min) + net.delay_max * 5;
    let mut fastest_crash = Duration::MAX;
    for seed in 0..30 {
        let mut s = elected(5, seed, opts(true, true));
        s.run_ops(&[Op::Resign(1)]).expect("ops");
        let at = s.now();
        let done = time_until(&mut s, ms(2000), |s| {
            s.agreement(RAFT).is_some_and(|l| l != 1)
        })
        .unwrap_or_else(|| panic!("seed {seed}: no new leader"));
        assert!(
            done - at <= bound,
            "seed {seed}: took {:?} > {bound:?}",
            done - at
        );
        // Control: a crash without resignation waits for a timeout.
        let mut c = elected(5, seed, opts(true, true));
        c.run_ops(&[Op::Crash(1)]).expect("ops");
        let at = c.now();
        let done = time_until(&mut c, ms(2000), |s| {
            s.agreement(RAFT).is_some_and(|l| l != 1)
        })
        .unwrap_or_else(|| panic!("seed {seed}: no new leader after a crash"));
        fastest_crash = fastest_crash.min(done - at);
    }
    assert!(fastest_crash >= t.election_timeout_min, "{fastest_crash:?}");
}

/// An operator election at the leader hands leadership to another node in a newer
/// term; at a follower of a healthy leader it is refused by pre-vote and stickiness
/// (thesis §9.6, §4.2.3), so the leader and term stay.
#[test]
fn operator_election_hands_over_at_the_leader_and_is_refused_at_a_follower() {
    for seed in 0..10 {
        let mut s = elected(5, seed, opts(true, true));
        s.run_ops(&[Op::Elect(3), Op::RunFor(ms(500))])
            .expect("ops");
        assert_eq!(s.agreement(RAFT), Some(1), "seed {seed}");
        assert_eq!(term(&s, 1), 1, "seed {seed}");
        s.run_ops(&[Op::Elect(1), Op::Settle { max: ms(2000) }])
            .expect("ops");
        let l = s.agreement(RAFT).expect("a new leader");
        assert_ne!(l, 1, "seed {seed}: the old leader kept it");
        assert!(term(&s, l) > 1, "seed {seed}");
    }
}

/// Reference: Figure 2 (currentTerm and votedFor on stable storage). A restarted node
/// comes back with the term it had, and rejoins the leader without an election.
#[test]
fn restarted_node_keeps_its_term_and_rejoins() {
    let mut s = elected(5, 3, opts(true, true));
    s.run_ops(&[Op::Crash(4), Op::RunFor(ms(300))])
        .expect("ops");
    s.run_ops(&[Op::Restart {
        node: 4,
        elect: true,
    }])
    .expect("ops");
    assert_eq!(term(&s, 4), 1, "term restored at boot");
    s.run_for(ms(500));
    assert_eq!(leader_of(&s, 4), Some(1));
    assert_eq!(s.claims.len(), 1, "no election needed");
}
