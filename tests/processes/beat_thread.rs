//! An idle leader's heartbeats from its beat thread (`transport.beat_thread`, on by
//! default; docs/architecture.md): real `electd run` processes keep their leader, the
//! leader's heartbeats are counted at the rate the schedule gives, and a paused leader
//! falls silent: its followers elect another within the failover bound.

use crate::common::{wait_for, with_admin_token, Cluster, Timing};
use electd::contract::algorithm::AlgorithmKind;
use std::time::{Duration, Instant};

/// The failover measurement's timing: heartbeat 10 ms, failure timeout 100 ms (eight
/// beats handed at a time).
const TIMING: Timing = crate::failover::TIMING;

fn heartbeats(c: &Cluster, id: u32) -> Option<f64> {
    c.metric(
        id,
        "electd_messages_sent_total",
        &[("algorithm", "bully"), ("type", "heartbeat")],
    )
}

fn threads(pid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

#[test]
fn an_idle_leaders_beats_leave_from_its_thread_counted_and_stop_at_a_pause() {
    // Counted against the clock: no other cluster beside it.
    let _alone = crate::common::alone();
    let token = "beat-thread-token";
    let mut c = Cluster::new("beat-thread", 5, &[AlgorithmKind::Bully], &TIMING);
    with_admin_token(&c, token, "");
    c.start_all();
    c.wait_agreement(Duration::from_secs(15), |l| l.get("bully") == Some(&5))
        .unwrap_or_else(|e| panic!("startup: {e}\n{}", c.log(5)));
    let pid = c.pid(5).expect("node 5 runs");
    assert!(
        threads(pid).iter().any(|t| t == "electd-beats"),
        "the leader runs a beat thread: {:?}",
        threads(pid)
    );

    // Over at least a second, the counted heartbeats follow the schedule: four peers
    // per period, give or take the beats not booked yet at each reading (at most the
    // ⌊F/H⌋ − 2 the thread holds, plus the one under way). Never more; and at least
    // half the periods (a stalled machine skips beats, as the node does, but beats
    // left unbooked would count only the runtime's own, one in nine).
    let hb = Duration::from_millis(TIMING.heartbeat_ms);
    let peers = 4.0;
    let (t0, h0) = (Instant::now(), heartbeats(&c, 5).expect("metrics"));
    let term0 = c.group(1, "bully").expect("status")["term"].clone();
    let h1 = wait_for("a second of heartbeats", || {
        (t0.elapsed() >= Duration::from_secs(1)).then(|| heartbeats(&c, 5))?
    });
    let elapsed = t0.elapsed();
    let periods = elapsed.as_secs_f64() / hb.as_secs_f64();
    let held = (TIMING.failure_ms / TIMING.heartbeat_ms - 2 + 1) as f64;
    let counted = (h1 - h0) / peers;
    assert!(
        counted <= periods + held + 1.0 && counted >= periods / 2.0,
        "{counted} beats counted in {elapsed:?} ({periods:.1} periods)"
    );
    // No follower lost its leader meanwhile.
    assert_eq!(
        c.agreement().ok().and_then(|l| l.get("bully").copied()),
        Some(5)
    );
    assert_eq!(c.group(1, "bully").expect("status")["term"], term0);

    // Paused: the runtime takes back the beats it handed over (nothing more leaves:
    // `daemon::beater`'s own test), and the followers elect another leader as they
    // would after a crash, within the failover bound.
    let http = c.nodes[4].http;
    let post = |path: &str| {
        electd::http::client::http_request(http, "POST", path, Some(token)).map(|r| r.0)
    };
    assert_eq!(post("/admin/pause"), Some(200));
    let bound = TIMING.failover_bound() + Duration::from_secs(1);
    crate::common::wait_for_within(bound, "the followers to follow node 4", || {
        (c.group(1, "bully")?["leader"] == 4).then_some(())
    });
    assert_eq!(post("/admin/resume"), Some(200));
    wait_for("node 5 to lead again", || {
        (c.group(1, "bully")?["leader"] == 5).then_some(())
    });
}
