//! `electd view TRACE… -o FILE.html` and `electd view --simulate …`.

use anyhow::Context;
use electd::sim::runner::{simulate_traced, SimulateParams};
use electd::sim::scenario::Initiator;
use electd::trace::view::{self, Trace};
use electd::trace::{self, Header, Record};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Trace files (`electd simulate --trace`, `electd demo --trace`); each algorithm
    /// in them becomes one diagram, all on one time axis.
    #[arg(value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The HTML file to write (self-contained: open it anywhere, offline).
    #[arg(long, short, default_value = "electd-view.html")]
    pub output: PathBuf,
    /// Run every algorithm (or --algorithms) in the simulator on the same seed and
    /// faults and show them side by side.
    #[arg(long)]
    pub simulate: bool,
    /// With --simulate: number of nodes (ids 1..N).
    #[arg(long, requires = "simulate", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub nodes: u32,
    /// With --simulate: the scenario every algorithm runs.
    #[arg(
        long,
        requires = "simulate",
        value_enum,
        default_value = "leader-crash"
    )]
    pub scenario: super::ScenarioArg,
    /// With --simulate: seed of the network, timers and the chaos plan.
    #[arg(long, requires = "simulate", default_value_t = 1)]
    pub seed: u64,
    /// With --simulate: datagram loss probability (0 ≤ P < 1).
    #[arg(long, requires = "simulate", default_value_t = 0.0, value_parser = super::simulate::parse_loss)]
    pub loss: f64,
    /// With --simulate --scenario chaos: the fault mix [default: basic].
    #[arg(long, requires = "simulate", value_enum)]
    pub faults: Option<super::FaultSetArg>,
    /// With --simulate: algorithms (comma-separated); default: all six.
    #[arg(long, requires = "simulate", value_enum, value_delimiter = ',')]
    pub algorithms: Vec<super::AlgorithmArg>,
    /// With --simulate: also write each algorithm's trace here as ALGORITHM.jsonl.
    #[arg(long, requires = "simulate", value_name = "DIR")]
    pub save_traces: Option<PathBuf>,
    /// Do not open the page in a browser (it is opened only from a terminal with a
    /// graphical session).
    #[arg(long)]
    pub no_open: bool,
}

/// Write one trace file (JSON Lines).
pub fn write_trace(path: &Path, header: &Header, records: &[Record]) -> anyhow::Result<()> {
    let f = std::fs::File::create(path)
        .with_context(|| format!("cannot create trace {}", path.display()))?;
    trace::write(BufWriter::new(f), header, records)
        .with_context(|| format!("cannot write trace {}", path.display()))
}

fn read_trace(path: &Path) -> anyhow::Result<Trace> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let (header, records) = trace::read(
        BufReader::new(f),
        view::MAX_RECORDS,
        "too large for one view; record fewer nodes or a shorter run",
    )
    .with_context(|| format!("trace {}", path.display()))?;
    let label = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Trace {
        label,
        header,
        records,
    })
}

/// What is wrong with the command line as a whole (a usage error, before anything runs).
pub fn usage_problem(args: &ViewArgs) -> Option<String> {
    (args.traces.is_empty() && !args.simulate)
        .then(|| "give trace files (electd simulate --trace FILE) or --simulate".to_string())
}

pub fn run(args: ViewArgs) -> anyhow::Result<()> {
    if let Some(why) = usage_problem(&args) {
        anyhow::bail!(why);
    }
    if !(0.0..1.0).contains(&args.loss) {
        anyhow::bail!("--loss must be in [0, 1), got {}", args.loss);
    }
    let mut traces = Vec::new();
    if args.simulate {
        let algorithms = super::algorithms_or_all(&args.algorithms)?;
        if let Some(dir) = &args.save_traces {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // The page's bound is checked as each simulation ends, and a simulation
        // records at most what a trace file may hold: a run far over the bound
        // (`--loss 0.99`, `--nodes 1000 --scenario chaos`) stops at its first
        // algorithm instead of simulating and holding every one (30 M records, 4 GB).
        let mut messages = 0usize;
        for alg in algorithms {
            let mut p = SimulateParams::new(alg, args.nodes as usize);
            p.scenario = args.scenario.0;
            p.seed = args.seed;
            p.loss = args.loss;
            p.faults = args
                .faults
                .map_or(electd::sim::chaos::FaultSet::Basic, |f| f.0);
            p.initiator = Initiator::Lowest;
            let (report, header, records) = simulate_traced(&p, view::MAX_RECORDS)?;
            // Past a trace file's bound the recorder stopped: refused as such a file
            // is, rather than drawn without its end.
            if let Some(Record::Truncated { dropped, .. }) = records.last() {
                anyhow::bail!(
                    "the simulation of {alg} (N = {}) makes more than {} trace records \
                     ({dropped} more), the most a view reads: fewer nodes or a shorter run",
                    args.nodes,
                    view::MAX_RECORDS
                );
            }
            messages += records
                .iter()
                .filter(|r| matches!(r, Record::Send(_) | Record::Retransmit(_)))
                .count();
            if messages > view::MAX_MESSAGES {
                return Err(view::ViewError::TooManyMessages(
                    messages,
                    view::MAX_MESSAGES,
                ))
                .with_context(|| {
                    format!(
                        "with {alg} (N = {}), the page would go past its bound",
                        args.nodes
                    )
                });
            }
            eprintln!(
                "{alg}: leader {} · {} election messages · {} trace records",
                report
                    .leader
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "none".into()),
                report.messages.total,
                records.len()
            );
            if let Some(dir) = &args.save_traces {
                write_trace(&dir.join(format!("{alg}.jsonl")), &header, &records)?;
            }
            traces.push(Trace {
                label: format!("seed {} · {}", args.seed, args.scenario.0.as_str()),
                header,
                records,
            });
        }
    }
    for path in &args.traces {
        traces.push(read_trace(path)?);
    }
    let html = view::render(&traces)?;
    std::fs::write(&args.output, html)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    println!("view written to {}", args.output.display());
    if !args.no_open {
        open(&args.output);
    }
    Ok(())
}

/// Open `path` in the user's browser when there is one to open it in.
fn open(path: &Path) {
    use std::io::IsTerminal;
    let graphical =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if !(std::io::stdout().is_terminal() && (graphical || cfg!(target_os = "macos"))) {
        return;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => println!("opened with {opener}"),
        Err(e) => println!("(could not run {opener}: {e}; open the file yourself)"),
    }
}
