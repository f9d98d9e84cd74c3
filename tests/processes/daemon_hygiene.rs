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

/// The scheduling policy (field 41 of `/proc/<pid>/task/<tid>/stat`, or of any `stat`
/// file) of every thread of `pid`: 0 is the normal class, 2 is `SCHED_RR`.
fn thread_policies(pid: u32) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the daemon's /proc") {
        let path = task.expect("a task entry").path();
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("stat")),
        ) else {
            continue; // a thread that ended between the listing and the read
        };
        out.push((comm.trim().to_string(), policy_in_stat(&stat)));
    }
    out
}

/// Field 41 of a `stat` line; the fields after the command's closing parenthesis start
/// at field 3.
fn policy_in_stat(stat: &str) -> i64 {
    let after = &stat[stat.rfind(')').expect("a stat line") + 1..];
    after
        .split_whitespace()
        .nth(41 - 3)
        .and_then(|f| f.parse().ok())
        .unwrap_or_else(|| panic!("no policy field in {stat:?}"))
}

/// `[process] realtime_priority`: every thread of the daemon runs in `SCHED_RR`, and
/// the hook it starts in the normal class. Where the kernel refuses the class (no
/// CAP_SYS_NICE, no RLIMIT_RTPRIO), the start fails with an error that names the
/// setting and how to allow it. Which of the two this machine does is asked of the
/// kernel first, on a thread of the test.
#[test]
fn realtime_priority_puts_the_daemon_in_sched_rr_but_not_its_hook() {
    let permitted = std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 3 };
        // SAFETY: sched_setscheduler(2) on this short-lived thread only.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0 }
    })
    .join()
    .expect("the probe thread");
    let mut c = Cluster::new("realtime", 1, &[Bully], &Timing::LOOPBACK);
    let out = c.dir.join("hook.policy");
    // The hook's own program (awk) reports its policy; written whole, then renamed.
    let hook = format!(
        "awk '{{print $41}}' /proc/self/stat > {0}.tmp && mv {0}.tmp {0}",
        out.display()
    );
    c.start_with_env(
        1,
        &[
            ("ELECTD_PROCESS_REALTIME_PRIORITY", "3"),
            ("ELECTD_HOOKS_ON_LEADER_CHANGE", hook.as_str()),
        ],
    );
    if !permitted {
        eprintln!(
            "NOTE: this user may not use SCHED_RR (not root, no CAP_SYS_NICE or \
             RLIMIT_RTPRIO): checking the refusal instead of the class"
        );
        let status = c.wait_exit(1, DEADLINE).expect("refused, so it exits");
        assert!(!status.success());
        let log = c.log(1);
        assert!(
            log.contains("process.realtime_priority") && log.contains("RLIMIT_RTPRIO"),
            "{log}"
        );
        return;
    }
    let policy = wait_for("the hook's report", || std::fs::read_to_string(&out).ok());
    assert_eq!(policy.trim(), "0", "the hook runs in the normal class");
    let pid = c.pid(1).expect("running");
    let threads = thread_policies(pid);
    assert!(
        threads.iter().any(|(comm, _)| comm == "electd-state"),
        "the state file's writer is one of them: {threads:?}"
    );
    assert!(
        threads.len() >= 3 && threads.iter().all(|(_, p)| *p == 2),
        "every thread in SCHED_RR: {threads:?}"
    );
    assert_eq!(c.terminate(1, DEADLINE), Some(0), "{}", c.log(1));
}
