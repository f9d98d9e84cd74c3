//! `electd drain`, `electd undrain` and `electd transfer`: the admin API's
//! `POST /admin/drain`, `POST /admin/undrain` and `POST /admin/transfer` from the
//! command line, against the local daemon (`--url`, or
//! `--config` with `--node-id`). The bearer token is read from `--token-file`, else
//! from the cluster file's `[admin] token_file`.
//!
//! The answer is printed per group (who leads now, whether the hand-over is done, and
//! why not); exit 0 when every group is done, 1 otherwise (refused, timed out, or the
//! daemon did not answer), 2 for a usage error (clap).

use super::AlgorithmArg;
use electd::http::client::request;
use electd::NodeId;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct AdminArgs {
    /// Only this algorithm's group (default: every group the node runs; for `transfer`,
    /// every group the node leads).
    #[arg(long, short, value_enum)]
    pub algorithm: Option<AlgorithmArg>,
    /// The local daemon's HTTP address (`http://HOST:PORT` or `HOST:PORT`).
    #[arg(long, conflicts_with = "config", required_unless_present = "config")]
    pub url: Option<String>,
    /// The cluster's TOML file: the daemon's address is the `http` of `--node-id`'s
    /// `[[peer]]`, and its `[admin] token_file` the token (unless `--token-file`).
    #[arg(long, short, env = "ELECTD_CONFIG", requires = "node_id")]
    pub config: Option<PathBuf>,
    /// The node's id (with `--config`).
    #[arg(long, env = "ELECTD_NODE_ID")]
    pub node_id: Option<NodeId>,
    /// File holding the admin bearer token.
    #[arg(long, env = "ELECTD_ADMIN_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// How long the whole request may take, from connecting to the last byte of the
    /// answer (a drain waits for the hand-over).
    #[arg(long, default_value = "10s", value_parser = super::positive_duration_arg)]
    pub timeout: Duration,
    /// Print the daemon's JSON answer instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct TransferArgs {
    /// The roster id of the node to hand the leadership to.
    #[arg(long)]
    pub to: NodeId,
    #[command(flatten)]
    pub admin: AdminArgs,
}

/// `electd transfer`: one group (`--algorithm`), or every group the node leads.
pub fn transfer(args: &TransferArgs) -> ExitCode {
    call(&args.admin, "transfer", &[("to", args.to.to_string())])
}

/// The token: `--token-file`, else the cluster file's `[admin] token_file` (relative
/// to the cluster file), else none (the daemon then answers 401 or 403, and says why).
fn token(args: &AdminArgs) -> anyhow::Result<Option<String>> {
    let file = match (&args.token_file, &args.config) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(config)) => admin_token_file(config)?,
        (None, None) => None,
    };
    let Some(file) = file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| anyhow::anyhow!("cannot read the admin token {}: {e}", file.display()))?;
    let t = text.trim();
    if t.is_empty() {
        anyhow::bail!("the admin token file {} is empty", file.display());
    }
    Ok(Some(t.to_string()))
}

fn admin_token_file(config: &Path) -> anyhow::Result<Option<PathBuf>> {
    let text = std::fs::read_to_string(config)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", config.display()))?;
    let v: toml::Value = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", config.display(), e.to_string().trim_end()))?;
    let Some(f) = v
        .get("admin")
        .and_then(|a| a.get("token_file"))
        .and_then(|f| f.as_str())
    else {
        return Ok(None);
    };
    let p = PathBuf::from(f);
    Ok(Some(if p.is_absolute() {
        p
    } else {
        config.parent().unwrap_or(Path::new(".")).join(p)
    }))
}

/// `POST path` with the admin token; print the answer; exit 0 when it says `done`.
pub fn call(args: &AdminArgs, route: &str, extra: &[(&str, String)]) -> ExitCode {
    match try_call(args, route, extra) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("electd {route}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn try_call(args: &AdminArgs, route: &str, extra: &[(&str, String)]) -> anyhow::Result<ExitCode> {
    let addr =
        super::exec::local_address(args.url.as_deref(), args.config.as_deref(), args.node_id)?;
    let token = token(args)?;
    let mut query: Vec<String> = Vec::new();
    if let Some(a) = &args.algorithm {
        query.push(format!("algorithm={}", a.0.as_str()));
    }
    query.extend(extra.iter().map(|(k, v)| format!("{k}={v}")));
    let path = if query.is_empty() {
        format!("/admin/{route}")
    } else {
        format!("/admin/{route}?{}", query.join("&"))
    };
    let (code, body) = request(
        addr,
        "POST",
        &path,
        token.as_deref(),
        Duration::from_secs(1),
        args.timeout,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let v: Value = serde_json::from_str(&body).map_err(|e| {
        anyhow::anyhow!("{addr} answered {code} with a body that is not JSON ({e}): {body}")
    })?;
    if args.json {
        println!("{v}");
    }
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        anyhow::bail!("{addr} refused ({code}): {err}");
    }
    if !args.json {
        if v.get("groups").is_some() {
            print_groups(&v);
        } else {
            print_transfer(&v);
        }
    }
    let done = v.get("done").and_then(Value::as_bool).unwrap_or(false);
    Ok(if done && (200..300).contains(&code) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_transfer(v: &Value) {
    let field = |k: &str| match v.get(k) {
        Some(Value::Null) | None => "none".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    };
    let done = v.get("done").and_then(Value::as_bool).unwrap_or(false);
    println!(
        "{} {}: leader {} term {}{}",
        field("algorithm"),
        if done {
            "transferred"
        } else {
            "NOT transferred"
        },
        field("leader"),
        field("term"),
        v.get("why")
            .and_then(Value::as_str)
            .map(|w| format!(" ({w})"))
            .unwrap_or_default()
    );
}

fn print_groups(v: &Value) {
    let node = v.get("node").and_then(Value::as_u64).unwrap_or(0);
    let groups = v.get("groups").and_then(Value::as_array);
    for g in groups.into_iter().flatten() {
        let alg = g.get("algorithm").and_then(Value::as_str).unwrap_or("?");
        let leader = g
            .get("leader")
            .and_then(Value::as_u64)
            .map_or("none".to_string(), |l| l.to_string());
        let term = g.get("term").and_then(Value::as_u64).unwrap_or(0);
        let done = g.get("done").and_then(Value::as_bool).unwrap_or(false);
        let why = g.get("why").and_then(Value::as_str).unwrap_or("");
        let verdict = if done { "done" } else { "NOT DONE" };
        println!("node {node} {alg:<15} leader {leader:<5} term {term:<6} {verdict} {why}");
    }
}
