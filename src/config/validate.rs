//! The validator: turns the raw sections into a [`Config`], topic by topic (the roster
//! in `peers.rs`, `[timing]`/`[transport]` in `timing.rs`, `[security]`/`[admin]` in
//! `security.rs`, `[state]` in `state.rs`), naming the key of every error.

use super::raw::RawConfig;
use super::{Config, ConfigError, Hooks};
use crate::contract::algorithm::{AlgorithmKind, Options};
use crate::NodeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(super) struct Validator<'a> {
    pub(super) file: &'a Path,
    pub(super) base: &'a Path,
    /// Keys set by `ELECTD_*` variables, with the variable.
    pub(super) from_env: HashMap<String, String>,
    /// Facts of the machine that loads the file (see [`HostLocal`]).
    pub(super) local: HostLocal,
}

/// How facts of the machine that loads the file are judged: a state directory, a
/// health check's program. Where the node runs (`run`, `config check --node-id`) they
/// are errors; when `config check` checks every node of the roster from one machine
/// they are facts of *that* machine, not of the nodes, and become notes.
#[derive(Debug, Default)]
pub(super) struct HostLocal {
    /// Checking from elsewhere: host-local problems are notes, not errors.
    pub(super) elsewhere: bool,
    /// The notes so far.
    pub(super) notes: RefCell<Vec<String>>,
}

impl Validator<'_> {
    pub(super) fn err(&self, key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        let key = key.into();
        ConfigError {
            file: self.file.to_path_buf(),
            var: self.from_env.get(&key).cloned(),
            key,
            message: message.into(),
            at: None,
        }
    }

    /// A problem with a fact of this machine (see [`HostLocal`]): an error where the
    /// node runs, a note when checking from elsewhere.
    pub(super) fn host_local(&self, e: ConfigError) -> Result<(), ConfigError> {
        if !self.local.elsewhere {
            return Err(e);
        }
        self.local.notes.borrow_mut().push(e.to_string());
        Ok(())
    }

    pub(super) fn duration(
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
        if d > MAX_DURATION {
            return Err(self.err(
                key,
                format!("{s:?} is more than a day: no timeout or period of electd is that long"),
            ));
        }
        Ok(d)
    }

    pub(super) fn path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    /// The whole file, in the order its errors are reported: cluster, roster,
    /// algorithms, timing and transport, security, hooks, admin, state, raft.
    pub(super) fn validate(
        &self,
        raw: RawConfig,
        node_override: Option<NodeId>,
    ) -> Result<Config, ConfigError> {
        let cluster = raw.cluster.clone().ok_or_else(|| {
            self.err(
                "cluster",
                "missing (a name shared by every node of the cluster)",
            )
        })?;
        if cluster.trim().is_empty() || cluster.chars().count() > 64 {
            return Err(self.err("cluster", "must be 1 to 64 characters"));
        }

        let (node_id, peers) = self.roster(&raw, node_override)?;
        let policy = self.policy(raw.policy.as_ref(), &raw.peer)?;

        // Algorithms.
        let names = raw
            .algorithms
            .clone()
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
        self.policy_check(&policy, &algorithms)?;

        let transport = self.transport(&raw, &peers, node_id, &algorithms)?;
        let (key_file, security) = self.security(&raw)?;
        let hooks = Hooks {
            on_leader_change: raw
                .hooks
                .on_leader_change
                .clone()
                .filter(|s| !s.trim().is_empty()),
            hook_timeout: self.duration(
                "hooks.hook_timeout",
                &raw.hooks.hook_timeout,
                Duration::from_secs(5),
            )?,
        };
        // A hook whose program is a path that cannot run fails at every leader change
        // (and what it manages never follows the leader): refused as a [[check]]'s
        // program is. Only a path is checked: the line is a shell's, and a bare word
        // may be a builtin or a function.
        if let Some(cmd) = &hooks.on_leader_change {
            if let Some(program) = cmd
                .split_whitespace()
                .next()
                .filter(|w| w.contains('/') && !w.contains('='))
            {
                if let Err(why) = super::checks::find_program(program) {
                    self.host_local(self.err(
                        "hooks.on_leader_change",
                        format!("{why}: the hook would fail at every leader change"),
                    ))?;
                }
            }
        }
        let (admin_token, admin_token_file) = self.admin(&raw)?;
        let (raft_state_file, ephemeral, state_dir_to_create) =
            self.state(&raw, node_id, &algorithms)?;
        let od = Options::default();
        let check_quorum = raw.raft.check_quorum.unwrap_or(od.check_quorum);
        let options = Options {
            pre_vote: raw.raft.pre_vote.unwrap_or(od.pre_vote),
            check_quorum,
            ranked_timeouts: raw.raft.ranked_timeouts.unwrap_or(od.ranked_timeouts),
            policy,
            lease: self.lease(&raw.lease, &algorithms, &transport.timing, check_quorum)?,
        };
        let checks = self.checks(&raw.check, &algorithms, node_id)?;
        let vips = self.vips(&raw.vip, &algorithms, &peers)?;
        let realtime_priority = self.process(&raw)?;
        Ok(Config {
            file: self.file.to_path_buf(),
            cluster,
            node_id,
            algorithms,
            timing: transport.timing,
            link: transport.link,
            multicast: transport.multicast,
            resolve_every: transport.resolve_every,
            batch_heartbeats: raw.transport.batch_heartbeats.unwrap_or(true),
            beat_thread: raw.transport.beat_thread.unwrap_or(true),
            security,
            key_file,
            check_source: raw.security.check_source.unwrap_or(true),
            hooks,
            admin_token,
            admin_token_file,
            options,
            raft_state_file,
            ephemeral,
            state_dir_to_create,
            peers,
            checks,
            vips,
            realtime_priority,
        })
    }
}

pub(super) fn ms(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The longest duration a setting takes (a day): beyond it a value is a typo (an
/// `h` for an `ms`), and a deadline computed from it could pass the clock's end.
pub(super) const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// The shortest heartbeat (a millisecond): below it a leader's timer fires faster than
/// a turn of the runtime ends, and the node spins (1 ns took 75 % of a core, idle).
pub(super) const MIN_HEARTBEAT: Duration = Duration::from_millis(1);
