//! Leader-change hooks: environment, order, failure and timeout accounting, and the
//! kill of the whole process group on timeout. Each test waits on a condition (a file,
//! a counter) with a deadline, never on a fixed sleep.

use crate::common::http::{shared, wait_until};
use electd::contract::algorithm::AlgorithmKind::{Bully, Raft};
use electd::daemon::hooks::{self, Outcome};
use electd::daemon::shared::LeaderEvent;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn tempdir(name: &str) -> PathBuf {
    crate::common::scratch(&format!("hooks-{name}"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn counter(text: &str, result: &str) -> u64 {
    let key = format!("electd_hook_runs_total{{node=\"4\",result=\"{result}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn hook_gets_the_environment_of_each_change() {
    let dir = tempdir("env");
    let out = dir.join("env.txt");
    // Write atomically (rename), so the test never reads a half-written file.
    let cmd = format!(
        "env | grep '^ELECTD_' | sort > {0}.tmp && mv {0}.tmp {0}",
        out.display()
    );
    let (s, _rx) = shared(4, &[Bully, Raft], None);
    let task = hooks::spawn(s.clone(), cmd, Duration::from_secs(5));
    s.emit(LeaderEvent::new(4, Raft, Some(4), 7));
    wait_until("the hook's file", || out.exists()).await;
    let env = read(&out);
    for line in [
        "ELECTD_NODE=4",
        "ELECTD_ALGORITHM=raft",
        "ELECTD_LEADER=4",
        "ELECTD_ROLE=leader",
        "ELECTD_STATE=leader",
        "ELECTD_TERM=7",
        "ELECTD_CLUSTER=test",
    ] {
        assert!(env.lines().any(|l| l == line), "{line} missing in:\n{env}");
    }
    assert!(env.lines().any(|l| l.starts_with("ELECTD_AT_MS=")), "{env}");

    // The leader lost: LEADER is empty, ROLE none.
    std::fs::remove_file(&out).expect("rm");
    s.emit(LeaderEvent::new(4, Bully, None, 2));
    wait_until("the second run", || out.exists()).await;
    let env = read(&out);
    assert!(env.lines().any(|l| l == "ELECTD_LEADER="), "{env}");
    assert!(env.lines().any(|l| l == "ELECTD_ROLE=none"), "{env}");
    assert!(env.lines().any(|l| l == "ELECTD_STATE=follower"), "{env}");
    assert!(env.lines().any(|l| l == "ELECTD_ALGORITHM=bully"), "{env}");
    // The file appears just before the command exits; the run is counted after.
    wait_until("two runs counted ok", || {
        counter(&s.metrics.encode(), "ok") == 2
    })
    .await;
    task.abort();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn runs_follow_the_order_of_changes() {
    let dir = tempdir("order");
    let log = dir.join("log.txt");
    let cmd = format!(
        "echo \"$ELECTD_ALGORITHM $ELECTD_LEADER $ELECTD_ROLE\" >> {}",
        log.display()
    );
    let (s, _rx) = shared(4, &[Bully, Raft], None);
    let task = hooks::spawn(s.clone(), cmd, Duration::from_secs(5));
    let changes = [
        (Bully, Some(5)),
        (Bully, None),
        (Bully, Some(4)),
        (Raft, Some(2)),
        (Bully, Some(5)),
    ];
    // One change at a time (each run done before the next change): every one runs.
    for (i, (a, l)) in changes.iter().enumerate() {
        s.emit(LeaderEvent::new(4, *a, *l, i as u64));
        wait_until("the run", || read(&log).lines().count() == i + 1).await;
    }
    let expected: Vec<String> = changes
        .iter()
        .map(|(a, l)| {
            let role = match l {
                Some(4) => "leader",
                Some(_) => "follower",
                None => "none",
            };
            format!(
                "{a} {} {role}",
                l.map(|x| x.to_string()).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(read(&log).lines().collect::<Vec<_>>(), expected);
    task.abort();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn failures_are_counted_and_do_not_stop_later_runs() {
    let (s, _rx) = shared(4, &[Bully], None);
    let task = hooks::spawn(
        s.clone(),
        "echo oops >&2; exit 3".to_string(),
        Duration::from_secs(5),
    );
    let m = &s.metrics;
    s.emit(LeaderEvent::new(4, Bully, Some(1), 1));
    wait_until("one failed run", || counter(&m.encode(), "failed") == 1).await;
    s.emit(LeaderEvent::new(4, Bully, Some(2), 2));
    wait_until("two failed runs", || counter(&m.encode(), "failed") == 2).await;
    task.abort();

    let e = LeaderEvent::new(4, Bully, Some(2), 2);
    let r = hooks::run(&s, "exit 0", Duration::from_secs(5), &e).await;
    assert_eq!(r, Outcome::Ok);
    let r = hooks::run(&s, "kill -9 $$", Duration::from_secs(5), &e).await;
    assert!(matches!(r, Outcome::Failed(_)), "{r:?}");
    assert_eq!(counter(&s.metrics.encode(), "failed"), 3);
}

/// A hung hook is killed at its timeout with everything it started, and counted.
#[tokio::test]
async fn a_hung_hook_is_killed_with_its_children() {
    let dir = tempdir("timeout");
    let pidfile = dir.join("pid");
    // The shell starts a grandchild and waits: killing only the shell would leave it.
    let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let (s, _rx) = shared(4, &[Bully], None);
    let e = LeaderEvent::new(4, Bully, Some(4), 1);
    let timeout = Duration::from_millis(300);
    let t0 = Instant::now();
    let r = hooks::run(&s, &cmd, timeout, &e).await;
    let took = t0.elapsed();
    assert_eq!(r, Outcome::Timeout);
    assert!(took >= timeout && took < Duration::from_secs(5), "{took:?}");
    assert_eq!(counter(&s.metrics.encode(), "timeout"), 1);
    let pid = read(&pidfile).trim().to_string();
    assert!(!pid.is_empty(), "the hook wrote its child's pid");
    // Dead means gone, or a zombie waiting for its new parent to reap it.
    let stat = format!("/proc/{pid}/stat");
    wait_until("the grandchild to die", || {
        let s = read(Path::new(&stat));
        s.is_empty() || s.split_whitespace().nth(2) == Some("Z")
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_command_that_cannot_start_is_an_error_not_a_panic() {
    let (s, _rx) = shared(4, &[Bully], None);
    let e = LeaderEvent::new(4, Bully, Some(4), 1);
    // sh starts, the command does not exist: exit 127, a failure.
    let r = hooks::run(&s, "/nonexistent/electd-hook", Duration::from_secs(5), &e).await;
    assert!(matches!(r, Outcome::Failed(_)), "{r:?}");
}

/// At shutdown the hook still runs for the changes announced before the stop, in
/// order: a "release the VIP on none" script is not cut off by the exit.
#[tokio::test]
async fn changes_announced_before_stop_still_run() {
    let dir = tempdir("stop");
    let out = dir.join("roles.txt");
    let cmd = format!(
        "echo \"$ELECTD_ALGORITHM $ELECTD_ROLE $ELECTD_STATE\" >> {}",
        out.display()
    );
    let (s, _rx) = shared(4, &[Bully, Raft], None);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = hooks::spawn_until(s.clone(), cmd, Duration::from_secs(5), async move {
        let _ = stopped.await;
    });
    s.emit(LeaderEvent::new(4, Bully, None, 3));
    s.emit(LeaderEvent::new(4, Raft, None, 9));
    stop.send(()).expect("task alive");
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the task ends after running what was pending")
        .expect("no panic");
    // What was announced, then `stopped` (keepalived's STOP), once per group and in
    // order within each group (the groups' queues run side by side).
    let text = read(&out);
    for group in ["bully", "raft"] {
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(group)).collect();
        assert_eq!(
            lines,
            vec![
                format!("{group} none follower"),
                format!("{group} none stopped")
            ],
            "{text}"
        );
    }
    assert_eq!(text.lines().count(), 4, "{text}");
}

/// Each group has its own queue: a run of one group that hangs does not delay another
/// group's runs; changes that pile up behind a slow run are coalesced to the latest
/// change of that group, the others counted as skipped.
#[tokio::test]
async fn a_slow_group_delays_only_its_own_runs_and_its_backlog_is_coalesced() {
    let dir = tempdir("backlog");
    let log = dir.join("log.txt");
    let gate = dir.join("go");
    // Bully's runs wait for the test's go-ahead; raft's run at once.
    let cmd = format!(
        "echo \"$ELECTD_ALGORITHM $ELECTD_TERM\" >> {log}; \
         if [ \"$ELECTD_ALGORITHM\" = bully ]; then \
         while [ ! -e {gate} ]; do sleep 0.01; done; fi",
        log = log.display(),
        gate = gate.display()
    );
    let (s, _rx) = shared(4, &[Bully, Raft], None);
    let task = hooks::spawn(s.clone(), cmd, Duration::from_secs(20));
    s.emit(LeaderEvent::new(4, Bully, Some(1), 1));
    wait_until("the first run", || read(&log).lines().count() == 1).await;
    // Behind it: bully 2..=10 and 11; raft 20 and 21 meanwhile.
    for t in 2..=10 {
        s.emit(LeaderEvent::new(4, Bully, Some(2), t));
    }
    s.emit(LeaderEvent::new(4, Raft, Some(3), 20));
    s.emit(LeaderEvent::new(4, Raft, None, 21));
    s.emit(LeaderEvent::new(4, Bully, Some(4), 11));
    // Raft's latest change runs while bully's hook still hangs.
    wait_until("raft's run while bully hangs", || {
        read(&log).lines().any(|l| l == "raft 21")
    })
    .await;
    assert!(!gate.exists());
    std::fs::write(&gate, "").expect("go");
    wait_until("bully's coalesced run", || {
        read(&log).lines().any(|l| l == "bully 11")
    })
    .await;
    let text = read(&log);
    let bully: Vec<&str> = text.lines().filter(|l| l.starts_with("bully")).collect();
    assert_eq!(bully, vec!["bully 1", "bully 11"], "{text}");
    let raft: Vec<&str> = text.lines().filter(|l| l.starts_with("raft")).collect();
    assert_eq!(raft.last(), Some(&"raft 21"), "{text}");
    // Every change either ran or was counted as skipped: 1 + 10 bully, 2 raft.
    let m = &s.metrics;
    wait_until("every change accounted for", || {
        let t = m.encode();
        counter(&t, "ok") + counter(&t, "skipped") == 13
    })
    .await;
    assert_eq!(counter(&m.encode(), "ok"), 2 + raft.len() as u64);
    task.abort();
    let _ = std::fs::remove_dir_all(dir);
}

/// A run still going when the hook task is aborted (the daemon's last resort at
/// shutdown) is killed with everything it started: no orphan outlives the daemon.
#[tokio::test]
async fn aborting_the_hook_task_kills_the_running_command_and_its_children() {
    let dir = tempdir("abort");
    let pidfile = dir.join("pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let (s, _rx) = shared(4, &[Bully], None);
    let task = hooks::spawn(s.clone(), cmd, Duration::from_secs(300));
    s.emit(LeaderEvent::new(4, Bully, None, 1));
    wait_until("the hook's child", || !read(&pidfile).trim().is_empty()).await;
    let pid = read(&pidfile).trim().to_string();
    task.abort();
    let _ = task.await;
    let stat = format!("/proc/{pid}/stat");
    wait_until("the orphan candidate to die", || {
        let s = read(Path::new(&stat));
        s.is_empty() || s.split_whitespace().nth(2) == Some("Z")
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The states leader, follower and fault (keepalived MASTER, BACKUP, FAULT) in the
/// order of the changes; a leader that stays but takes a new token (a split brain
/// healing: the survivor's token goes above both sides') runs the hook again.
#[tokio::test]
async fn states_in_order_and_a_new_token_of_the_same_leader_renotifies() {
    let dir = tempdir("states");
    let log = dir.join("log.txt");
    let cmd = format!(
        "echo \"$ELECTD_STATE $ELECTD_LEADER $ELECTD_TERM\" >> {}",
        log.display()
    );
    let (s, _rx) = shared(4, &[Bully], None);
    let task = hooks::spawn(s.clone(), cmd, Duration::from_secs(5));
    let mut fault = LeaderEvent::new(4, Bully, Some(5), 3);
    fault.fault = true;
    let changes = [
        LeaderEvent::new(4, Bully, Some(4), 1),
        // Split brain healed: the same leader, a token above both sides'.
        LeaderEvent::new(4, Bully, Some(4), 2),
        fault,
        LeaderEvent::new(4, Bully, Some(5), 3),
    ];
    let expected = ["leader 4 1", "leader 4 2", "fault 5 3", "follower 5 3"];
    for (i, e) in changes.into_iter().enumerate() {
        s.emit(e);
        wait_until("the run", || read(&log).lines().count() == i + 1).await;
    }
    assert_eq!(read(&log).lines().collect::<Vec<_>>(), expected);
    task.abort();
    let _ = std::fs::remove_dir_all(dir);
}
