//! `[[check]]`: health checks (keepalived's `track_script`). Each entry runs a command
//! (an argv, no shell) or asks an HTTP URL every `interval`; a run that does not pass
//! within `timeout` fails. `fall` failures in a row make the check *failing*, `rise`
//! passes in a row make it *passing* again. While a check is failing, this node is in
//! FAULT (ineligible) in the groups it applies to (`algorithms`, default all), or, with
//! `weight`, its priority is lowered by that much (keepalived's `weight -N`).
//!
//! ```toml
//! [[check]]
//! name = "nginx"
//! command = ["/usr/bin/pgrep", "-x", "nginx"]   # or url = "http://127.0.0.1:8080/health"
//! interval = "1s"
//! timeout = "500ms"
//! fall = 2
//! rise = 2
//! algorithms = ["bully"]                        # default: every group
//! ```
//!
//! `{node}` in the command's arguments or the URL is replaced by this node's id (one
//! cluster file serves every node).

use super::raw::RawCheck;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::AlgorithmKind;
use std::time::Duration;

/// What a check runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A command and its arguments, run directly (no shell); exit 0 passes.
    Command(Vec<String>),
    /// An `http://` URL asked with GET; a 2xx answer passes.
    Url {
        /// The URL as written.
        url: String,
        /// `host:port` to connect to.
        authority: String,
        /// The path and query to ask for (`/` when the URL has none).
        path: String,
    },
}

/// One validated `[[check]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Unique name (the `check` label of the metrics).
    pub name: String,
    /// What it runs.
    pub probe: Probe,
    /// Time between the starts of two runs.
    pub interval: Duration,
    /// A run still going after this fails (a command's process group is killed).
    pub timeout: Duration,
    /// Passes in a row that make a failing check pass.
    pub rise: u32,
    /// Failures in a row that make a passing check fail.
    pub fall: u32,
    /// The groups it applies to.
    pub algorithms: Vec<AlgorithmKind>,
    /// `weight`: while failing, lower this node's priority by this much instead of
    /// putting it in FAULT (`None`: FAULT).
    pub weight: Option<u8>,
}

/// Longest accepted interval and timeout: a check slower than this is no health check.
const MAX_PERIOD: Duration = Duration::from_secs(3600);

impl Validator<'_> {
    /// Every `[[check]]`, in file order.
    pub(super) fn checks(
        &self,
        raw: &[RawCheck],
        algorithms: &[AlgorithmKind],
        node_id: crate::NodeId,
    ) -> Result<Vec<Check>, ConfigError> {
        let node = node_id.to_string();
        let mut out: Vec<Check> = Vec::new();
        for (i, c) in raw.iter().enumerate() {
            let key = |k: &str| format!("check[{i}].{k}");
            let name = c
                .name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    self.err(
                        key("name"),
                        "missing (a name for the metrics, e.g. \"nginx\")",
                    )
                })?
                .to_string();
            if name.len() > 64
                || !name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
            {
                return Err(self.err(
                    key("name"),
                    format!("{name:?}: use 1 to 64 of A-Z a-z 0-9 - _ ."),
                ));
            }
            if out.iter().any(|o| o.name == name) {
                return Err(self.err(key("name"), format!("{name:?} names two checks")));
            }
            let probe = match (&c.command, &c.url) {
                (Some(_), Some(_)) => {
                    return Err(self.err(
                        key("url"),
                        "give command or url, not both",
                    ))
                }
                (None, None) => {
                    return Err(self.err(
                        key("command"),
                        "missing: give command = [\"/path/to/program\", \"arg\", …] or url = \"http://…\"",
                    ))
                }
                (Some(argv), None) => {
                    if argv.is_empty() || argv[0].trim().is_empty() {
                        return Err(self.err(
                            key("command"),
                            "empty: the first element is the program (run directly, no shell)",
                        ));
                    }
                    Probe::Command(argv.iter().map(|a| a.replace("{node}", &node)).collect())
                }
                (None, Some(url)) => self.check_url(&key("url"), &url.replace("{node}", &node))?,
            };
            let interval = self.duration(&key("interval"), &c.interval, Duration::from_secs(1))?;
            let timeout = self.duration(&key("timeout"), &c.timeout, interval / 2)?;
            if interval > MAX_PERIOD {
                return Err(self.err(key("interval"), "must be at most 1h"));
            }
            if timeout > interval {
                return Err(self.err(
                    key("timeout"),
                    format!(
                        "{} is longer than interval ({}): a run must end before the next starts",
                        super::validate::ms(timeout),
                        super::validate::ms(interval)
                    ),
                ));
            }
            let count = |k: &str, v: Option<i64>| -> Result<u32, ConfigError> {
                match v {
                    None => Ok(1),
                    Some(n) if (1..=100).contains(&n) => Ok(n as u32),
                    Some(n) => Err(self.err(key(k), format!("{n}: must be 1 to 100"))),
                }
            };
            let rise = count("rise", c.rise)?;
            let fall = count("fall", c.fall)?;
            let weight = match c.weight {
                None => None,
                Some(w) if (1..=254).contains(&w) => Some(w as u8),
                Some(w) => {
                    return Err(self.err(
                        key("weight"),
                        format!(
                            "{w}: must be 1 to 254 (the priority it takes off while the \
                             check fails; leave it out to put the node in FAULT instead)"
                        ),
                    ))
                }
            };
            let groups = match &c.algorithms {
                None => algorithms.to_vec(),
                Some(names) if names.is_empty() => {
                    return Err(self.err(
                        key("algorithms"),
                        "empty: leave it out to apply the check to every group",
                    ))
                }
                Some(names) => {
                    let mut v = Vec::new();
                    for n in names {
                        let k: AlgorithmKind = n
                            .parse()
                            .map_err(|e| self.err(key("algorithms"), format!("{e}")))?;
                        if !algorithms.contains(&k) {
                            return Err(
                                self.err(key("algorithms"), format!("{k} is not in `algorithms`"))
                            );
                        }
                        if !v.contains(&k) {
                            v.push(k);
                        }
                    }
                    v
                }
            };
            out.push(Check {
                name,
                probe,
                interval,
                timeout,
                rise,
                fall,
                algorithms: groups,
                weight,
            });
        }
        Ok(out)
    }

    fn check_url(&self, key: &str, url: &str) -> Result<Probe, ConfigError> {
        let rest = url.trim().strip_prefix("http://").ok_or_else(|| {
            self.err(
                key,
                format!("{url:?}: only http:// URLs (e.g. \"http://127.0.0.1:8080/health\")"),
            )
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(self.err(
                key,
                format!("{url:?}: no host (or user info, not supported)"),
            ));
        }
        let authority = if authority.ends_with(']') {
            format!("{authority}:80")
        } else if let Some((_, port)) = authority.rsplit_once(':') {
            if port.parse::<u16>().is_err() {
                return Err(self.err(key, format!("{url:?}: bad port {port:?}")));
            }
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Ok(Probe::Url {
            url: url.trim().to_string(),
            authority,
            path: path.to_string(),
        })
    }
}
