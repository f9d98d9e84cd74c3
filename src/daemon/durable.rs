//! Durable algorithm state on disk, one entry per algorithm: the fencing token each
//! group holds (its term, and the leader it accepted for it as `voted_for`), which for
//! Raft is the current term and vote (Ongaro & Ousterhout 2014, Figure 2: "persistent
//! state on all servers … updated on stable storage before responding to RPCs").
//! Without it a restarted Raft node could vote twice in one term, and a restarted
//! leader of any algorithm would announce a term the cluster has already used.
//!
//! The file is small JSON, written to a temporary file, flushed to disk, then renamed
//! over the old one (and the directory synced), so a crash leaves either the old or the
//! new state, never a torn one. The runtime stores the state after every step that
//! changed it and before that step's datagrams leave the node.

use crate::contract::algorithm::{AlgorithmKind, Durable};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a state file of electd ({reason}); move it away to start fresh")]
    Corrupt { path: PathBuf, reason: String },
}

#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Entry {
    term: u64,
    voted_for: Option<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    groups: BTreeMap<String, Entry>,
}

/// Read the state of a previous life; a missing file is an empty state.
pub(crate) fn load(path: &Path) -> Result<Vec<(AlgorithmKind, Durable)>, DurableError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(DurableError::Io {
                path: path.into(),
                source,
            })
        }
    };
    let corrupt = |reason: String| DurableError::Corrupt {
        path: path.into(),
        reason,
    };
    let file: File = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    if file.version != 1 {
        return Err(corrupt(format!("version {} (expected 1)", file.version)));
    }
    let mut out = Vec::new();
    for (name, e) in file.groups {
        let kind: AlgorithmKind = name.parse().map_err(|e| corrupt(format!("{e}")))?;
        out.push((
            kind,
            Durable {
                term: e.term,
                voted_for: e.voted_for,
            },
        ));
    }
    Ok(out)
}

/// Replace the file with `states`, atomically and durably.
pub(crate) fn store(path: &Path, states: &[(AlgorithmKind, Durable)]) -> Result<(), DurableError> {
    let io = |source| DurableError::Io {
        path: path.into(),
        source,
    };
    let file = File {
        version: 1,
        groups: states
            .iter()
            .map(|(k, d)| {
                (
                    k.as_str().to_string(),
                    Entry {
                        term: d.term,
                        voted_for: d.voted_for,
                    },
                )
            })
            .collect(),
    };
    let text = serde_json::to_string(&file).map_err(|e| io(std::io::Error::other(e)))?;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("electd-durable-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("raft.state")
    }

    #[test]
    fn round_trip_missing_and_corrupt() {
        let path = tmp("rt");
        assert!(
            load(&path).unwrap().is_empty(),
            "a missing file is an empty state"
        );
        let states = vec![(
            AlgorithmKind::Raft,
            Durable {
                term: 42,
                voted_for: Some(3),
            },
        )];
        store(&path, &states).unwrap();
        assert_eq!(load(&path).unwrap(), states);
        store(
            &path,
            &[(
                AlgorithmKind::Raft,
                Durable {
                    term: 43,
                    voted_for: None,
                },
            )],
        )
        .unwrap();
        assert_eq!(load(&path).unwrap()[0].1.term, 43);
        for bad in [
            "",
            "{",
            "{\"version\":2,\"groups\":{}}",
            "{\"version\":1,\"groups\":{\"paxos\":{\"term\":1,\"voted_for\":null}}}",
        ] {
            std::fs::write(&path, bad).unwrap();
            let err = load(&path).unwrap_err().to_string();
            assert!(
                err.contains("raft.state") && err.contains("not a state file"),
                "{err}"
            );
        }
    }
}
