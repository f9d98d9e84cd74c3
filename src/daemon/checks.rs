//! The health-check runner (`[[check]]`, see [`crate::config::checks`]): one task per
//! check, never on the runtime's path.
//!
//! - A command runs directly (no shell) in its own process group with stdin, stdout and
//!   stderr on `/dev/null`; exit 0 passes. Still running at `timeout`: the whole group
//!   gets SIGKILL and the run counts as `timeout`. A command that cannot be started
//!   counts as `error` (a failure). After every run, however it ended, and when the
//!   runner stops (the daemon's shutdown aborts it), the whole group gets SIGKILL: what
//!   a check started in the background does not outlive its run. (A child that left
//!   the group with `setsid`/`setpgid` is beyond reach.)
//! - A URL is asked with `GET` over HTTP/1.1 (`Connection: close`); a `2xx` status line
//!   within `timeout` passes.
//! - Every check starts *passing* (keepalived's default: a node is not held out of the
//!   first election by a check that has not run yet). `fall` failures in a row make it
//!   failing, `rise` passes in a row passing again.
//! - A group is in FAULT while any failing check applies to it: the runner then sends
//!   [`Control::Fault`], and the runtime makes this node ineligible in that group (a
//!   leader steps down and the others elect), sets `electd_fault{algorithm}` and tells
//!   `/watch` and the hooks (`ELECTD_STATE=fault`).
//!
//! Metrics: `electd_check_up{check}` and `electd_check_runs_total{check,result}`.

use crate::config::checks::{Check, Probe};
use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::shared::{Control, Shared};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// The result of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit 0, or a 2xx answer.
    Pass,
    /// Another exit status, or another answer.
    Fail,
    /// Still running (or no answer) at the timeout.
    Timeout,
    /// Could not be run at all (no such program, connection refused, …).
    Error,
}

impl Outcome {
    /// The `result` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
        }
    }
}

/// Rise/fall counting of one check (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    rise: u32,
    fall: u32,
    passing: bool,
    streak: u32,
}

impl Verdict {
    /// A passing check with these counts.
    pub(crate) fn new(rise: u32, fall: u32) -> Verdict {
        Verdict {
            rise: rise.max(1),
            fall: fall.max(1),
            passing: true,
            streak: 0,
        }
    }

    /// Is the check passing now?
    pub(crate) fn passing(&self) -> bool {
        self.passing
    }

    /// Count one run; true if the verdict changed.
    pub(crate) fn record(&mut self, passed: bool) -> bool {
        if passed == self.passing {
            self.streak = 0;
            return false;
        }
        self.streak += 1;
        let need = if self.passing { self.fall } else { self.rise };
        if self.streak >= need {
            self.passing = passed;
            self.streak = 0;
            true
        } else {
            false
        }
    }
}

/// What a group's checks amount to: FAULT (a failing check without weight) and the
/// priority penalty (the sum of the weights of the failing weighted checks, at most
/// 255).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Standing {
    fault: bool,
    penalty: u8,
}

/// Which groups each check applies to (and its weight), and which checks fail now.
struct Faults {
    applies: Vec<(String, Vec<AlgorithmKind>, Option<u8>)>,
    failing: BTreeMap<String, bool>,
    /// What the runtime was last told, per group.
    told: BTreeMap<AlgorithmKind, Standing>,
}

impl Faults {
    /// Record check `name`'s verdict; the commands for the groups whose standing
    /// changed.
    fn set(&mut self, name: &str, failing: bool) -> Vec<Control> {
        self.failing.insert(name.to_string(), failing);
        let mut now: BTreeMap<AlgorithmKind, Standing> = BTreeMap::new();
        for (check, groups, weight) in &self.applies {
            let f = self.failing.get(check).copied().unwrap_or(false);
            for &g in groups {
                let s = now.entry(g).or_default();
                match (f, weight) {
                    (true, None) => s.fault = true,
                    (true, Some(w)) => s.penalty = s.penalty.saturating_add(*w),
                    (false, _) => {}
                }
            }
        }
        let mut out = Vec::new();
        for (g, s) in now {
            let before = self.told.get(&g).copied().unwrap_or_default();
            if before.fault != s.fault {
                out.push(Control::Fault {
                    algorithm: Some(g),
                    on: s.fault,
                });
            }
            if before.penalty != s.penalty {
                out.push(Control::Penalty {
                    algorithm: Some(g),
                    penalty: s.penalty,
                });
            }
            self.told.insert(g, s);
        }
        out
    }
}

/// Start one task per check. They run until the returned handles are aborted or the
/// runtime's control channel closes.
pub fn spawn(checks: Vec<Check>, shared: Arc<Shared>) -> Vec<JoinHandle<()>> {
    let faults = Arc::new(Mutex::new(Faults {
        applies: checks
            .iter()
            .map(|c| (c.name.clone(), c.algorithms.clone(), c.weight))
            .collect(),
        failing: BTreeMap::new(),
        told: BTreeMap::new(),
    }));
    checks
        .into_iter()
        .map(|check| {
            shared.metrics.check_registered(&check.name);
            tokio::spawn(run_check(check, shared.clone(), faults.clone()))
        })
        .collect()
}

async fn run_check(check: Check, shared: Arc<Shared>, faults: Arc<Mutex<Faults>>) {
    let mut verdict = Verdict::new(check.rise, check.fall);
    let mut tick = tokio::time::interval(check.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let outcome = probe(&check.probe, check.timeout).await;
        shared.metrics.check_run(&check.name, outcome.name());
        if outcome != Outcome::Pass {
            tracing::debug!(check = %check.name, result = outcome.name(), "health check run failed");
        }
        if !verdict.record(outcome == Outcome::Pass) {
            continue;
        }
        let passing = verdict.passing();
        shared.metrics.set_check_up(&check.name, passing);
        if passing {
            tracing::info!(check = %check.name, "health check passes again");
        } else {
            tracing::warn!(check = %check.name, result = outcome.name(), fall = check.fall, "health check fails");
        }
        let changed = match faults.lock() {
            Ok(mut f) => f.set(&check.name, !passing),
            Err(_) => return,
        };
        for cmd in changed {
            if !shared.command(cmd).await {
                return; // the runtime is gone: the node is stopping
            }
        }
    }
}

/// Run `probe` once, bounded by `timeout`.
pub(crate) async fn probe(probe: &Probe, timeout: Duration) -> Outcome {
    match probe {
        Probe::Command(argv) => run_command(argv, timeout).await,
        Probe::Url {
            authority, path, ..
        } => match tokio::time::timeout(timeout, get(authority, path)).await {
            Ok(o) => o,
            Err(_) => Outcome::Timeout,
        },
    }
}

/// SIGKILL to a check's process group when dropped: after every run, whatever its
/// outcome, and when the runner's task is aborted mid-run (the daemon stops).
struct Group(i32);

impl Group {
    fn kill(&self) {
        if self.0 > 0 {
            // SAFETY: kill(2) on the process group this runner created; the group id
            // cannot name another group while a member of ours (or the unreaped
            // leader) remains, and an empty group is ESRCH.
            unsafe {
                libc::kill(-self.0, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn run_command(argv: &[String], timeout: Duration) -> Outcome {
    let Some((program, args)) = argv.split_first() else {
        return Outcome::Error;
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(program = %program, "health check cannot start: {e}");
            return Outcome::Error;
        }
    };
    // The whole group goes when this run ends, however it ends. Declared after
    // `child`, the guard is dropped before it: an aborted run kills the group while its
    // leader is not yet reaped.
    let group = Group(child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0));
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => Outcome::Pass,
        Ok(Ok(_)) => Outcome::Fail,
        Ok(Err(_)) => Outcome::Error,
        Err(_) => {
            group.kill();
            let _ = child.kill().await;
            Outcome::Timeout
        }
    }
}

async fn get(authority: &str, path: &str) -> Outcome {
    let Ok(mut s) = tokio::net::TcpStream::connect(authority).await else {
        return Outcome::Error;
    };
    let host = authority;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: electd-check\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return Outcome::Error;
    }
    // The status line is all that matters: read until it is complete (bounded).
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !buf.contains(&b'\n') && buf.len() < 4096 {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let line = String::from_utf8_lossy(&buf);
    let code = line
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(c) if (200..300).contains(&c) => Outcome::Pass,
        Some(_) => Outcome::Fail,
        None => Outcome::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fall_failures_in_a_row_make_it_fail_and_rise_passes_make_it_pass() {
        let mut v = Verdict::new(2, 3);
        assert!(v.passing());
        assert!(!v.record(false));
        assert!(!v.record(false));
        assert!(!v.record(true), "a pass breaks the failure streak");
        assert!(!v.record(false));
        assert!(!v.record(false));
        assert!(v.record(false), "the third failure in a row");
        assert!(!v.passing());
        assert!(!v.record(true));
        assert!(!v.record(false), "a failure breaks the pass streak");
        assert!(!v.record(true));
        assert!(v.record(true), "the second pass in a row");
        assert!(v.passing());
    }

    /// The commands as (group, fault) and (group, penalty) pairs, for comparison.
    fn summary(cmds: Vec<Control>) -> Vec<(AlgorithmKind, &'static str, u8)> {
        cmds.into_iter()
            .filter_map(|c| match c {
                Control::Fault {
                    algorithm: Some(a),
                    on,
                } => Some((a, "fault", u8::from(on))),
                Control::Penalty {
                    algorithm: Some(a),
                    penalty,
                } => Some((a, "penalty", penalty)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_group_is_in_fault_while_any_check_that_applies_to_it_fails() {
        use AlgorithmKind::{Bully, Raft};
        let mut f = Faults {
            applies: vec![
                ("a".into(), vec![Bully, Raft], None),
                ("b".into(), vec![Bully], None),
            ],
            failing: BTreeMap::new(),
            told: BTreeMap::new(),
        };
        assert_eq!(summary(f.set("b", true)), vec![(Bully, "fault", 1)]);
        assert_eq!(summary(f.set("a", true)), vec![(Raft, "fault", 1)]);
        assert_eq!(
            summary(f.set("b", false)),
            vec![],
            "a still fails for bully"
        );
        assert_eq!(
            summary(f.set("a", false)),
            vec![(Bully, "fault", 0), (Raft, "fault", 0)]
        );
    }

    #[test]
    fn failing_weighted_checks_add_up_to_a_penalty_capped_at_255() {
        use AlgorithmKind::Bully;
        let mut f = Faults {
            applies: vec![
                ("w1".into(), vec![Bully], Some(20)),
                ("w2".into(), vec![Bully], Some(250)),
                ("x".into(), vec![Bully], None),
            ],
            failing: BTreeMap::new(),
            told: BTreeMap::new(),
        };
        assert_eq!(summary(f.set("w1", true)), vec![(Bully, "penalty", 20)]);
        assert_eq!(summary(f.set("w2", true)), vec![(Bully, "penalty", 255)]);
        assert_eq!(summary(f.set("x", true)), vec![(Bully, "fault", 1)]);
        assert_eq!(summary(f.set("w2", false)), vec![(Bully, "penalty", 20)]);
        assert_eq!(
            summary(f.set("w1", false)),
            vec![(Bully, "penalty", 0)],
            "x still puts it in FAULT"
        );
    }

    #[tokio::test]
    async fn commands_pass_fail_time_out_and_error() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let t = Duration::from_secs(5);
        assert_eq!(run_command(&argv(&["true"]), t).await, Outcome::Pass);
        assert_eq!(run_command(&argv(&["false"]), t).await, Outcome::Fail);
        assert_eq!(
            run_command(&argv(&["/nonexistent/electd-check"]), t).await,
            Outcome::Error
        );
        assert_eq!(
            run_command(&argv(&["sleep", "30"]), Duration::from_millis(50)).await,
            Outcome::Timeout
        );
    }

    /// Is process `pid` gone (or a zombie nobody reaps: dead all the same)?
    fn dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the command name in parentheses.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        }
    }

    /// Wait (bounded) for the pid a check wrote to `file`.
    async fn pid_in(file: &std::path::Path) -> i32 {
        let start = std::time::Instant::now();
        loop {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                return pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no pid in {}",
                file.display()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn wait_dead(pid: i32, what: &str) {
        let start = std::time::Instant::now();
        while !dead(pid) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{what}: process {pid} still runs"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("electd-checks-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue 28, §3 item 6: a check that forks and exits 0 left its child behind,
    /// one per run.
    #[tokio::test]
    async fn a_check_that_forks_and_passes_leaves_no_child() {
        let d = scratch("forks");
        let file = d.join("pid");
        let script = format!("sleep 300 & echo $! > {}; exit 0", file.display());
        let argv = vec!["sh".to_string(), "-c".into(), script];
        assert_eq!(
            run_command(&argv, Duration::from_secs(10)).await,
            Outcome::Pass
        );
        let pid = pid_in(&file).await;
        wait_dead(pid, "the background child of a passed check").await;
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue 28, §3 item 6: the daemon's shutdown aborts the runner mid-run; the
    /// check's children went on (only the direct child was killed).
    #[tokio::test]
    async fn an_aborted_check_leaves_no_child() {
        let d = scratch("aborted");
        let file = d.join("pid");
        let script = format!("sleep 300 & echo $! > {}; wait", file.display());
        let argv = vec!["sh".to_string(), "-c".into(), script];
        let run = tokio::spawn(async move { run_command(&argv, Duration::from_secs(60)).await });
        let pid = pid_in(&file).await;
        run.abort();
        assert!(run.await.is_err(), "aborted");
        wait_dead(pid, "the child of an aborted check").await;
        let _ = std::fs::remove_dir_all(&d);
    }

    #[tokio::test]
    async fn urls_pass_on_2xx_only() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            for answer in ["HTTP/1.1 204 No Content", "HTTP/1.1 503 Unavailable"] {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(format!("{answer}\r\nContent-Length: 0\r\n\r\n").as_bytes())
                    .await;
            }
        });
        let t = Duration::from_secs(5);
        assert_eq!(get(&addr, "/health").await, Outcome::Pass);
        assert_eq!(get(&addr, "/health").await, Outcome::Fail);
        // Nobody listens any more.
        assert_eq!(get(&addr, "/health").await, Outcome::Error);
        let url = Probe::Url {
            url: format!("http://{addr}/"),
            authority: addr.clone(),
            path: "/".into(),
        };
        assert_eq!(probe(&url, t).await, Outcome::Error);
    }
}
