//! Failover time of the daemon, measured (ignored by default: it takes minutes).
//!
//! `cargo test --test processes failover:: -- --ignored --nocapture` (add `--release` for an
//! optimised binary; the figures are dominated by the timeouts, not by CPU).
//!
//! Five `electd run` processes on 127.0.0.1 at heartbeat 10 ms / failure_timeout
//! 100 ms. For each algorithm, KILLS times: SIGKILL the group's leader, measure the
//! time until every survivor agrees on the new leader of that group (the highest live
//! id where the algorithm promises it), restart the killed node, wait until the
//! cluster agrees again. Prints min / median / p90 / max and the ratio to the
//! failure timeout. Agreement is polled over HTTP every millisecond, so each figure
//! includes up to ~1 ms of polling latency.

use crate::common::{Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind;
use electd::NodeId;
use std::time::{Duration, Instant};

const KILLS: usize = 30;
pub(crate) const TIMING: Timing = Timing {
    heartbeat_ms: 10,
    failure_ms: 100,
    answer_ms: 20,
    coordinator_ms: 60,
    retransmit_ms: 5,
    max_attempts: 4,
};

/// The leader all live nodes agree on in `kind`, if they do.
fn agreed(c: &Cluster, kind: AlgorithmKind) -> Option<NodeId> {
    let live = c.live();
    let mut leader = None;
    for &id in &live {
        let s = c.status(id)?;
        let g = s["groups"]
            .as_array()?
            .iter()
            .find(|g| g["algorithm"] == kind.as_str())?;
        if g["electing"].as_bool() == Some(true) {
            return None;
        }
        let l = g["leader"].as_u64()? as NodeId;
        if leader.is_some_and(|x| x != l) || !live.contains(&l) {
            return None;
        }
        leader = Some(l);
    }
    let top = live.iter().max().copied();
    leader.filter(|&l| !kind.elects_highest_id() || Some(l) == top)
}

fn wait(c: &Cluster, kind: AlgorithmKind, within: Duration) -> (NodeId, Duration) {
    let start = Instant::now();
    loop {
        if let Some(l) = agreed(c, kind) {
            return (l, start.elapsed());
        }
        assert!(
            start.elapsed() < within,
            "{kind}: no agreement within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[test]
#[ignore = "measurement: minutes of wall-clock time; run with --ignored --nocapture"]
fn failover_time_per_algorithm() {
    // A measurement: no other cluster beside it.
    let _alone = crate::common::alone();
    let algorithms = AlgorithmKind::available();
    let mut c = Cluster::new("failover", 5, &algorithms, &TIMING);
    c.start_all();
    let failure = Duration::from_millis(TIMING.failure_ms);
    let mut report = String::new();
    for &kind in &algorithms {
        let mut times = Vec::with_capacity(KILLS);
        for _ in 0..KILLS {
            let (leader, _) = wait(&c, kind, Duration::from_secs(10));
            let killed_at = Instant::now();
            c.kill(leader);
            wait(&c, kind, Duration::from_secs(10));
            times.push(killed_at.elapsed());
            c.start(leader);
            // Wait for the restarted node to rejoin before the next kill.
            let start = Instant::now();
            while c.status(leader).is_none() || agreed(&c, kind).is_none() {
                assert!(start.elapsed() < Duration::from_secs(10), "{kind}: restart");
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ratio = |d: Duration| d.as_secs_f64() / failure.as_secs_f64();
        let line = format!(
            "{kind:<15} kills={KILLS} min={:.1}ms median={:.1}ms p90={:.1}ms max={:.1}ms  \
             (x failure_timeout: {:.2} / {:.2} / {:.2} / {:.2})\n",
            ms(times[0]),
            ms(pct(&times, 0.5)),
            ms(pct(&times, 0.9)),
            ms(times[times.len() - 1]),
            ratio(times[0]),
            ratio(pct(&times, 0.5)),
            ratio(pct(&times, 0.9)),
            ratio(times[times.len() - 1]),
        );
        eprint!("{line}");
        report.push_str(&line);
        // Detection alone takes the failure timeout: a faster "failover" would mean
        // the survivors never noticed the kill.
        assert!(
            times[0] + Duration::from_millis(TIMING.heartbeat_ms) >= failure,
            "{kind}: {times:?}"
        );
    }
    eprintln!(
        "\nheartbeat {} ms, failure_timeout {} ms, 5 nodes, SIGKILL of the group leader:\n{report}",
        TIMING.heartbeat_ms, TIMING.failure_ms
    );
}
