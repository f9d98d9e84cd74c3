//! Message efficiency on real UDP: for each comparison case of
//! `AlgorithmKind::cases` and each N, N runtimes in this process over loopback
//! sockets start passively, the lowest id is told to call an election (what `POST
//! /admin/election` does), and once every node agrees and every election message sent
//! has been received, the counters are read from the nodes' Prometheus registries.
//!
//! The same election is simulated ([`electd::sim::runner::simulate`], same roster
//! order, same initiator) and the closed form of the literature is computed: on a
//! clean network both ratios must be 1.00 wherever the formula is exact. Acks,
//! retransmissions and bytes come from the same counters (`acks = datagrams −
//! messages − liveness − retransmissions`: without multicast every message is one
//! datagram). Timeouts are generous, so the synchronous-system assumption behind the
//! formulas holds on a loaded machine; no heartbeat falls inside the window.

use super::inproc::InProc;
use super::{ms, BenchOptions};
use electd::contract::algorithm::{AlgorithmKind, Timing};
use electd::contract::formulas;
use electd::daemon::runtime::Start;
use electd::daemon::shared::Control;
use electd::node::link::LinkConfig;
use electd::sim::runner::{simulate, SimulateParams};
use electd::sim::scenario::{Initiator, Scenario};
use electd::NodeId;
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct MessagePoint {
    pub case: String,
    pub algorithm: AlgorithmKind,
    pub nodes: usize,
    /// Election messages counted by the daemons (`electd_messages_sent_total`).
    pub udp_messages: u64,
    pub sim_messages: u64,
    pub formula: Option<f64>,
    pub formula_text: &'static str,
    pub exact: bool,
    /// udp / formula.
    pub ratio_formula: Option<f64>,
    /// udp / simulator.
    pub ratio_sim: f64,
    pub acks: u64,
    pub retransmissions: u64,
    pub datagrams: u64,
    pub bytes: u64,
    pub bytes_per_message: f64,
    pub leader: Option<NodeId>,
    /// Every node agreed and every message was received before the deadline.
    pub complete: bool,
    /// Runs of this point (incomplete runs are retried, and kept in
    /// [`MessageResults::incomplete`]).
    pub attempts: usize,
    pub elapsed_ms: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MessageResults {
    pub nodes: Vec<usize>,
    pub points: Vec<MessagePoint>,
    /// Runs that did not complete within 30 s (then retried, at most twice).
    pub incomplete: Vec<MessagePoint>,
}

fn timing() -> Timing {
    Timing {
        heartbeat: Duration::from_secs(10),
        failure_timeout: Duration::from_secs(60),
        answer_timeout: Duration::from_millis(200),
        coordinator_timeout: Duration::from_secs(2),
        election_timeout_min: Duration::from_secs(30),
        election_timeout_max: Duration::from_secs(60),
    }
}

pub fn node_counts(quick: bool) -> Vec<usize> {
    if quick {
        vec![4, 8]
    } else {
        vec![4, 8, 16, 32, 64]
    }
}

pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> anyhow::Result<MessageResults> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let nodes = node_counts(opts.quick);
    let mut points = Vec::new();
    let mut incomplete = Vec::new();
    for kind in AlgorithmKind::available() {
        for case in kind.cases() {
            for &n in &nodes {
                let mut p = rt.block_on(point(&case, n, opts.seed))?;
                while !p.complete && p.attempts < 3 {
                    log(&format!(
                        "  {:<18} N={n:<3} INCOMPLETE after {:.0} ms: udp {} sim {} retx {} leader {:?}; retrying",
                        p.case, p.elapsed_ms, p.udp_messages, p.sim_messages, p.retransmissions, p.leader
                    ));
                    let attempts = p.attempts;
                    incomplete.push(p);
                    p = rt.block_on(point(&case, n, opts.seed))?;
                    p.attempts = attempts + 1;
                }
                log(&format!(
                    "  {:<18} N={n:<3} udp {} sim {} formula {} acks {} retx {} bytes {}",
                    p.case,
                    p.udp_messages,
                    p.sim_messages,
                    p.formula.map(|f| format!("{f:.1}")).unwrap_or("-".into()),
                    p.acks,
                    p.retransmissions,
                    p.bytes
                ));
                points.push(p);
            }
        }
    }
    Ok(MessageResults {
        nodes,
        points,
        incomplete,
    })
}

async fn point(case: &formulas::Case, n: usize, seed: u64) -> anyhow::Result<MessagePoint> {
    let kind = case.algorithm;
    let ids = case.order.ids(n, seed);
    let mut sp = SimulateParams::new(kind, n);
    sp.ids = ids.clone();
    sp.initiator = Initiator::Lowest;
    sp.scenario = Scenario::Startup;
    sp.seed = seed;
    let sim = simulate(&sp)?;
    // Not an operating configuration, so not `Timing::validate`d: the first
    // retransmission (300 ms) comes after the answer timeout (200 ms) on purpose, so
    // that a clean loopback election counts only first sends.
    let link = LinkConfig {
        retransmit: Duration::from_millis(300),
        rto_min: Duration::from_millis(300),
        rto_max: Duration::from_millis(2400),
        give_up: Duration::from_millis(4500),
        max_attempts: None,
    };
    let mut c = InProc::start(&ids, kind, &timing(), &link, Start::Passive).await?;
    let initiator = ids.iter().copied().min().unwrap_or(1);
    let started = Instant::now();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let asked = c.command(initiator, Control::Elect(kind, tx)).await && rx.await.unwrap_or(false);
    let deadline = started + Duration::from_secs(30);
    let all = c.ids();
    let mut complete = false;
    let mut leader = None;
    if asked {
        leader = c.wait_agreement(&all, deadline).await.map(|a| a.0);
        // Then every election message sent has been received (acks go out in the
        // same batch as the delivery, before the counters are synced).
        // (Reading N registries is not free: the cheap status check comes first.)
        while let Some(l) = leader {
            if c.settled_on(l) {
                let k = c.counters();
                if k.messages == k.received {
                    complete = true;
                    break;
                }
            }
            if Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let elapsed = started.elapsed();
    let k = c.counters();
    c.shutdown().await;
    let formula = case.expected.map(|f| f(n as u64));
    Ok(MessagePoint {
        case: case.label.clone(),
        algorithm: kind,
        nodes: n,
        udp_messages: k.messages,
        sim_messages: sim.messages.total,
        formula,
        formula_text: case.formula,
        exact: case.exact,
        ratio_formula: formula.filter(|f| *f > 0.0).map(|f| k.messages as f64 / f),
        ratio_sim: if sim.messages.total > 0 {
            k.messages as f64 / sim.messages.total as f64
        } else {
            0.0
        },
        acks: k
            .datagrams
            .saturating_sub(k.messages + k.liveness + k.retransmissions),
        retransmissions: k.retransmissions,
        datagrams: k.datagrams,
        bytes: k.bytes,
        bytes_per_message: if k.messages > 0 {
            k.bytes as f64 / k.messages as f64
        } else {
            0.0
        },
        leader,
        complete,
        attempts: 1,
        elapsed_ms: ms(elapsed),
    })
}
