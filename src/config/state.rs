//! `[state]`: the file that keeps every group's fencing token (and Raft's vote) across
//! restarts, or the explicit choice to run without it.

use super::raw::RawConfig;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::AlgorithmKind;
use crate::NodeId;
use std::path::{Path, PathBuf};

impl Validator<'_> {
    /// The state file (`{node}` substituted, absolute, writable), `ephemeral`, and the
    /// state file's directory if it does not exist yet but `run` can create it.
    pub(super) fn state(
        &self,
        raw: &RawConfig,
        node_id: NodeId,
        algorithms: &[AlgorithmKind],
    ) -> Result<(Option<PathBuf>, bool, Option<PathBuf>), ConfigError> {
        // `[state] file`; `[raft] state_file` is its older spelling.
        let (state_key, state_file) = match (&raw.state.file, &raw.raft.state_file) {
            (Some(f), _) => ("state.file", Some(f.as_str())),
            (None, f) => ("raft.state_file", f.as_deref()),
        };
        let mut create = None;
        let raft_state_file = match state_file.map(str::trim) {
            None | Some("") => None,
            Some(p) => {
                let path = self.path(Path::new(&p.replace("{node}", &node_id.to_string())));
                match self.check_state_file(state_key, &path) {
                    Ok(dir) => create = dir,
                    Err(e) => self.host_local(e)?,
                }
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
        let voter = algorithms.iter().find(|k| k.info().durable_vote);
        if let (None, false, Some(kind)) = (&raft_state_file, ephemeral, voter) {
            return Err(self.err(
                "state.file",
                format!(
                    "{kind} needs durable state: without it a restarted node may vote twice in \
                     one term and elect a second leader. Set [state] file (e.g. \
                     \"/var/lib/electd/{{node}}.state\"), or [state] ephemeral = true to run \
                     without it knowingly"
                ),
            ));
        }
        Ok((raft_state_file, ephemeral, create))
    }

    /// The state file must be writable where it is: its directory exists (or can be
    /// created by this user: `run` creates it, and the directory is returned) and is
    /// writable, and the path is not a directory. (A node that cannot persist its vote
    /// must not take part: better refuse to start than run mute.)
    fn check_state_file(&self, key: &str, path: &Path) -> Result<Option<PathBuf>, ConfigError> {
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
            // The nearest path that exists must be a writable directory: `run` creates
            // the rest below it.
            let existing = dir.ancestors().skip(1).find(|a| a.exists());
            // A file where a directory of the path must be.
            if let Some(file) = dir.ancestors().find(|a| a.exists() && !a.is_dir()) {
                return Err(self.err(
                    key,
                    format!(
                        "{}: {} is a file, not a directory",
                        path.display(),
                        file.display()
                    ),
                ));
            }
            return match existing {
                Some(a) if a.is_dir() && writable(a) && !dir.exists() => {
                    Ok(Some(dir.to_path_buf()))
                }
                _ => Err(self.err(
                    key,
                    format!(
                        "{}: the directory {} does not exist and this user cannot create it \
                         (create it, writable by electd; under systemd the unit's \
                         StateDirectory does)",
                        path.display(),
                        dir.display()
                    ),
                )),
            };
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
        Ok(None)
    }
}

/// Create `dir` (and its missing parents) for the state file, the new directories with
/// mode 0700: `run` does this before it starts when the directory does not exist yet.
pub fn create_state_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
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
