//! Reading a configuration: the TOML text, the `ELECTD_*` overrides applied to it, and
//! the raw (not yet validated) sections they deserialize into.

use super::validate::Validator;
use super::ConfigError;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) cluster: Option<String>,
    pub(super) node_id: Option<i64>,
    pub(super) algorithms: Option<Vec<String>>,
    #[serde(default)]
    pub(super) timing: RawTiming,
    #[serde(default)]
    pub(super) transport: RawTransport,
    #[serde(default)]
    pub(super) security: RawSecurity,
    #[serde(default)]
    pub(super) hooks: RawHooks,
    #[serde(default)]
    pub(super) admin: RawAdmin,
    #[serde(default)]
    pub(super) raft: RawRaft,
    #[serde(default)]
    pub(super) lease: RawLease,
    #[serde(default)]
    pub(super) state: RawState,
    #[serde(default)]
    pub(super) process: RawProcess,
    #[serde(default)]
    pub(super) peer: Vec<RawPeer>,
    #[serde(default)]
    pub(super) check: Vec<RawCheck>,
    #[serde(default)]
    pub(super) vip: Vec<RawVip>,
    /// `[policy]`, parsed by `config::policy`.
    pub(super) policy: Option<toml::Value>,
}

/// One `[[check]]` (see `config::checks`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    pub(super) name: Option<String>,
    pub(super) command: Option<Vec<String>>,
    pub(super) url: Option<String>,
    pub(super) interval: Option<String>,
    pub(super) timeout: Option<String>,
    pub(super) rise: Option<i64>,
    pub(super) fall: Option<i64>,
    pub(super) weight: Option<i64>,
    pub(super) algorithms: Option<Vec<String>>,
}

/// One `[[vip]]` (see `config::vip`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVip {
    pub(super) address: Option<String>,
    pub(super) interface: Option<String>,
    pub(super) algorithm: Option<String>,
    pub(super) garp_count: Option<i64>,
    pub(super) garp_interval: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawState {
    pub(super) file: Option<String>,
    pub(super) ephemeral: Option<bool>,
}

/// `[process]`: how this machine runs the daemon (see `daemon::sched`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProcess {
    pub(super) realtime_priority: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTiming {
    pub(super) heartbeat: Option<String>,
    pub(super) failure_timeout: Option<String>,
    pub(super) answer_timeout: Option<String>,
    pub(super) coordinator_timeout: Option<String>,
    pub(super) election_timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTransport {
    pub(super) retransmit: Option<String>,
    pub(super) rto_min: Option<String>,
    pub(super) rto_max: Option<String>,
    pub(super) give_up: Option<String>,
    pub(super) max_attempts: Option<i64>,
    pub(super) multicast: Option<String>,
    pub(super) resolve_every: Option<String>,
    pub(super) batch_heartbeats: Option<bool>,
    pub(super) beat_thread: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecurity {
    pub(super) key_file: Option<PathBuf>,
    pub(super) insecure: Option<bool>,
    pub(super) check_source: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHooks {
    pub(super) on_leader_change: Option<String>,
    pub(super) hook_timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdmin {
    pub(super) token_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRaft {
    pub(super) pre_vote: Option<bool>,
    pub(super) check_quorum: Option<bool>,
    pub(super) ranked_timeouts: Option<bool>,
    pub(super) state_file: Option<String>,
}

/// `[lease]`, with `[lease.<algorithm>]` overrides of the same keys (the algorithm
/// names are checked against the registry by the validator, not listed here).
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawLease {
    pub(super) require_quorum: Option<bool>,
    pub(super) clock_drift: Option<String>,
    /// Every other key: `[lease.<algorithm>]` tables (anything else is an error).
    #[serde(flatten)]
    pub(super) per_algorithm: std::collections::BTreeMap<String, toml::Value>,
}

/// One `[lease.<algorithm>]` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLeaseOf {
    pub(super) require_quorum: Option<bool>,
    pub(super) clock_drift: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPeer {
    pub(super) id: i64,
    pub(super) addr: String,
    pub(super) http: String,
    pub(super) listen: Option<String>,
    /// 0..=255, 0 = never leader (see [`crate::contract::policy`]).
    pub(super) priority: Option<i64>,
}

/// Parse `text`, apply the environment and deserialize; the validator that names
/// keys (and the variables that set them) in errors.
pub(super) fn raw_config<'a>(
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
            local: Default::default(),
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

pub(super) const SECTIONS: [(&str, &[&str]); 10] = [
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
            "batch_heartbeats",
            "beat_thread",
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
    ("process", &["realtime_priority"]),
    ("policy", &["preempt", "preempt_delay"]),
];
pub(super) const TOP: [&str; 3] = ["cluster", "node_id", "algorithms"];
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
        "node_id" | "max_attempts" | "realtime_priority" => value
            .trim()
            .parse::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| format!("{:?} is not an integer", value.trim()))?,
        "insecure" | "check_source" | "pre_vote" | "check_quorum" | "ranked_timeouts"
        | "ephemeral" | "require_quorum" | "batch_heartbeats" | "beat_thread" | "preempt" => {
            match value.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
                "false" | "0" | "no" | "off" => toml::Value::Boolean(false),
                _ => {
                    return Err(format!(
                        "{:?} is not a boolean (true/false, yes/no, on/off, 1/0)",
                        value.trim()
                    ))
                }
            }
        }
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
