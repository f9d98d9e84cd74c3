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
//! # batch_heartbeats = true           # a follower reads its leader's heartbeats in batches,
//! #                                   # as of their arrival, instead of waking for each
//! # beat_thread = true                # an idle leader's heartbeats leave from a thread of
//! #                                   # their own between the runtime's turns
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
//! [process]
//! # realtime_priority = 10            # SCHED_RR for the daemon's threads (1..99);
//! #                                   # 0 = normal class (default)
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
//! `ELECTD_ADMIN_TOKEN_FILE=…`, `ELECTD_RAFT_PRE_VOTE=false`, `ELECTD_STATE_FILE=…`,
//! `ELECTD_PROCESS_REALTIME_PRIORITY=10`. The roster (`[[peer]]`)
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

pub mod checks;
pub(crate) mod digest;
mod lease;
mod peers;
mod policy;
pub(crate) mod process;
mod raw;
pub mod reload;
mod security;
mod state;
pub mod template;
#[cfg(test)]
mod tests;
mod timing;
mod validate;
pub mod vip;

pub(crate) use peers::reachable_from;
pub use state::create_state_dir;

use crate::contract::algorithm::{AlgorithmKind, Options, Timing};
use crate::node::link::LinkConfig;
use crate::security::keyring::Keyring;
use crate::NodeId;
use raw::raw_config;
use security::group_or_world_access;
use std::net::SocketAddr;
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
    /// The configuration file the error is about.
    pub(crate) file: PathBuf,
    /// The key (`timing.heartbeat`, `peer[2].addr`, `ELECTD_NODE_ID`, …), or `-` for
    /// the whole file.
    pub key: String,
    /// What is wrong and, where it helps, what is expected instead.
    pub message: String,
    /// The environment variable that set `key`, when the value came from one.
    pub(crate) var: Option<String>,
    /// Line and column (1-based) of a TOML syntax error.
    pub(crate) at: Option<(usize, usize)>,
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
            // `-`: no key to blame (the file itself: unreadable, an unknown table).
            (None, None) if self.key == "-" => write!(f, "{file}: {}", self.message),
            (None, None) => write!(f, "{file}: {}: {}", self.key, self.message),
        }
    }
}

/// One roster entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The node id (`[[peer]] id`, never 0, unique in the roster).
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
    /// `host:port` as written, when the HTTP address is a DNS name.
    pub(crate) http_name: Option<String>,
    /// Bind address if not `addr` (e.g. `0.0.0.0:5740` behind NAT).
    pub(crate) listen: Option<SocketAddr>,
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
    pub(crate) fn resolved(&self) -> Option<SocketAddr> {
        (!self.addr.ip().is_unspecified() || self.name.is_none()).then_some(self.addr)
    }
}

/// How datagrams are authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Security {
    /// Every datagram is tagged and checked with the keys of the `key_file`.
    Keyring(Keyring),
    /// `insecure = true`: no tags are made or checked.
    Insecure,
}

/// Leader-change hook settings (run by the hooks module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hooks {
    /// `[hooks] on_leader_change`: the command run (through `/bin/sh -c`) on every
    /// leader change; `None`: no hook.
    pub on_leader_change: Option<String>,
    /// `[hooks] hook_timeout`: a run still going after this is killed.
    pub hook_timeout: Duration,
}

/// A validated configuration (see the module documentation).
#[derive(Clone, Debug)]
pub struct Config {
    /// The file it came from (for messages).
    pub file: PathBuf,
    /// The cluster name (1 to 64 characters); every datagram carries it and one of
    /// another cluster is dropped.
    pub cluster: String,
    /// This node's id, a member of [`Config::peers`].
    pub node_id: NodeId,
    /// The algorithms run, each as an independent group (no duplicates).
    pub algorithms: Vec<AlgorithmKind>,
    /// `[timing]`: heartbeat, failure timeout and election timeouts, validated.
    pub timing: Timing,
    /// `[transport]`: the reliable link's retransmission settings.
    pub link: LinkConfig,
    /// Multicast group for broadcasts (see `daemon::runtime`), `None` for unicast.
    pub multicast: Option<SocketAddr>,
    /// Period of DNS re-resolution of peer names (`transport.resolve_every`, 30 s).
    pub(crate) resolve_every: Duration,
    /// Read the followed leaders' heartbeats in batches, as of the time they arrived,
    /// instead of waking for each (`transport.batch_heartbeats`, default true; see
    /// `daemon::heartbeats`).
    pub batch_heartbeats: bool,
    /// An idle leader's heartbeats leave from a thread of their own between the
    /// runtime's turns (`transport.beat_thread`, default true; see `daemon::beater`).
    pub beat_thread: bool,
    /// `[security]`: the keyring, or insecure.
    pub security: Security,
    /// The key file (absolute), to re-read on `SIGHUP`; `None` when insecure.
    pub key_file: Option<PathBuf>,
    /// `[security] check_source` (default true): see [`crate::security::gate`].
    pub check_source: bool,
    /// `[hooks]`: the leader-change hook.
    pub hooks: Hooks,
    /// Bearer token of the admin routes (trimmed content of `admin.token_file`).
    pub admin_token: Option<String>,
    /// `admin.token_file` (absolute), for the permission warning.
    pub(crate) admin_token_file: Option<PathBuf>,
    /// `[raft]`: pre-vote, check-quorum and ranked timeouts.
    pub options: Options,
    /// `[state] file`: where every algorithm's fencing token (and Raft's vote) is kept
    /// across restarts (`{node}` substituted).
    pub raft_state_file: Option<PathBuf>,
    /// `[state] ephemeral = true`: run without durable state, knowingly.
    pub ephemeral: bool,
    /// The state file's directory when it does not exist yet but this user can create
    /// it: `run` creates it (mode 0700, [`create_state_dir`]) before it starts.
    pub state_dir_to_create: Option<PathBuf>,
    /// The roster in file order (which is also the logical ring order).
    pub peers: Vec<Peer>,
    /// `[[check]]`: health checks, in file order.
    pub checks: Vec<checks::Check>,
    /// `[[vip]]`: virtual addresses held while leading, in file order.
    pub vips: Vec<vip::Vip>,
    /// `[process] realtime_priority`: the daemon's threads run in `SCHED_RR` at this
    /// priority (1..=99); `None` (0, the default): the normal class
    /// (`config::process`, applied by `daemon::sched`).
    pub realtime_priority: Option<u8>,
}

impl Config {
    /// This node's roster entry.
    pub fn me(&self) -> &Peer {
        self.peer(self.node_id)
            .expect("validated: node_id is in the roster")
    }

    /// The roster entry of `id`, if it is a member.
    pub(crate) fn peer(&self, id: NodeId) -> Option<&Peer> {
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
            .and_then(crate::security::keyring::permission_warning)
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
                "security.insecure = true: datagrams are not authenticated: anyone who can \
                 reach the port can forge any of them (the replay window still drops repeated \
                 datagrams, but not forged ones; test networks only)"
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
        let (text, base) = read_file(path)?;
        Config::parse(&text, path, base, env, node_id)
    }

    /// Like [`Config::load`] on `text`; relative paths are resolved against `base`.
    pub(crate) fn parse(
        text: &str,
        file: &Path,
        base: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        node_id: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let (raw, v) = raw_config(text, file, base, env)?;
        v.validate(raw, node_id)
    }

    /// [`Config::load`] as `config check` does it for every node of the roster from one
    /// machine: what depends on the machine that loads the file (the state file's
    /// directory, a health check's program) is a fact of *this* machine, not of the
    /// node, so a problem there comes back as a note instead of an error.
    pub fn load_elsewhere(
        path: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        node_id: Option<NodeId>,
    ) -> Result<(Config, Vec<String>), ConfigError> {
        let (text, base) = read_file(path)?;
        Config::parse_elsewhere(&text, path, base, env, node_id)
    }

    /// Like [`Config::load_elsewhere`] on `text`.
    pub fn parse_elsewhere(
        text: &str,
        file: &Path,
        base: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        node_id: Option<NodeId>,
    ) -> Result<(Config, Vec<String>), ConfigError> {
        let (raw, mut v) = raw_config(text, file, base, env)?;
        v.local.elsewhere = true;
        let c = v.validate(raw, node_id)?;
        Ok((c, v.local.notes.take()))
    }
}

/// The text of the configuration file `path` and the directory its relative paths are
/// resolved against.
fn read_file(path: &Path) -> Result<(String, &Path), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        key: "-".into(),
        message: format!("cannot read: {e}"),
        var: None,
        at: None,
    })?;
    Ok((text, base_dir(path)))
}

/// The directory relative paths in the configuration file `path` are resolved
/// against: its own, `.` for a bare file name (whose `parent()` is the empty path,
/// which names no directory: a state directory under it could not be created).
fn base_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}
