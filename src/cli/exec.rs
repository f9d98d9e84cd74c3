//! `electd exec --algorithm A [--url URL | --config FILE --node-id N] -- CMD ARGS…`:
//! run a command only while the local node leads one group (in the spirit of
//! `consul lock` and the Kubernetes leader-elector sidecar).
//!
//! Contract (also in `electd exec --help` and docs/exec.md):
//! - the local daemon's `GET /is-leader?algorithm=A` is asked every `--poll`; CMD is
//!   started (directly, no shell, in a process group of its own, stdin/stdout/stderr
//!   inherited) once the node has answered "leader" without a break for `--settle`,
//!   with `ELECTD_ALGORITHM`, `ELECTD_NODE`, `ELECTD_LEADER` and `ELECTD_TERM` (the
//!   fencing token of the leadership it runs under) in its environment;
//! - it is stopped — SIGTERM to the whole group, SIGKILL to the whole group `--grace`
//!   later — as soon as an answer says the node does not lead (another leader, no
//!   leader, paused), a new term began under another leader, or no answer arrived for
//!   `--timeout` (the daemon was killed, stopped or hangs); when the daemon reports a
//!   lease (`lease_remaining_ms`), the SIGKILL is sent before that lease runs out
//!   (the grace is shortened to fit) and the command is stopped when the lease of the
//!   last answer is about to run out without a fresh one;
//! - when leadership comes back the command is started again (after `--settle`);
//!   `--once` exits after the first stop instead; a node that leads on under a new
//!   term (its token changed) counts as a new leadership: the command is stopped and
//!   started again under the new token;
//! - the command exiting on its own ends `exec` with the command's exit code (what is
//!   left of its process group is killed);
//! - SIGINT or SIGTERM to `exec`: the group gets SIGTERM, SIGKILL after `--grace`, and
//!   `exec` exits 0. Exit 1: a configuration error; 2: a usage error.
//!
//! - before anything else, CMD must be an executable file (a path, or a name found on
//!   `PATH`): a typo is exit 1 at once, not a silent wait until the node leads;
//! - the command's life is tied to `exec`'s: the command (and every process it starts)
//!   inherits the lock of [`super::exec_lock`], and the direct child gets
//!   `PR_SET_PDEATHSIG` = SIGKILL, so a SIGKILLed `exec` takes its command with it, and
//!   a restarted `exec` stops what a killed one left running before it starts anything.
//!
//! The bound: a copy runs at most `--timeout + --grace` after its node last confirmed
//! its leadership (the deadlines are kept while an answer is awaited), so at most that
//! long after its node stopped leading, and at most `--poll + --grace` after its node
//! answered that it no longer leads. With `failure_timeout` above `--timeout + --grace`
//! a crashed, stopped or paused leader's copy is gone before the others can elect;
//! `--settle` above `--timeout + --grace` keeps a node that takes over from a live
//! leader (preemption) from starting before the old leader's copy is gone. The default
//! `--settle` is `--poll + --timeout + --grace`: one poll more, for the old leader to
//! hear that it was preempted.

use super::exec_lock::{self, ExecLock};
use super::AlgorithmArg;
use electd::http::client::request;
use electd::NodeId;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The group whose leadership the command needs.
    #[arg(long, short, value_enum)]
    pub algorithm: AlgorithmArg,
    /// The local daemon's HTTP address (`http://HOST:PORT` or `HOST:PORT`).
    #[arg(long, conflicts_with = "config", required_unless_present = "config")]
    pub url: Option<String>,
    /// The cluster's TOML file: the local daemon's address is the `http` of
    /// `--node-id`'s `[[peer]]`.
    #[arg(long, short, env = "ELECTD_CONFIG", requires = "node_id")]
    pub config: Option<PathBuf>,
    /// The local node's id (with `--config`).
    #[arg(long, env = "ELECTD_NODE_ID")]
    pub node_id: Option<NodeId>,
    /// How often the daemon is asked (each answer must come within --timeout and
    /// --poll, at least 20 ms).
    #[arg(long, default_value = "50ms", value_parser = super::positive_duration_arg)]
    pub poll: Duration,
    /// No answer confirming the leadership for this long: stop the command.
    #[arg(long, default_value = "300ms", value_parser = super::positive_duration_arg)]
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL to the command's process group (shortened to end
    /// before a reported lease runs out).
    #[arg(long, default_value = "1s", value_parser = super::duration_arg)]
    pub grace: Duration,
    /// The node must have answered "leader" without a break for this long before the
    /// command starts [default: --poll + --timeout + --grace, 1.35s with the other
    /// defaults]. Below --timeout + --grace a node that preempts a live leader can start
    /// its copy before the old one is gone (a warning says so); 0 starts at the first
    /// answer.
    #[arg(long, value_parser = super::duration_arg)]
    pub settle: Option<Duration>,
    /// The lock file that ties the command's processes to this exec (docs/exec.md)
    /// [default: in $RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR or the temporary directory,
    /// named after the user, the group and a hash of the daemon's address and the
    /// command].
    #[arg(long)]
    pub lock: Option<PathBuf>,
    /// Exit after the command has been stopped once, instead of starting it again
    /// when leadership comes back.
    #[arg(long)]
    pub once: bool,
    /// The command and its arguments (run directly, no shell).
    /// Taken as the operating system gives them: an argument need not be UTF-8.
    #[arg(last = true, required = true, num_args = 1.., value_parser = clap::value_parser!(std::ffi::OsString))]
    pub command: Vec<std::ffi::OsString>,
}

impl ExecArgs {
    /// How long after its node stopped leading a copy may still run: its last
    /// confirmation came before, and the SIGTERM is due `--timeout` after it, the
    /// SIGKILL `--grace` later (an answer "not leading" stops it earlier).
    pub(crate) fn stop_bound(&self) -> Duration {
        self.timeout + self.grace
    }

    /// `--settle`, or its default `--poll + --timeout + --grace`: above
    /// [`ExecArgs::stop_bound`] by one poll, the time the old leader may take to hear
    /// that it was preempted.
    pub(crate) fn settle(&self) -> Duration {
        self.settle.unwrap_or(self.poll + self.stop_bound())
    }

    /// The limit of one request to the daemon: one poll (at least 20 ms), at most
    /// `--timeout`.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.poll.max(Duration::from_millis(20)).min(self.timeout)
    }
}

/// One answer of `/is-leader`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Answer {
    pub leads: bool,
    pub leader: Option<NodeId>,
    pub node: Option<NodeId>,
    pub term: u64,
    /// The lease the answer reports, if the daemon holds one.
    pub lease: Option<Duration>,
}

/// Parse an `/is-leader` answer (200 leads, 503 does not; the JSON body says more).
/// A node leads only if the answer says so, is not paused, and any lease it reports
/// has time left.
pub(crate) fn parse_answer(code: u16, body: &str) -> Option<Answer> {
    let v: Value = serde_json::from_str(body).ok()?;
    let is_leader = v["is_leader"].as_bool()?;
    let paused = v["paused"].as_bool().unwrap_or(false);
    let lease = match v["lease"].as_str() {
        Some("none") | None => None,
        Some(_) => Some(Duration::from_millis(
            v["lease_remaining_ms"].as_u64().unwrap_or(0),
        )),
    };
    let leads = code == 200 && is_leader && !paused && lease.is_none_or(|l| l > Duration::ZERO);
    Some(Answer {
        leads,
        leader: v["leader"].as_u64().map(|l| l as NodeId),
        node: v["node"].as_u64().map(|n| n as NodeId),
        // The fencing token the command runs under: an answer without a valid one is no
        // answer (a negative term was read as 0).
        term: v["term"].as_u64()?,
        lease,
    })
}

/// When the running command must be stopped: SIGTERM at `term_at`, SIGKILL at
/// `kill_at`, given the last confirming answer (asked at `asked`).
pub(crate) fn deadlines(
    asked: Instant,
    timeout: Duration,
    grace: Duration,
    lease: Option<Duration>,
) -> (Instant, Instant) {
    match lease {
        None => (asked + timeout, asked + timeout + grace),
        Some(lease) => {
            // The SIGKILL must land before the lease ends: the grace is at most half
            // the lease, and the SIGTERM comes that much before its end.
            let g = grace.min(lease / 2);
            let term_at = (asked + timeout).min(asked + lease - g);
            (term_at, term_at + g)
        }
    }
}

/// When to ask again after a confirming answer asked at `asked` whose SIGTERM is due at
/// `term_at`: halfway there (at least 5 ms after the question), so that the next
/// confirmation comes before it.
pub(crate) fn next_question(asked: Instant, term_at: Instant) -> Instant {
    let half = term_at.saturating_duration_since(asked) / 2;
    asked + half.max(Duration::from_millis(5))
}

/// When a command stopped at `now` (an answer that the node no longer leads, or a new
/// term) gets its SIGKILL: `grace` later, but never after the SIGKILL the last
/// confirmation's deadlines set (`last`, from [`deadlines`]): with a lease that one
/// lands before the lease ends, and the whole grace from now would outlive it.
pub(crate) fn kill_when_stopped(
    now: Instant,
    grace: Duration,
    last: Option<(Instant, Instant)>,
) -> Instant {
    let by_grace = now + grace;
    last.map_or(by_grace, |(_, kill_at)| by_grace.min(kill_at))
}

fn address(args: &ExecArgs) -> anyhow::Result<SocketAddr> {
    local_address(args.url.as_deref(), args.config.as_deref(), args.node_id)
}

/// The local daemon's HTTP address: `url` (`http://HOST:PORT` or `HOST:PORT`), or the
/// `http` of `node_id`'s `[[peer]]` in the cluster file `config`.
pub(super) fn local_address(
    url: Option<&str>,
    config: Option<&std::path::Path>,
    node_id: Option<NodeId>,
) -> anyhow::Result<SocketAddr> {
    let http = match (url, config, node_id) {
        (Some(url), _, _) => host_port(url)?,
        (None, Some(config), Some(id)) => {
            let roster = super::status::load_roster(config)?;
            roster
                .peers
                .iter()
                .find(|p| p.0 == id)
                .map(|p| p.1.clone())
                .ok_or_else(|| {
                    anyhow::anyhow!("{}: no [[peer]] with id = {id}", config.display())
                })?
        }
        _ => anyhow::bail!("give --url, or --config with --node-id"),
    };
    super::status::resolve(&http).map_err(|e| anyhow::anyhow!("{e}"))
}

/// `HOST:PORT` of a `--url`: `http://HOST:PORT`, `HOST:PORT`, a trailing `/`. The
/// daemon serves plain HTTP on its root: `https://` or a path is an error that says so
/// (they were looked up as host names, or read as a port).
pub(crate) fn host_port(url: &str) -> anyhow::Result<String> {
    let url = url.trim();
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) => {
            anyhow::bail!("{url}: electd's HTTP API is plain http:// (not {scheme}://)")
        }
        None => url,
    };
    let rest = rest.trim_end_matches('/');
    if let Some((hp, path)) = rest.split_once('/') {
        anyhow::bail!("{url}: give the node's address (http://{hp}), without a path (/{path})");
    }
    if rest.is_empty() {
        anyhow::bail!("{url:?}: no address");
    }
    Ok(rest.to_string())
}

/// The running command.
struct Running {
    child: tokio::process::Child,
    pgid: i32,
    term: u64,
    /// SIGTERM already sent, and when the SIGKILL is due.
    stopping: Option<Instant>,
}

fn signal_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) on a process group we created; no memory is touched.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

pub fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    super::init_tracing();
    // The command first: a typo must not wait silently until the node leads.
    let program = &args.command[0];
    electd::config::checks::find_program(program)
        .map_err(|why| anyhow::anyhow!("cannot run the command: {why}"))?;
    let addr = address(&args)?;
    if let Some(settle) = args.settle {
        if settle < args.stop_bound() {
            tracing::warn!(
                "--settle {} is below --timeout + --grace ({}): a node that takes over from \
                 a live leader may start its copy while the old leader's still runs \
                 (docs/exec.md)",
                humantime::format_duration(settle),
                humantime::format_duration(args.stop_bound())
            );
        }
    }
    let lock_path = args
        .lock
        .clone()
        .unwrap_or_else(|| exec_lock::default_path(args.algorithm.0.as_str(), addr, &args.command));
    let lock = ExecLock::acquire(&lock_path, args.grace)?;
    tracing::debug!(lock = %lock.path().display(), "holding the exec lock");
    // One thread: the command is spawned from the thread that lives as long as `exec`
    // (PR_SET_PDEATHSIG fires when the spawning *thread* ends).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(supervise(args, addr, lock))
}

/// What one question to the daemon got.
#[derive(Debug)]
pub(crate) enum Asked {
    /// An answer of `/is-leader`.
    Answer(Answer),
    /// None within the time allowed, or not one of `/is-leader` (refused, silent,
    /// garbage): why, for the log.
    NoAnswer(String),
    /// 404: the daemon does not run the group (its own words). It cannot start to
    /// without a restart with another configuration, so `exec` stops.
    NotRun(String),
}

/// Ask `/is-leader` once.
async fn ask(addr: SocketAddr, path: String, timeout: Duration) -> Asked {
    let call =
        tokio::task::spawn_blocking(move || request(addr, "GET", &path, None, timeout, timeout));
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(Ok((code, body)))) => classify(code, &body),
        Ok(Ok(Err(e))) => Asked::NoAnswer(e.to_string()),
        Ok(Err(e)) => Asked::NoAnswer(format!("the request failed: {e}")),
        Err(_) => Asked::NoAnswer(format!(
            "no answer within {}",
            humantime::format_duration(timeout)
        )),
    }
}

/// An HTTP answer of the daemon to `/is-leader`, read.
pub(crate) fn classify(code: u16, body: &str) -> Asked {
    if code == 404 {
        let said = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| body.chars().take(200).collect());
        return Asked::NotRun(said);
    }
    match parse_answer(code, body) {
        Some(a) => Asked::Answer(a),
        None => Asked::NoAnswer(format!(
            "HTTP {code} with a body that is not an /is-leader answer"
        )),
    }
}

async fn supervise(args: ExecArgs, addr: SocketAddr, lock: ExecLock) -> anyhow::Result<ExitCode> {
    let algorithm = args.algorithm.0;
    let path = format!("/is-leader?algorithm={}", algorithm.as_str());
    let settle = args.settle();
    let mut stop_signal = std::pin::pin!(super::shutdown_signal_now());
    let mut running: Option<Running> = None;
    // Since when the node has answered "leader" without a break (and in which term).
    let mut leading_since: Option<(Instant, u64)> = None;
    // The SIGTERM and SIGKILL deadlines of the last confirming answer.
    let mut confirmed: Option<(Instant, Instant)> = None;
    let mut stopped_once = false;
    let mut next_poll = Instant::now();
    // The request in flight and when it was sent: the deadlines are kept meanwhile.
    let mut pending: Option<(Instant, tokio::task::JoinHandle<Asked>)> = None;
    // Why the daemon has not answered, since its last answer (logged once per outage).
    let mut silent: Option<String> = None;
    let request_timeout = args.request_timeout();
    loop {
        // 1. The command's own end.
        if let Some(r) = running.as_mut() {
            if let Ok(Some(status)) = r.child.try_wait() {
                signal_group(r.pgid, libc::SIGKILL);
                let was_stopping = r.stopping.is_some();
                running = None;
                lock.record(0)?;
                if !was_stopping {
                    tracing::info!(%status, "the command exited on its own");
                    return Ok(exit_code(status));
                }
                tracing::info!(%status, "the command stopped");
                stopped_once = true;
                if args.once {
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
        let now = Instant::now();
        // 2. Deadlines of a running command.
        if let Some(r) = running.as_mut() {
            match r.stopping {
                Some(kill_at) if now >= kill_at => {
                    signal_group(r.pgid, libc::SIGKILL);
                }
                Some(_) => {}
                None => {
                    if let Some((term_at, kill_at)) = confirmed {
                        if now >= term_at {
                            tracing::warn!(
                                "leadership not confirmed in time: stopping the command"
                            );
                            signal_group(r.pgid, libc::SIGTERM);
                            r.stopping = Some(kill_at);
                            // Its lease ran out unconfirmed: another node may lead
                            // meanwhile. A start waits for --settle again, from the
                            // next confirmation (it started again at once).
                            leading_since = None;
                        }
                    }
                }
            }
        }
        // 3. Ask the daemon.
        if now >= next_poll && pending.is_none() {
            next_poll = now + args.poll;
            let asked = Instant::now();
            pending = Some((
                asked,
                tokio::spawn(ask(addr, path.clone(), request_timeout)),
            ));
        }
        // 4. Wait for the next thing to do: an answer, the next poll, a deadline, the
        //    command's end, a signal.
        let mut wake = next_poll;
        if pending.is_some() {
            // The next poll waits for the answer; the deadlines do not.
            wake = now + Duration::from_secs(3600);
        }
        if let Some(r) = &running {
            match r.stopping {
                Some(kill_at) => wake = wake.min(kill_at),
                None => {
                    if let Some((term_at, _)) = confirmed {
                        wake = wake.min(term_at);
                    }
                }
            }
        }
        let sleep = tokio::time::sleep_until(wake.into());
        let has_child = running.is_some();
        let asking = pending.is_some();
        let answered: Option<(Instant, Option<Answer>)> = tokio::select! {
            () = sleep => None,
            _ = async { running.as_mut().map(|r| r.child.wait()).expect("running").await }, if has_child => None,
            a = async { (&mut pending.as_mut().expect("asking").1).await }, if asking => {
                let (asked, _) = pending.take().expect("asking");
                let a = a.unwrap_or_else(|e| Asked::NoAnswer(format!("the request failed: {e}")));
                let answer = match a {
                    Asked::Answer(a) => {
                        if silent.take().is_some() {
                            tracing::info!(daemon = %addr, "the daemon answers again");
                        }
                        Some(a)
                    }
                    Asked::NoAnswer(why) => {
                        if silent.is_none() {
                            tracing::warn!(
                                daemon = %addr,
                                "no answer from the daemon ({why}): the command does not run \
                                 until it answers that this node leads"
                            );
                            silent = Some(why);
                        }
                        None
                    }
                    Asked::NotRun(said) => {
                        shut_down(running.take(), args.grace).await;
                        anyhow::bail!(
                            "the daemon at {addr} does not run {}: {said}",
                            algorithm.as_str()
                        );
                    }
                };
                Some((asked, answer))
            }
            () = &mut stop_signal => return Ok(shut_down(running, args.grace).await),
        };
        let Some((asked, answer)) = answered else {
            continue;
        };
        match answer {
            Some(a) if a.leads => {
                let since = match leading_since {
                    Some((t, term)) if term == a.term => t,
                    _ => asked,
                };
                leading_since = Some((since, a.term));
                let before = confirmed;
                let (term_at, kill_at) = deadlines(asked, args.timeout, args.grace, a.lease);
                confirmed = Some((term_at, kill_at));
                // Ask again before the SIGTERM a lease sets: halfway to it when that is
                // sooner than --poll. With Raft's lease at the README's timing (some
                // 80 ms, so a SIGTERM 40 ms after the answer) every 50 ms poll came
                // too late, and the command was stopped and started again each time.
                next_poll = next_poll.min(next_question(asked, term_at));
                if let Some(r) = running.as_mut() {
                    if r.stopping.is_none() && r.term != a.term {
                        // The same node leads under a new term: another claim came
                        // between (a lower id announcing a higher epoch, a
                        // re-election), and another leader may have held a token
                        // between the two. The command runs under the older token,
                        // which a fence that saw the one between refuses (issue 28:
                        // the nemesis run's store accepted such writes only because
                        // the leader between never wrote). Stop it; it starts again
                        // under the new token once the new term has settled.
                        tracing::info!(
                            term = a.term,
                            old = r.term,
                            "new term, same leader: restarting the command under the new token"
                        );
                        signal_group(r.pgid, libc::SIGTERM);
                        // The old term's lease still bounds the old copy.
                        r.stopping = Some(kill_when_stopped(Instant::now(), args.grace, before));
                    }
                }
                let settled = asked.saturating_duration_since(since) >= settle;
                if running.is_none() && settled && !(args.once && stopped_once) {
                    let r = start(&args.command, algorithm, &a, &lock)?;
                    lock.record(r.pgid)?;
                    running = Some(r);
                }
            }
            other => {
                leading_since = None;
                if let Some(a) = &other {
                    // An answer that this node does not lead: stop now, and kill by
                    // the last confirmation's lease at the latest.
                    let last = confirmed.take();
                    if let Some(r) = running.as_mut() {
                        if r.stopping.is_none() {
                            tracing::info!(leader = ?a.leader, "not leading any more: stopping the command");
                            signal_group(r.pgid, libc::SIGTERM);
                            r.stopping = Some(kill_when_stopped(Instant::now(), args.grace, last));
                        }
                    }
                } else if running.is_none() && args.once && stopped_once {
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    }
}

fn start(
    command: &[std::ffi::OsString],
    algorithm: electd::contract::algorithm::AlgorithmKind,
    a: &Answer,
    lock: &ExecLock,
) -> anyhow::Result<Running> {
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("ELECTD_ALGORITHM", algorithm.as_str())
        .env("ELECTD_TERM", a.term.to_string())
        .env(
            "ELECTD_LEADER",
            a.leader.map(|l| l.to_string()).unwrap_or_default(),
        )
        .env(
            "ELECTD_NODE",
            a.node.map(|n| n.to_string()).unwrap_or_default(),
        )
        .process_group(0)
        .kill_on_drop(true);
    let lock_fd = lock.fd();
    // SAFETY: getpid(2) cannot fail.
    let exec_pid = unsafe { libc::getpid() };
    // SAFETY: between fork and exec the closure calls only async-signal-safe functions
    // (fcntl, prctl, getppid) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // The command and every process it starts hold the lock: a restarted exec
            // knows they survive.
            if libc::fcntl(lock_fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // SIGKILL when exec's thread (the only one that spawns) ends.
            #[cfg(target_os = "linux")]
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) == -1
            {
                return Err(std::io::Error::last_os_error());
            }
            // exec died before the prctl took effect: do not start orphaned.
            if libc::getppid() != exec_pid {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {:?}: {e}", command[0]))?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    tracing::info!(term = a.term, pid = pgid, "leading: command started");
    Ok(Running {
        child,
        pgid,
        term: a.term,
        stopping: None,
    })
}

/// SIGTERM the group, SIGKILL after `grace`; exit 0.
async fn shut_down(running: Option<Running>, grace: Duration) -> ExitCode {
    if let Some(mut r) = running {
        signal_group(r.pgid, libc::SIGTERM);
        if tokio::time::timeout(grace, r.child.wait()).await.is_err() {
            signal_group(r.pgid, libc::SIGKILL);
            let _ = r.child.wait().await;
        }
        signal_group(r.pgid, libc::SIGKILL);
    }
    ExitCode::SUCCESS
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        (None, Some(s)) => ExitCode::from(u8::try_from(128 + s).unwrap_or(1)),
        _ => ExitCode::from(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_leads_only_if_it_says_so_unpaused_with_lease_left() {
        let body = |leader: bool, paused: bool, lease: &str| {
            format!(
                r#"{{"node":3,"algorithm":"raft","leader":3,"is_leader":{leader},"term":7,"paused":{paused},{lease}}}"#
            )
        };
        let a = parse_answer(200, &body(true, false, r#""lease":"none""#)).expect("parsed");
        assert!(a.leads);
        assert_eq!(
            (a.term, a.leader, a.node, a.lease),
            (7, Some(3), Some(3), None)
        );
        assert!(
            !parse_answer(503, &body(false, false, r#""lease":"none""#))
                .expect("p")
                .leads
        );
        assert!(
            !parse_answer(503, &body(true, true, r#""lease":"none""#))
                .expect("p")
                .leads
        );
        let held = body(true, false, r#""lease":"quorum","lease_remaining_ms":120"#);
        let a = parse_answer(200, &held).expect("parsed");
        assert!(a.leads);
        assert_eq!(a.lease, Some(Duration::from_millis(120)));
        let gone = body(true, false, r#""lease":"quorum","lease_remaining_ms":0"#);
        assert!(!parse_answer(200, &gone).expect("parsed").leads);
        assert!(parse_answer(200, "not json").is_none());
    }

    /// Issue 28, §3 item 9: the default `--settle` is derived from docs/exec.md's rule
    /// (above the stop bound by one poll), for any --poll, --timeout and --grace.
    #[test]
    fn the_default_settle_is_derived_from_the_rule() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct W {
            #[command(flatten)]
            a: ExecArgs,
        }
        let parse = |extra: &[&str]| {
            let mut argv = vec!["exec", "--algorithm", "bully", "--url", "127.0.0.1:1"];
            argv.extend(extra);
            argv.extend(["--", "true"]);
            W::try_parse_from(argv).expect("valid").a
        };
        for extra in [
            &[][..],
            &["--poll", "10ms", "--timeout", "2s", "--grace", "5s"],
            &["--grace", "0s"],
        ] {
            let a = parse(extra);
            assert_eq!(a.stop_bound(), a.timeout + a.grace, "{extra:?}");
            assert_eq!(a.settle(), a.poll + a.stop_bound(), "{extra:?}");
            assert!(a.settle() > a.stop_bound(), "{extra:?}");
            assert!(a.request_timeout() <= a.timeout, "{extra:?}");
        }
        assert_eq!(
            parse(&["--settle", "0s"]).settle(),
            Duration::ZERO,
            "an explicit value is kept"
        );
    }

    #[test]
    fn the_kill_lands_before_the_lease_ends() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        // No lease: timeout, then the whole grace.
        assert_eq!(
            deadlines(t, ms(300), ms(1000), None),
            (t + ms(300), t + ms(1300))
        );
        // A lease shorter than timeout + grace: the grace shrinks to half the lease.
        for (timeout, grace, lease) in [(300, 1000, 120), (50, 1000, 400), (300, 10, 100)] {
            let (term_at, kill_at) = deadlines(t, ms(timeout), ms(grace), Some(ms(lease)));
            assert!(kill_at <= t + ms(lease), "{timeout} {grace} {lease}");
            assert!(term_at <= t + ms(timeout));
            assert!(term_at < kill_at || grace == 0);
        }
    }

    #[test]
    fn a_url_is_plain_http_to_a_host_and_port() {
        for ok in [
            "http://127.0.0.1:5741",
            "HTTP://127.0.0.1:5741/",
            "127.0.0.1:5741",
            " node-3:5741 ",
        ] {
            let hp = host_port(ok).unwrap();
            assert!(hp.ends_with(":5741") && !hp.contains('/'), "{ok}: {hp}");
        }
        let e = host_port("https://127.0.0.1:5741").unwrap_err().to_string();
        assert!(e.contains("plain http://"), "{e}");
        let e = host_port("http://127.0.0.1:5741/status")
            .unwrap_err()
            .to_string();
        assert!(e.contains("without a path (/status)"), "{e}");
        assert!(host_port("http://").is_err());
    }

    /// A 404 is the daemon saying it does not run the group (exec stops, exit 1: it
    /// waited forever before, silently); an answer that is not /is-leader's is no answer.
    #[test]
    fn a_404_means_the_group_is_not_run_and_garbage_is_no_answer() {
        let said =
            r#"{"error":"algorithm hs is not configured on this node; it runs: bully, raft"}"#;
        match classify(404, said) {
            Asked::NotRun(s) => assert!(s.contains("it runs: bully, raft"), "{s}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(classify(404, "<html>"), Asked::NotRun(s) if s == "<html>"));
        assert!(matches!(classify(200, "not json"), Asked::NoAnswer(s) if s.contains("HTTP 200")));
        let body =
            r#"{"node":1,"leader":1,"is_leader":true,"term":3,"paused":false,"lease":"none"}"#;
        assert!(matches!(classify(200, body), Asked::Answer(a) if a.leads && a.term == 3));
        // No valid fencing token, no answer (a term of -5 was read as 0).
        let negative = body.replace("\"term\":3", "\"term\":-5");
        assert!(matches!(classify(200, &negative), Asked::NoAnswer(_)));
    }

    /// A command stopped by an answer "not leading" (or a new term) is killed by the
    /// lease of the last confirmation, not a whole grace later: the paused Raft leader
    /// of the audit had 435 ms of lease and its copy ran 1 s, past the next leader's
    /// election.
    #[test]
    fn a_stop_keeps_the_lease_of_the_last_confirmation() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let last = deadlines(t, ms(300), ms(1000), Some(ms(435)));
        let now = t + ms(50);
        let kill = kill_when_stopped(now, ms(1000), Some(last));
        assert_eq!(kill, last.1);
        assert!(kill <= t + ms(435));
        // Without a lease the whole grace from the stop, which comes before the
        // confirmation's own deadline.
        let last = deadlines(t, ms(300), ms(1000), None);
        assert_eq!(kill_when_stopped(now, ms(1000), Some(last)), now + ms(1000));
        // No confirmation kept (the command was never confirmed): the grace.
        assert_eq!(kill_when_stopped(now, ms(200), None), now + ms(200));
    }
}
