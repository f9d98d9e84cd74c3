//! `electd run --config FILE [--node-id N]`: one node of a cluster, until SIGTERM or
//! SIGINT; then it resigns what it leads, waits for the acks and exits 0.
//!
//! `SIGHUP` re-reads `security.key_file` and swaps the keyring without a restart (key
//! rotation, docs/security.md); a key file that no longer parses is reported and the
//! running keyring kept. Without a key file (`insecure`) there are no keys to reload.
//! Every other setting needs a restart: each SIGHUP says so in the log, loads the file
//! again and warns, naming the keys, when it differs from the running configuration
//! (or no longer loads) ([`electd::config::reload`]).
//!
//! Under systemd (`Type=notify`) it reports `READY=1` once both sockets are bound and the state file is read,
//! `RELOADING=1`/`READY=1` around a key reload and `STOPPING=1` on SIGTERM
//! ([`super::notify`]).

use anyhow::Context;
use electd::config::Config;
use electd::daemon::heartbeats::bind_udp_pair;
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{self, incarnation_now, NetOptions, RuntimeConfig};
use electd::daemon::shared::Shared;
use electd::daemon::socket::join_multicast;
use electd::NodeId;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The cluster's TOML file (roster and settings; the same file on every node).
    #[arg(long, short, env = "ELECTD_CONFIG")]
    pub config: PathBuf,
    /// This node's id in the roster (overrides ELECTD_NODE_ID and node_id in the file).
    #[arg(long)]
    pub node_id: Option<NodeId>,
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    // A daemon whose log filter is a typo would run without a single warning logged.
    super::log_filter().map_err(|e| anyhow::anyhow!("{e}"))?;
    // Tracing first: loading logs the roster names that do not resolve yet.
    super::init_tracing();
    let cfg = Config::load(&args.config, std::env::vars(), args.node_id)?;
    if let Some(dir) = &cfg.state_dir_to_create {
        electd::config::create_state_dir(dir).with_context(|| {
            format!(
                "cannot create the state directory {} (state.file of {})",
                dir.display(),
                cfg.file.display()
            )
        })?;
        tracing::info!(dir = %dir.display(), "created the state directory (mode 0700)");
    }
    for w in cfg.warnings() {
        tracing::warn!("{w}");
    }
    if !cfg.check_source {
        tracing::info!(
            "security.check_source = false: datagrams are accepted from any source address"
        );
    }
    let reload = Reload {
        path: args.config.clone(),
        node_id: args.node_id,
        running: cfg.clone(),
    };
    // The real-time class before any thread starts: a refusal stops the start here,
    // with nothing bound, and the runtime's threads enter it as they start.
    if let Some(p) = cfg.realtime_priority {
        electd::daemon::sched::enter(p)
            .map_err(|e| anyhow::anyhow!("{e} ({})", cfg.file.display()))?;
        tracing::info!(
            "the daemon's threads run in SCHED_RR at priority {p} ([process] realtime_priority)"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(electd::daemon::sched::enter_here)
        .build()
        .context("cannot start the tokio runtime")?;
    // The daemon runs as a task on the workers, not on this thread: the worker that
    // polls the socket then handles the datagram itself, instead of waking a second
    // thread for every datagram and timer (half the idle CPU of a node, see
    // docs/bench/idle/README.md).
    rt.block_on(async {
        match tokio::spawn(serve(cfg, reload)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the daemon task failed: {e}")),
        }
    })
}

/// What a `SIGHUP` compares: the file and node id `run` was started with, and the
/// configuration it runs.
struct Reload {
    path: PathBuf,
    node_id: Option<NodeId>,
    running: Config,
}

async fn serve(cfg: Config, reload: Reload) -> anyhow::Result<()> {
    // SIGTERM and SIGINT are handled from here on: one that arrives as soon as the
    // HTTP API answers must not meet the default action (death by signal, no
    // resignation).
    let signalled = super::shutdown_signal_now();
    let me = cfg.me().clone();
    // With multicast the heartbeats arrive from the group: nothing to batch.
    let batch = cfg.batch_heartbeats && cfg.multicast.is_none();
    let (socket, heartbeats) = bind_udp_pair(me.bind_addr(), batch).with_context(|| {
        format!(
            "cannot bind UDP {} (peer {} of {})",
            me.bind_addr(),
            me.id,
            cfg.file.display()
        )
    })?;
    let mut net = NetOptions::from_config(&cfg);
    net.heartbeats = heartbeats;
    if let Some(group) = cfg.multicast {
        let rx = join_multicast(&socket, me.bind_addr(), group).with_context(|| {
            format!(
                "cannot join multicast group {group} from {} (transport.multicast of {})",
                me.bind_addr(),
                cfg.file.display()
            )
        })?;
        tracing::info!(%group, "broadcasts go by multicast");
        net.multicast = Some((group, rx));
    }
    // [[vip]]: the sockets, and the addresses a killed daemon left behind deleted,
    // before this node can lead (a refusal stops the start here).
    let vips = if cfg.vips.is_empty() {
        None
    } else {
        Some(
            electd::daemon::vip::prepare(&cfg.vips)
                .map_err(|e| anyhow::anyhow!("{e} ({})", cfg.file.display()))?,
        )
    };
    let listener = tokio::net::TcpListener::bind(me.http)
        .await
        .with_context(|| {
            format!(
                "cannot bind HTTP {} (peer {} of {})",
                me.http,
                me.id,
                cfg.file.display()
            )
        })?;
    let metrics = Metrics::for_cluster(
        &cfg.cluster,
        cfg.node_id,
        &cfg.algorithms,
        cfg.timing.failure_timeout,
    )
    .context("metrics registry")?;
    let (shared, control) = Shared::new(
        cfg.node_id,
        cfg.cluster.clone(),
        cfg.algorithms.clone(),
        metrics,
        cfg.admin_token.clone(),
    );
    // Told to every peer and compared with theirs (docs/observability.md, drift).
    let digest = cfg.digest();
    let peers: Vec<_> = cfg
        .ring()
        .into_iter()
        .filter(|&p| p != cfg.node_id)
        .collect();
    shared.set_config_digest(digest, &peers);
    let shared = Arc::new(shared);
    // The state file is read (and a file it must refuse refused) before this node says
    // it runs and tells systemd it is ready.
    if let Some(path) = &cfg.raft_state_file {
        let opened =
            electd::daemon::durable::open_state(path).map_err(runtime::RuntimeError::from)?;
        net.state = Some(opened);
    }
    tracing::info!(node = cfg.node_id, udp = %me.bind_addr(), http = %me.http, cluster = %cfg.cluster, config_digest = %digest, "electd running");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut http_stop = stopped.clone();
    let http = tokio::spawn(electd::http::serve(listener, shared.clone(), async move {
        let _ = http_stop.wait_for(|s| *s).await;
    }));
    // Hooks subscribe to the leader events themselves: the runtime never waits for them.
    // At shutdown they still run for what was announced (the `none` of a resignation).
    let hook_timeout = cfg.hooks.hook_timeout;
    let hooks = cfg.hooks.on_leader_change.clone().map(|cmd| {
        let mut hook_stop = stopped.clone();
        electd::daemon::hooks::spawn_until(shared.clone(), cmd, hook_timeout, async move {
            let _ = hook_stop.wait_for(|s| *s).await;
        })
    });
    // [[vip]]: like the hooks, the task follows the leader events itself; at shutdown
    // it deletes what it holds.
    let vips = vips.map(|prepared| {
        let mut vip_stop = stopped.clone();
        electd::daemon::vip::spawn_until(shared.clone(), prepared, async move {
            let _ = vip_stop.wait_for(|s| *s).await;
        })
    });
    // Health checks ([[check]]): each in its own task; a verdict change reaches the
    // runtime as a control command.
    let checks = electd::daemon::checks::spawn(cfg.checks.clone(), shared.clone());
    // Always: SIGHUP's default action would kill the process (an insecure node has no
    // key to reload, but a `systemctl reload` must not stop it).
    // The handler is registered here, before READY=1: a reload sent as soon as systemd
    // sees the node ready must not meet SIGHUP's default action.
    #[cfg(unix)]
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(hup) => {
            tokio::spawn(reload_keys_on_sighup(
                hup,
                cfg.key_file.clone(),
                shared.clone(),
                reload,
            ));
        }
        Err(e) => tracing::warn!("cannot listen for SIGHUP (key reload disabled): {e}"),
    }
    let rcfg = RuntimeConfig::from_config(&cfg, incarnation_now());
    // Both sockets are bound and the runtime starts now: ready for systemd.
    super::notify::notify_logged("READY=1");
    let shutdown = async {
        signalled.await;
        super::notify::notify_logged("STOPPING=1");
    };
    runtime::run_with(socket, net, rcfg, shared, control, shutdown).await?;
    let _ = stop.send(true);
    // Aborting a check mid-run kills its whole process group (daemon::checks); wait for
    // the aborts to land before exiting.
    for c in &checks {
        c.abort();
    }
    for c in checks {
        let _ = c.await;
    }
    if let Some(mut v) = vips {
        // A few netlink requests; bounded all the same.
        if tokio::time::timeout(Duration::from_secs(5), &mut v)
            .await
            .is_err()
        {
            tracing::warn!("[[vip]]: addresses not released within 5 s");
            v.abort();
        }
    }
    if let Some(mut h) = hooks {
        // One run per group at most is pending, then one `stopped` run per group (their
        // own timeouts kill hung ones).
        let budget = hook_timeout * (2 * cfg.algorithms.len() as u32 + 1);
        if tokio::time::timeout(budget, &mut h).await.is_err() {
            tracing::warn!("leader-change hooks still running after {budget:?}: stopping them");
            h.abort();
        }
    }
    match tokio::time::timeout(Duration::from_secs(2), http).await {
        Ok(Ok(Err(e))) => tracing::warn!("HTTP server: {e}"),
        Err(_) => tracing::warn!("HTTP server did not stop within 2 s"),
        _ => {}
    }
    tracing::info!(node = cfg.node_id, "stopped");
    Ok(())
}

/// On every `SIGHUP`: re-read the key file and hand the keyring to the runtime
/// (`electd_key_reloads_total{result}`), then compare the file with the running
/// configuration (see [`electd::config::reload`]). The handler is installed without a
/// key file too, so that `systemctl reload` (SIGHUP) never kills an `insecure` node: it
/// logs that there are no keys to reload.
#[cfg(unix)]
async fn reload_keys_on_sighup(
    mut hup: tokio::signal::unix::Signal,
    path: Option<PathBuf>,
    shared: Arc<Shared>,
    reload: Reload,
) {
    use electd::config::reload::{NEEDS_RESTART, RELOADED};
    use electd::daemon::shared::Control;
    // A signal storm must not flood the log: lines are rate-limited per result.
    let mut log = electd::security::droplog::DropLog::new();
    let start = std::time::Instant::now();
    let mut loud = |result: &'static str| {
        log.record(result, start.elapsed()) != electd::security::droplog::Verdict::Quiet
    };
    while hup.recv().await.is_some() {
        if loud("reload") {
            tracing::info!("SIGHUP: re-reading {RELOADED}; {NEEDS_RESTART} needs a restart");
        }
        compare_with_disk(&reload, &mut loud);
        let Some(path) = &path else {
            shared.metrics.key_reload("insecure");
            if loud("insecure") {
                tracing::warn!(
                    "SIGHUP: this node runs insecure (no security.key_file): no keys to \
                     reload; restart it to enable authentication"
                );
            }
            continue;
        };
        super::notify::notify_logged("RELOADING=1");
        match electd::security::keyring::Keyring::load(path) {
            Ok(keys) => {
                if let Some(w) = electd::security::keyring::permission_warning(path) {
                    tracing::warn!("{w}");
                }
                shared.metrics.key_reload("ok");
                if !shared.command(Control::Keys(keys)).await {
                    return;
                }
            }
            Err(e) => {
                shared.metrics.key_reload("failed");
                if loud("failed") {
                    tracing::error!(
                        "SIGHUP: security.key_file {}: {e}; keeping the current keys",
                        path.display()
                    )
                }
            }
        }
        super::notify::notify_logged("READY=1");
    }
}

/// Load the file again and warn when it differs from the running configuration (the
/// keys named) or no longer loads: an edit that a SIGHUP does not apply is never silent.
#[cfg(unix)]
fn compare_with_disk(reload: &Reload, loud: &mut impl FnMut(&'static str) -> bool) {
    let file = reload.path.display();
    match Config::load(&reload.path, std::env::vars(), reload.node_id) {
        Ok(disk) => {
            let keys = reload.running.differences(&disk);
            if keys.is_empty() {
                if loud("same") {
                    tracing::info!("SIGHUP: {file} matches the running configuration");
                }
            } else if loud("differs") {
                tracing::warn!(
                    differs = %keys.join(", "),
                    "SIGHUP: {file} differs from the running configuration in {}: not applied; \
                     restart the node for it to take effect",
                    keys.join(", ")
                );
            }
        }
        Err(e) => {
            if loud("unloadable") {
                tracing::warn!(
                    "SIGHUP: {e}: the file no longer loads; the node keeps running its \
                     configuration, but would not start again with this file"
                );
            }
        }
    }
}
