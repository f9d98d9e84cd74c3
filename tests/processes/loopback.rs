//! Five real `electd run` processes on 127.0.0.1 from one config file: they agree in
//! every group; SIGKILL of a group's leader makes the survivors agree on the next
//! highest id (Bully and ring families: Garcia-Molina 1982, Chang–Roberts 1979)
//! within a bound derived from the timeouts; the restarted highest node takes
//! leadership back (the Bully rule: a recovered process calls an election); SIGTERM
//! makes a leader resign so that the others elect before the failure timeout.

use crate::common::{Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind;
use std::time::Duration;

const TIMING: Timing = Timing::LOOPBACK;

/// Scheduling slack for a loaded 2-core test machine (five processes plus HTTP polls).
const SLACK: Duration = Duration::from_secs(1);

#[test]
fn kill_each_leader_then_restart_then_resign() {
    // The resignation is timed against the failure timeout: no other cluster beside it.
    let _alone = crate::common::alone();
    let algorithms = AlgorithmKind::available();
    let mut c = Cluster::new("loopback", 5, &algorithms, &TIMING);
    // Every node appends "ALGORITHM ROLE" to hooks-N.log on each leader change.
    let hooks = c.dir.join("hooks-");
    c.append_config(&format!(
        "[hooks]\non_leader_change = \"echo \\\"$ELECTD_ALGORITHM $ELECTD_ROLE\\\" >> {}$ELECTD_NODE.log\"\n",
        hooks.display()
    ));
    c.start_all();
    let highest_leads = |ids: Vec<u32>| {
        let top = ids.iter().copied().max();
        let algorithms = algorithms.clone();
        move |leaders: &std::collections::BTreeMap<String, u32>| {
            algorithms.iter().all(|k| {
                let l = leaders.get(k.as_str()).copied();
                l.is_some() && (!k.elects_highest_id() || l == top)
            })
        }
    };
    c.wait_agreement(Duration::from_secs(15), highest_leads(c.ids()))
        .unwrap_or_else(|e| panic!("startup: {e}\n{}", c.log(1)));

    let bound = TIMING.failover_bound() + SLACK;
    for kind in AlgorithmKind::available() {
        let (leaders, _) = c
            .agreement()
            .map(|l| (l, ()))
            .expect("agreed before the kill");
        let leader = leaders[kind.as_str()];
        c.kill(leader);
        let (after, took) = c
            .wait_agreement(bound, highest_leads(c.live()))
            .unwrap_or_else(|e| panic!("{kind}: after killing {leader}: {e}"));
        assert_ne!(after[kind.as_str()], leader);
        assert!(
            took + Duration::from_millis(50) >= Duration::from_millis(TIMING.failure_ms)
                || !kind.elects_highest_id(),
            "{kind}: agreement {took:?} after a SIGKILL is faster than the failure timeout"
        );
        eprintln!("{kind}: killed {leader}, survivors agreed on {after:?} after {took:?}");
        // The killed node comes back with a new incarnation and calls an election;
        // in the Bully family the highest id takes leadership back.
        c.start(leader);
        let (back, _) = c
            .wait_agreement(Duration::from_secs(5), highest_leads(c.ids()))
            .unwrap_or_else(|e| panic!("{kind}: after restarting {leader}: {e}"));
        for k in AlgorithmKind::available()
            .into_iter()
            .filter(|k| k.elects_highest_id())
        {
            assert_eq!(
                back[k.as_str()],
                5,
                "{k}: the restarted highest node leads again"
            );
        }
    }

    // Graceful leave: the leader resigns on SIGTERM, exits 0, and the survivors agree
    // on the next highest id without waiting for the failure timeout.
    let start = std::time::Instant::now();
    assert_eq!(
        c.terminate(5, Duration::from_secs(5)),
        Some(0),
        "{}",
        c.log(5)
    );
    let (after, _) = c
        .wait_agreement(bound, highest_leads(c.live()))
        .expect("agreement after a resignation");
    let took = start.elapsed();
    for k in AlgorithmKind::available()
        .into_iter()
        .filter(|k| k.elects_highest_id())
    {
        assert_eq!(after[k.as_str()], 4);
    }
    assert!(
        took < Duration::from_millis(TIMING.failure_ms),
        "after a resignation agreement took {took:?}, not below the failure timeout"
    );
    eprintln!("resign: survivors agreed on {after:?} after {took:?}");
    // The resigning node's hook ran for its last changes before it exited: every
    // group that node 5 led ends with role "none" in its log.
    let log5 = std::fs::read_to_string(c.dir.join("hooks-5.log")).expect("node 5 ran its hook");
    for k in AlgorithmKind::available()
        .into_iter()
        .filter(|k| k.elects_highest_id())
    {
        let last = log5
            .lines()
            .rev()
            .find(|l| l.starts_with(&format!("{} ", k.as_str())))
            .unwrap_or_default()
            .to_string();
        assert_eq!(last, format!("{} none", k.as_str()), "{k}:\n{log5}");
    }
}
