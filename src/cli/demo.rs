//! `electd demo [--nodes 5] [--duration SECS]`: a local cluster of real UDP nodes on
//! 127.0.0.1 (ephemeral ports, an HTTP endpoint each, a generated key), every
//! implemented algorithm side by side, and a chaos loop that takes down the leader of
//! one group after another (its traffic stops, as if it had crashed) and brings it back
//! later as a restarted process (new incarnation, calls an election). A live table
//! shows per algorithm the leader, elections so far, messages per election and the
//! last failover time (take-down to all live nodes agreeing). On a terminal the table
//! is redrawn in place; otherwise one line is printed per change. Ctrl-C stops
//! everything cleanly.

use anyhow::Context;
use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::MessageType;
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{self, incarnation_now, RuntimeConfig, Start};
use electd::daemon::shared::{Control, Shared};
use electd::daemon::socket::bind_udp;
use electd::node::link::LinkConfig;
use electd::security::keyring::{random_key, Key, Keyring};
use electd::NodeId;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Number of nodes (2 to 64).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub nodes: u32,
    /// Stop by itself after this many seconds, 1 to 31536000 (default: run until Ctrl-C).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub duration: Option<u64>,
    /// Seconds between two take-downs of a leader (0.001 to 31536000).
    #[arg(long, default_value_t = 3.0, value_parser = super::seconds_arg)]
    pub chaos_every: f64,
    /// Seconds a taken-down node stays down before it restarts (0.001 to 31536000).
    #[arg(long, default_value_t = 1.5, value_parser = super::seconds_arg)]
    pub down_for: f64,
    /// Write a Prometheus file_sd file for the demo's nodes (labels `cluster="demo"`
    /// and `node`) to this path; it is removed when the demo stops.
    #[arg(long, value_name = "PATH")]
    pub prometheus_file_sd: Option<std::path::PathBuf>,
    /// Record every node's sends, deliveries, drops, retransmissions, timers, states
    /// and leader changes on one monotonic clock into this file (JSON Lines, see
    /// docs/trace.md; `electd view FILE` draws it). Written when the demo stops.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// The timing `electd bench` measures failover with, so that the demo's live failover
/// figures (table and `electd_failover_seconds`) compare with the bench's.
fn timing() -> Timing {
    electd::testkit::procs::ClusterTiming::failover().timing()
}

/// The demo's directory of state files, removed when dropped (at the end of the run,
/// or when it fails to start).
struct StateDir(std::path::PathBuf);

impl StateDir {
    fn create(path: std::path::PathBuf) -> std::io::Result<StateDir> {
        std::fs::create_dir_all(&path)?;
        Ok(StateDir(path))
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("cannot remove {}: {e}", self.0.display());
        }
    }
}

/// The file_sd JSON for nodes `(id, http address)` of cluster `demo`.
fn file_sd(nodes: &[(NodeId, std::net::SocketAddr)]) -> String {
    let groups: Vec<serde_json::Value> = nodes
        .iter()
        .map(|(id, http)| {
            serde_json::json!({
                "targets": [http.to_string()],
                "labels": { "cluster": "demo", "node": id.to_string() },
            })
        })
        .collect();
    serde_json::to_string_pretty(&groups).unwrap_or_default() + "\n"
}

/// Write `text` to `path` atomically (Prometheus may read it at any time).
fn write_atomically(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    // Beside it under a name of this process's (not `X.tmp`, which may be someone's).
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

/// The output paths, checked before anything starts: a trace that cannot be written
/// failed only when the demo stopped, its recording lost; the file_sd file is the
/// demo's own (it is removed at the end), so an existing file is not taken over.
fn check_outputs(args: &DemoArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.trace {
        std::fs::File::create(path)
            .with_context(|| format!("cannot create the trace file {}", path.display()))?;
    }
    if let Some(path) = &args.prometheus_file_sd {
        if path.exists() {
            anyhow::bail!(
                "--prometheus-file-sd {} exists: the demo writes a file of its own there \
                 and removes it when it stops; remove it or give another path",
                path.display()
            );
        }
    }
    Ok(())
}

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    check_outputs(&args)?;
    let link = LinkConfig::default();
    timing()
        .validate(link.retransmit, link.give_up)
        .map_err(|e| anyhow::anyhow!("the demo's timing: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    rt.block_on(demo(args))
}

struct DemoNode {
    id: NodeId,
    shared: Arc<Shared>,
}

#[derive(Default, Clone)]
struct Row {
    leader: Option<NodeId>,
    elections: u64,
    messages: u64,
    last_failover: Option<Duration>,
    /// A take-down of this group's leader not yet recovered from: (node, when).
    pending: Option<(NodeId, Instant)>,
    /// When the chaos loop last took this group's leader down.
    last_hit: Option<Instant>,
}

async fn demo(args: DemoArgs) -> anyhow::Result<()> {
    // Ctrl-C, SIGTERM (kill, timeout, systemd, docker stop) and SIGHUP (the terminal
    // closed) end the demo alike: the trace and the summary are written, the file_sd
    // file and the state directory removed. Caught from here on, before anything is
    // written: a signal between the file_sd file and the loop met its default action.
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let algorithms = AlgorithmKind::available();
    let n = args.nodes;
    let keys = Keyring::new(Key::new(random_key().context("no random key")?));
    let mut sockets = Vec::new();
    let mut listeners = Vec::new();
    for _ in 0..n {
        sockets.push(bind_udp("127.0.0.1:0".parse()?).context("bind UDP on 127.0.0.1")?);
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await?);
    }
    let peers: Vec<(NodeId, std::net::SocketAddr)> = sockets
        .iter()
        .enumerate()
        .map(|(i, s)| Ok((i as NodeId + 1, s.local_addr()?)))
        .collect::<std::io::Result<_>>()?;
    // Durable state (fencing tokens, Raft's vote) as a real cluster keeps it: one file
    // per node, here in a directory of the temp dir for this run, removed with it.
    let state_dir =
        StateDir::create(std::env::temp_dir().join(format!("electd-demo-{}", std::process::id())))?;
    if let Some(path) = &args.prometheus_file_sd {
        let http: Vec<(NodeId, std::net::SocketAddr)> = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| Ok((i as NodeId + 1, l.local_addr()?)))
            .collect::<std::io::Result<_>>()?;
        write_atomically(path, &file_sd(&http))?;
        println!("Prometheus file_sd targets written to {}", path.display());
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let tracer = args.trace.as_ref().map(|_| {
        Arc::new(electd::trace::SharedRecorder::new(
            electd::trace::DEFAULT_LIMIT,
        ))
    });
    let mut nodes = Vec::new();
    let mut tasks = Vec::new();
    println!(
        "electd demo: {n} nodes on 127.0.0.1, algorithms: {} (authenticated with a generated key)",
        algorithms
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, (socket, listener)) in sockets.into_iter().zip(listeners).enumerate() {
        let id = i as NodeId + 1;
        let cfg = RuntimeConfig {
            id,
            cluster: "demo".into(),
            peers: peers.clone(),
            algorithms: algorithms.clone(),
            timing: timing(),
            options: Options::default(),
            link: LinkConfig::default(),
            keys: Some(keys.clone()),
            incarnation: incarnation_now(),
            start: Start::Electing,
            state_file: Some(state_dir.0.join(format!("{id}.state"))),
            sources: Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect()),
        };
        let metrics = Metrics::for_cluster("demo", id, &algorithms, timing().failure_timeout)?;
        let (shared, control) = Shared::new(id, "demo".into(), algorithms.clone(), metrics, None);
        let shared = Arc::new(shared);
        if let Some(t) = &tracer {
            shared.set_tracer(t.clone());
        }
        println!(
            "  node {id}: udp {}  http://{}/status  /metrics",
            peers[i].1,
            listener.local_addr()?
        );
        let mut s1 = stopped.clone();
        let mut s2 = stopped.clone();
        tasks.push(tokio::spawn(electd::http::serve(
            listener,
            shared.clone(),
            async move {
                let _ = s1.wait_for(|s| *s).await;
            },
        )));
        let rt = tokio::spawn(runtime::run(
            socket,
            cfg,
            shared.clone(),
            control,
            async move {
                let _ = s2.wait_for(|s| *s).await;
            },
        ));
        nodes.push((DemoNode { id, shared }, rt));
    }
    println!("Ctrl-C stops.\n");

    let tty = std::io::stdout().is_terminal();
    let started = Instant::now();
    let end = args.duration.map(|s| started + Duration::from_secs(s));
    let chaos_every = Duration::from_secs_f64(args.chaos_every);
    let down_for = Duration::from_secs_f64(args.down_for);
    let mut next_chaos = started + chaos_every;
    let mut down: Option<(NodeId, Instant)> = None;
    let mut rows: HashMap<AlgorithmKind, Row> = HashMap::new();
    let mut drawn = false;
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            _ = int.recv() => break,
            _ = term.recv() => break,
            _ = hup.recv() => break,
            _ = tick.tick() => {}
        }
        ticks += 1;
        // Agreement is checked every 5 ms (failover times are measured with it); the
        // counters and the table every 100 ms.
        let refresh = ticks % 20 == 0;
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        let demo_nodes: Vec<&DemoNode> = nodes.iter().map(|(d, _)| d).collect();
        // Bring a taken-down node back.
        if let Some((id, at)) = down {
            if now >= at + down_for {
                demo_nodes[id as usize - 1]
                    .shared
                    .command(Control::Resume)
                    .await;
                down = None;
                event(
                    tty,
                    &format!("node {id} restarts (new incarnation) and calls an election"),
                );
            }
        }
        // Take down the leader of the group whose leader has been spared longest (never
        // hit first), so every algorithm fails over early in the demo even when one
        // node leads several groups.
        if down.is_none() && now >= next_chaos {
            next_chaos = now + chaos_every;
            let target = algorithms
                .iter()
                .copied()
                .filter_map(|k| agreed(&demo_nodes, k).map(|l| (k, l)))
                .min_by_key(|(k, _)| rows.get(k).and_then(|r| r.last_hit));
            if let Some((kind, leader)) = target {
                // The groups it leads now (not as the table last showed them).
                let led: Vec<AlgorithmKind> = algorithms
                    .iter()
                    .copied()
                    .filter(|&k| agreed(&demo_nodes, k) == Some(leader))
                    .collect();
                demo_nodes[leader as usize - 1]
                    .shared
                    .command(Control::Pause)
                    .await;
                // Stamped once the pause is asked for: on a busy machine (64 nodes on
                // two cores) that await can outlast a failover, and a stamp from
                // before it read 0 ms.
                let at = Instant::now();
                down = Some((leader, at));
                for k in led {
                    let row = rows.entry(k).or_default();
                    row.pending = Some((leader, at));
                    row.last_hit = Some(at);
                }
                event(
                    tty,
                    &format!("chaos: node {leader} (leader of {kind}) goes down"),
                );
            }
        }
        // Refresh the table.
        let mut changed = false;
        for &kind in &algorithms {
            let row = rows.entry(kind).or_default();
            let leader = agreed(&demo_nodes, kind);
            if refresh {
                (row.elections, row.messages) = totals(&demo_nodes, kind);
            }
            if let (Some(l), Some((gone, at))) = (leader, row.pending) {
                if l != gone {
                    // Seen now, not at the top of this turn (the awaits above take
                    // their time on a busy machine).
                    let took = Instant::now().saturating_duration_since(at);
                    row.last_failover = Some(took);
                    row.pending = None;
                    event(
                        tty,
                        &format!(
                            "{kind}: failover to node {l} in {:.0} ms",
                            took.as_secs_f64() * 1e3
                        ),
                    );
                }
            }
            if leader != row.leader {
                changed = true;
                row.leader = leader;
                if let Some(l) = leader {
                    event(tty, &format!("{kind}: all live nodes follow node {l}"));
                }
            }
        }
        if tty && refresh {
            draw(
                &algorithms,
                &rows,
                &demo_nodes,
                started.elapsed(),
                &mut drawn,
            );
        } else if changed {
            let _ = std::io::stdout().flush();
        }
    }
    for &kind in &algorithms {
        let demo_nodes: Vec<&DemoNode> = nodes.iter().map(|(d, _)| d).collect();
        let row = rows.entry(kind).or_default();
        (row.elections, row.messages) = totals(&demo_nodes, kind);
    }
    let _ = stop.send(true);
    for (d, rt) in nodes {
        match rt.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("node {}: {e}", d.id),
            Err(e) => eprintln!("node {}: {e}", d.id),
        }
    }
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
    }
    // The nodes are stopped: their state files go with the run (a demo starts fresh).
    drop(state_dir);
    if let Some(path) = &args.prometheus_file_sd {
        if let Err(e) = std::fs::remove_file(path) {
            eprintln!("cannot remove {}: {e}", path.display());
        }
    }
    if let (Some(path), Some(t)) = (&args.trace, &tracer) {
        let records = t.take();
        let header = electd::trace::Header::new(
            "demo",
            "monotonic",
            algorithms.iter().map(|a| a.as_str().to_string()).collect(),
            peers.iter().map(|p| p.0).collect(),
        );
        super::view::write_trace(path, &header, &records)?;
        println!(
            "trace ({} records) written to {}",
            records.len(),
            path.display()
        );
    }
    println!("\nsummary after {:.1} s:", started.elapsed().as_secs_f64());
    print!("{}", table(&algorithms, &rows));
    Ok(())
}

fn event(tty: bool, line: &str) {
    if !tty {
        println!("{line}");
    }
}

/// The leader every live (not paused) node follows in `kind`, if they all agree.
fn agreed(nodes: &[&DemoNode], kind: AlgorithmKind) -> Option<NodeId> {
    let mut leader = None;
    for n in nodes.iter().filter(|n| !n.shared.is_paused()) {
        let g = n.shared.group(kind)?;
        if g.electing {
            return None;
        }
        let l = g.leader?;
        if leader.is_some_and(|x| x != l) {
            return None;
        }
        leader = Some(l);
    }
    let l = leader?;
    let alive = nodes.iter().any(|n| n.id == l && !n.shared.is_paused());
    alive.then_some(l)
}

/// (elections won, election messages sent) summed over the nodes.
fn totals(nodes: &[&DemoNode], kind: AlgorithmKind) -> (u64, u64) {
    let (mut won, mut msgs) = (0.0, 0.0);
    for n in nodes {
        let text = n.shared.metrics.encode();
        let algo = format!("algorithm=\"{}\"", kind.as_str());
        for line in text.lines().filter(|l| l.contains(&algo)) {
            let value = line
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            if line.starts_with("electd_elections_won_total{") {
                won += value;
            } else if line.starts_with("electd_messages_sent_total{") {
                let liveness = MessageType::ALL
                    .iter()
                    .filter(|t| t.is_liveness())
                    .any(|t| line.contains(&format!("type=\"{}\"", t.as_str())));
                if !liveness {
                    msgs += value;
                }
            }
        }
    }
    (won as u64, msgs as u64)
}

fn table(algorithms: &[AlgorithmKind], rows: &HashMap<AlgorithmKind, Row>) -> String {
    let mut s = format!(
        "{:<16} {:>7} {:>10} {:>10} {:>14} {:>14}\n",
        "algorithm", "leader", "elections", "messages", "msgs/election", "last failover"
    );
    for k in algorithms {
        let r = rows.get(k).cloned().unwrap_or_default();
        let leader = r
            .leader
            .map(|l| l.to_string())
            .unwrap_or_else(|| "-".into());
        let per = if r.elections > 0 {
            format!("{:.1}", r.messages as f64 / r.elections as f64)
        } else {
            "-".into()
        };
        let fo = match (r.pending, r.last_failover) {
            (Some(_), _) => "failing over".to_string(),
            (None, Some(d)) => format!("{:.0} ms", d.as_secs_f64() * 1e3),
            (None, None) => "-".into(),
        };
        s.push_str(&format!(
            "{:<16} {:>7} {:>10} {:>10} {:>14} {:>14}\n",
            k.as_str(),
            leader,
            r.elections,
            r.messages,
            per,
            fo
        ));
    }
    s
}

fn draw(
    algorithms: &[AlgorithmKind],
    rows: &HashMap<AlgorithmKind, Row>,
    nodes: &[&DemoNode],
    elapsed: Duration,
    drawn: &mut bool,
) {
    let t = table(algorithms, rows);
    let lines = t.lines().count() + 2;
    let mut out = std::io::stdout().lock();
    if *drawn {
        // Move the cursor back up over the previous table and redraw it in place.
        let _ = write!(out, "\x1b[{lines}A");
    }
    let down: Vec<String> = nodes
        .iter()
        .filter(|n| n.shared.is_paused())
        .map(|n| n.id.to_string())
        .collect();
    let _ = write!(
        out,
        "\x1b[2K{:>6.1} s   nodes down: {}\n\x1b[2K\n",
        elapsed.as_secs_f64(),
        if down.is_empty() {
            "none".to_string()
        } else {
            down.join(", ")
        }
    );
    for line in t.lines() {
        let _ = writeln!(out, "\x1b[2K{line}");
    }
    let _ = out.flush();
    *drawn = true;
}
