//! Command-line interface (clap). Each subcommand lives in its own file.

pub mod bench;
pub mod chaos;
pub mod compare;
pub mod config_init;
pub mod demo;
pub mod keygen;
pub mod run;
pub mod simulate;

use clap::{Parser, Subcommand};

/// electd: leader election daemon (Bully, Improved Bully, Ring, Chang–Roberts,
/// Hirschberg–Sinclair, Raft) and its simulator.
#[derive(Debug, Parser)]
#[command(name = "electd", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
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
}

/// Log to stderr; filter from `ELECTD_LOG` (or `RUST_LOG`), default `info`.
pub fn init_tracing() {
    let filter = std::env::var("ELECTD_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Output format of `simulate` and `compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// A list of node counts given as `N`, `A..B`, `A..=B` or `A,B,C`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCounts(pub Vec<usize>);

/// A comma-separated list of algorithms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Algorithms(pub Vec<electd::algorithm::AlgorithmKind>);

pub fn parse_node_count_list(s: &str) -> Result<NodeCounts, String> {
    parse_node_counts(s).map(NodeCounts)
}

pub fn parse_algorithm_list(s: &str) -> Result<Algorithms, String> {
    parse_algorithms(s).map(Algorithms)
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

/// Parse a comma-separated list of algorithm names.
pub fn parse_algorithms(s: &str) -> Result<Vec<electd::algorithm::AlgorithmKind>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let k: electd::algorithm::AlgorithmKind = part.parse().map_err(|e| format!("{e}"))?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err("no algorithm given".into());
    }
    Ok(out)
}
