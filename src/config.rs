//! The configuration of `electd run`: one TOML file holds the roster and the settings
//! of the whole cluster, so the same file is copied to every node; each node picks its
//! own entry with `node_id` (or `--node-id`, or `ELECTD_NODE_ID`).
//!
//! ```toml
//! cluster = "prod-eu"                 # datagrams of another cluster are dropped
//! node_id = 1                         # usually given by --node-id instead
//! algorithms = ["bully", "raft"]      # each runs as an independent group
//!
//! [timing]
//! heartbeat = "10ms"                  # leader beacon period; below failure_timeout
//! failure_timeout = "100ms"           # silence after which the leader is lost
//! answer_timeout = "20ms"             # Bully T: above one retransmission (transport.retransmit)
//! coordinator_timeout = "60ms"        # Bully T': above answer_timeout
//! election_timeout = "150ms..300ms"   # Raft; one value V means V..2V; above heartbeat
//!
//! [transport]
//! retransmit = "5ms"                  # retransmission timeout before a round trip is measured
//! # rto_min = "5ms"                   # floor of the measured timeout (default: retransmit)
//! # rto_max = "40ms"                  # ceiling, backoff included (default: max(8 x retransmit,
//! #                                   # failure_timeout / 8))
//! # give_up = "75ms"                  # unacked this long: peer unreachable (default: 3/4 x
//! #                                   # failure_timeout; below failure_timeout)
//! # max_attempts = 4                  # optional cap on sends per message (legacy)
//! # multicast = "239.255.70.1:5740"   # broadcasts as one datagram to this group
//! resolve_every = "30s"               # re-resolve DNS names of peers (and when unreachable)
//!
//! [security]
//! key_file = "electd.key"             # from `electd keygen`; relative to this file
//! # insecure = true                   # explicit opt-out: no authentication at all
//! # check_source = true               # drop datagrams whose UDP source is not the
//!                                     # sender's roster address (default true)
//!
//! [hooks]
//! # on_leader_change = "/usr/local/bin/on-leader"
//! # hook_timeout = "5s"
//!
//! [admin]
//! # token_file = "admin.token"        # bearer token of the /admin/* routes
//!
//! [raft]
//! pre_vote = true
//! check_quorum = true
//! ranked_timeouts = true
//!
//! [state]
//! file = "/var/lib/electd/{node}.state" # every group's fencing token (and Raft's vote)
//! #                                   # survive restarts; {node}: this node's id.
//! #                                   # Required with raft ([raft] state_file is the
//! #                                   # older spelling)
//! # ephemeral = true                  # or: run without, knowingly
//!
//! [[peer]]
//! id = 1
//! addr = "10.0.0.1:5740"              # UDP address (or "host:port") of the node (it binds it…)
//! http = "10.0.0.1:5741"              # HTTP API (/metrics, /status, …)
//! # listen = "0.0.0.0:5740"           # …unless listen overrides the bind address
//! ```
//!
//! # Environment overrides
//! Every scalar key can be overridden by `ELECTD_<SECTION>_<KEY>` in upper case, or
//! `ELECTD_<KEY>` for top-level keys: `ELECTD_NODE_ID=3`, `ELECTD_CLUSTER=test`,
//! `ELECTD_ALGORITHMS=bully,raft` (comma-separated), `ELECTD_TIMING_HEARTBEAT=20ms`,
//! `ELECTD_TRANSPORT_MAX_ATTEMPTS=6`, `ELECTD_SECURITY_KEY_FILE=/run/key`,
//! `ELECTD_SECURITY_INSECURE=true`, `ELECTD_SECURITY_CHECK_SOURCE=false`, `ELECTD_HOOKS_ON_LEADER_CHANGE=…`,
//! `ELECTD_ADMIN_TOKEN_FILE=…`, `ELECTD_RAFT_PRE_VOTE=false`, `ELECTD_STATE_FILE=…`. The roster (`[[peer]]`)
//! has no overrides. `--node-id` beats the environment, which beats the file.
//! Booleans take `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0` in any case; a variable
//! set to the empty string is an error (unset it instead); an error in a value from the
//! environment names the variable, not the file.
//! `ELECTD_LOG` (log filter), `ELECTD_LOG_FORMAT` (`text` or `json`) and `ELECTD_CONFIG`
//! are not configuration keys; any other unknown `ELECTD_*` variable is an error, so a
//! typo is never silently ignored.
//!
//! # Errors
//! Every error names the file, the key (or environment variable) and what is wrong; a
//! TOML syntax error names the line and column. Beyond the timing relations, the rules
//! include: no port 0; every peer reachable from this node's bind address by address
//! family; a one-line admin token; a Raft state file whose directory exists and is
//! writable. [`Config::warnings`] lists what loads but deserves a warning.

use crate::algorithm::{AlgorithmKind, Options, Timing};
use crate::keyring::Keyring;
use crate::node::link::LinkConfig;
use crate::NodeId;
use serde::Deserialize;
use std::collections::HashSet;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A configuration error: where and what.
///
/// Shown as `FILE: KEY: MESSAGE`; as `FILE:LINE:COLUMN: MESSAGE` for a TOML syntax
/// error; and as `VARIABLE (environment, overriding KEY of FILE): MESSAGE` when the
/// offending value came from an `ELECTD_*` variable, so the error blames what the
/// operator has to change.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    pub file: PathBuf,
    /// The key (`timing.heartbeat`, `peer[2].addr`, `ELECTD_NODE_ID`, …), or `-` for
    /// the whole file.
    pub key: String,
    pub message: String,
    /// The environment variable that set `key`, when the value came from one.
    pub var: Option<String>,
    /// Line and column (1-based) of a TOML syntax error.
    pub at: Option<(usize, usize)>,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = self.file.display();
        match (&self.var, self.at) {
            (Some(var), _) if *var == self.key => {
                write!(f, "{var} (environment): {}", self.message)
            }
            (Some(var), _) => write!(
                f,
                "{var} (environment, overriding {} of {file}): {}",
                self.key, self.message
            ),
            (None, Some((line, col))) => write!(f, "{file}:{line}:{col}: {}", self.message),
            (None, None) => write!(f, "{file}: {}: {}", self.key, self.message),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    cluster: Option<String>,
    node_id: Option<i64>,
    algorithms: Option<Vec<String>>,
    #[serde(default)]
    timing: RawTiming,
    #[serde(default)]
    transport: RawTransport,
    #[serde(default)]
    security: RawSecurity,
    #[serde(default)]
    hooks: RawHooks,
    #[serde(default)]
    admin: RawAdmin,
    #[serde(default)]
    raft: RawRaft,
    #[serde(default)]
    lease: RawLease,
    #[serde(default)]
    state: RawState,
    #[serde(default)]
    peer: Vec<RawPeer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    file: Option<String>,
    ephemeral: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    heartbeat: Option<String>,
    failure_timeout: Option<String>,
    answer_timeout: Option<String>,
    coordinator_timeout: Option<String>,
    election_timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransport {
    retransmit: Option<String>,
    rto_min: Option<String>,
    rto_max: Option<String>,
    give_up: Option<String>,
    max_attempts: Option<i64>,
    multicast: Option<String>,
    resolve_every: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecurity {
    key_file: Option<PathBuf>,
    insecure: Option<bool>,
    check_source: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHooks {
    on_leader_change: Option<String>,
    hook_timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdmin {
    token_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRaft {
    pre_vote: Option<bool>,
    check_quorum: Option<bool>,
    ranked_timeouts: Option<bool>,
    state_file: Option<String>,
}

/// `[lease]`, with `[lease.<algorithm>]` overrides of the same keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLease {
    require_quorum: Option<bool>,
    clock_drift: Option<String>,
    bully: Option<RawLeaseOf>,
    #[serde(rename = "improved-bully")]
    improved_bully: Option<RawLeaseOf>,
    ring: Option<RawLeaseOf>,
    lcr: Option<RawLeaseOf>,
    hs: Option<RawLeaseOf>,
    raft: Option<RawLeaseOf>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLeaseOf {
    require_quorum: Option<bool>,
    clock_drift: Option<String>,
}

impl RawLease {
    fn of(&self, kind: AlgorithmKind) -> Option<&RawLeaseOf> {
        match kind {
            AlgorithmKind::Bully => self.bully.as_ref(),
            AlgorithmKind::ImprovedBully => self.improved_bully.as_ref(),
            AlgorithmKind::Ring => self.ring.as_ref(),
            AlgorithmKind::Lcr => self.lcr.as_ref(),
            AlgorithmKind::Hs => self.hs.as_ref(),
            AlgorithmKind::Raft => self.raft.as_ref(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeer {
    id: i64,
    addr: String,
    http: String,
    listen: Option<String>,
}

/// One roster entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub id: NodeId,
    /// UDP address the others send to, as resolved when the file was loaded. For a DNS
    /// name that did not resolve (yet) it is the unspecified address with the port
    /// ([`Peer::resolved`] is `None`); the runtime keeps resolving [`Peer::name`].
    pub addr: SocketAddr,
    /// `host:port` as written, when the address is a DNS name (re-resolved by the
    /// runtime every `transport.resolve_every` and when the peer is unreachable).
    pub name: Option<String>,
    /// HTTP API address.
    pub http: SocketAddr,
    /// Bind address if not `addr` (e.g. `0.0.0.0:5740` behind NAT).
    pub listen: Option<SocketAddr>,
    /// Every address `addr` resolved to at load (one for an IP literal, all of a DNS
    /// name's, none for a name that does not resolve yet): the UDP sources accepted
    /// from this peer with `check_source`.
    pub sources: Vec<SocketAddr>,
}

impl Peer {
    /// The UDP address this node binds.
    pub fn bind_addr(&self) -> SocketAddr {
        self.listen.unwrap_or(self.addr)
    }

    /// The UDP address, unless it is a name that did not resolve.
    pub fn resolved(&self) -> Option<SocketAddr> {
        (!self.addr.ip().is_unspecified() || self.name.is_none()).then_some(self.addr)
    }
}

/// How datagrams are authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Security {
    Keyring(Keyring),
    /// `insecure = true`: no tags are made or checked.
    Insecure,
}

/// Leader-change hook settings (run by the hooks module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hooks {
    pub on_leader_change: Option<String>,
    pub hook_timeout: Duration,
}

/// A validated configuration (see the module documentation).
#[derive(Clone, Debug)]
pub struct Config {
    /// The file it came from (for messages).
    pub file: PathBuf,
    pub cluster: String,
    pub node_id: NodeId,
    pub algorithms: Vec<AlgorithmKind>,
    pub timing: Timing,
    pub link: LinkConfig,
    /// Multicast group for broadcasts (see `daemon::runtime`), `None` for unicast.
    pub multicast: Option<SocketAddr>,
    /// Period of DNS re-resolution of peer names (`transport.resolve_every`, 30 s).
    pub resolve_every: Duration,
    pub security: Security,
    /// The key file (absolute), to re-read on `SIGHUP`; `None` when insecure.
    pub key_file: Option<PathBuf>,
    /// `[security] check_source` (default true): see [`crate::gate`].
    pub check_source: bool,
    pub hooks: Hooks,
    /// Bearer token of the admin routes (trimmed content of `admin.token_file`).
    pub admin_token: Option<String>,
    /// `admin.token_file` (absolute), for the permission warning.
    pub admin_token_file: Option<PathBuf>,
    pub options: Options,
    /// `[state] file`: where every algorithm's fencing token (and Raft's vote) is kept
    /// across restarts (`{node}` substituted).
    pub raft_state_file: Option<PathBuf>,
    /// `[state] ephemeral = true`: run without durable state, knowingly.
    pub ephemeral: bool,
    /// The roster in file order (which is also the logical ring order).
    pub peers: Vec<Peer>,
}

impl Config {
    /// This node's roster entry.
    pub fn me(&self) -> &Peer {
        self.peer(self.node_id)
            .expect("validated: node_id is in the roster")
    }

    pub fn peer(&self, id: NodeId) -> Option<&Peer> {
        self.peers.iter().find(|p| p.id == id)
    }

    /// Roster ids in ring order.
    pub fn ring(&self) -> Vec<NodeId> {
        self.peers.iter().map(|p| p.id).collect()
    }

    /// What `run` and `config check` warn about in a configuration that loads: settings
    /// that work but that a careful operator would not choose.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.ephemeral {
            out.push(
                "[state] ephemeral = true: fencing tokens (and raft's term and vote) are lost on \
                 restart; a restarted node learns the current token from its peers, but a \
                 restarted raft node may vote twice in one term"
                    .to_string(),
            );
        } else if self.raft_state_file.is_none() {
            out.push(
                "no [state] file: the fencing tokens are lost on restart (a restarted node learns \
                 the current one from its peers); set [state] file to keep them"
                    .to_string(),
            );
        }
        if let Some(w) = self
            .key_file
            .as_deref()
            .and_then(crate::keyring::permission_warning)
        {
            out.push(w);
        }
        if let Some(path) = &self.admin_token_file {
            if let Some(mode) = group_or_world_access(path) {
                out.push(format!(
                    "admin token file {} has mode {mode:04o}: other users may read the admin \
                     token; run `chmod 600 {}`",
                    path.display(),
                    path.display()
                ));
            }
        }
        if matches!(self.security, Security::Insecure) {
            out.push(
                "security.insecure = true: datagrams are neither authenticated nor checked for \
                 replay (test networks only)"
                    .to_string(),
            );
        }
        out
    }

    /// The roster's ids, and whether `node_id` is set in the file or the environment,
    /// without validating the rest (`config check` checks every node when none is
    /// given). Errors are those of reading, TOML, `ELECTD_*` and unknown keys.
    pub fn roster(
        path: &Path,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(Vec<NodeId>, bool), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: "-".into(),
            message: format!("cannot read: {e}"),
            var: None,
            at: None,
        })?;
        let (raw, _) = raw_config(&text, path, Path::new("."), env)?;
        let ids = raw
            .peer
            .iter()
            .filter_map(|p| NodeId::try_from(p.id).ok())
            .collect();
        Ok((ids, raw.node_id.is_some()))
    }

    /// Read `path`, apply `env` overrides (`ELECTD_*` pairs; pass `std::env::vars()`)
    /// and `node_id` (from `--node-id`), validate, and load the key and token files.
    pub fn load(
        path: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        node_id: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: "-".into(),
            message: format!("cannot read: {e}"),
            var: None,
            at: None,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::parse(&text, path, base, env, node_id)
    }

    /// Like [`Config::load`] on `text`; relative paths are resolved against `base`.
    pub fn parse(
        text: &str,
        file: &Path,
        base: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        node_id: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let (raw, v) = raw_config(text, file, base, env)?;
        v.validate(raw, node_id)
    }
}

/// Parse `text`, apply the environment and deserialize; the validator that names
/// keys (and the variables that set them) in errors.
fn raw_config<'a>(
    text: &str,
    file: &'a Path,
    base: &'a Path,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(RawConfig, Validator<'a>), ConfigError> {
    {
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
            file: file.to_path_buf(),
            key: "-".into(),
            message: format!("not valid TOML: {}", e.message().trim()),
            var: None,
            at: e.span().map(|span| line_column(text, span.start)),
        })?;
        let from_env = apply_env(&mut table, env).map_err(|(var, message)| ConfigError {
            file: file.to_path_buf(),
            key: var.clone(),
            message,
            var: Some(var),
            at: None,
        })?;
        let v = Validator {
            file,
            base,
            from_env,
        };
        // The path of the offending key (e.g. `security.check_source`, `peer.2.id`)
        // names it in the error; unknown keys and missing tables stay at `-`.
        let raw: RawConfig =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                let key = if path == "." { "-".to_string() } else { path };
                v.err(key, e.into_inner().message().trim().to_string())
            })?;
        Ok((raw, v))
    }
}

const SECTIONS: [(&str, &[&str]); 8] = [
    (
        "timing",
        &[
            "heartbeat",
            "failure_timeout",
            "answer_timeout",
            "coordinator_timeout",
            "election_timeout",
        ],
    ),
    (
        "transport",
        &[
            "retransmit",
            "rto_min",
            "rto_max",
            "give_up",
            "max_attempts",
            "multicast",
            "resolve_every",
        ],
    ),
    ("security", &["key_file", "insecure", "check_source"]),
    ("hooks", &["on_leader_change", "hook_timeout"]),
    ("admin", &["token_file"]),
    (
        "raft",
        &["pre_vote", "check_quorum", "ranked_timeouts", "state_file"],
    ),
    ("state", &["file", "ephemeral"]),
    ("lease", &["require_quorum", "clock_drift"]),
];
const TOP: [&str; 3] = ["cluster", "node_id", "algorithms"];
const NOT_CONFIG: [&str; 3] = ["ELECTD_LOG", "ELECTD_LOG_FORMAT", "ELECTD_CONFIG"];

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Apply `ELECTD_*` overrides to the parsed table. Returns the configuration keys set
/// (`node_id`, `timing.heartbeat`, …) with the variable that set each; errors are
/// (variable, message).
fn apply_env(
    table: &mut toml::Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<std::collections::HashMap<String, String>, (String, String)> {
    let mut from_env = std::collections::HashMap::new();
    let mut vars: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with("ELECTD_") && !NOT_CONFIG.contains(&k.as_str()))
        .collect();
    vars.sort();
    for (var, value) in vars {
        let name = var["ELECTD_".len()..].to_ascii_lowercase();
        let (section, key) =
            match SECTIONS.iter().find_map(|(s, keys)| {
                let rest = name.strip_prefix(s)?.strip_prefix('_')?;
                keys.contains(&rest).then_some((Some(*s), rest.to_string()))
            }) {
                Some(found) => found,
                None if TOP.contains(&name.as_str()) => (None, name.clone()),
                None => return Err((
                    var,
                    "unknown electd variable (see the config documentation for the ELECTD_* names)"
                        .into(),
                )),
            };
        if value.trim().is_empty() {
            return Err((
                var,
                "is set but empty: unset it to keep the file's value, or give a value".into(),
            ));
        }
        let v = env_value(&key, &value).map_err(|m| (var.clone(), m))?;
        let path = match section {
            None => key.clone(),
            Some(s) => format!("{s}.{key}"),
        };
        from_env.insert(path, var.clone());
        match section {
            None => {
                table.insert(key, v);
            }
            Some(s) => {
                let entry = table
                    .entry(s.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                let Some(t) = entry.as_table_mut() else {
                    return Err((var, format!("[{s}] in the file is not a table")));
                };
                t.insert(key, v);
            }
        }
    }
    Ok(from_env)
}

/// The TOML value of an environment override: integers and booleans by key (a value
/// of the wrong type is an error naming the variable), lists comma-separated,
/// everything else a string. Booleans: `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`,
/// in any case.
fn env_value(key: &str, value: &str) -> Result<toml::Value, String> {
    Ok(match key {
        "node_id" | "max_attempts" => value
            .trim()
            .parse::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| format!("{:?} is not an integer", value.trim()))?,
        "insecure" | "check_source" | "pre_vote" | "check_quorum" | "ranked_timeouts"
        | "ephemeral" | "require_quorum" => match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
            "false" | "0" | "no" | "off" => toml::Value::Boolean(false),
            _ => {
                return Err(format!(
                    "{:?} is not a boolean (true/false, yes/no, on/off, 1/0)",
                    value.trim()
                ))
            }
        },
        "algorithms" => toml::Value::Array(
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.into()))
                .collect(),
        ),
        _ => toml::Value::String(value.into()),
    })
}

struct Validator<'a> {
    file: &'a Path,
    base: &'a Path,
    /// Keys set by `ELECTD_*` variables, with the variable.
    from_env: std::collections::HashMap<String, String>,
}

impl Validator<'_> {
    fn err(&self, key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        let key = key.into();
        ConfigError {
            file: self.file.to_path_buf(),
            var: self.from_env.get(&key).cloned(),
            key,
            message: message.into(),
            at: None,
        }
    }

    /// `[lease]` resolved per algorithm (`[lease.<algorithm>]` over `[lease]`).
    fn lease(
        &self,
        raw: &RawLease,
        algorithms: &[AlgorithmKind],
    ) -> Result<crate::algorithm::LeaseOptions, ConfigError> {
        let mut out = crate::algorithm::LeaseOptions::default();
        for &kind in AlgorithmKind::ALL.iter() {
            let own = raw.of(kind);
            if own.is_some() && !algorithms.contains(&kind) {
                return Err(self.err(
                    format!("lease.{kind}"),
                    format!("{kind} is not in `algorithms`"),
                ));
            }
            if !algorithms.contains(&kind) {
                continue;
            }
            let quorum = own
                .and_then(|o| o.require_quorum)
                .or(raw.require_quorum)
                .unwrap_or(false);
            if quorum && kind != AlgorithmKind::Raft {
                out.require_quorum.push(kind);
            }
            let (key, drift) = match own.and_then(|o| o.clock_drift.clone()) {
                Some(d) => (format!("lease.{kind}.clock_drift"), Some(d)),
                None => ("lease.clock_drift".to_string(), raw.clock_drift.clone()),
            };
            if let Some(d) = drift {
                let d = humantime::parse_duration(d.trim()).map_err(|e| {
                    self.err(&key, format!("{d:?} is not a duration like \"10ms\" ({e})"))
                })?;
                out.clock_drift.push((kind, d));
            }
        }
        Ok(out)
    }

    fn duration(
        &self,
        key: &str,
        v: &Option<String>,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let Some(s) = v else { return Ok(default) };
        let d = humantime::parse_duration(s.trim())
            .map_err(|e| self.err(key, format!("{s:?} is not a duration like \"100ms\" ({e})")))?;
        if d.is_zero() {
            return Err(self.err(key, "must be above zero"));
        }
        Ok(d)
    }

    fn addr(&self, key: &str, s: &str) -> Result<SocketAddr, ConfigError> {
        let a = self.addrs(key, s)?[0];
        if a.port() == 0 {
            return Err(self.err(key, port_zero(s)));
        }
        Ok(a)
    }

    /// Every address `s` stands for (non-empty): itself, or what the name resolves to.
    fn addrs(&self, key: &str, s: &str) -> Result<Vec<SocketAddr>, ConfigError> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(vec![a]);
        }
        let found: Vec<SocketAddr> = s
            .to_socket_addrs()
            .map_err(|e| {
                self.err(
                    key,
                    format!("{s:?} is not an address like \"10.0.0.1:5740\" ({e})"),
                )
            })?
            .collect();
        if found.is_empty() {
            return Err(self.err(key, format!("{s:?} resolves to no address")));
        }
        Ok(found)
    }

    /// A roster address: an IP literal, or `host:port` with a DNS name. A name that
    /// does not resolve (yet) is not an error: it comes back as the unspecified
    /// address with the port, and the runtime keeps resolving it.
    /// `own`: this node's entry, whose unresolved names are errors reported by the
    /// caller (no "will be retried" warning first).
    fn peer_addr(
        &self,
        key: &str,
        s: &str,
        own: bool,
    ) -> Result<(SocketAddr, Option<String>), ConfigError> {
        let s = s.trim();
        if let Ok(a) = s.parse::<SocketAddr>() {
            if a.port() == 0 {
                return Err(self.err(key, port_zero(s)));
            }
            return Ok((a, None));
        }
        let bad = || {
            self.err(
                key,
                format!("{s:?} is not an address like \"10.0.0.1:5740\" or \"host.example:5740\""),
            )
        };
        let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(self.err(key, port_zero(s)));
        }
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
        if !host_ok {
            return Err(bad());
        }
        match (host, port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(a)) => Ok((a, Some(s.to_string()))),
            Ok(None) | Err(_) => {
                if !own {
                    tracing::warn!("{key}: {s} does not resolve yet; it will be retried");
                }
                Ok((
                    SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), port),
                    Some(s.to_string()),
                ))
            }
        }
    }

    /// Every peer must be reachable from the socket this node binds: an IPv4 socket
    /// cannot send to an IPv6 peer, nor a socket bound to one IPv6 address to an IPv4
    /// peer. Only a dual-stack bind (`listen = "[::]:port"`) reaches both, and then
    /// only without `check_source`: this node's datagrams to a peer of the other family
    /// leave from an address of that family, which is not this node's roster address.
    /// Names that do not resolve yet are checked by the runtime when they do.
    fn check_families(
        &self,
        peers: &[Peer],
        node_id: NodeId,
        check_source: bool,
    ) -> Result<(), ConfigError> {
        let Some(me) = peers.iter().find(|p| p.id == node_id) else {
            return Ok(());
        };
        let bind = me.bind_addr();
        let dual = bind.is_ipv6() && bind.ip().is_unspecified();
        if dual && !check_source {
            return Ok(());
        }
        let family = |a: SocketAddr| if a.is_ipv4() { "IPv4" } else { "IPv6" };
        for (i, p) in peers.iter().enumerate() {
            if p.id == node_id {
                continue;
            }
            let candidates: Vec<SocketAddr> = match &p.name {
                None => vec![p.addr],
                Some(_) => p.sources.clone(),
            };
            if candidates.is_empty() {
                continue;
            }
            if dual {
                // check_source: the peer only accepts this node's roster address family.
                let mine = me.resolved().map(|a| a.is_ipv4());
                if mine.is_none() || candidates.iter().any(|a| Some(a.is_ipv4()) == mine) {
                    continue;
                }
                return Err(self.err(
                    format!("peer[{i}].addr"),
                    format!(
                        "{} is {} but this node's address {} is not: its datagrams to peer {} \
                         would leave from an address that peer's source check does not know; \
                         use one address family for the whole roster (or set \
                         security.check_source = false)",
                        candidates[0],
                        family(candidates[0]),
                        me.addr,
                        p.id
                    ),
                ));
            }
            if candidates.iter().any(|a| reachable_from(bind, *a)) {
                continue;
            }
            return Err(self.err(
                format!("peer[{i}].addr"),
                format!(
                    "{} is {} but this node (id {node_id}) binds {bind} ({}): it could never send to \
                     peer {}; use one address family for the whole roster (or bind both with \
                     listen = \"[::]:{}\" and set security.check_source = false)",
                    candidates[0],
                    family(candidates[0]),
                    family(bind),
                    p.id,
                    bind.port()
                ),
            ));
        }
        Ok(())
    }

    /// The state file must be writable where it is: its directory exists and is
    /// writable, and the path is not a directory. (A node that cannot persist its vote
    /// must not take part: better refuse to start than run mute.)
    fn check_state_file(&self, key: &str, path: &Path) -> Result<(), ConfigError> {
        if path.is_dir() {
            return Err(self.err(
                key,
                format!("{} is a directory; name a file in it", path.display()),
            ));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(self.err(
                key,
                format!(
                    "{}: the directory {} does not exist (create it, writable by electd; under systemd the unit's StateDirectory does)",
                    path.display(),
                    dir.display()
                ),
            ));
        }
        if !writable(dir) || (path.exists() && !writable(path)) {
            return Err(self.err(
                key,
                format!(
                    "{}: not writable by this user (the state is rewritten after every vote)",
                    path.display()
                ),
            ));
        }
        Ok(())
    }

    fn path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    fn validate(
        &self,
        raw: RawConfig,
        node_override: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let cluster = raw.cluster.ok_or_else(|| {
            self.err(
                "cluster",
                "missing (a name shared by every node of the cluster)",
            )
        })?;
        if cluster.trim().is_empty() || cluster.len() > 64 {
            return Err(self.err("cluster", "must be 1 to 64 characters"));
        }

        // Roster.
        if raw.peer.is_empty() {
            return Err(self.err("peer", "the roster is empty: add one [[peer]] per node"));
        }
        let node_id = match (node_override, raw.node_id) {
            (Some(n), _) => n,
            (None, Some(n)) => NodeId::try_from(n)
                .ok()
                .filter(|&n| n != 0)
                .ok_or_else(|| self.err("node_id", format!("{n} is not a node id")))?,
            (None, None) => {
                return Err(self.err(
                    "node_id",
                    "not set: give --node-id N, ELECTD_NODE_ID or node_id in the file",
                ))
            }
        };
        let mut peers = Vec::with_capacity(raw.peer.len());
        let mut http_unresolved = Vec::with_capacity(raw.peer.len());
        let (mut ids, mut udp, mut http) = (HashSet::new(), HashSet::new(), HashSet::new());
        for (i, p) in raw.peer.iter().enumerate() {
            let key = |f: &str| format!("peer[{i}].{f}");
            let id = NodeId::try_from(p.id)
                .ok()
                .filter(|&id| id != 0)
                .ok_or_else(|| {
                    self.err(
                        key("id"),
                        format!("{} is not a node id (1 ..= {})", p.id, NodeId::MAX),
                    )
                })?;
            if !ids.insert(id) {
                return Err(self.err(key("id"), format!("node id {id} is listed twice")));
            }
            let own = i64::from(node_id) == p.id;
            let (addr, name) = self.peer_addr(&key("addr"), &p.addr, own)?;
            if !udp.insert(name.clone().unwrap_or_else(|| addr.to_string())) {
                return Err(self.err(
                    key("addr"),
                    format!("{} is already the address of another peer", p.addr.trim()),
                ));
            }
            let (h, http_name) = self.peer_addr(&key("http"), &p.http, own)?;
            http_unresolved.push(http_name.is_some() && h.ip().is_unspecified());
            if !http.insert(http_name.clone().unwrap_or_else(|| h.to_string())) {
                return Err(self.err(
                    key("http"),
                    format!(
                        "{} is already the HTTP address of another peer",
                        p.http.trim()
                    ),
                ));
            }
            let listen = match &p.listen {
                Some(l) => Some(self.addr(&key("listen"), l)?),
                None => None,
            };
            // Every address the entry resolves to now: the sources accepted from this
            // peer with check_source (the runtime adds what later re-resolutions find).
            let sources: Vec<SocketAddr> = match &name {
                None => vec![addr],
                Some(n) => n
                    .to_socket_addrs()
                    .map(|found| found.collect())
                    .unwrap_or_default(),
            };
            peers.push(Peer {
                id,
                addr,
                name,
                http: h,
                listen,
                sources,
            });
        }
        if !ids.contains(&node_id) {
            let mut known: Vec<_> = ids.iter().copied().collect();
            known.sort_unstable();
            return Err(self.err(
                "node_id",
                format!("node {node_id} is not in the roster (peer ids: {known:?})"),
            ));
        }
        // This node binds its own addresses: a name of its own must resolve now.
        if let Some(i) = peers.iter().position(|p| p.id == node_id) {
            let me = &peers[i];
            let unresolved = |a: SocketAddr| a.ip().is_unspecified();
            if me.listen.is_none() && me.name.is_some() && unresolved(me.addr) {
                return Err(self.err(
                    format!("peer[{i}].addr"),
                    format!(
                        "{} (this node's own address) does not resolve: it must, to be bound \
                         (or set listen = \"0.0.0.0:{}\")",
                        raw.peer[i].addr.trim(),
                        me.addr.port()
                    ),
                ));
            }
            if http_unresolved[i] {
                return Err(self.err(
                    format!("peer[{i}].http"),
                    format!(
                        "{} (this node's own HTTP address) does not resolve",
                        raw.peer[i].http.trim()
                    ),
                ));
            }
        }

        self.check_families(&peers, node_id, raw.security.check_source.unwrap_or(true))?;

        // Algorithms.
        let names = raw
            .algorithms
            .ok_or_else(|| self.err("algorithms", "missing, e.g. [\"bully\", \"raft\"]"))?;
        if names.is_empty() {
            return Err(self.err("algorithms", "empty: name at least one algorithm"));
        }
        let mut algorithms = Vec::new();
        for name in &names {
            let k: AlgorithmKind = name
                .parse()
                .map_err(|e| self.err("algorithms", format!("{e}")))?;
            if algorithms.contains(&k) {
                return Err(self.err("algorithms", format!("{k} is listed twice")));
            }
            algorithms.push(k);
        }

        // Timing and transport.
        let d = Timing::default();
        let t = &raw.timing;
        let heartbeat = self.duration("timing.heartbeat", &t.heartbeat, d.heartbeat)?;
        let failure_timeout = self.duration(
            "timing.failure_timeout",
            &t.failure_timeout,
            d.failure_timeout,
        )?;
        let answer_timeout =
            self.duration("timing.answer_timeout", &t.answer_timeout, d.answer_timeout)?;
        let coordinator_timeout = self.duration(
            "timing.coordinator_timeout",
            &t.coordinator_timeout,
            d.coordinator_timeout,
        )?;
        let (election_timeout_min, election_timeout_max) = match &t.election_timeout {
            None => (d.election_timeout_min, d.election_timeout_max),
            Some(s) => self.range("timing.election_timeout", s)?,
        };
        let dl = LinkConfig::for_failure_timeout(failure_timeout);
        let retransmit = self.duration(
            "transport.retransmit",
            &raw.transport.retransmit,
            dl.retransmit,
        )?;
        let max_attempts = match raw.transport.max_attempts {
            None => None,
            Some(n) if (1..=32).contains(&n) => Some(n as u32),
            Some(n) => {
                return Err(self.err("transport.max_attempts", format!("{n} is outside 1 ..= 32")))
            }
        };
        let rto_min = self.duration("transport.rto_min", &raw.transport.rto_min, retransmit)?;
        let rto_max = self.duration(
            "transport.rto_max",
            &raw.transport.rto_max,
            (retransmit * 8).max(failure_timeout / 8),
        )?;
        // Without `give_up`, a legacy `max_attempts` keeps its old meaning: the time of
        // that many sends, `retransmit` doubling (capped at 8×).
        let legacy_give_up = max_attempts.map(|n| {
            (0..n)
                .map(|a| retransmit * (1u32 << a.min(3)))
                .sum::<Duration>()
        });
        let give_up = self.duration(
            "transport.give_up",
            &raw.transport.give_up,
            legacy_give_up.unwrap_or(dl.give_up),
        )?;
        if rto_min.is_zero() || rto_min > rto_max {
            return Err(self.err(
                "transport.rto_min",
                format!(
                    "{} must be above zero and not above transport.rto_max ({})",
                    ms(rto_min),
                    ms(rto_max)
                ),
            ));
        }
        let link = LinkConfig {
            retransmit,
            rto_min,
            rto_max,
            give_up,
            max_attempts,
        };
        if heartbeat >= failure_timeout {
            return Err(self.err(
                "timing.heartbeat",
                format!(
                    "{} is not below timing.failure_timeout ({}): followers would declare a live leader lost",
                    ms(heartbeat),
                    ms(failure_timeout)
                ),
            ));
        }
        if answer_timeout <= retransmit {
            return Err(self.err(
                "timing.answer_timeout",
                format!(
                    "{} is not above transport.retransmit ({}): one lost ELECTION or OK would make a node \
                     win before the retransmission arrives",
                    ms(answer_timeout),
                    ms(retransmit)
                ),
            ));
        }
        // T' must cover the answering node's own election: Improved Bully waits T at the
        // initiator and T again at the cross-check, plus a retransmission.
        let t_prime_min = answer_timeout * 2 + retransmit;
        if coordinator_timeout <= t_prime_min {
            return Err(self.err(
                "timing.coordinator_timeout",
                format!(
                    "{} is not above 2 × timing.answer_timeout + transport.retransmit ({}): T' must leave \
                     the answering node time to finish its own election",
                    ms(coordinator_timeout),
                    ms(t_prime_min)
                ),
            ));
        }
        if give_up >= failure_timeout || give_up <= retransmit {
            return Err(self.err(
                if raw.transport.give_up.is_none() && max_attempts.is_some() {
                    "transport.max_attempts"
                } else {
                    "transport.give_up"
                },
                format!(
                    "the link gives up on a peer after {}, not between transport.retransmit ({}) \
                     and timing.failure_timeout ({}): a dead peer must be declared unreachable \
                     before the failure detector reacts, or ring elections stall on it",
                    ms(give_up),
                    ms(retransmit),
                    ms(failure_timeout)
                ),
            ));
        }
        if election_timeout_min <= heartbeat {
            return Err(self.err(
                "timing.election_timeout",
                format!(
                    "{} is not above timing.heartbeat ({}): Raft followers would time out between heartbeats",
                    ms(election_timeout_min),
                    ms(heartbeat)
                ),
            ));
        }
        let timing = Timing {
            heartbeat,
            failure_timeout,
            answer_timeout,
            coordinator_timeout,
            election_timeout_min,
            election_timeout_max,
        };
        let resolve_every = self.duration(
            "transport.resolve_every",
            &raw.transport.resolve_every,
            Duration::from_secs(30),
        )?;
        let multicast = match &raw.transport.multicast {
            None => None,
            Some(s) => {
                let a: SocketAddr = s.parse().map_err(|_| {
                    self.err(
                        "transport.multicast",
                        format!("{s:?} is not \"group:port\" like \"239.255.70.1:5740\""),
                    )
                })?;
                if !a.ip().is_multicast() {
                    return Err(self.err(
                        "transport.multicast",
                        format!("{} is not a multicast address", a.ip()),
                    ));
                }
                if a.port() == 0 {
                    return Err(self.err("transport.multicast", "the port must not be 0"));
                }
                let bind = peers.iter().find(|p| p.id == node_id).map(Peer::bind_addr);
                if let Some(bind) = bind.filter(|b| b.is_ipv4() != a.is_ipv4()) {
                    return Err(self.err(
                        "transport.multicast",
                        format!(
                            "group {} and this node's bind address {bind} are of different IP \
                             versions: the node could not join the group",
                            a.ip()
                        ),
                    ));
                }
                Some(a)
            }
        };

        // Security.
        let key_file = raw.security.key_file.as_ref().map(|f| self.path(f));
        let security = match (&raw.security.key_file, raw.security.insecure.unwrap_or(false)) {
            (Some(_), true) => {
                return Err(self.err("security.insecure", "true while security.key_file is set: choose one"))
            }
            (Some(f), false) => {
                let path = self.path(f);
                let ring = Keyring::load(&path)
                    .map_err(|e| self.err("security.key_file", format!("{}: {e}", path.display())))?;
                Security::Keyring(ring)
            }
            (None, true) => Security::Insecure,
            (None, false) => {
                return Err(self.err(
                    "security",
                    "no key_file: run `electd keygen --out electd.key` and set key_file (or, for a test \
                     network only, insecure = true)",
                ))
            }
        };

        let hooks = Hooks {
            on_leader_change: raw.hooks.on_leader_change.filter(|s| !s.trim().is_empty()),
            hook_timeout: self.duration(
                "hooks.hook_timeout",
                &raw.hooks.hook_timeout,
                Duration::from_secs(5),
            )?,
        };
        let admin_token_file = raw.admin.token_file.as_ref().map(|f| self.path(f));
        let admin_token = match &raw.admin.token_file {
            None => None,
            Some(f) => {
                let path = self.path(f);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    self.err("admin.token_file", format!("{}: {e}", path.display()))
                })?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
                if lines > 1 {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: holds {lines} lines; the token must be one line (a bearer \
                             token cannot contain a line break, so no request would match)",
                            path.display()
                        ),
                    ));
                }
                let token = text.trim().to_string();
                if let Some(c) = token.chars().find(|c| !c.is_ascii_graphic()) {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: the token contains {c:?}; use printable ASCII without spaces \
                             (e.g. `openssl rand -hex 32`)",
                            path.display()
                        ),
                    ));
                }
                if token.len() < 16 {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: the token is shorter than 16 characters",
                            path.display()
                        ),
                    ));
                }
                Some(token)
            }
        };
        // `[state] file`; `[raft] state_file` is its older spelling.
        let (state_key, state_file) = match (&raw.state.file, &raw.raft.state_file) {
            (Some(f), _) => ("state.file", Some(f.as_str())),
            (None, f) => ("raft.state_file", f.as_deref()),
        };
        let raft_state_file = match state_file.map(str::trim) {
            None | Some("") => None,
            Some(p) => {
                let path = self.path(Path::new(&p.replace("{node}", &node_id.to_string())));
                self.check_state_file(state_key, &path)?;
                Some(path)
            }
        };
        if raw.state.file.is_some() && raw.raft.state_file.is_some() {
            return Err(self.err(
                "raft.state_file",
                "set only [state] file ([raft] state_file is its older spelling)",
            ));
        }
        let ephemeral = raw.state.ephemeral.unwrap_or(false);
        if ephemeral && raft_state_file.is_some() {
            return Err(self.err(
                "state.ephemeral",
                format!("ephemeral = true contradicts {state_key}: choose one"),
            ));
        }
        if raft_state_file.is_none() && !ephemeral && algorithms.contains(&AlgorithmKind::Raft) {
            return Err(self.err(
                "state.file",
                "raft needs durable state: without it a restarted node may vote twice in one \
                 term and elect a second leader. Set [state] file (e.g. \
                 \"/var/lib/electd/{node}.state\"), or [state] ephemeral = true to run without \
                 it knowingly",
            ));
        }
        let od = Options::default();
        let options = Options {
            pre_vote: raw.raft.pre_vote.unwrap_or(od.pre_vote),
            check_quorum: raw.raft.check_quorum.unwrap_or(od.check_quorum),
            ranked_timeouts: raw.raft.ranked_timeouts.unwrap_or(od.ranked_timeouts),
            lease: self.lease(&raw.lease, &algorithms)?,
        };
        Ok(Config {
            file: self.file.to_path_buf(),
            cluster,
            node_id,
            algorithms,
            timing,
            link,
            multicast,
            resolve_every,
            security,
            key_file,
            check_source: raw.security.check_source.unwrap_or(true),
            hooks,
            admin_token,
            admin_token_file,
            options,
            raft_state_file,
            ephemeral,
            peers,
        })
    }

    /// `"A..B"` or `"A"` (meaning A..2A).
    fn range(&self, key: &str, s: &str) -> Result<(Duration, Duration), ConfigError> {
        let (lo, hi) = match s.split_once("..") {
            Some((a, b)) => {
                let b = b.strip_prefix('=').unwrap_or(b);
                (
                    self.duration(key, &Some(a.to_string()), Duration::ZERO)?,
                    self.duration(key, &Some(b.to_string()), Duration::ZERO)?,
                )
            }
            None => {
                let v = self.duration(key, &Some(s.to_string()), Duration::ZERO)?;
                (v, v * 2)
            }
        };
        if lo >= hi {
            return Err(self.err(
                key,
                format!(
                    "empty range {}..{}: Raft needs a randomized timeout (lo < hi) to break split votes (§5.2)",
                    ms(lo),
                    ms(hi)
                ),
            ));
        }
        Ok((lo, hi))
    }
}

/// The permission bits of `path` when group or others have any access to it.
fn group_or_world_access(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// May this process write `path` (access(2) with W_OK)?
fn writable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: access(2) reads the NUL-terminated path and touches nothing else.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    }
    #[cfg(not(unix))]
    {
        !std::fs::metadata(path).map_or(true, |m| m.permissions().readonly())
    }
}

fn port_zero(s: &str) -> String {
    format!(
        "{s:?} has port 0, which binds a random port no peer knows: give the port the \
         others use"
    )
}

/// Can a socket bound to `bind` send to `to`? (IPv4 to IPv4; a dual-stack `[::]`
/// socket to both; a socket bound to one IPv6 address to IPv6 only.)
pub fn reachable_from(bind: SocketAddr, to: SocketAddr) -> bool {
    match (bind, to) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) => true,
        (SocketAddr::V4(_), SocketAddr::V6(_)) => false,
        (SocketAddr::V6(b), SocketAddr::V4(_)) => b.ip().is_unspecified(),
        (SocketAddr::V6(_), SocketAddr::V6(_)) => true,
    }
}

fn ms(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROSTER: &str = r#"
[[peer]]
id = 1
addr = "127.0.0.1:7001"
http = "127.0.0.1:8001"
[[peer]]
id = 2
addr = "127.0.0.1:7002"
http = "127.0.0.1:8002"
[[peer]]
id = 3
addr = "127.0.0.1:7003"
http = "127.0.0.1:8003"
listen = "0.0.0.0:7003"
"#;

    #[test]
    fn lease_settings_per_algorithm_with_overrides() {
        use crate::algorithm::AlgorithmKind::{Bully, Ring};
        let two = |extra: &str| head(extra).replace("[\"bully\"]", "[\"bully\", \"ring\"]");
        let c = parse(&two("")).unwrap();
        assert_eq!(c.options.lease, crate::algorithm::LeaseOptions::default());
        let c = parse(&two(
            "[lease]\nrequire_quorum = true\nclock_drift = \"20ms\"\n[lease.ring]\nrequire_quorum = false\nclock_drift = \"5ms\"",
        ))
        .unwrap();
        assert_eq!(c.options.lease.require_quorum, vec![Bully]);
        assert_eq!(
            c.options.lease.clock_drift,
            vec![
                (Bully, Duration::from_millis(20)),
                (Ring, Duration::from_millis(5))
            ]
        );
        let env = parse_env(&two(""), &[("ELECTD_LEASE_REQUIRE_QUORUM", "yes")], None).unwrap();
        assert_eq!(env.options.lease.require_quorum, vec![Bully, Ring]);
        fails(
            parse(&two("[lease.raft]\nrequire_quorum = true")),
            "lease.raft",
            "not in `algorithms`",
        );
        fails(
            parse(&two("[lease]\nclock_drift = \"soon\"")),
            "lease.clock_drift",
            "not a duration",
        );
    }

    fn head(extra: &str) -> String {
        format!("cluster = \"t\"\nnode_id = 2\nalgorithms = [\"bully\"]\n{extra}\n[security]\ninsecure = true\n{ROSTER}")
    }

    fn parse_env(
        text: &str,
        env: &[(&str, &str)],
        node: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Config::parse(
            text,
            Path::new("electd.toml"),
            Path::new("/nonexistent"),
            env,
            node,
        )
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        parse_env(text, &[], None)
    }

    /// The error must name the file and `key`, and say `what`.
    fn fails(r: Result<Config, ConfigError>, key: &str, what: &str) {
        let e = r.expect_err("the config must be rejected");
        let shown = e.to_string();
        assert_eq!(e.key, key, "{shown}");
        match (&e.var, e.at) {
            (Some(var), _) => assert!(shown.starts_with(&format!("{var} (environment")), "{shown}"),
            (None, Some((l, c))) => {
                assert!(
                    shown.starts_with(&format!("electd.toml:{l}:{c}: ")),
                    "{shown}"
                )
            }
            (None, None) => assert!(shown.starts_with("electd.toml: "), "{shown}"),
        }
        assert!(shown.contains(what), "{shown:?} should contain {what:?}");
    }

    #[test]
    fn a_complete_file_parses_with_defaults_filled_in() {
        let c = parse(&head(
            "[timing]\nheartbeat = \"20ms\"\nelection_timeout = \"150ms\"",
        ))
        .unwrap();
        assert_eq!(c.cluster, "t");
        assert_eq!(c.node_id, 2);
        assert_eq!(c.ring(), vec![1, 2, 3]);
        assert_eq!(c.me().addr, "127.0.0.1:7002".parse().unwrap());
        assert_eq!(
            c.peer(3).unwrap().bind_addr(),
            "0.0.0.0:7003".parse().unwrap()
        );
        assert_eq!(c.timing.heartbeat, Duration::from_millis(20));
        assert_eq!(c.timing.failure_timeout, Timing::default().failure_timeout);
        // A single value V means V..2V.
        assert_eq!(c.timing.election_timeout_min, Duration::from_millis(150));
        assert_eq!(c.timing.election_timeout_max, Duration::from_millis(300));
        assert_eq!(c.security, Security::Insecure);
        assert_eq!(c.link, LinkConfig::default());
    }

    #[test]
    fn election_timeout_range() {
        let c = parse(&head("[timing]\nelection_timeout = \"120ms..400ms\"")).unwrap();
        assert_eq!(
            (c.timing.election_timeout_min, c.timing.election_timeout_max),
            (Duration::from_millis(120), Duration::from_millis(400))
        );
        fails(
            parse(&head("[timing]\nelection_timeout = \"300ms..150ms\"")),
            "timing.election_timeout",
            "empty range",
        );
    }

    #[test]
    fn unknown_keys_are_rejected() {
        // The key is named by its path.
        fails(
            parse(&head("colour = \"blue\"")),
            "colour",
            "unknown field `colour`",
        );
        fails(
            parse(&head("[timing]\nheartbeet = \"10ms\"")),
            "timing.heartbeet",
            "unknown field `heartbeet`",
        );
        let bad_peer = head("").replace("listen = ", "bind = ");
        fails(parse(&bad_peer), "peer[2].bind", "unknown field `bind`");
        fails(
            parse(&head("").replace("[[peer]]\nid = 2", "[[peer]]\nid = \"two\"")),
            "peer[1].id",
            "expected i64",
        );
    }

    #[test]
    fn not_toml() {
        fails(parse("cluster = "), "-", "not valid TOML");
    }

    #[test]
    fn duplicate_ids_and_addresses() {
        let dup_id = head("").replace("id = 3", "id = 2");
        fails(parse(&dup_id), "peer[2].id", "listed twice");
        let dup_addr = head("").replace("127.0.0.1:7003", "127.0.0.1:7001");
        fails(parse(&dup_addr), "peer[2].addr", "already the address");
        let dup_http = head("").replace("127.0.0.1:8003", "127.0.0.1:8002");
        fails(parse(&dup_http), "peer[2].http", "already the HTTP address");
        fails(
            parse(&head("").replace("id = 1", "id = 0")),
            "peer[0].id",
            "not a node id",
        );
        fails(
            parse(&head("").replace("\"127.0.0.1:7001\"", "\"nowhere\"")),
            "peer[0].addr",
            "not an address",
        );
    }

    #[test]
    fn dns_names_that_do_not_resolve_yet_are_accepted_for_other_peers() {
        // `.invalid` never resolves (RFC 6761).
        let text = head("").replace("127.0.0.1:7003", "electd-2.example.invalid:7003");
        let c = parse(&text).unwrap();
        let p = c.peer(3).unwrap();
        assert_eq!(p.name.as_deref(), Some("electd-2.example.invalid:7003"));
        assert_eq!(p.resolved(), None);
        assert_eq!(p.addr.port(), 7003);
        assert_eq!(c.resolve_every, Duration::from_secs(30));
        // This node binds its own address: it must resolve (or listen must be given).
        let own = head("").replace("127.0.0.1:7002", "electd-1.example.invalid:7002");
        fails(parse(&own), "peer[1].addr", "does not resolve");
        // Node 3 has listen, so its unresolved name is fine for itself.
        assert!(parse_env(&text, &[], Some(3)).is_ok());
        let own_http = head("").replace("127.0.0.1:8002", "electd-1.example.invalid:8002");
        fails(parse(&own_http), "peer[1].http", "does not resolve");
        // A name that resolves keeps its name for re-resolution.
        let c = parse(&head("").replace("127.0.0.1:7001", "localhost:7001")).unwrap();
        let p = c.peer(1).unwrap();
        assert_eq!(p.name.as_deref(), Some("localhost:7001"));
        assert!(p.resolved().is_some_and(|a| a.ip().is_loopback()));
        let dup = head("")
            .replace("127.0.0.1:7001", "a.example.invalid:7001")
            .replace("127.0.0.1:7003", "a.example.invalid:7001");
        fails(parse(&dup), "peer[2].addr", "already the address");
        fails(
            parse(&head("").replace("127.0.0.1:7001", "bad host:7001")),
            "peer[0].addr",
            "not an address",
        );
        let c = parse(&head("[transport]\nresolve_every = \"5s\"")).unwrap();
        assert_eq!(c.resolve_every, Duration::from_secs(5));
    }

    #[test]
    fn this_node_must_be_in_the_roster() {
        fails(
            parse(&head("").replace("node_id = 2", "node_id = 9")),
            "node_id",
            "not in the roster",
        );
        fails(
            parse(&head("").replace("node_id = 2", "")),
            "node_id",
            "not set",
        );
        // --node-id beats the environment, which beats the file.
        let c = parse_env(&head(""), &[("ELECTD_NODE_ID", "3")], None).unwrap();
        assert_eq!(c.node_id, 3);
        let c = parse_env(&head(""), &[("ELECTD_NODE_ID", "3")], Some(1)).unwrap();
        assert_eq!(c.node_id, 1);
        fails(
            parse_env(&head(""), &[], Some(7)),
            "node_id",
            "not in the roster",
        );
    }

    #[test]
    fn empty_roster() {
        let text =
            "cluster = \"t\"\nnode_id = 1\nalgorithms = [\"bully\"]\n[security]\ninsecure = true\n";
        fails(parse(text), "peer", "roster is empty");
    }

    #[test]
    fn algorithms_are_checked() {
        fails(
            parse(&head("").replace("[\"bully\"]", "[\"bullie\"]")),
            "algorithms",
            "unknown algorithm",
        );
        fails(
            parse(&head("").replace("[\"bully\"]", "[]")),
            "algorithms",
            "empty",
        );
        fails(
            parse(&head("").replace("[\"bully\"]", "[\"bully\", \"bully\"]")),
            "algorithms",
            "twice",
        );
        let c = parse(&head("").replace("[\"bully\"]", "[\"improved-bully\", \"bully\"]")).unwrap();
        assert_eq!(
            c.algorithms,
            vec![AlgorithmKind::ImprovedBully, AlgorithmKind::Bully]
        );
    }

    #[test]
    fn contradictory_timings() {
        fails(
            parse(&head(
                "[timing]\nheartbeat = \"100ms\"\nfailure_timeout = \"100ms\"",
            )),
            "timing.heartbeat",
            "not below timing.failure_timeout",
        );
        fails(
            parse(&head(
                "[timing]\nanswer_timeout = \"5ms\"\n[transport]\nretransmit = \"5ms\"",
            )),
            "timing.answer_timeout",
            "not above transport.retransmit",
        );
        // T' must exceed 2T + retransmit (Improved Bully's two answer waits): 50 ms
        // answers and 5 ms retransmissions need more than 105 ms.
        fails(
            parse(&head(
                "[timing]\nanswer_timeout = \"50ms\"\ncoordinator_timeout = \"105ms\"",
            )),
            "timing.coordinator_timeout",
            "not above 2 × timing.answer_timeout + transport.retransmit (105ms)",
        );
        assert!(parse(&head(
            "[timing]\nanswer_timeout = \"50ms\"\ncoordinator_timeout = \"106ms\""
        ))
        .is_ok());
        // The link must give up on a dead peer before the failure detector fires:
        // 5 + 10 + 20 + 40 + 40 = 115 ms for 5 attempts, not below 100 ms.
        fails(
            parse(&head("[transport]\nmax_attempts = 5")),
            "transport.max_attempts",
            "gives up on a peer after 115ms",
        );
        fails(
            parse(&head("[timing]\nelection_timeout = \"150ms..150ms\"")),
            "timing.election_timeout",
            "lo < hi",
        );
        fails(
            parse(&head(
                "[timing]\nheartbeat = \"50ms\"\nelection_timeout = \"40ms..80ms\"",
            )),
            "timing.election_timeout",
            "not above timing.heartbeat",
        );
        fails(
            parse(&head("[timing]\nheartbeat = \"0ms\"")),
            "timing.heartbeat",
            "above zero",
        );
        fails(
            parse(&head("[timing]\nheartbeat = \"soon\"")),
            "timing.heartbeat",
            "not a duration",
        );
        fails(
            parse(&head("[transport]\nmax_attempts = 0")),
            "transport.max_attempts",
            "outside",
        );
    }

    #[test]
    fn multicast_is_validated() {
        let c = parse(&head("[transport]\nmulticast = \"239.255.70.1:5740\"")).unwrap();
        assert_eq!(c.multicast, Some("239.255.70.1:5740".parse().unwrap()));
        fails(
            parse(&head("[transport]\nmulticast = \"10.0.0.1:5740\"")),
            "transport.multicast",
            "not a multicast",
        );
        fails(
            parse(&head("[transport]\nmulticast = \"239.255.70.1\"")),
            "transport.multicast",
            "group:port",
        );
    }

    #[test]
    fn security_needs_a_key_or_an_explicit_opt_out() {
        let no_sec = head("").replace("[security]\ninsecure = true\n", "");
        fails(parse(&no_sec), "security", "electd keygen");
        let both = head("").replace("insecure = true", "insecure = true\nkey_file = \"k\"");
        fails(parse(&both), "security.insecure", "choose one");
        let missing = head("").replace("insecure = true", "key_file = \"k\"");
        fails(parse(&missing), "security.key_file", "/nonexistent/k");
    }

    #[test]
    fn key_and_token_files_load_relative_to_the_config() {
        let dir = std::env::temp_dir().join(format!("electd-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("k");
        let _ = std::fs::remove_file(&key);
        crate::keyring::write_key_file(&key).unwrap();
        std::fs::write(dir.join("tok"), "short\n").unwrap();
        let text =
            head("[admin]\ntoken_file = \"tok\"").replace("insecure = true", "key_file = \"k\"");
        let file = dir.join("electd.toml");
        std::fs::write(&file, &text).unwrap();
        let e = Config::load(&file, Vec::new(), None).unwrap_err();
        assert_eq!(e.key, "admin.token_file");
        std::fs::write(dir.join("tok"), "0123456789abcdef0123\n").unwrap();
        let c = Config::load(&file, Vec::new(), None).unwrap();
        assert!(matches!(c.security, Security::Keyring(ref r) if r.len() == 1));
        assert_eq!(c.admin_token.as_deref(), Some("0123456789abcdef0123"));
        let _ = std::fs::remove_dir_all(&dir);
        let e = Config::load(&dir.join("gone.toml"), Vec::new(), None).unwrap_err();
        assert!(e.to_string().contains("gone.toml: -: cannot read"), "{e}");
    }

    #[test]
    fn check_source_defaults_on_and_peers_keep_every_resolved_address() {
        let c = parse(&head("")).unwrap();
        assert!(c.check_source);
        assert_eq!(
            c.peer(1).unwrap().sources,
            vec!["127.0.0.1:7001".parse().unwrap()]
        );
        let off = head("").replace("insecure = true", "insecure = true\ncheck_source = false");
        assert!(!parse(&off).unwrap().check_source);
        let env = parse_env(
            &head(""),
            &[("ELECTD_SECURITY_CHECK_SOURCE", "false")],
            None,
        );
        assert!(!env.unwrap().check_source);
        fails(
            parse(&head("").replace("insecure = true", "insecure = true\ncheck_source = 1")),
            "security.check_source",
            "expected a boolean",
        );
        // A DNS name: every address it resolves to is an accepted source.
        let named = head("").replace("\"127.0.0.1:7001\"", "\"localhost:7001\"");
        let c = parse(&named).unwrap();
        let p = c.peer(1).unwrap();
        assert!(!p.sources.is_empty() && p.sources.contains(&p.addr));
        assert!(p
            .sources
            .iter()
            .all(|a| a.port() == 7001 && a.ip().is_loopback()));
    }

    #[test]
    fn key_file_errors_name_the_key_the_file_and_the_problem() {
        let dir = std::env::temp_dir().join(format!("electd-keyerr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = head("").replace("insecure = true", "key_file = \"k\"");
        let file = dir.join("electd.toml");
        std::fs::write(&file, &text).unwrap();
        let key = dir.join("k");
        let shown = |content: Option<&str>| {
            let _ = std::fs::remove_file(&key);
            let _ = std::fs::remove_dir(&key);
            match content {
                Some(t) => std::fs::write(&key, t).unwrap(),
                // Unreadable as a file: a directory in its place.
                None => std::fs::create_dir(&key).unwrap(),
            }
            let e = Config::load(&file, Vec::new(), None).unwrap_err();
            assert_eq!(e.key, "security.key_file");
            let s = e.to_string();
            assert!(s.contains(&key.display().to_string()), "{s}");
            assert!(s.contains("electd.toml"), "{s}");
            s
        };
        assert!(shown(Some("")).contains("holds no key"));
        assert!(shown(Some("# comment only\n")).contains("holds no key"));
        let short = shown(Some("abcdef\n"));
        assert!(
            short.contains("line 1") && short.contains("64 hex digits"),
            "{short}"
        );
        assert!(shown(None).contains("cannot read key file"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn environment_overrides() {
        let env = [
            ("ELECTD_CLUSTER", "other"),
            ("ELECTD_ALGORITHMS", "improved-bully, bully"),
            ("ELECTD_TIMING_HEARTBEAT", "20ms"),
            ("ELECTD_TRANSPORT_MAX_ATTEMPTS", "3"),
            ("ELECTD_RAFT_PRE_VOTE", "false"),
            ("ELECTD_HOOKS_ON_LEADER_CHANGE", "/bin/true"),
            ("ELECTD_LOG", "debug"),
            ("PATH", "/usr/bin"),
        ];
        let c = parse_env(&head(""), &env, None).unwrap();
        assert_eq!(c.cluster, "other");
        assert_eq!(
            c.algorithms,
            vec![AlgorithmKind::ImprovedBully, AlgorithmKind::Bully]
        );
        assert_eq!(c.timing.heartbeat, Duration::from_millis(20));
        assert_eq!(c.link.max_attempts, Some(3));
        assert!(!c.options.pre_vote);
        assert_eq!(c.hooks.on_leader_change.as_deref(), Some("/bin/true"));
        fails(
            parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEET", "1ms")], None),
            "ELECTD_TIMING_HEARTBEET",
            "unknown",
        );
        fails(
            parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEAT", "1s")], None),
            "timing.heartbeat",
            "not below",
        );
    }

    #[test]
    fn port_zero_is_refused_everywhere() {
        fails(
            parse(&head("").replace("127.0.0.1:7002", "127.0.0.1:0")),
            "peer[1].addr",
            "port 0",
        );
        fails(
            parse(&head("").replace("127.0.0.1:8003", "127.0.0.1:0")),
            "peer[2].http",
            "port 0",
        );
        fails(
            parse(&head("").replace("0.0.0.0:7003", "0.0.0.0:0")),
            "peer[2].listen",
            "port 0",
        );
    }

    #[test]
    fn a_roster_mixing_address_families_is_refused_unless_bound_dual_stack() {
        let mixed = head("").replace("127.0.0.1:7003", "[::1]:7003");
        // Node 2 binds IPv4: peer 3 on IPv6 is out of reach…
        fails(parse(&mixed), "peer[2].addr", "is IPv6 but this node");
        // …and node 3 (bound 0.0.0.0 by listen) cannot reach IPv6 either; an IPv6-only
        // node cannot reach the IPv4 ones.
        let v6 = mixed.replace("listen = \"0.0.0.0:7003\"\n", "");
        fails(
            parse_env(&v6, &[], Some(3)),
            "peer[0].addr",
            "is IPv4 but this node",
        );
        // A dual-stack bind reaches both, but its datagrams to IPv4 peers leave from an
        // IPv4 address the peers' source check does not know: only without it.
        let dual = mixed.replace("0.0.0.0:7003", "[::]:7003");
        fails(
            parse_env(&dual, &[], Some(3)),
            "peer[0].addr",
            "check_source",
        );
        let unchecked = dual.replace("insecure = true", "insecure = true\ncheck_source = false");
        parse_env(&unchecked, &[], Some(3)).expect("dual stack reaches every peer");
        // A multicast group of the other family could not be joined.
        fails(
            parse(&head("[transport]\nmulticast = \"[ff15::1]:7946\"")),
            "transport.multicast",
            "different IP versions",
        );
    }

    #[test]
    fn raft_state_file_must_be_writable_where_it_is() {
        let dir = std::env::temp_dir().join(format!("electd-cfg-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("taken.state")).unwrap();
        let with = |p: &str| head(&format!("[raft]\nstate_file = \"{p}\""));
        let ok = format!("{}/raft-{{node}}.state", dir.display());
        let c = parse(&with(&ok)).expect("an existing directory");
        assert_eq!(c.raft_state_file, Some(dir.join("raft-2.state")));
        fails(
            parse(&with("/nonexistent/dir/raft.state")),
            "raft.state_file",
            "does not exist",
        );
        let is_dir = format!("{}/taken.state", dir.display());
        fails(parse(&with(&is_dir)), "raft.state_file", "is a directory");
        // From the environment, the variable is blamed.
        let e = parse_env(
            &head(""),
            &[("ELECTD_RAFT_STATE_FILE", "/nonexistent/dir/raft.state")],
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "ELECTD_RAFT_STATE_FILE (environment, overriding raft.state_file of electd.toml)"
            ),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn admin_token_files_hold_one_printable_line() {
        let dir = std::env::temp_dir().join(format!("electd-cfg-token-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let load = |content: &str| {
            let f = dir.join("token");
            std::fs::write(&f, content).unwrap();
            let text = head(&format!("[admin]\ntoken_file = \"{}\"", f.display()));
            parse(&text)
        };
        let good = "0123456789abcdef0123";
        let c = load(&format!("{good}\n")).unwrap();
        assert_eq!(c.admin_token.as_deref(), Some(good));
        assert_eq!(c.admin_token_file, Some(dir.join("token")));
        fails(
            load(&format!("{good}\nsecond-line-token\n")),
            "admin.token_file",
            "holds 2 lines",
        );
        fails(load("0123456789 abcdef0123"), "admin.token_file", "' '");
        // A 0644 token file loads, with a warning.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let c = load(good).unwrap();
            std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o644))
                .unwrap();
            let w = c.warnings().join("\n");
            assert!(w.contains("admin token file") && w.contains("0644"), "{w}");
            std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o600))
                .unwrap();
            assert!(!c.warnings().join("\n").contains("admin token file"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn environment_errors_blame_the_variable() {
        let e = parse_env(&head(""), &[("ELECTD_NODE_ID", "abc")], None).unwrap_err();
        assert_eq!(e.var.as_deref(), Some("ELECTD_NODE_ID"));
        let shown = e.to_string();
        assert!(
            shown.starts_with("ELECTD_NODE_ID (environment)") && shown.contains("\"abc\""),
            "{shown}"
        );
        let e = parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEAT", "1s")], None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "ELECTD_TIMING_HEARTBEAT (environment, overriding timing.heartbeat of electd.toml)"
            ),
            "{e}"
        );
        // Booleans in any spelling and case; nonsense is refused with the variable.
        for (v, want) in [("TRUE", false), ("off", true), ("On", false), ("0", true)] {
            let c = parse_env(&head(""), &[("ELECTD_RAFT_PRE_VOTE", v)], None).unwrap();
            assert_eq!(c.options.pre_vote, !want, "{v}");
        }
        fails(
            parse_env(&head(""), &[("ELECTD_RAFT_PRE_VOTE", "maybe")], None),
            "ELECTD_RAFT_PRE_VOTE",
            "not a boolean",
        );
        // An empty variable is not "unset".
        fails(
            parse_env(&head(""), &[("ELECTD_SECURITY_KEY_FILE", "")], None),
            "ELECTD_SECURITY_KEY_FILE",
            "set but empty",
        );
    }

    #[test]
    fn toml_syntax_errors_name_line_and_column() {
        let e = parse("cluster = \"x\"\n\nfoo = = 3\n").unwrap_err();
        assert_eq!(e.at, Some((3, 7)), "{e}");
        assert!(
            e.to_string().starts_with("electd.toml:3:7: not valid TOML"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod family_tests {
    use super::reachable_from;

    #[test]
    fn which_sockets_reach_which_peers() {
        let a = |s: &str| s.parse().unwrap();
        assert!(reachable_from(a("10.0.0.1:1"), a("10.0.0.2:1")));
        assert!(reachable_from(a("0.0.0.0:1"), a("10.0.0.2:1")));
        assert!(!reachable_from(a("0.0.0.0:1"), a("[::1]:1")));
        assert!(!reachable_from(a("10.0.0.1:1"), a("[::ffff:10.0.0.2]:1")));
        assert!(reachable_from(a("[::]:1"), a("10.0.0.2:1")));
        assert!(reachable_from(a("[::]:1"), a("[fd00::2]:1")));
        assert!(reachable_from(a("[fd00::1]:1"), a("[fd00::2]:1")));
        assert!(!reachable_from(a("[fd00::1]:1"), a("10.0.0.2:1")));
    }
}
