//! Command-line interface (clap). Each subcommand lives in its own file.

pub mod admin;
pub mod bench;
pub mod chaos;
pub mod compare;
pub mod config_init;
pub mod demo;
pub mod exec;
mod exec_lock;
pub mod keygen;
pub mod manual;
pub mod notify;
pub mod run;
pub mod simulate;
pub mod status;
pub mod view;

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand, ValueEnum};

/// electd: leader election daemon (Bully, Improved Bully, Ring, Chang–Roberts,
/// Hirschberg–Sinclair, Raft) and its simulator.
#[derive(Debug, Parser)]
#[command(name = "electd", version, about, long_about = None)]
pub struct Cli {
    /// Log lines as human-readable text or as one JSON object per line (for journald,
    /// Loki, Elasticsearch); the level filter is ELECTD_LOG (default info).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "ELECTD_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `2026-01-01T00:00:00Z  INFO electd: message key=value` (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, fields (message included).
    Json,
}

static LOG_FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// Set once by `main` from `--log-format`; read by [`init_tracing`].
pub fn set_log_format(f: LogFormat) {
    let _ = LOG_FORMAT.set(f);
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate one algorithm on N nodes in the deterministic simulator.
    Simulate(simulate::SimulateArgs),
    /// Messages per election against N for every algorithm, beside the literature.
    Compare(compare::CompareArgs),
    /// Chaos campaign: many seeded fault plans per algorithm, checking safety and
    /// liveness; prints every violation with the command that replays it.
    Chaos(chaos::ChaosArgs),
    /// Run one node of a cluster (roster and settings from a TOML file).
    Run(run::RunArgs),
    /// Real UDP nodes on 127.0.0.1 running every algorithm side by side, a chaos loop
    /// that takes leaders down and brings them back, and a live table.
    Demo(demo::DemoArgs),
    /// Generate a cluster key file (HMAC-SHA256, 32 random bytes).
    Keygen(keygen::KeygenArgs),
    /// Cluster configuration files (`config init`).
    Config(config_init::ConfigArgs),
    /// Benchmarks: failover time, message efficiency, scale, cost per node, codec;
    /// writes report.md, results.json and SVG plots.
    Bench(bench::BenchArgs),
    /// Ask every roster node's /status at once: per algorithm whom each node follows,
    /// its token, whether they agree, who is unreachable. Exit 0 only if every reachable
    /// node agrees on one leader for every algorithm.
    Status(status::StatusArgs),
    /// Follow every roster node's leader changes (/watch) and print them as they happen.
    Watch(status::WatchArgs),
    /// Run a command (no shell, own process group) only while the local node leads a
    /// group: stopped (SIGTERM, then SIGKILL) when leadership is lost or unconfirmed.
    Exec(exec::ExecArgs),
    /// Make the local node ineligible in one group or all (POST /admin/drain): it steps
    /// down if it leads and the command waits until another node leads.
    Drain(admin::AdminArgs),
    /// Make the local node eligible again (POST /admin/undrain).
    Undrain(admin::AdminArgs),
    /// Hand the local node's leadership of a group to another node
    /// (POST /admin/transfer); waits until that node leads.
    Transfer(admin::TransferArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionsArgs),
    /// Print the manual page (roff) of electd and its subcommands.
    Man(manual::ManArgs),
    /// Space-time diagrams of traces (`simulate --trace`, `demo --trace`) in one
    /// self-contained HTML page; `--simulate` runs every algorithm on the same faults.
    View(view::ViewArgs),
}

/// Log to stderr; filter from `ELECTD_LOG` (or `RUST_LOG`), default `info`; text or
/// JSON lines as `--log-format` says.
pub fn init_tracing() {
    let filter = std::env::var("ELECTD_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr);
    let _ = match LOG_FORMAT.get().copied().unwrap_or_default() {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}

/// Completes on SIGTERM or SIGINT (Ctrl-C). The handlers are installed before this
/// returns (not at the future's first poll):
/// a SIGTERM sent right after the caller announced readiness must not meet the
/// default action.
pub fn shutdown_signal_now() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Output format of `simulate` and `compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

/// A library enum offered on the command line as a clap [`ValueEnum`]: its values are
/// listed in `--help`, completed by the shell scripts and suggested on a typo.
macro_rules! value_enum {
    ($(#[$doc:meta])* $name:ident($ty:ty) { $($variant:path => $value:literal: $help:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub $ty);

        impl ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($name($variant)),+]
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                match self.0 {
                    $($variant => Some(PossibleValue::new($value).help($help)),)+
                }
            }
        }
    };
}

value_enum!(
    /// `--scenario` of `simulate`.
    ScenarioArg(electd::sim::scenario::Scenario) {
        electd::sim::scenario::Scenario::Startup => "startup":
            "all nodes boot; the initiator calls the first election",
        electd::sim::scenario::Scenario::LeaderCrash => "leader-crash":
            "startup, then the leader crashes and the lowest live node detects it",
        electd::sim::scenario::Scenario::Chaos => "chaos":
            "a seeded random plan of faults, then a clean network (--faults)",
    }
);

value_enum!(
    /// `--ring-order` of `simulate`.
    RingOrderArg(electd::sim::scenario::RingOrder) {
        electd::sim::scenario::RingOrder::Ascending => "ascending": "1, 2, …, N clockwise",
        electd::sim::scenario::RingOrder::Descending => "descending": "N, N−1, …, 1 clockwise",
        electd::sim::scenario::RingOrder::Random => "random": "a permutation drawn from --seed",
    }
);

value_enum!(
    /// `--faults` of `simulate --scenario chaos` and `chaos`.
    FaultSetArg(electd::sim::chaos::FaultSet) {
        electd::sim::chaos::FaultSet::Basic => "basic": "crashes, restarts, loss",
        electd::sim::chaos::FaultSet::Full => "full":
            "also symmetric and one-way partitions, duplication, reordering",
    }
);

/// An algorithm on the command line. Every name of [`AlgorithmKind::ALL`] is a value
/// (`chang-roberts`, `hirschberg-sinclair` and `_` spellings are accepted as aliases).
///
/// [`AlgorithmKind::ALL`]: electd::contract::algorithm::AlgorithmKind::ALL
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlgorithmArg(pub electd::contract::algorithm::AlgorithmKind);

const ALGORITHM_ARGS: [AlgorithmArg; electd::contract::algorithm::AlgorithmKind::ALL.len()] = {
    let all = electd::contract::algorithm::AlgorithmKind::ALL;
    let mut out = [AlgorithmArg(all[0]); electd::contract::algorithm::AlgorithmKind::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        out[i] = AlgorithmArg(all[i]);
        i += 1;
    }
    out
};

impl ValueEnum for AlgorithmArg {
    fn value_variants<'a>() -> &'a [Self] {
        &ALGORITHM_ARGS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        let e = self.0.info();
        Some(
            PossibleValue::new(e.name)
                .help(e.summary)
                .aliases(e.aliases.iter().copied()),
        )
    }
}

/// A list of node counts given as `N`, `A..B`, `A..=B` or `A,B,C`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCounts(pub Vec<usize>);

pub fn parse_node_count_list(s: &str) -> Result<NodeCounts, String> {
    parse_node_counts(s).map(NodeCounts)
}

/// Parse `N`, `A..B`, `A..=B` or `A,B,C` into a list of node counts (each ≥ 1).
pub fn parse_node_counts(s: &str) -> Result<Vec<usize>, String> {
    let s = s.trim();
    let parse = |x: &str| -> Result<usize, String> {
        let n: usize = x
            .trim()
            .parse()
            .map_err(|_| format!("{x:?} is not a node count"))?;
        if n == 0 {
            return Err("a cluster needs at least 1 node (got 0)".into());
        }
        // Bully sends N² messages: 10⁴ nodes is 10⁸ messages, minutes of work.
        if n > 10_000 {
            return Err(format!(
                "{n} nodes is more than the simulator allows (10000)"
            ));
        }
        Ok(n)
    };
    if let Some((a, b)) = s.split_once("..") {
        let b = b.strip_prefix('=').unwrap_or(b);
        let (a, b) = (parse(a)?, parse(b)?);
        if a > b {
            return Err(format!("empty range {s}: {a} > {b}"));
        }
        return Ok((a..=b).collect());
    }
    s.split(',').map(parse).collect()
}

/// The algorithms of an `--algorithms` list in the order given, each once; every
/// available one when the list is empty (the option was not given).
pub fn algorithms_or_all(
    list: &[AlgorithmArg],
) -> anyhow::Result<Vec<electd::contract::algorithm::AlgorithmKind>> {
    if list.is_empty() {
        return Ok(electd::contract::algorithm::AlgorithmKind::available());
    }
    let mut out = Vec::new();
    for a in list {
        if !out.contains(&a.0) {
            out.push(a.0);
        }
    }
    Ok(out)
}
