//! `electd bench [--quick] [--out DIR]`: run the benchmark suite and write
//! DIR/report.md, DIR/results.json and the SVG plots (see `src/bench/mod.rs`).

use crate::bench::{self, BenchOptions};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Smoke-test sizes (seconds instead of minutes); figures are not for quoting.
    #[arg(long)]
    pub quick: bool,
    /// Output directory for report.md, results.json and the plots.
    #[arg(long, default_value = "bench-report")]
    pub out: PathBuf,
    /// Seed of the bench's random choices (kill phases, random ring orders).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only these sections (comma-separated): codec, sim, messages, udp, cost,
    /// failover, scale-cold, etcd (failover beside etcd; needs an `etcd` binary),
    /// keepalived (a virtual IP beside keepalived in network namespaces; needs root and
    /// `keepalived`, and runs only when named here), detect (the smallest failure timeout
    /// without a spurious election on a busy machine, beside etcd; ten minutes per
    /// candidate, and runs only when named here). Default: all but keepalived and detect.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(bench::SECTIONS))]
    pub only: Vec<String>,
    /// Failover section: leader take-downs per algorithm and mode (default 50, quick 2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub failover_samples: Option<u32>,
    /// Failover section: only these modes (comma-separated): sigkill, pause, sigterm.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(bench::failover::MODES))]
    pub failover_modes: Vec<String>,
    /// Node counts of the scale-cold section (comma-separated; up to 64 as separate
    /// processes, above in one process), each 2 to 1024. Default: 8,16,32,64,128,256.
    #[arg(long, value_delimiter = ',', value_parser = node_count)]
    pub nodes: Vec<usize>,
    /// scale-cold: run every N of `--nodes` as separate `electd run` processes, above
    /// 64 too, at the timing deploy/README.md recommends for that size (every period
    /// scaled by N/64 above 64 nodes).
    #[arg(long)]
    pub processes: bool,
    /// Algorithms of the failover and scale-cold sections (comma-separated). Default: all.
    #[arg(long, value_delimiter = ',')]
    pub algorithms: Vec<electd::contract::algorithm::AlgorithmKind>,
    /// Cold starts per algorithm and N of the scale-cold section's separate processes,
    /// each on a fresh cluster (the report gives k of them agreed in time); the last
    /// one goes on to the failover.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub tries: u32,
    /// The electd binary the bench runs as its nodes (default: this one), to measure
    /// another build with this bench: e.g. an older build's idle cost beside the floor
    /// this bench measures (docs/bench/idle/README.md).
    #[arg(long)]
    pub node_exe: Option<PathBuf>,
    /// detect: the candidate failure timeouts in ms, comma-separated, each 10..=60000
    /// (default 50,30,20,15,10; quick 50). Tried largest first.
    #[arg(long, value_delimiter = ',')]
    pub detect_timeouts: Vec<u64>,
    /// detect: how long each candidate is watched, e.g. 600s or 10m (default 10 minutes;
    /// quick 5 s).
    #[arg(long, value_parser = super::positive_duration_arg)]
    pub detect_window: Option<std::time::Duration>,
    /// detect: run the algorithms as the groups of one five-node cluster (a stalled
    /// process stalls every group) instead of one five-node cluster each.
    #[arg(long)]
    pub detect_one_cluster: bool,
    /// detect: run electd's nodes (`[process] realtime_priority`) and etcd's members in
    /// the real-time class, SCHED_RR at this priority (1..=99); the load stays normal.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=99))]
    pub detect_realtime: Option<u8>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    // From here a signal kills what the bench started (bench::stop).
    bench::stop::install();
    if std::env::var_os("ELECTD_LOG").is_none() && std::env::var_os("RUST_LOG").is_none() {
        // The in-process runtimes log every election at info: keep stderr for progress.
        std::env::set_var("ELECTD_LOG", "warn");
    }
    super::init_tracing();
    if !args.detect_timeouts.is_empty()
        || args.detect_window.is_some()
        || args.detect_one_cluster
        || args.detect_realtime.is_some()
    {
        if !args.only.iter().any(|s| s == "detect") {
            anyhow::bail!(
                "--detect-timeouts, --detect-window, --detect-one-cluster and --detect-realtime belong to the \
                 detect section, which runs only when named: add --only detect"
            );
        }
        // Checked before any section runs, so a typo costs no measurement.
        if let Some(p) = args.detect_realtime {
            electd::daemon::sched::check(p)
                .map_err(|e| anyhow::anyhow!("--detect-realtime {p}: {e}"))?;
        }
        let candidates = if args.detect_timeouts.is_empty() {
            bench::detect::CANDIDATES_MS.to_vec()
        } else {
            args.detect_timeouts.clone()
        };
        bench::detect::check_options(
            &candidates,
            args.detect_window.unwrap_or(bench::detect::WINDOW),
        )?;
    }
    let exe = match args.node_exe {
        Some(exe) => exe,
        None => std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find the electd binary to spawn nodes: {e}"))?,
    };
    let opts = BenchOptions {
        quick: args.quick,
        out: args.out.clone(),
        exe,
        seed: args.seed,
        only: args.only,
        failover_samples: args.failover_samples.map(|n| n as usize),
        failover_modes: args.failover_modes,
        nodes: args.nodes,
        algorithms: args.algorithms,
        cold_tries: args.tries as usize,
        all_processes: args.processes,
        detect_timeouts: args.detect_timeouts,
        detect_window: args.detect_window,
        detect_one_cluster: args.detect_one_cluster,
        detect_realtime: args.detect_realtime,
    };
    let started = std::time::Instant::now();
    let log = |line: &str| eprintln!("[{:>6.1}s] {line}", started.elapsed().as_secs_f64());
    let results = bench::run(&opts, &log)?;
    let missed = results.targets.iter().filter(|t| !t.met).count();
    eprintln!(
        "report written to {} ({} targets, {missed} missed)",
        args.out.join("report.md").display(),
        results.targets.len()
    );
    Ok(())
}

/// One `--nodes` count: 2 to 1024 (a cluster of one has no failover to measure).
fn node_count(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a node count"))?;
    if !(2..=1024).contains(&n) {
        return Err(format!("{n}: a cluster here has 2 to 1024 nodes"));
    }
    Ok(n)
}
