//! `electd simulate`.

use super::{AlgorithmArg, FaultSetArg, Format, RingOrderArg, ScenarioArg};
use electd::contract::algorithm::AlgorithmKind;
use electd::sim::runner::{simulate, simulate_traced, SimulateParams};
use electd::sim::scenario::{Initiator, Scenario};
use electd::NodeId;

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// The algorithm to simulate.
    #[arg(long, short, value_enum)]
    pub algorithm: AlgorithmArg,
    /// Number of nodes (ids 1..N).
    #[arg(long, short, default_value = "5", value_parser = parse_nodes)]
    pub nodes: usize,
    /// Who calls the first election: lowest, highest or a node id.
    #[arg(long, default_value = "lowest", value_parser = |s: &str| s.parse::<Initiator>())]
    pub initiator: Initiator,
    /// What happens in the run.
    #[arg(long, value_enum, default_value = "startup")]
    pub scenario: ScenarioArg,
    /// Order of ids around the ring.
    #[arg(long, value_enum, default_value = "ascending")]
    pub ring_order: RingOrderArg,
    /// Explicit ids in ring order, e.g. 3,1,4,2 (overrides --nodes and --ring-order).
    #[arg(long, value_delimiter = ',')]
    pub ids: Option<Vec<NodeId>>,
    /// Seed of the network and timer generators; the same seed replays the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fault mix of `--scenario chaos` [default: basic].
    #[arg(long, value_enum)]
    pub faults: Option<FaultSetArg>,
    /// Probability that a datagram is lost (0 ≤ P < 1); with `chaos`, the largest loss drawn.
    #[arg(long, default_value_t = 0.0, value_parser = parse_loss)]
    pub loss: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Start even when the estimate exceeds the available memory or ten minutes.
    #[arg(long)]
    pub force: bool,
    /// Record every send, delivery, drop, retransmission, timer, state and leader
    /// change in virtual time to this file (JSON Lines, see docs/trace.md).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// Peak memory and wall time of one run, estimated before starting (`estimate`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub bytes: f64,
    pub seconds: f64,
}

/// Memory per simulated node (its groups, link state and timers) and per election
/// message (in flight at once in the synchronous model), and wall time per message,
/// measured with the release build on a 2-core x86-64: memory after the link's
/// per-peer arrays (`electd simulate --algorithm bully --nodes 1000`: 174 MB; 4096:
/// 2.8 GB; `raft --nodes 2000`: 18 MB), time before them (`bully --nodes 1000`: 5.7 s;
/// 0.5 s now, so the time estimate is on the safe side). Estimates to warn before a
/// run that cannot finish, not promises.
const BYTES_PER_NODE: f64 = 10e3;
const BYTES_PER_MESSAGE: f64 = 180.0;
const SECONDS_PER_MESSAGE: f64 = 9e-6;
const SECONDS_PER_NODE: f64 = 3e-4;
/// Above these a run is announced with its estimate before it starts.
const WARN_BYTES: f64 = 1e9;
const WARN_SECONDS: f64 = 10.0;
/// Above this a run is refused without `--force`: nobody waits that long by accident.
const REFUSE_SECONDS: f64 = 600.0;

/// Worst-case election messages of the literature for `n` nodes (lowest initiator,
/// descending ring for LCR), times `elections` (the leader-crash scenario has two).
pub fn estimate(kind: AlgorithmKind, n: usize, elections: f64) -> Estimate {
    // The largest count formula of the algorithm's registry entry (worst case).
    let messages = (kind.info().cases)()
        .iter()
        .filter_map(|c| c.expected.map(|f| f(n as u64)))
        .fold(0.0, f64::max)
        * elections;
    Estimate {
        bytes: BYTES_PER_NODE * n as f64 + BYTES_PER_MESSAGE * messages,
        seconds: SECONDS_PER_NODE * n as f64 + SECONDS_PER_MESSAGE * messages,
    }
}

/// `MemAvailable` of /proc/meminfo in bytes (None where there is none).
fn available_memory() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// Refuse (unless `force`) a run whose estimate exceeds the available memory; announce
/// one above the warning thresholds.
fn check_size(
    kind: AlgorithmKind,
    n: usize,
    scenario: Scenario,
    force: bool,
) -> anyhow::Result<()> {
    let elections = if scenario == Scenario::Startup {
        1.0
    } else {
        2.0
    };
    let e = estimate(kind, n, elections);
    check_estimate(&format!("{kind} on {n} nodes"), e, force)
}

/// [`check_size`] for a series of runs one after the other (`compare`): the largest
/// run's memory, the sum of the times.
pub fn check_series(runs: &[(AlgorithmKind, usize)], force: bool) -> anyhow::Result<()> {
    let mut total = Estimate {
        bytes: 0.0,
        seconds: 0.0,
    };
    for &(kind, n) in runs {
        let e = estimate(kind, n, 1.0);
        total.bytes = total.bytes.max(e.bytes);
        total.seconds += e.seconds;
    }
    check_estimate(&format!("{} simulations", runs.len()), total, force)
}

fn check_estimate(what: &str, e: Estimate, force: bool) -> anyhow::Result<()> {
    let shown = format!(
        "{what}: about {:.1} GB and {:.0} s (estimated from the literature's worst-case \
         message count)",
        e.bytes / 1e9,
        e.seconds
    );
    if let Some(avail) = available_memory() {
        if e.bytes > avail && !force {
            anyhow::bail!(
                "{shown}, more than the {:.1} GB available: use fewer nodes (or --force)",
                avail / 1e9
            );
        }
    }
    if e.seconds > REFUSE_SECONDS && !force {
        anyhow::bail!("{shown}: more than {REFUSE_SECONDS} s; use fewer nodes (or --force)");
    }
    if e.bytes > WARN_BYTES || e.seconds > WARN_SECONDS {
        eprintln!("electd: warning: {shown}");
    }
    Ok(())
}

fn parse_nodes(s: &str) -> Result<usize, String> {
    match super::parse_node_counts(s)?.as_slice() {
        [n] => Ok(*n),
        _ => Err(format!("--nodes takes one count, got {s:?}")),
    }
}

pub(super) fn parse_loss(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a probability"))?;
    if !(0.0..1.0).contains(&p) {
        return Err(format!("loss must be in [0, 1), got {p}"));
    }
    Ok(p)
}

/// What is wrong with the command line as a whole (checked before anything runs, a
/// usage error): `--ids` with id 0 or a duplicate, an `--initiator` not in the roster.
pub fn usage_problem(args: &SimulateArgs) -> Option<String> {
    if let Some(ids) = &args.ids {
        if ids.is_empty() {
            return Some("--ids: empty list".into());
        }
        if ids.contains(&0) {
            return Some("--ids: node id 0 is reserved; ids start at 1".into());
        }
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!("--ids: node {} is listed twice", w[0]));
        }
    }
    if let Initiator::Id(i) = args.initiator {
        let known = match &args.ids {
            Some(ids) => ids.contains(&i),
            None => i >= 1 && usize::try_from(i).is_ok_and(|i| i <= args.nodes),
        };
        if !known {
            let roster = match &args.ids {
                Some(ids) => format!("{ids:?}"),
                None => format!("1..={}", args.nodes),
            };
            return Some(format!(
                "--initiator {i} is not in the roster (ids {roster})"
            ));
        }
    }
    None
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    if let Some(why) = usage_problem(&args) {
        anyhow::bail!(why);
    }
    let ids = match args.ids {
        Some(ids) => ids,
        None => args.ring_order.0.ids(args.nodes, args.seed),
    };
    check_size(args.algorithm.0, ids.len(), args.scenario.0, args.force)?;
    let mut p = SimulateParams::new(args.algorithm.0, ids.len());
    p.ids = ids;
    p.initiator = args.initiator;
    p.scenario = args.scenario.0;
    p.seed = args.seed;
    p.loss = args.loss;
    p.faults = args
        .faults
        .map_or(electd::sim::chaos::FaultSet::Basic, |f| f.0);
    let report = match &args.trace {
        None => simulate(&p)?,
        Some(path) => {
            let (report, header, records) = simulate_traced(&p, electd::trace::DEFAULT_LIMIT)?;
            super::view::write_trace(path, &header, &records)?;
            eprintln!(
                "trace ({} records) written to {}",
                records.len(),
                path.display()
            );
            report
        }
    };
    match args.format {
        Format::Table => print!("{}", report.to_table()),
        Format::Json => println!("{}", report.to_json()),
        Format::Csv => print!("{}", report.to_csv()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_message_count_of_the_literature() {
        let small = estimate(AlgorithmKind::Bully, 5, 1.0);
        assert!(small.bytes < WARN_BYTES && small.seconds < WARN_SECONDS);
        // Bully sends N² − 1 messages: 10 000 nodes is about 10⁸, tens of GB.
        let n = 10_000usize;
        let big = estimate(AlgorithmKind::Bully, n, 1.0);
        let messages = (n * n - 1) as f64;
        assert!(big.bytes >= BYTES_PER_MESSAGE * messages, "{big:?}");
        assert!(big.bytes > WARN_BYTES && big.seconds > REFUSE_SECONDS);
        // Raft's 4(N − 1) stays small at the same N.
        let raft = estimate(AlgorithmKind::Raft, n, 1.0);
        assert!(raft.bytes < big.bytes / 100.0, "{raft:?}");
    }
}
