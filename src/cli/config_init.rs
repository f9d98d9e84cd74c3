//! `electd config init`: write a complete, commented cluster configuration for N hosts
//! (see [`electd::config::template`]). An existing file is never overwritten without
//! `--force`; the file is checked with [`Config::parse`] for node 1 before it is
//! written, so what is written always loads.

use anyhow::{bail, Context};
use electd::config::template::{Hosts, KeyChoice, Template};
use electd::config::Config;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Write a complete, commented configuration for a cluster of N hosts.
    Init(InitArgs),
    /// Check a configuration as `electd run` would load it (every rule: timing
    /// relations, addresses, files, key, token, ELECTD_* overrides), without binding
    /// anything. Exit 0 if `run` would start (warnings on stderr), 1 with the file and
    /// key named if not. Without --node-id (and no node_id in the file or environment),
    /// every node of the roster is checked.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The cluster's TOML file.
    #[arg(long, short, env = "ELECTD_CONFIG")]
    pub config: PathBuf,
    /// Check as this node (overrides ELECTD_NODE_ID and node_id in the file).
    #[arg(long)]
    pub node_id: Option<electd::NodeId>,
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Number of nodes (ids 1..=N), 1 to 1000.
    #[arg(long, value_parser = clap::builder::ValueParser::new(clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=1000), usize::from)))]
    pub nodes: usize,
    /// Algorithms to run side by side (comma-separated; default: every available one).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub algorithms: Vec<super::AlgorithmArg>,
    /// Address of node 1; node k gets the (k-1)-th next IPv4 address.
    #[arg(long, conflicts_with = "hosts", default_value = "10.0.0.1")]
    pub base_addr: Ipv4Addr,
    /// One host (IP or DNS name) per node, comma-separated, in node id order.
    #[arg(long, value_delimiter = ',')]
    pub hosts: Option<Vec<String>>,
    /// UDP port of every node's election datagrams (`addr`).
    #[arg(long, default_value_t = 5740, value_parser = clap::value_parser!(u16).range(1..))]
    pub udp_port: u16,
    /// TCP port of every node's HTTP API and /metrics (`http`).
    #[arg(long, default_value_t = 5741, value_parser = clap::value_parser!(u16).range(1..))]
    pub http_port: u16,
    /// Cluster name (datagrams of another cluster are dropped).
    #[arg(long, default_value = "electd")]
    pub cluster: String,
    /// Key file named in [security] (relative to the config file; default `electd.key`).
    /// With --out it is created beside the written file if missing; on standard output
    /// nothing but the text is written (a note on stderr says how to create the key).
    #[arg(long, conflicts_with = "insecure")]
    pub key_file: Option<String>,
    /// No authentication (test networks only).
    #[arg(long)]
    pub insecure: bool,
    /// Multicast group:port for broadcasts (default: commented out, unicast).
    #[arg(long)]
    pub multicast: Option<SocketAddr>,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Overwrite --out if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: ConfigArgs) -> anyhow::Result<()> {
    match args.command {
        ConfigCommand::Init(a) => init(a),
        ConfigCommand::Check(a) => check(a),
    }
}

/// `config check`: [`Config::load`] exactly as `run` calls it, for one node or for
/// every node of the roster.
fn check(a: CheckArgs) -> anyhow::Result<()> {
    // Tracing on stderr: loading logs roster names that do not resolve yet.
    super::init_tracing();
    let env: Vec<(String, String)> = std::env::vars().collect();
    let (roster, node_given) = Config::roster(&a.config, env.clone())?;
    let ids: Vec<Option<electd::NodeId>> = if a.node_id.is_some() || node_given || roster.is_empty()
    {
        // No roster: load it as `run` would, for the error `run` would give.
        vec![a.node_id]
    } else {
        roster.into_iter().map(Some).collect()
    };
    let every = ids.len() > 1;
    let mut warned = std::collections::BTreeSet::new();
    let mut warn = |w: String| {
        if warned.insert(w.clone()) {
            eprintln!("electd: warning: {w}");
        }
    };
    let mut checked = Vec::new();
    let mut to_create = std::collections::BTreeSet::new();
    for id in ids {
        // Said once for every node (the same note of each node was printed per node).
        let here = |id: Option<electd::NodeId>| match (every, id) {
            (false, Some(id)) => format!("here; node {id} checks it again when it starts"),
            _ => "here; each node checks it again when it starts".to_string(),
        };
        // Checking every node from one machine: what depends on the machine (a node's
        // own host name, its state directory, a check's program) is checked here as a
        // fact of this machine only; each node checks it again where it runs.
        let loaded = if every {
            Config::load_elsewhere(&a.config, env.clone(), id)
        } else {
            Config::load(&a.config, env.clone(), id).map(|c| (c, Vec::new()))
        };
        let (c, notes) = match loaded {
            Ok(c) => c,
            Err(e) if every && e.message.contains("does not resolve") => {
                warn(format!("{e} ({})", here(id)));
                checked.push(id.unwrap_or_default());
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // A state file already here is read as `run` reads it (run refuses one it
        // cannot read: garbage, an empty file, a term too large).
        if let Some(path) = c.raft_state_file.as_ref().filter(|p| p.is_file()) {
            electd::daemon::durable::load(path).map_err(|e| {
                anyhow::anyhow!(
                    "node {}: state.file: {e} (`electd run` refuses it)",
                    c.node_id
                )
            })?;
        }
        checked.push(c.node_id);
        for n in notes {
            warn(format!("{n} ({})", here(id)));
        }
        for w in c.warnings() {
            warn(w);
        }
        to_create.extend(c.state_dir_to_create);
    }
    for dir in to_create {
        eprintln!(
            "electd: note: the state directory {} does not exist yet: `electd run` creates it \
             (mode 0700)",
            dir.display()
        );
    }
    let which = match checked.as_slice() {
        [one] => format!("node {one}"),
        many => format!("every node ({} of them)", many.len()),
    };
    println!("{}: ok for {which}", a.config.display());
    Ok(())
}

fn init(a: InitArgs) -> anyhow::Result<()> {
    if let Some(hosts) = &a.hosts {
        if let Some(i) = hosts.iter().position(|h| h.trim().is_empty()) {
            bail!(
                "--hosts: entry {} of {} is empty: give one host (IP or DNS name) per node, \
                 comma-separated",
                i + 1,
                hosts.len()
            );
        }
    }
    let key = if a.insecure {
        KeyChoice::Insecure
    } else {
        KeyChoice::KeyFile(a.key_file.clone().unwrap_or_else(|| "electd.key".into()))
    };
    let t = Template {
        nodes: a.nodes,
        cluster: a.cluster,
        algorithms: super::algorithms_or_all(&a.algorithms)?,
        hosts: match a.hosts {
            Some(h) => Hosts::List(h.into_iter().map(|s| s.trim().to_string()).collect()),
            None => Hosts::Base(a.base_addr),
        },
        udp_port: a.udp_port,
        http_port: a.http_port,
        key,
        multicast: a.multicast,
    };
    let text = t.render()?;
    // Self-check: the text must load, as `config check` loads it from a machine that is
    // not a node (the key file is not read here: it may not exist yet; the state
    // directory and host names are facts of the nodes).
    let check = text.replace("\nkey_file = ", "\ninsecure = true\n# key_file = ");
    let check = if a.insecure { text.clone() } else { check };
    if let Err(e) = Config::parse_elsewhere(
        &check,
        Path::new("<generated>"),
        Path::new("."),
        Vec::new(),
        Some(1),
    ) {
        // Only the own-address check of a host name that does not resolve here may fail.
        if e.key.ends_with(".addr") && e.message.contains("address family") {
            bail!("these hosts do not make a working cluster: {e}");
        }
        if !e.message.contains("resolve") {
            bail!("these options do not make a configuration that loads: {e}");
        }
    }
    let key_file = match &t.key {
        KeyChoice::KeyFile(k) => Some(k.clone()),
        KeyChoice::Insecure => None,
    };
    let Some(out) = a.out else {
        print!("{text}");
        // Nothing but the text was written: say what the file still needs.
        if let Some(k) = key_file {
            eprintln!(
                "electd: note: this configuration names the key file {k:?} (relative to the \
                 configuration file), which was not created: run `electd keygen --out {k}` \
                 where you save the file, and copy both to every node (`config init --out \
                 FILE` does this for you)"
            );
        }
        return Ok(());
    };
    if out.exists() && !a.force {
        bail!(
            "{} exists: not overwritten (use --force to replace it)",
            out.display()
        );
    }
    // The key first (relative to the written file, as the loader resolves it): an
    // existing one must be a key file, and nothing is written when it is not, or when
    // a new one cannot be written.
    let key = key_file.as_ref().map(|k| {
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
        dir.unwrap_or(Path::new(".")).join(k)
    });
    if let Some(key) = key.as_ref().filter(|k| k.exists()) {
        electd::security::keyring::Keyring::load(key).map_err(|e| {
            anyhow::anyhow!(
                "{} exists but is not a usable key file ({e}): move it away, or name another \
                 with --key-file",
                key.display()
            )
        })?;
    }
    // Beside it under a name of this process's; gone again if anything fails.
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| -> anyhow::Result<bool> {
        {
            let mut f = std::fs::File::create(&tmp)
                .with_context(|| format!("cannot create {}", tmp.display()))?;
            f.write_all(text.as_bytes())
                .and_then(|_| f.sync_all())
                .with_context(|| format!("cannot write {}", tmp.display()))?;
        }
        let mut new_key = false;
        if let Some(key) = key.as_ref().filter(|k| !k.exists()) {
            electd::security::keyring::write_key_file(key).with_context(|| {
                format!(
                    "cannot write key file {} (create it with `electd keygen --out {}`)",
                    key.display(),
                    key.display()
                )
            })?;
            new_key = true;
        }
        std::fs::rename(&tmp, &out).with_context(|| format!("cannot write {}", out.display()))?;
        Ok(new_key)
    })();
    let new_key = match written {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    eprintln!("wrote {} ({} nodes)", out.display(), a.nodes);
    if let Some(key) = &key {
        if new_key {
            eprintln!(
                "wrote a new cluster key to {} (mode 0600): copy it to every node with the config",
                key.display()
            );
        } else {
            eprintln!("using the existing key {}", key.display());
        }
    }
    eprintln!(
        "check it with: electd config check --config {}",
        out.display()
    );
    eprintln!(
        "start node N with: electd run --config {} --node-id N",
        out.display()
    );
    Ok(())
}
