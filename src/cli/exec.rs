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
//!   `--once` exits after the first stop instead;
//! - the command exiting on its own ends `exec` with the command's exit code (what is
//!   left of its process group is killed);
//! - SIGINT or SIGTERM to `exec`: the group gets SIGTERM, SIGKILL after `--grace`, and
//!   `exec` exits 0. Exit 1: a configuration error; 2: a usage error.
//!
//! The bound: a copy runs at most `--timeout + --grace` after its node last confirmed
//! its leadership, and at most `--poll + --grace` after its node answered that it no
//! longer leads. With `failure_timeout` above `--timeout + --grace` a crashed, stopped
//! or paused leader's copy is gone before the others can elect; `--settle` above
//! `--poll + --grace` keeps a node that takes over from a live leader (preemption)
//! from starting before the old leader's copy is gone.

use super::AlgorithmArg;
use electd::http::client::http_request_within;
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
    /// How often the daemon is asked.
    #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
    pub poll: Duration,
    /// No answer confirming the leadership for this long: stop the command.
    #[arg(long, default_value = "300ms", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL to the command's process group (shortened to end
    /// before a reported lease runs out).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub grace: Duration,
    /// The node must have answered "leader" without a break for this long before the
    /// command starts (0 starts at the first answer).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
    /// Exit after the command has been stopped once, instead of starting it again
    /// when leadership comes back.
    #[arg(long)]
    pub once: bool,
    /// The command and its arguments (run directly, no shell).
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
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
        term: v["term"].as_u64().unwrap_or(0),
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
        (Some(url), _, _) => url
            .trim()
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string(),
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
    let addr = address(&args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(supervise(args, addr))
}

async fn ask(addr: SocketAddr, path: String, timeout: Duration) -> Option<Answer> {
    let call = tokio::task::spawn_blocking(move || {
        http_request_within(addr, "GET", &path, None, timeout, timeout)
    });
    match tokio::time::timeout(timeout + Duration::from_millis(50), call).await {
        Ok(Ok(Some((code, body)))) => parse_answer(code, &body),
        _ => None,
    }
}

async fn supervise(args: ExecArgs, addr: SocketAddr) -> anyhow::Result<ExitCode> {
    let algorithm = args.algorithm.0;
    let path = format!("/is-leader?algorithm={}", algorithm.as_str());
    let mut stop_signal = std::pin::pin!(super::shutdown_signal_now());
    let mut running: Option<Running> = None;
    // Since when the node has answered "leader" without a break (and in which term).
    let mut leading_since: Option<(Instant, u64)> = None;
    // The SIGTERM and SIGKILL deadlines of the last confirming answer.
    let mut confirmed: Option<(Instant, Instant)> = None;
    let mut stopped_once = false;
    let mut next_poll = Instant::now();
    let request_timeout = args.poll.max(Duration::from_millis(20)).min(args.timeout);
    loop {
        // 1. The command's own end.
        if let Some(r) = running.as_mut() {
            if let Ok(Some(status)) = r.child.try_wait() {
                signal_group(r.pgid, libc::SIGKILL);
                let was_stopping = r.stopping.is_some();
                running = None;
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
                        }
                    }
                }
            }
        }
        // 3. Ask the daemon.
        if now >= next_poll {
            next_poll = now + args.poll;
            let asked = Instant::now();
            let answer = tokio::select! {
                a = ask(addr, path.clone(), request_timeout) => a,
                () = &mut stop_signal => return Ok(shut_down(running, args.grace).await),
            };
            match answer {
                Some(a) if a.leads => {
                    let since = match leading_since {
                        Some((t, term)) if term == a.term => t,
                        _ => asked,
                    };
                    leading_since = Some((since, a.term));
                    confirmed = Some(deadlines(asked, args.timeout, args.grace, a.lease));
                    if let Some(r) = running.as_mut() {
                        if r.stopping.is_none() && r.term != a.term {
                            // The same node leads again under a new term: the command
                            // keeps running; its ELECTD_TERM is the older token, still
                            // below every later one.
                            tracing::info!(term = a.term, "new term, same leader");
                        }
                    }
                    let settled = asked.saturating_duration_since(since) >= args.settle;
                    if running.is_none() && settled && !(args.once && stopped_once) {
                        running = Some(start(&args.command, algorithm, &a)?);
                    }
                }
                other => {
                    leading_since = None;
                    if let Some(a) = &other {
                        // An answer that this node does not lead: stop now.
                        confirmed = None;
                        if let Some(r) = running.as_mut() {
                            if r.stopping.is_none() {
                                tracing::info!(leader = ?a.leader, "not leading any more: stopping the command");
                                signal_group(r.pgid, libc::SIGTERM);
                                let kill_at = Instant::now() + args.grace;
                                r.stopping = Some(kill_at);
                            }
                        }
                    } else if running.is_none() && args.once && stopped_once {
                        return Ok(ExitCode::SUCCESS);
                    }
                }
            }
        }
        // 4. Sleep until the next thing to do (poll, a deadline, the command's end, a
        //    signal).
        let mut wake = next_poll;
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
        match running.as_mut() {
            Some(r) => {
                tokio::select! {
                    () = sleep => {}
                    _ = r.child.wait() => {}
                    () = &mut stop_signal => return Ok(shut_down(running, args.grace).await),
                }
            }
            None => {
                tokio::select! {
                    () = sleep => {}
                    () = &mut stop_signal => return Ok(shut_down(running, args.grace).await),
                }
            }
        }
    }
}

fn start(
    command: &[String],
    algorithm: electd::contract::algorithm::AlgorithmKind,
    a: &Answer,
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
}
