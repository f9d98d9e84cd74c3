//! Durable algorithm state on disk, one entry per algorithm: the fencing token each
//! group holds (its term, and the leader it accepted for it as `voted_for`), which for
//! Raft is the current term and vote (Ongaro & Ousterhout 2014, Figure 2: "persistent
//! state on all servers … updated on stable storage before responding to RPCs").
//! Without it a restarted Raft node could vote twice in one term, and a restarted
//! leader of any algorithm would announce a term the cluster has already used.
//!
//! The file holds two fixed-size slots of [`SLOT`] bytes, each a complete record:
//! a header line `electd-state 2 <sequence> <digest>` and the state as one line of
//! JSON (`{"version":1,"groups":{"raft":{"term":7,"voted_for":3}}}`), padded with
//! spaces. A write overwrites the older slot in place and flushes it with one
//! `fdatasync`; a crash in the middle leaves that slot torn (its digest, the first 16
//! hex digits of the record's SHA-256, does not match) and the other slot whole, and
//! a read takes the intact record with the highest sequence. Writing a new file and
//! renaming it over the old one costs three flushes (file, rename, directory) — about
//! 0.6 ms against 0.16 ms on the test machine — and every follower writes when a new
//! leader's token arrives, before it acknowledges: with 64 processes on two cores
//! those flushes were most of the time the announcement took to reach everyone.
//!
//! The record also lists the groups the operator drained (`"drained":["bully"]`,
//! `POST /admin/drain`; docs/policy.md): a drain holds until undrain, across restarts.
//! The key is left out while nothing is drained, so such a record is byte for byte what
//! earlier versions wrote, and their files (without the key) load as "nothing
//! drained". An earlier version refuses a file that lists a drain (an unknown key):
//! it fails at start rather than forget the drain.
//!
//! A term at or above 2^32 is refused when the file is read ([`MAX_TERM`]): the fencing
//! token is `term · 2^32 + leader` and cannot carry it, and a node holding such a term
//! would stay out of every election unseen (its peers drop its datagrams as
//! `future_epoch`).
//!
//! The file is created (or converted from the one-record JSON file of earlier
//! versions, which is still read) by writing a new file and renaming it, once, when the
//! node starts; a file removed while the node runs is created again the same way at
//! the next write. The runtime stores the state after every step that changed it and
//! before that step's datagrams leave the node.

use crate::contract::algorithm::{AlgorithmKind, Durable};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The largest term a state file may hold: a fencing token is `term · 2^32 + leader`
/// ([`crate::contract::algorithm::Token::as_u64`]), exact for terms below 2^32.
pub(crate) const MAX_TERM: u64 = u32::MAX as u64;

/// Size of one record slot; the file is two of them.
pub(crate) const SLOT: usize = 4096;
const MAGIC: &str = "electd-state";

/// Why the state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The state file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file holds no intact state record.
    #[error("{path}: not a state file of electd ({reason}); move it away to start fresh")]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A group's term is above [`MAX_TERM`].
    #[error(
        "{path}: the {algorithm} group holds term {term}, above {MAX_TERM} (2^32 - 1), the \
         largest a fencing token carries: the file was damaged or edited. Refused: with it \
         this node would stay out of every election unseen (its peers drop datagrams whose \
         term is that far ahead). Set the term to the cluster's (`electd status`) or move \
         the file away"
    )]
    TermTooLarge {
        /// The state file.
        path: PathBuf,
        /// The group.
        algorithm: AlgorithmKind,
        /// The term it holds.
        term: u64,
    },
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
    /// The groups drained by the operator; absent (not written) while none is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    drained: Vec<String>,
}

/// Every group's durable state, as the runtime keeps it.
pub(crate) type States = Vec<(AlgorithmKind, Durable)>;

/// What the state file holds: every group's durable state and the groups drained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Saved {
    /// Every group's durable state (the algorithms').
    pub(crate) groups: States,
    /// The groups this node was drained in (`POST /admin/drain`), until undrained.
    pub(crate) drained: Vec<AlgorithmKind>,
}

/// Read the algorithm state of a previous life; a missing file is an empty state.
pub fn load(path: &Path) -> Result<States, DurableError> {
    read(path).map(|(_, saved)| saved.groups)
}

#[cfg(test)]
/// Read everything the state file holds (algorithm state and drains).
pub(crate) fn load_saved(path: &Path) -> Result<Saved, DurableError> {
    read(path).map(|(_, saved)| saved)
}

/// The state in `path` and the sequence of its record (0: none, or the old format).
fn read(path: &Path) -> Result<(u64, Saved), DurableError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, Saved::default())),
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
    if bytes.first() == Some(&b'{') {
        let text = std::str::from_utf8(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let saved = parse_json(text).map_err(corrupt)?;
        return bounded(path, saved).map(|s| (0, s));
    }
    if bytes.is_empty() {
        return Err(corrupt(
            "the file is empty (cut short before its first record was written?)".into(),
        ));
    }
    let mut best: Option<(u64, Saved)> = None;
    let mut problems = Vec::new();
    for (i, slot) in bytes.chunks(SLOT).take(2).enumerate() {
        match parse_slot(slot) {
            Ok((seq, states)) => {
                if best.as_ref().is_none_or(|(b, _)| seq > *b) {
                    best = Some((seq, states));
                }
            }
            Err(why) => problems.push(format!("slot {i}: {why}")),
        }
    }
    let (seq, saved) =
        best.ok_or_else(|| corrupt(format!("no intact record: {}", problems.join("; "))))?;
    bounded(path, saved).map(|s| (seq, s))
}

/// `saved`, unless a group's term is above [`MAX_TERM`].
fn bounded(path: &Path, saved: Saved) -> Result<Saved, DurableError> {
    match saved.groups.iter().find(|(_, d)| d.term > MAX_TERM) {
        Some(&(algorithm, d)) => Err(DurableError::TermTooLarge {
            path: path.into(),
            algorithm,
            term: d.term,
        }),
        None => Ok(saved),
    }
}

fn parse_json(text: &str) -> Result<Saved, String> {
    let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if file.version != 1 {
        return Err(format!("version {} (expected 1)", file.version));
    }
    let mut out = Vec::new();
    for (name, e) in file.groups {
        let kind: AlgorithmKind = name.parse().map_err(|e| format!("{e}"))?;
        out.push((
            kind,
            Durable {
                term: e.term,
                voted_for: e.voted_for,
            },
        ));
    }
    let mut drained = Vec::new();
    for name in file.drained {
        let kind: AlgorithmKind = name.parse().map_err(|e| format!("drained: {e}"))?;
        if !drained.contains(&kind) {
            drained.push(kind);
        }
    }
    Ok(Saved {
        groups: out,
        drained,
    })
}

/// The first 16 hex digits of the SHA-256 of `json`.
fn digest(json: &str) -> String {
    Sha256::digest(json.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One slot: `(sequence, saved)`, or why it is not an intact record.
fn parse_slot(slot: &[u8]) -> Result<(u64, Saved), String> {
    let text = std::str::from_utf8(slot).map_err(|_| "not text".to_string())?;
    let mut lines = text.splitn(3, '\n');
    let header = lines.next().unwrap_or_default();
    let json = lines.next().ok_or("no record line")?;
    let fields: Vec<&str> = header.split(' ').collect();
    let [magic, version, seq, sum] = fields[..] else {
        return Err(format!("bad header {header:?}"));
    };
    if magic != MAGIC || version != "2" {
        return Err(format!("bad header {header:?}"));
    }
    let seq: u64 = seq.parse().map_err(|_| format!("bad sequence {seq:?}"))?;
    if digest(json) != sum {
        return Err("digest does not match (torn write)".into());
    }
    Ok((seq, parse_json(json)?))
}

/// The slot image of record `seq` holding `states` and the `drained` groups.
fn record(
    seq: u64,
    states: &[(AlgorithmKind, Durable)],
    drained: &[AlgorithmKind],
) -> std::io::Result<Vec<u8>> {
    let file = File {
        version: 1,
        drained: drained.iter().map(|k| k.as_str().to_string()).collect(),
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
    let json = serde_json::to_string(&file).map_err(std::io::Error::other)?;
    let mut out = format!("{MAGIC} 2 {seq} {}\n{json}\n", digest(&json)).into_bytes();
    if out.len() > SLOT {
        return Err(std::io::Error::other(format!(
            "state record of {} bytes does not fit a slot of {SLOT}",
            out.len()
        )));
    }
    out.resize(SLOT, b' ');
    Ok(out)
}

/// The open state file of a running node (see the module documentation).
#[derive(Debug)]
pub(crate) struct StateFile {
    path: PathBuf,
    file: std::fs::File,
    /// Sequence of the newest record; record k lives in slot k mod 2.
    seq: u64,
}

/// A state file opened, and read, before the runtime starts: `electd run` opens it
/// before it says "running" and tells systemd `READY=1`, so that a file it must refuse
/// stops the start before either (see [`crate::daemon::runtime::NetOptions::state`]).
#[derive(Debug)]
pub struct OpenedState {
    pub(crate) file: StateFile,
    pub(crate) saved: Saved,
}

/// Read the state file at `path` and lay it out afresh, as the runtime does at start
/// ([`StateFile::open`]).
pub fn open_state(path: &Path) -> Result<OpenedState, DurableError> {
    let (file, saved) = StateFile::open(path)?;
    Ok(OpenedState { file, saved })
}

impl StateFile {
    /// Read the state of a previous life at `path` and lay the file out afresh (a new
    /// file renamed over the old one) holding it, so that later writes go in place.
    /// Fails at start, not at the first election, if it cannot be written.
    pub(crate) fn open(path: &Path) -> Result<(StateFile, Saved), DurableError> {
        let (seq, saved) = read(path)?;
        let sf = StateFile::create(
            path,
            seq.saturating_add(2).max(2),
            &saved.groups,
            &saved.drained,
        )?;
        Ok((sf, saved))
    }

    /// A new file whose newest record, `seq`, and the one before hold `states` and
    /// `drained`.
    fn create(
        path: &Path,
        seq: u64,
        states: &[(AlgorithmKind, Durable)],
        drained: &[AlgorithmKind],
    ) -> Result<Self, DurableError> {
        let io = |source| DurableError::Io {
            path: path.into(),
            source,
        };
        let mut image = vec![0u8; 2 * SLOT];
        for k in [seq.saturating_sub(1), seq] {
            let at = (k % 2) as usize * SLOT;
            image[at..at + SLOT].copy_from_slice(&record(k, states, drained).map_err(io)?);
        }
        let tmp = temp_path(path);
        {
            let mut f = std::fs::File::create(&tmp).map_err(io)?;
            f.write_all(&image).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        Ok(StateFile {
            path: path.into(),
            file,
            seq,
        })
    }

    /// Store `states` and the `drained` groups durably: the older slot overwritten in
    /// place and flushed. A file removed meanwhile is created again.
    pub(crate) fn store(
        &mut self,
        states: &[(AlgorithmKind, Durable)],
        drained: &[AlgorithmKind],
    ) -> Result<(), DurableError> {
        let io = |source| DurableError::Io {
            path: self.path.clone(),
            source,
        };
        let seq = self.seq.saturating_add(1);
        let removed = self.file.metadata().map_err(io)?.nlink() == 0;
        if removed {
            *self = StateFile::create(&self.path, seq, states, drained)?;
            return Ok(());
        }
        let image = record(seq, states, drained).map_err(io)?;
        self.file
            .write_all_at(&image, (seq % 2) * SLOT as u64)
            .map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.seq = seq;
        Ok(())
    }
}

/// Where a new state file is written before its rename: the whole name and ".tmp".
/// (`with_extension` replaced the extension, so nodes sharing a directory with
/// `file = "st.{node}"` all wrote `st.tmp` and could rename each other's records into
/// place: the audit.)
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_state_file_has_a_temporary_of_its_own() {
        let a = temp_path(Path::new("/var/lib/electd/st.1"));
        let b = temp_path(Path::new("/var/lib/electd/st.2"));
        assert_eq!(a, Path::new("/var/lib/electd/st.1.tmp"));
        assert_ne!(a, b);
        assert_eq!(temp_path(Path::new("node")), Path::new("node.tmp"));
    }

    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("electd-durable-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("raft.state")
    }

    fn raft(term: u64, voted_for: Option<u32>) -> States {
        vec![(AlgorithmKind::Raft, Durable { term, voted_for })]
    }

    #[test]
    fn round_trip_missing_and_corrupt() {
        let path = tmp("rt");
        assert!(
            load(&path).unwrap().is_empty(),
            "a missing file is an empty state"
        );
        let (mut sf, stored) = StateFile::open(&path).unwrap();
        assert_eq!(stored, Saved::default());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 * SLOT as u64);
        sf.store(&raft(42, Some(3)), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(42, Some(3)));
        sf.store(&raft(43, None), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(43, None));
        // Reopened (a restart): the state of the previous life, and writes go on.
        drop(sf);
        let (mut sf, stored) = StateFile::open(&path).unwrap();
        assert_eq!(stored.groups, raft(43, None));
        sf.store(&raft(44, Some(1)), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(44, Some(1)));
        for bad in [
            "",
            "{",
            "{\"version\":2,\"groups\":{}}",
            "{\"version\":1,\"groups\":{\"paxos\":{\"term\":1,\"voted_for\":null}}}",
            "electd-state 2 1 0000000000000000\n{}\n",
            "hello",
        ] {
            std::fs::write(&path, bad).unwrap();
            let err = load(&path).unwrap_err().to_string();
            assert!(
                err.contains("raft.state") && err.contains("not a state file"),
                "{bad:?}: {err}"
            );
        }
    }

    /// The one-record JSON file of earlier versions is read, and rewritten as slots.
    #[test]
    fn the_json_file_of_earlier_versions_is_read_and_converted() {
        let path = tmp("legacy");
        std::fs::write(
            &path,
            r#"{"version":1,"groups":{"raft":{"term":9,"voted_for":2}}}"#,
        )
        .unwrap();
        let (mut sf, stored) = StateFile::open(&path).unwrap();
        assert_eq!(stored.groups, raft(9, Some(2)));
        assert!(std::fs::read(&path).unwrap().starts_with(MAGIC.as_bytes()));
        sf.store(&raft(10, None), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(10, None));
    }

    /// A write torn by a crash spoils only the slot it was writing: the read falls
    /// back to the other slot, the record before it. Both slots spoiled is an error.
    #[test]
    fn a_torn_write_falls_back_to_the_previous_record() {
        let path = tmp("torn");
        let (mut sf, _) = StateFile::open(&path).unwrap();
        sf.store(&raft(5, Some(1)), &[]).unwrap();
        sf.store(&raft(6, Some(2)), &[]).unwrap();
        let newest = (sf.seq % 2) as usize * SLOT;
        let mut bytes = std::fs::read(&path).unwrap();
        // Half of the newest record written: its tail is the older record's bytes.
        let json_at = newest + bytes[newest..].iter().position(|&b| b == b'\n').unwrap() + 1;
        bytes[json_at + 20] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load(&path).unwrap(), raft(5, Some(1)));
        let older = SLOT - newest;
        bytes[older + 30] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("no intact record"), "{err}");
        // A file cut short (a crash while it was first laid out) is not a record either.
        std::fs::write(&path, &bytes[..10]).unwrap();
        assert!(load(&path).is_err());
        // An empty file says so (the reason was blank: "no intact record: ").
        std::fs::write(&path, b"").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("the file is empty"), "{err}");
    }

    /// Damage at the very start of the file (slot 0's header zeroed, as a torn sector
    /// leaves it) spoils slot 0 only: the read takes slot 1's record, whichever of the
    /// two was newer.
    #[test]
    fn a_damaged_first_slot_header_falls_back_to_the_second_slot() {
        let path = tmp("head");
        let (mut sf, _) = StateFile::open(&path).unwrap();
        let mut history = Vec::new();
        for term in 7..=9 {
            sf.store(&raft(term, None), &[]).unwrap();
            history.push(raft(term, None));
        }
        // Once with the newest record in slot 1, once with the older one there.
        for round in 0..2 {
            if round == 1 {
                sf.store(&raft(10, None), &[]).unwrap();
                history.push(raft(10, None));
            }
            let (last, prev) = (&history[history.len() - 1], &history[history.len() - 2]);
            let in_slot1 = if sf.seq % 2 == 1 { last } else { prev };
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[..8].fill(0);
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(&load(&path).unwrap(), in_slot1, "round {round}");
        }
    }

    /// Drains are kept with the state (issue 28, item 1): stored, read back after a
    /// reopen (a restart), and cleared by a store without them. A record without a
    /// drain is the record earlier versions wrote, byte for byte.
    #[test]
    fn drains_are_stored_and_a_record_without_one_is_the_old_format() {
        let path = tmp("drained");
        let (mut sf, _) = StateFile::open(&path).unwrap();
        let both = [AlgorithmKind::Bully, AlgorithmKind::Raft];
        sf.store(&raft(4, Some(2)), &both).unwrap();
        drop(sf);
        let (mut sf, saved) = StateFile::open(&path).unwrap();
        assert_eq!(saved.groups, raft(4, Some(2)));
        assert_eq!(saved.drained, both.to_vec());
        sf.store(&raft(4, Some(2)), &[]).unwrap();
        assert!(load_saved(&path).unwrap().drained.is_empty());
        // Once both slots hold records written without a drain, the file is as an
        // earlier version wrote it.
        sf.store(&raft(4, Some(2)), &[]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("drained"), "{text}");
    }

    /// A file as the version before drains were kept wrote it (two slots, each a
    /// header and the JSON of `{"version":1,"groups":…}`) still loads: nothing drained.
    #[test]
    fn a_file_of_the_previous_version_still_loads() {
        let path = tmp("previous");
        let slot = |seq: u64, json: &str| {
            let mut s = format!("electd-state 2 {seq} {}\n{json}\n", digest(json)).into_bytes();
            s.resize(SLOT, b' ');
            s
        };
        let older = r#"{"version":1,"groups":{"bully":{"term":6,"voted_for":3},"raft":{"term":8,"voted_for":null}}}"#;
        let newer = r#"{"version":1,"groups":{"bully":{"term":7,"voted_for":3},"raft":{"term":9,"voted_for":2}}}"#;
        // Record 5 in slot 1, record 6 (the newest) in slot 0.
        let mut image = slot(6, newer);
        image.extend(slot(5, older));
        std::fs::write(&path, &image).unwrap();
        let (mut sf, saved) = StateFile::open(&path).unwrap();
        let want = vec![
            (
                AlgorithmKind::Bully,
                Durable {
                    term: 7,
                    voted_for: Some(3),
                },
            ),
            (
                AlgorithmKind::Raft,
                Durable {
                    term: 9,
                    voted_for: Some(2),
                },
            ),
        ];
        assert_eq!(saved.groups, want);
        assert!(saved.drained.is_empty());
        sf.store(&want, &[AlgorithmKind::Bully]).unwrap();
        assert_eq!(
            load_saved(&path).unwrap().drained,
            vec![AlgorithmKind::Bully]
        );
    }

    /// A term no fencing token can carry (issue 28, item 7: 2^40, u64::MAX) is refused
    /// with a message naming the file, the group and the term; 2^32 - 1 is accepted.
    #[test]
    fn a_term_above_what_a_token_carries_is_refused() {
        let path = tmp("huge");
        for term in [MAX_TERM + 1, 1 << 40, u64::MAX] {
            let (mut sf, _) = StateFile::open(&path).unwrap();
            sf.store(&raft(term, Some(2)), &[]).unwrap();
            drop(sf);
            let err = StateFile::open(&path).unwrap_err().to_string();
            assert!(
                err.contains("raft.state")
                    && err.contains(&format!("term {term}"))
                    && err.contains("raft group"),
                "{err}"
            );
            // The old one-record format too.
            std::fs::write(
                &path,
                format!(r#"{{"version":1,"groups":{{"raft":{{"term":{term},"voted_for":2}}}}}}"#),
            )
            .unwrap();
            assert!(matches!(
                load(&path),
                Err(DurableError::TermTooLarge { term: t, .. }) if t == term
            ));
            std::fs::remove_file(&path).unwrap();
        }
        let (mut sf, _) = StateFile::open(&path).unwrap();
        sf.store(&raft(MAX_TERM, Some(2)), &[]).unwrap();
        drop(sf);
        assert_eq!(load(&path).unwrap(), raft(MAX_TERM, Some(2)));
    }

    /// A state file removed while the node runs is created again at the next write.
    #[test]
    fn a_removed_file_is_created_again() {
        let path = tmp("removed");
        let (mut sf, _) = StateFile::open(&path).unwrap();
        sf.store(&raft(3, None), &[]).unwrap();
        std::fs::remove_file(&path).unwrap();
        sf.store(&raft(4, Some(2)), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(4, Some(2)));
        sf.store(&raft(5, Some(2)), &[]).unwrap();
        assert_eq!(load(&path).unwrap(), raft(5, Some(2)));
    }
}
