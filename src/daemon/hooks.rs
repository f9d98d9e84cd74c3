//! Leader-change hooks: `[hooks] on_leader_change = "command"`, in the spirit of
//! keepalived's `notify` scripts.
//!
//! Contract:
//! - the command runs through `/bin/sh -c` once per change of a group's leader seen by
//!   this node (or of its fencing token: the same leader taking a new term), with `ELECTD_NODE`, `ELECTD_CLUSTER`, `ELECTD_ALGORITHM`,
//!   `ELECTD_LEADER` (id, empty when there is none), `ELECTD_ROLE` (`leader`,
//!   `follower` or `none`), `ELECTD_STATE`, `ELECTD_TERM` and `ELECTD_AT_MS` (unix time
//!   of the change in ms) in its environment;
//! - `ELECTD_LEASE` (`none` or `quorum`) and `ELECTD_LEASE_REMAINING_MS` (empty with
//!   `none`; what is left of this node's lease when the run starts, usually 0 right
//!   after an election: see docs/leases.md);
//! - `ELECTD_STATE` is the state, keepalived's names in brackets: `leader` (MASTER),
//!   `follower` (BACKUP; also while no leader is known), `fault` (FAULT: a failing
//!   `[[check]]` makes the node ineligible in the group; run when that starts and
//!   with each leader change while it lasts) and `stopped` (STOP: run once per group,
//!   after everything announced before, when the daemon stops; `ELECTD_ROLE` is then
//!   `none`); `ELECTD_ROLE` is kept as it was for existing scripts;
//! - a split brain that heals re-notifies: the surviving leadership takes a token above
//!   both sides', so every node, the survivor included, gets a run with the present
//!   state (a run happens for every new token, not only for a new leader); stdin and stdout are `/dev/null`, stderr is captured
//!   and logged (its last 2 KiB) when the command fails;
//! - each group has its own queue: its runs happen one at a time in the order of its
//!   changes, so a script that acquires a resource on `leader` and releases it on
//!   `follower` never sees them reordered, and a slow or hung run of one group never
//!   delays another group's; changes that pile up behind a slow run are coalesced:
//!   only the latest change of the group runs (those in between are counted as
//!   `skipped`), so a hook never runs for a change minutes old while a newer one waits;
//! - the hook task subscribes to the node's leader events itself: the runtime only
//!   broadcasts, so a slow or hung hook never delays an election;
//! - a run that exceeds the timeout is killed with its whole process group (SIGKILL),
//!   and so is a run still going when the hook task is aborted (no orphans);
//! - at stop, what was announced before runs (coalesced the same way), so the `none`
//!   of a resigning leader reaches the script: at most one run per group after the one
//!   in progress, each bounded by the timeout;
//! - failures are logged at a bounded rate (a few lines a minute per result, with the
//!   count of those left out);
//! - every run is counted in `electd_hook_runs_total{result}`: `ok`, `failed`
//!   (non-zero exit or signal), `timeout`, `error` (could not start), and `skipped`
//!   for changes dropped because the hook fell more than the event buffer behind; the
//!   hook then skips the whole backlog and runs once per group with the current state,
//!   so the last call always describes the present.

use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::shared::{LeaderEvent, Shared};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Bytes of the command's stderr kept for the log.
const STDERR_TAIL: usize = 2048;

/// How a run ended (the `result` label).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The command exited with status 0.
    Ok,
    /// It exited with another status (or was killed by a signal).
    Failed(ExitStatus),
    /// It ran longer than `hook_timeout` and was killed.
    Timeout,
    /// It could not be started (the message says why).
    Error(String),
}

impl Outcome {
    /// The `result` label of `electd_hook_runs_total`.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed(_) => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Error(_) => "error",
        }
    }
}

/// Start the hook task: it subscribes to `shared`'s leader events before returning,
/// so no change emitted after this call is missed. Abort the handle to stop it.
pub fn spawn(shared: Arc<Shared>, command: String, timeout: Duration) -> JoinHandle<()> {
    spawn_until(shared, command, timeout, std::future::pending())
}

/// Like [`spawn`], but when `stop` completes the task runs the hook for every change
/// already announced (the `none` roles of a resigning leader, say) and then ends, so a
/// "release on none" script runs at shutdown. Await the handle with a deadline.
///
/// One queue per group: a dispatcher forwards each leader event to its group's worker,
/// which runs the hook for its changes one at a time, in order, coalescing a backlog to
/// the latest change. A slow or hung run of one group never delays another group's.
/// Aborting the returned handle aborts the workers too (their running commands are
/// killed with their process groups).
pub fn spawn_until(
    shared: Arc<Shared>,
    command: String,
    timeout: Duration,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    let mut rx = shared.subscribe();
    tokio::spawn(async move {
        tokio::pin!(stop);
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut queues: Vec<(AlgorithmKind, mpsc::UnboundedSender<LeaderEvent>)> = Vec::new();
        let mut workers = Workers(Vec::new());
        for &kind in &shared.algorithms {
            let (tx, queue) = mpsc::unbounded_channel();
            queues.push((kind, tx));
            workers.0.push(tokio::spawn(worker(
                shared.clone(),
                command.clone(),
                timeout,
                kind,
                queue,
                stopping.clone(),
            )));
        }
        let dispatch = |queues: &[(AlgorithmKind, mpsc::UnboundedSender<LeaderEvent>)],
                        event: LeaderEvent| {
            if let Some((_, tx)) = queues.iter().find(|(k, _)| *k == event.algorithm) {
                let _ = tx.send(event);
            }
        };
        let mut log = crate::security::droplog::DropLog::new();
        loop {
            let received = tokio::select! {
                r = rx.recv() => r,
                () = &mut stop => break,
            };
            match received {
                Ok(event) => dispatch(&queues, event),
                Err(RecvError::Lagged(missed)) => {
                    if log.record("lagged", since_start())
                        != crate::security::droplog::Verdict::Quiet
                    {
                        tracing::warn!(
                            missed,
                            "leader-change hook fell behind; running it with the current state"
                        );
                    }
                    shared.metrics.hook_skipped(missed);
                    // The backlog is older than the present state: resubscribe and
                    // snapshot atomically, then queue the present state of each group.
                    let (fresh, groups) = shared.watch();
                    rx = fresh;
                    for g in groups {
                        dispatch(
                            &queues,
                            LeaderEvent::new(shared.node, g.algorithm, g.leader, g.term),
                        );
                    }
                }
                Err(RecvError::Closed) => return,
            }
        }
        // Stopping: what was announced before the stop still runs (the latest change
        // of each group), then `stopped` once per group; the workers end after that.
        let mut batch = Vec::new();
        drain(&mut rx, &mut batch);
        for event in batch {
            dispatch(&queues, event);
        }
        stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(queues);
        for w in std::mem::take(&mut workers.0) {
            let _ = w.await;
        }
    })
}

/// The workers of a hook task, aborted when the task is (dropped with its future).
struct Workers(Vec<JoinHandle<()>>);

impl Drop for Workers {
    fn drop(&mut self) {
        for w in &self.0 {
            w.abort();
        }
    }
}

/// One group's queue: run the hook for each change in order; a backlog runs only its
/// latest change (the others are counted as skipped). When the queue closes at a stop,
/// run `stopped` once for the group.
async fn worker(
    shared: Arc<Shared>,
    command: String,
    timeout: Duration,
    kind: AlgorithmKind,
    mut queue: mpsc::UnboundedReceiver<LeaderEvent>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut log = crate::security::droplog::DropLog::new();
    while let Some(mut latest) = queue.recv().await {
        let mut skipped = 0u64;
        while let Ok(e) = queue.try_recv() {
            latest = e;
            skipped += 1;
        }
        if skipped > 0 {
            shared.metrics.hook_skipped(skipped);
        }
        run_logged(&shared, &command, timeout, &latest, false, &mut log).await;
    }
    if !stopping.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    if let Some(g) = shared.group(kind) {
        let mut event = LeaderEvent::new(shared.node, g.algorithm, None, g.term);
        event.leader = g.leader.filter(|&l| l != shared.node);
        stopped(&mut event);
        run_logged(&shared, &command, timeout, &event, true, &mut log).await;
    }
}

/// Marks an event as the `stopped` run (role `none`, state `stopped`).
fn stopped(event: &mut LeaderEvent) {
    event.role = "none";
    event.fault = false;
}

/// The state a run passes in `ELECTD_STATE`.
fn state_of(event: &LeaderEvent, stopping: bool) -> &'static str {
    if stopping {
        "stopped"
    } else {
        event.state()
    }
}

/// Move every event already queued into `batch`; `Some(missed)` if the receiver lagged.
fn drain(
    rx: &mut tokio::sync::broadcast::Receiver<LeaderEvent>,
    batch: &mut Vec<LeaderEvent>,
) -> Option<u64> {
    loop {
        match rx.try_recv() {
            Ok(e) => batch.push(e),
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(n)) => return Some(n),
            Err(_) => return None,
        }
    }
}

/// [`run`], with failures logged through `log`'s rate limit.
async fn run_logged(
    shared: &Shared,
    command: &str,
    timeout: Duration,
    event: &LeaderEvent,
    stopping: bool,
    log: &mut crate::security::droplog::DropLog,
) -> Outcome {
    let (outcome, stderr) = execute(shared, command, timeout, event, stopping).await;
    shared.metrics.hook_run(outcome.label());
    let verdict = match outcome {
        Outcome::Ok => crate::security::droplog::Verdict::Log,
        _ => log.record(outcome.label(), since_start()),
    };
    if verdict != crate::security::droplog::Verdict::Quiet {
        report(event, &outcome, &stderr, timeout, verdict);
    }
    outcome
}

/// Origin of the rate limit's clock.
static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Time on the rate limit's clock.
fn since_start() -> Duration {
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// Run the hook once for `event`, log and count the outcome.
pub async fn run(
    shared: &Shared,
    command: &str,
    timeout: Duration,
    event: &LeaderEvent,
) -> Outcome {
    let (outcome, stderr) = execute(shared, command, timeout, event, false).await;
    shared.metrics.hook_run(outcome.label());
    report(
        event,
        &outcome,
        &stderr,
        timeout,
        crate::security::droplog::Verdict::Log,
    );
    outcome
}

/// Log one run's outcome (`Summary(n)`: n failures like it were not logged).
fn report(
    event: &LeaderEvent,
    outcome: &Outcome,
    stderr: &str,
    timeout: Duration,
    verdict: crate::security::droplog::Verdict,
) {
    let algorithm = event.algorithm.as_str();
    let unlogged = match verdict {
        crate::security::droplog::Verdict::Summary(n) => n,
        _ => 0,
    };
    match outcome {
        Outcome::Ok => tracing::debug!(algorithm, role = event.role, "leader-change hook ran"),
        Outcome::Failed(status) => tracing::warn!(
            algorithm,
            role = event.role,
            %status,
            stderr = %stderr,
            unlogged,
            "leader-change hook failed"
        ),
        Outcome::Timeout => tracing::warn!(
            algorithm,
            role = event.role,
            timeout = ?timeout,
            stderr = %stderr,
            unlogged,
            "leader-change hook timed out and was killed"
        ),
        Outcome::Error(e) => {
            tracing::error!(algorithm, error = %e, unlogged, "leader-change hook could not start")
        }
    }
}

async fn execute(
    shared: &Shared,
    command: &str,
    timeout: Duration,
    event: &LeaderEvent,
    stopping: bool,
) -> (Outcome, String) {
    let (lease, lease_left) = shared
        .group(event.algorithm)
        .map(|g| g.lease)
        .unwrap_or_default()
        .remaining();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .env("ELECTD_NODE", event.node.to_string())
        .env("ELECTD_CLUSTER", &shared.cluster)
        .env("ELECTD_ALGORITHM", event.algorithm.as_str())
        .env(
            "ELECTD_LEADER",
            event.leader.map(|l| l.to_string()).unwrap_or_default(),
        )
        .env("ELECTD_ROLE", event.role)
        .env("ELECTD_STATE", state_of(event, stopping))
        .env("ELECTD_LEASE", lease)
        .env(
            "ELECTD_LEASE_REMAINING_MS",
            lease_left.map(|l| l.to_string()).unwrap_or_default(),
        )
        .env("ELECTD_TERM", event.term.to_string())
        .env("ELECTD_AT_MS", event.at_ms.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (Outcome::Error(e.to_string()), String::new()),
    };
    // If this future is dropped (the hook task aborted at shutdown) while the command
    // runs, the guard kills its whole process group: nothing it started outlives us.
    let mut guard = GroupGuard(child.id());
    // Read stderr alongside (a full pipe would block the command); keep the tail.
    let stderr = child.stderr.take().map(|mut err| {
        tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            String::from_utf8_lossy(&tail).trim_end().to_string()
        })
    });
    let outcome = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => Outcome::Ok,
        Ok(Ok(status)) => Outcome::Failed(status),
        Ok(Err(e)) => Outcome::Error(e.to_string()),
        Err(_) => {
            kill_group(child.id());
            let _ = child.kill().await;
            Outcome::Timeout
        }
    };
    // The command ended (or was killed): disarm. A background process it started on
    // purpose is its own business.
    guard.0 = None;
    let text = match stderr {
        Some(task) => match tokio::time::timeout(Duration::from_secs(1), task).await {
            Ok(Ok(text)) => text,
            _ => String::new(),
        },
        None => String::new(),
    };
    (outcome, text)
}

/// Kills the process group of a running command when dropped (see [`execute`]).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// SIGKILL the process group led by `pid` (the command and everything it started).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0) {
        // SAFETY: kill(2) with a negative pid only sends a signal to that process
        // group; it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}
