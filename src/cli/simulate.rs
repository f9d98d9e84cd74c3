//! `electd simulate`.

use super::Format;
use electd::algorithm::AlgorithmKind;
use electd::sim::chaos::FaultSet;
use electd::sim::runner::{simulate, simulate_traced, SimulateParams};
use electd::sim::scenario::{Initiator, RingOrder, Scenario};
use electd::NodeId;

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Algorithm: bully, improved-bully, ring, lcr, hs, raft.
    #[arg(long, short, value_parser = parse_algorithm)]
    pub algorithm: AlgorithmKind,
    /// Number of nodes (ids 1..N).
    #[arg(long, short, default_value = "5", value_parser = parse_nodes)]
    pub nodes: usize,
    /// Who calls the first election: lowest, highest or a node id.
    #[arg(long, default_value = "lowest", value_parser = |s: &str| s.parse::<Initiator>())]
    pub initiator: Initiator,
    /// startup, or leader-crash (then the leader crashes and the lowest node detects it).
    #[arg(long, default_value = "startup", value_parser = |s: &str| s.parse::<Scenario>())]
    pub scenario: Scenario,
    /// Order of ids around the ring: ascending, descending or random (from the seed).
    #[arg(long, default_value = "ascending", value_parser = |s: &str| s.parse::<RingOrder>())]
    pub ring_order: RingOrder,
    /// Explicit ids in ring order, e.g. 3,1,4,2 (overrides --nodes and --ring-order).
    #[arg(long, value_delimiter = ',')]
    pub ids: Option<Vec<NodeId>>,
    /// Seed of the network and timer generators; the same seed replays the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fault mix of `--scenario chaos`: basic (crashes, restarts, loss) or full (also
    /// partitions, duplication, reordering).
    #[arg(long, default_value = "basic", value_parser = |s: &str| s.parse::<FaultSet>())]
    pub faults: FaultSet,
    /// Probability that a datagram is lost (0 ≤ P < 1); with `chaos`, the largest loss drawn.
    #[arg(long, default_value_t = 0.0, value_parser = parse_loss)]
    pub loss: f64,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Record every send, delivery, drop, retransmission, timer, state and leader
    /// change in virtual time to this file (JSON Lines, see docs/trace.md).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

fn parse_algorithm(s: &str) -> Result<AlgorithmKind, String> {
    super::parse_algorithms(s).and_then(|v| {
        if v.len() == 1 {
            Ok(v[0])
        } else {
            Err("simulate takes exactly one algorithm".into())
        }
    })
}

fn parse_nodes(s: &str) -> Result<usize, String> {
    match super::parse_node_counts(s)?.as_slice() {
        [n] => Ok(*n),
        _ => Err(format!("--nodes takes one count, got {s:?}")),
    }
}

fn parse_loss(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a probability"))?;
    if !(0.0..1.0).contains(&p) {
        return Err(format!("loss must be in [0, 1), got {p}"));
    }
    Ok(p)
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let ids = match args.ids {
        Some(ids) => {
            if ids.is_empty() {
                anyhow::bail!("--ids: empty list");
            }
            if ids.contains(&0) {
                anyhow::bail!("--ids: node id 0 is reserved; ids start at 1");
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                anyhow::bail!("--ids: node {} is listed twice", w[0]);
            }
            ids
        }
        None => args.ring_order.ids(args.nodes, args.seed),
    };
    let mut p = SimulateParams::new(args.algorithm, ids.len());
    p.ids = ids;
    p.initiator = args.initiator;
    p.scenario = args.scenario;
    p.seed = args.seed;
    p.loss = args.loss;
    p.faults = args.faults;
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
