//! No self-inflicted election storms in the Bully family, on the simulator's
//! synchronous network (constant 1 ms delay, nothing lost), ids 1..N.
//!
//! Expected counts are computed here from the rules the algorithms follow:
//! - A false alarm at node k while leader N is alive (its detector fires, the leader
//!   did not change). Bully: the cascade from k costs 2·Σ_{i=k}^{N−1}(N−i) ELECTION +
//!   OK as in the textbook, and the leader answers the new cascade with its unchanged
//!   COORDINATOR to the cascade's N−k members only (not a new epoch to all N−1).
//!   Improved Bully: (N−k) ELECTION + (N−k) OK + 1 YOU_ARE_COORDINATOR + (N−k)
//!   COORDINATOR. Either way no new claim, no new epoch.
//! - A cold start with every node calling its election: each node listens one
//!   heartbeat period first and the highest announces at once, so the start costs the
//!   N−1 COORDINATOR messages of one announcement, against N² − 1 (Bully) when every
//!   node calls at the same instant.

use electd::contract::algorithm::AlgorithmKind;
use electd::contract::message::MessageType;
use electd::sim::scenario::Op;
use electd::sim::{Sim, SimConfig};
use std::time::Duration;

const SETTLE: Duration = Duration::from_secs(5);

#[test]
fn a_live_leader_answers_a_false_alarm_without_a_new_epoch() {
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        for n in 3..=12u32 {
            for k in 1..n {
                let mut sim = Sim::new(SimConfig::new(kind, n as usize, 11)).expect("sim");
                sim.run_ops(&[Op::StartAll, Op::Elect(1), Op::Settle { max: SETTLE }])
                    .expect("ops");
                assert_eq!(sim.agreement(kind), Some(n), "{kind} N={n}");
                let term = sim
                    .node(n)
                    .and_then(|x| x.group_status(kind))
                    .map(|s| s.term);
                let claims = sim.claims.len();
                let settled = sim
                    .run_ops(&[
                        Op::Measure("false alarm".into()),
                        Op::Detect(k),
                        Op::Settle { max: SETTLE },
                    ])
                    .expect("ops");
                assert!(settled, "{kind} N={n} k={k}");
                assert_eq!(sim.agreement(kind), Some(n), "{kind} N={n} k={k}");
                let e = sim.elections.last().expect("measured");
                let (nn, kk) = (u64::from(n), u64::from(k));
                let members = nn - kk;
                let (elections, extra) = match kind {
                    AlgorithmKind::Bully => ((kk..nn).map(|i| nn - i).sum::<u64>(), 0),
                    _ => (members, 1),
                };
                assert_eq!(
                    e.messages.of(MessageType::Election),
                    elections,
                    "{kind} N={n} k={k}"
                );
                assert_eq!(
                    e.messages.of(MessageType::Ok),
                    elections,
                    "{kind} N={n} k={k}"
                );
                assert_eq!(
                    e.messages.of(MessageType::Coordinator),
                    members,
                    "{kind} N={n} k={k}: only the cascade's members hear the leader again"
                );
                assert_eq!(
                    e.messages.total,
                    2 * elections + members + extra,
                    "{kind} N={n} k={k}: {:?}",
                    e.messages
                );
                assert_eq!(sim.claims.len(), claims, "{kind} N={n} k={k}: no new claim");
                let after = sim
                    .node(n)
                    .and_then(|x| x.group_status(kind))
                    .map(|s| s.term);
                assert_eq!(after, term, "{kind} N={n} k={k}: the epoch did not change");
            }
        }
    }
}

#[test]
fn a_cold_start_of_electing_nodes_costs_one_announcement() {
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        for n in [2u32, 5, 16, 64] {
            let mut sim = Sim::new(SimConfig::new(kind, n as usize, 3)).expect("sim");
            let settled = sim
                .run_ops(&[
                    Op::Measure("cold start".into()),
                    Op::StartAllElecting,
                    Op::Settle { max: SETTLE },
                ])
                .expect("ops");
            assert!(settled, "{kind} N={n}");
            assert_eq!(sim.agreement(kind), Some(n), "{kind} N={n}");
            let e = sim.elections.last().expect("measured");
            assert_eq!(
                e.messages.total,
                u64::from(n) - 1,
                "{kind} N={n}: {:?}",
                e.messages
            );
            assert_eq!(sim.claims.len(), 1, "{kind} N={n}: one claimant");
        }
    }
}

/// Listening first does not replace the election: with the highest node dead and
/// nobody leading, a restarted node that hears nothing elects, and the next highest
/// wins.
#[test]
fn a_cold_start_without_the_highest_still_elects() {
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        for n in [3u32, 8, 16] {
            let mut sim = Sim::new(SimConfig::new(kind, n as usize, 5)).expect("sim");
            sim.run_ops(&[Op::StartAll, Op::Crash(n)]).expect("ops");
            let settled = sim
                .run_ops(&[
                    Op::Measure("cold start".into()),
                    Op::Restart {
                        node: 1,
                        elect: true,
                    },
                    Op::Settle { max: SETTLE },
                ])
                .expect("ops");
            assert!(settled, "{kind} N={n}");
            assert_eq!(sim.agreement(kind), Some(n - 1), "{kind} N={n}");
        }
    }
}

/// Link flaps shorter than what the timeouts tolerate change no leader, for every
/// algorithm: for 3 s the leader is cut off (both ways) for the shortest timeout that
/// reacts to silence (failure_timeout, Raft's minimum election timeout) less two
/// heartbeat periods, then reconnected about as long. Raft's check-quorum looks at a whole election timeout,
/// so missing acks during one outage do not make the leader step down.
#[test]
fn link_flaps_shorter_than_the_timeouts_change_no_leader() {
    for kind in AlgorithmKind::available() {
        for seed in 0..5 {
            let cfg = SimConfig::new(kind, 5, seed);
            let t = cfg.timing.clone();
            let mut sim = Sim::new(cfg).expect("sim");
            let settled = sim
                .run_ops(&[Op::StartAll, Op::Elect(1), Op::Settle { max: SETTLE }])
                .expect("ops");
            assert!(settled, "{kind} seed {seed}");
            let leader = sim.agreement(kind).expect("a leader");
            // Let the first heartbeats and acks pass (the Raft leader's quorum window).
            sim.run_for(t.election_timeout_max);
            let claims = sim.claims.len();
            let others: Vec<u32> = sim
                .live_ids()
                .into_iter()
                .filter(|&i| i != leader)
                .collect();
            // Silence seen by a follower: the outage plus up to one heartbeat period
            // (and a delivery delay), kept below the timeout.
            let shortest = t.failure_timeout.min(t.election_timeout_min);
            let outage = shortest - t.heartbeat * 2;
            // Up a little shorter than down: a period (~150 ms) that drifts against
            // every periodic timer, so outages fall at every phase of them.
            let up = outage - Duration::from_millis(7);
            let flaps = (Duration::from_secs(3).as_millis() / (outage + up).as_millis()) as usize;
            for _ in 0..flaps {
                sim.run_ops(&[
                    Op::Partition(vec![vec![leader], others.clone()]),
                    Op::RunFor(outage),
                    Op::Heal,
                    Op::RunFor(up),
                ])
                .expect("ops");
                assert_eq!(sim.agreement(kind), Some(leader), "{kind} seed {seed}");
            }
            sim.run_for(t.failure_timeout * 2);
            assert_eq!(sim.agreement(kind), Some(leader), "{kind} seed {seed}");
            assert_eq!(
                sim.claims.len(),
                claims,
                "{kind} seed {seed}: no new claim through {flaps} flaps of {outage:?}"
            );
        }
    }
}

/// A saturated cold start, for every algorithm: 64 nodes boot at once, each calling
/// its election, and every datagram costs a node heartbeat / N of processing (timer
/// rounds half that), so a leader's heartbeat acks alone keep it busy about a whole
/// heartbeat period: what arrives meanwhile waits in its inbox. Every node must agree
/// within the chaos campaign's recovery bound for 64 nodes plus, for every hop of one
/// ring lap (the bound's `4N + 8` delivery delays), a full inbox of N datagrams ahead.
#[test]
fn sixty_four_saturated_nodes_cold_start_and_agree_within_the_bound() {
    use electd::sim::chaos::recovery_bound;
    use electd::sim::Cost;
    const N: usize = 64;
    for kind in AlgorithmKind::available() {
        for seed in 0..3 {
            let mut cfg = SimConfig::new(kind, N, seed);
            let per = cfg.timing.heartbeat / N as u32;
            cfg.cost = Cost {
                datagram: per,
                timer: per / 2,
            };
            let queue = per * N as u32 * (4 * N as u32 + 8);
            let bound = recovery_bound(kind, &cfg.timing, &cfg.link, N) + queue;
            let mut sim = Sim::new(cfg).expect("sim");
            let settled = sim
                .run_ops(&[
                    Op::Measure("cold start".into()),
                    Op::StartAllElecting,
                    Op::Settle { max: bound },
                ])
                .expect("ops");
            let e = sim.elections.last().expect("measured");
            assert!(
                settled && e.agreed,
                "{kind} seed {seed}: no agreement within {bound:?}: {e:?}"
            );
            if kind.elects_highest_id() {
                assert_eq!(e.leader, Some(N as u32), "{kind} seed {seed}");
            }
            eprintln!(
                "{kind} seed {seed}: agreed on {:?} after {:.1} ms (bound {bound:?}), {} messages, {} retransmissions",
                e.leader, e.virtual_ms, e.messages.total, e.retransmissions
            );
        }
    }
}

/// The storm the processes showed, in the simulator: 64 Bully-family nodes started one
/// after another (5 ms apart, as a shell starts processes), each calling its election,
/// on a lossy network (20%) with 400 µs of processing per datagram; then the network
/// is clean. Lower nodes claim while higher ones are still starting and answers wait
/// in inboxes longer than T; each claim must not start a cascade at every node above
/// (a leader answers the claimant alone, followers of a higher leader leave it to
/// that leader). All must agree on the highest id, and settle, within the chaos
/// campaign's recovery bound plus a backlog's processing once the network is clean.
#[test]
fn a_staggered_lossy_saturated_cold_start_settles() {
    use electd::sim::chaos::recovery_bound;
    use electd::sim::network::NetConfig;
    use electd::sim::Cost;
    const N: usize = 64;
    for kind in [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully] {
        let mut cfg = SimConfig::new(kind, N, 1);
        cfg.cost = Cost {
            datagram: Duration::from_micros(400),
            timer: Duration::from_micros(50),
        };
        cfg.net = NetConfig {
            loss: 0.2,
            delay_max: Duration::from_millis(3),
            ..NetConfig::default()
        };
        // The recovery bound, plus working off a backlog of one broadcast from every
        // node at every node (N² datagrams at the per-datagram cost, spread over N
        // nodes: N · cost each, N times over).
        let backlog = cfg.cost.datagram * (N * N) as u32;
        let bound = recovery_bound(kind, &cfg.timing, &cfg.link, N) + backlog;
        let mut sim = Sim::new(cfg).expect("sim");
        let mut ops = Vec::new();
        for id in 1..=N as u32 {
            ops.push(Op::Restart {
                node: id,
                elect: true,
            });
            ops.push(Op::RunFor(Duration::from_millis(5)));
        }
        ops.push(Op::Net(NetConfig::default()));
        ops.push(Op::Measure("after the starts".into()));
        ops.push(Op::Settle { max: bound });
        let settled = sim.run_ops(&ops).expect("ops");
        let e = sim.elections.last().expect("measured");
        assert!(settled, "{kind}: not settled within {bound:?}: {e:?}");
        assert_eq!(sim.agreement(kind), Some(N as u32), "{kind}");
    }
}
