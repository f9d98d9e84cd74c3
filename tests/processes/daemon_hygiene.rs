//! What `electd run` owes its operator around the election (issue 28, §3): a SIGHUP
//! that says what it re-reads and names the edits it does not apply (item 14), a
//! missing state directory created instead of refused (item 13), and health checks
//! whose background children die with the daemon (item 6). Real processes; every wait
//! is on a condition with a deadline.

use crate::common::{dead, wait_for, Cluster, Timing, DEADLINE};
use electd::contract::algorithm::AlgorithmKind::Bully;

/// Issue 28, §3 item 14: SIGHUP re-read the key and silently ignored every other
/// edit. Now the log says what a reload re-reads and names the keys that differ.
#[test]
fn sighup_names_the_edits_it_does_not_apply() {
    let mut c = Cluster::new("sighup-diff", 2, &[Bully], &Timing::LOOPBACK);
    c.start_with_env(1, &[("ELECTD_LOG", "info")]);
    assert!(c.wait_http(1, DEADLINE), "{}", c.log(1));
    c.signal(1, libc::SIGHUP);
    wait_for("the reload's account", || {
        c.log(1)
            .contains("matches the running configuration")
            .then_some(())
    });
    let log = c.log(1);
    assert!(
        log.contains("re-reading the keys") && log.contains("needs a restart"),
        "{log}"
    );
    // Edit the heartbeat and node 2's HTTP port, then SIGHUP again.
    let text = std::fs::read_to_string(&c.config).unwrap();
    let http2 = c.http(2).unwrap().to_string();
    let edited = text
        .replace("heartbeat = \"20ms\"", "heartbeat = \"30ms\"")
        .replace(&http2, "127.0.0.1:1");
    assert_ne!(edited, text);
    std::fs::write(&c.config, edited).unwrap();
    c.signal(1, libc::SIGHUP);
    let line = wait_for("the warning about the edit", || {
        c.log(1)
            .lines()
            .find(|l| l.contains("differs from the running configuration"))
            .map(str::to_string)
    });
    assert!(
        line.contains("timing.heartbeat") && line.contains("peer[1]") && line.contains("restart"),
        "{line}"
    );
    assert!(c.wait_http(1, DEADLINE), "alive after SIGHUP");
    assert_eq!(c.terminate(1, DEADLINE), Some(0), "{}", c.log(1));
}

/// Issue 28, §3 item 13: a missing state directory made `run` (and `config check`)
/// refuse; `run` creates it, mode 0700, when it can.
#[test]
fn run_creates_a_missing_state_directory() {
    let mut c = Cluster::new("state-dir", 1, &[Bully], &Timing::LOOPBACK);
    let dir = c.dir.join("var").join("lib").join("electd");
    let state = format!("{}/{{node}}.state", dir.display());
    c.start_with_env(
        1,
        &[
            ("ELECTD_STATE_FILE", state.as_str()),
            ("ELECTD_LOG", "info"),
        ],
    );
    assert!(c.wait_http(1, DEADLINE), "{}", c.log(1));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir)
        .expect("created")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(
        c.log(1).contains("created the state directory"),
        "{}",
        c.log(1)
    );
    assert_eq!(c.terminate(1, DEADLINE), Some(0), "{}", c.log(1));
}

/// Issue 28, §3 item 6: SIGTERM to electd orphaned the running check's children, and
/// a check that forks and exits 0 left one child per run.
#[test]
fn health_check_children_end_with_each_run_and_with_the_daemon() {
    let mut c = Cluster::new("check-children", 1, &[Bully], &Timing::LOOPBACK);
    let pids = c.dir.join("pids");
    let hung = c.dir.join("hung");
    // One check forks and passes every 100 ms; the other starts a child and waits.
    c.append_config(&format!(
        "[[check]]\nname = \"forks\"\ncommand = [\"sh\", \"-c\", \"sleep 300 & echo $! >> {}; exit 0\"]\n\
         interval = \"100ms\"\n\n\
         [[check]]\nname = \"hangs\"\ncommand = [\"sh\", \"-c\", \"sleep 300 & echo $! > {}; wait\"]\n\
         interval = \"1h\"\ntimeout = \"30m\"\n",
        pids.display(),
        hung.display()
    ));
    c.start(1);
    assert!(c.wait_http(1, DEADLINE), "{}", c.log(1));
    let read = |f: &std::path::Path| -> Vec<i32> {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    // Some runs of the forking check, and the hanging one under way.
    let forked = wait_for("three runs of the forking check", || {
        let p = read(&pids);
        (p.len() >= 3 && !read(&hung).is_empty()).then_some(p)
    });
    // Every finished run's child is gone (the last one may still be running).
    for &pid in &forked[..forked.len() - 1] {
        wait_for("the child of a finished run to die", || {
            dead(pid).then_some(())
        });
    }
    let hung_child = read(&hung)[0];
    assert!(!dead(hung_child), "the hanging check runs");
    assert_eq!(c.terminate(1, DEADLINE), Some(0), "{}", c.log(1));
    wait_for("the running check's child to die with the daemon", || {
        dead(hung_child).then_some(())
    });
    for pid in read(&pids) {
        wait_for("every forked child to be gone", || dead(pid).then_some(()));
    }
}
