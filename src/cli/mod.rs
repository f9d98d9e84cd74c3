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

impl Cli {
    /// A command line that clap's rules cannot refuse: a flag given that the chosen
    /// mode does not read (`requires` cannot say "only with this value of another
    /// flag"), or values that contradict each other (`simulate --ids 3,1,3`); a usage
    /// error (exit 2) before anything runs, instead of exit 1 or a flag ignored.
    /// Returns the subcommand's name and what is wrong.
    pub fn usage_problem(&self) -> Option<(&'static str, String)> {
        use electd::sim::scenario::Scenario;
        let (sub, scenario, faults) = match &self.command {
            Command::Simulate(a) => ("simulate", Some(a.scenario.0), a.faults.is_some()),
            Command::View(a) if a.simulate => ("view", Some(a.scenario.0), a.faults.is_some()),
            _ => ("", None, false),
        };
        let own = match &self.command {
            Command::Simulate(a) => simulate::usage_problem(a).map(|w| ("simulate", w)),
            Command::Chaos(a) => chaos::usage_problem(a).map(|w| ("chaos", w)),
            Command::View(a) => view::usage_problem(a).map(|w| ("view", w)),
            _ => None,
        };
        if own.is_some() {
            return own;
        }
        match scenario {
            Some(s) if faults && s != Scenario::Chaos => Some((
                sub,
                format!(
                    "--faults is the fault mix of --scenario chaos; this run's scenario is {}",
                    ScenarioArg(s)
                        .to_possible_value()
                        .map_or_else(String::new, |v| v.get_name().to_string())
                ),
            )),
            _ => None,
        }
    }
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
    /// liveness; prints the first five violations per algorithm with the command that replays each, and every violating seed.
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

/// The longest duration a command-line option takes: a year. Nothing waits longer,
/// and a deadline that far is still a valid instant (a value near 2^64 s overflowed
/// the clock and panicked).
pub(crate) const MAX_ARG_DURATION: std::time::Duration =
    std::time::Duration::from_secs(365 * 24 * 3600);

/// A duration option (`300ms`, `10s`, `2m`, `0`), at most [`MAX_ARG_DURATION`].
pub(crate) fn duration_arg(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d > MAX_ARG_DURATION {
        return Err("must be at most a year (365d)".into());
    }
    Ok(d)
}

/// A duration option that must be above zero (a timeout, a period).
pub(crate) fn positive_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    let d = duration_arg(s)?;
    if d.is_zero() {
        return Err("must be above zero".into());
    }
    Ok(d)
}

/// Seconds as a decimal number (`1.5`), at least a millisecond and at most a year.
pub(crate) fn seconds_arg(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(0.001..=MAX_ARG_DURATION.as_secs_f64()).contains(&v) {
        return Err("must be between 0.001 (a millisecond) and 31536000 (a year)".into());
    }
    Ok(v)
}

/// The filter of `ELECTD_LOG` (or `RUST_LOG`; default `info`). A value that is not a
/// filter (a typo such as `inof`, which the filter's grammar reads as a target's name
/// and so silences everything else, warnings and errors included) is an error.
pub(crate) fn log_filter() -> Result<tracing_subscriber::EnvFilter, String> {
    let (var, filter) = match std::env::var("ELECTD_LOG") {
        Ok(v) => ("ELECTD_LOG", v),
        Err(_) => match std::env::var("RUST_LOG") {
            Ok(v) => ("RUST_LOG", v),
            Err(_) => return Ok(tracing_subscriber::EnvFilter::new("info")),
        },
    };
    check_log_filter(&filter).map_err(|e| format!("{var}={filter:?}: {e}"))?;
    tracing_subscriber::EnvFilter::try_new(normalize_log_filter(&filter))
        .map_err(|e| format!("{var}={filter:?}: {e}"))
}

/// The directives of a filter without the blanks around them (`info, electd=debug`),
/// which the filter's parser refuses.
pub(crate) fn normalize_log_filter(filter: &str) -> String {
    filter
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// Every directive of `filter` names a level, or a target with `=level` (a bare word
/// that is no level is a typo, not a target: `info`, `electd=debug`, `warn,electd::daemon=trace`).
pub(crate) fn check_log_filter(filter: &str) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    for d in filter.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let level = match d.rsplit_once('=') {
            Some((_, level)) => level,
            None => d,
        };
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{d:?} is not a level (off, error, warn, info, debug, trace) or TARGET=LEVEL"
            ));
        }
    }
    Ok(())
}

/// Log to stderr; filter from `ELECTD_LOG` (or `RUST_LOG`), default `info`; text or
/// JSON lines as `--log-format` says. A filter that does not parse is reported and
/// `info` used instead (every command logs through here; `run` refuses it first, see
/// [`log_filter`]).
pub fn init_tracing() {
    let filter = log_filter().unwrap_or_else(|e| {
        eprintln!("electd: warning: {e}; logging at info");
        tracing_subscriber::EnvFilter::new("info")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
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

/// `compare --nodes`: each count at least 2 (the literature's formulas are for a
/// cluster that elects among several: with one node, 0 messages against formulas of 1,
/// 2 or 9 marked exact).
pub fn parse_node_count_list(s: &str) -> Result<NodeCounts, String> {
    let counts = parse_node_counts(s)?;
    if counts.contains(&1) {
        return Err(
            "the formulas compared are for two nodes or more: a single node sends no \
             election message (give N ≥ 2)"
                .into(),
        );
    }
    Ok(NodeCounts(counts))
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
    let counts: Vec<usize> = s.split(',').map(parse).collect::<Result<_, _>>()?;
    // A count given twice would be run and printed twice.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(n) = counts.iter().find(|&&n| !seen.insert(n)) {
        return Err(format!("{n} is listed twice"));
    }
    Ok(counts)
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

#[cfg(test)]
mod arg_tests {
    use super::*;
    use std::time::Duration;

    /// Values the parser took and the commands then panicked on (a deadline past the
    /// clock's end, an infinite float of seconds) are refused with the bound.
    #[test]
    fn durations_beyond_a_year_or_at_zero_are_refused() {
        assert_eq!(duration_arg("0s"), Ok(Duration::ZERO));
        assert_eq!(duration_arg("365d"), Ok(MAX_ARG_DURATION));
        for huge in ["366d", "9223372036854775807s", "18446744073709551615s"] {
            let e = duration_arg(huge).unwrap_err();
            assert!(
                e.contains("at most a year") || e.contains("overflow") || e.contains("too big"),
                "{huge}: {e}"
            );
        }
        assert!(positive_duration_arg("0s")
            .unwrap_err()
            .contains("above zero"));
        assert_eq!(positive_duration_arg("1ns"), Ok(Duration::from_nanos(1)));
        assert!(duration_arg("abc").is_err());
        assert!(duration_arg("-1s").is_err());
        assert_eq!(seconds_arg("1.5"), Ok(1.5));
        for bad in ["inf", "NaN", "0", "1e-300", "-1", "1e9", "x"] {
            assert!(seconds_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_node_count_list_names_each_count_once() {
        assert_eq!(parse_node_counts("3,5,8"), Ok(vec![3, 5, 8]));
        assert_eq!(parse_node_counts("3..=5"), Ok(vec![3, 4, 5]));
        assert!(parse_node_counts("3,3")
            .unwrap_err()
            .contains("3 is listed twice"));
    }

    /// A typo in ELECTD_LOG (`inof`) is read by the filter's grammar as a target's name,
    /// which silences every other target, warnings and errors included.
    #[test]
    fn a_log_filter_is_levels_and_targets_with_levels() {
        for good in [
            "info",
            "DEBUG",
            "warn,electd=debug",
            "electd::daemon::runtime::publish=debug",
            "off",
            "info, electd=trace",
        ] {
            assert_eq!(check_log_filter(good), Ok(()), "{good}");
            assert!(
                tracing_subscriber::EnvFilter::try_new(normalize_log_filter(good)).is_ok(),
                "{good}"
            );
        }
        for typo in ["inof", "info,electd", "electd=loud", "debgu"] {
            assert!(check_log_filter(typo).is_err(), "{typo}");
        }
    }
}
