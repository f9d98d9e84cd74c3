//! `electd completions SHELL` and `electd man`: generated from the clap definition, so
//! they list exactly the subcommands, options and values the binary accepts.

use clap::CommandFactory;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for. Install e.g. bash:
    /// `electd completions bash > /etc/bash_completion.d/electd`;
    /// zsh: into a directory of `$fpath` as `_electd`; fish:
    /// `~/.config/fish/completions/electd.fish`.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command into this directory (`electd.1`, `electd-run.1`, …)
    /// instead of printing the main page (which lists every subcommand) to stdout.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "electd", &mut std::io::stdout());
    Ok(())
}

pub fn man(args: ManArgs) -> anyhow::Result<()> {
    let cmd = super::Cli::command();
    match args.out_dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::stdout().write_all(&out)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .map_err(|e| anyhow::anyhow!("cannot write pages into {}: {e}", dir.display()))?;
            eprintln!("manual pages written to {}", dir.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Cli;
    use clap::CommandFactory;

    /// Every option and positional of every subcommand has a help text: `--help`, the
    /// completions' descriptions and the man page all show it.
    #[test]
    fn every_option_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} --{id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&cmd, "electd", &mut missing);
        assert!(missing.is_empty(), "without help: {missing:?}");
    }

    /// Enum-like options list their values (and so `--help`, completion and typo
    /// suggestions know them).
    #[test]
    fn enum_options_have_possible_values() {
        let cmd = Cli::command();
        let values = |sub: &str, arg: &str| -> Vec<String> {
            let s = cmd.find_subcommand(sub).unwrap();
            let a = s.get_arguments().find(|a| a.get_id() == arg).unwrap();
            a.get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect()
        };
        let algorithms: Vec<String> = electd::contract::algorithm::AlgorithmKind::ALL
            .iter()
            .map(|k| k.as_str().to_string())
            .collect();
        assert_eq!(values("simulate", "algorithm"), algorithms);
        assert_eq!(values("compare", "algorithms"), algorithms);
        assert_eq!(values("chaos", "algorithms"), algorithms);
        assert_eq!(
            values("simulate", "scenario"),
            ["startup", "leader-crash", "chaos"]
        );
        assert_eq!(
            values("simulate", "ring_order"),
            ["ascending", "descending", "random"]
        );
        assert_eq!(values("simulate", "faults"), ["basic", "full"]);
        assert_eq!(values("simulate", "format"), ["table", "json", "csv"]);
        assert_eq!(values("status", "format"), ["table", "json"]);
        assert_eq!(values("watch", "format"), ["text", "json"]);
        // Every value parses back to the library's own name for it.
        for k in electd::contract::algorithm::AlgorithmKind::ALL {
            let parsed: electd::contract::algorithm::AlgorithmKind = k.as_str().parse().unwrap();
            assert_eq!(parsed, k);
        }
    }
}
