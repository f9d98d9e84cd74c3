//! `electd simulate`.

use super::{AlgorithmArg, FaultSetArg, Format, RingOrderArg, ScenarioArg};
use electd::sim::runner::{simulate, SimulateParams};
use electd::sim::scenario::Initiator;
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
    /// Fault mix of `--scenario chaos`.
    #[arg(long, value_enum, default_value = "basic")]
    pub faults: FaultSetArg,
    /// Probability that a datagram is lost (0 ≤ P < 1); with `chaos`, the largest loss drawn.
    #[arg(long, default_value_t = 0.0, value_parser = parse_loss)]
    pub loss: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
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
        None => args.ring_order.0.ids(args.nodes, args.seed),
    };
    let mut p = SimulateParams::new(args.algorithm.0, ids.len());
    p.ids = ids;
    p.initiator = args.initiator;
    p.scenario = args.scenario.0;
    p.seed = args.seed;
    p.loss = args.loss;
    p.faults = args.faults.0;
    let report = simulate(&p)?;
    match args.format {
        Format::Table => print!("{}", report.to_table()),
        Format::Json => println!("{}", report.to_json()),
        Format::Csv => print!("{}", report.to_csv()),
    }
    Ok(())
}
