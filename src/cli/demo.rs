//! `electd demo` (placeholder while the runtime lands).

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 5)]
    pub nodes: usize,
}

pub fn run(_args: DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
