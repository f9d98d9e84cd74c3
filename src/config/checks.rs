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
//!
//! The command's program must exist and be executable where the node runs (a path with
//! a `/`, relative to the daemon's working directory, or a name found on `PATH`): a
//! check that cannot run fails every run and would keep the node out of every group it
//! applies to, so `run` and `config check` refuse it, naming the key.

use super::raw::RawCheck;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::AlgorithmKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a check runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
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
    pub(crate) probe: Probe,
    /// Time between the starts of two runs.
    pub(crate) interval: Duration,
    /// A run still going after this fails (a command's process group is killed).
    pub(crate) timeout: Duration,
    /// Passes in a row that make a failing check pass.
    pub(crate) rise: u32,
    /// Failures in a row that make a passing check fail.
    pub(crate) fall: u32,
    /// The groups it applies to.
    pub algorithms: Vec<AlgorithmKind>,
    /// `weight`: while failing, lower this node's priority by this much instead of
    /// putting it in FAULT (`None`: FAULT).
    pub(crate) weight: Option<u8>,
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
                    let argv: Vec<String> =
                        argv.iter().map(|a| a.replace("{node}", &node)).collect();
                    if let Err(why) = find_program(&argv[0]) {
                        self.host_local(self.err(
                            key("command"),
                            format!(
                                "{why}: the check would fail every run and keep this node out \
                                 of every group it applies to"
                            ),
                        ))?;
                    }
                    Probe::Command(argv)
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
        // `http://:80/` has an authority but no host.
        if authority.is_empty() || authority.starts_with(':') || authority.contains('@') {
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

/// The program `program` runs as, found the way `execvp(3)` finds it: a name with a `/`
/// is a path (relative to the working directory), any other name is looked up in the
/// directories of `PATH` (`/bin:/usr/bin` when it is unset). Err says why it cannot be
/// run: no such file, a directory, not executable, or not on `PATH`.
pub fn find_program(program: impl AsRef<std::ffi::OsStr>) -> Result<PathBuf, String> {
    let program = program.as_ref();
    if program.is_empty() {
        return Err("an empty program name".into());
    }
    if std::os::unix::ffi::OsStrExt::as_bytes(program).contains(&b'/') {
        let p = Path::new(program);
        return match std::fs::metadata(p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(format!("{program:?}: no such file"))
            }
            Err(e) => Err(format!("{program:?}: {e}")),
            Ok(m) if m.is_dir() => Err(format!("{program:?} is a directory")),
            Ok(_) if !executable(p) => Err(format!(
                "{program:?} is not executable by this user (chmod +x it)"
            )),
            Ok(_) => Ok(p.to_path_buf()),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    for dir in std::env::split_paths(&path) {
        // An empty entry means the working directory (POSIX); execvp honours it.
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        if candidate.is_file() && executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(format!(
        "{program:?}: no such program on PATH ({}); give its full path",
        path.to_string_lossy()
    ))
}

/// May this process execute `path` (access(2) with X_OK)?
fn executable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads the NUL-terminated path and touches nothing else.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::find_program;

    #[test]
    fn programs_are_found_on_path_or_refused_with_the_reason() {
        let sh = find_program("sh").expect("sh is on PATH");
        assert!(sh.is_absolute() || sh.starts_with("."), "{sh:?}");
        assert_eq!(find_program("/bin/sh"), Ok("/bin/sh".into()));
        let dir = std::env::temp_dir().join(format!("electd-prog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("not-executable");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        for (program, needle) in [
            ("/nonexistent/electd-check".to_string(), "no such file"),
            (
                "electd-no-such-program-here".to_string(),
                "no such program on PATH",
            ),
            (dir.display().to_string(), "is a directory"),
            (plain.display().to_string(), "not executable"),
        ] {
            let e = find_program(&program).expect_err(&program);
            assert!(e.contains(needle), "{program}: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
