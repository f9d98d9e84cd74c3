//! The configuration digest: a short fingerprint of the part of a configuration that
//! every node of a cluster must share, so that nodes can tell that they run with
//! different settings (docs/observability.md, "Configuration drift").
//!
//! # What goes in
//! The cluster-wide settings, as the node understood them (effective values, defaults
//! filled in, overrides from the environment applied): the cluster name; the set of
//! algorithms; `[timing]`; `transport.multicast`; `[raft]`'s switches; per algorithm the
//! preemption policy and the lease settings; and the whole roster in file order (ring
//! order): each peer's id, UDP address, HTTP address and bind override as written (a
//! DNS name stays a name: nodes may resolve it differently), and its effective priority.
//!
//! Not in it: what is this node's own business and may differ between nodes of one
//! healthy cluster: `node_id`, every path (`[state]`, key file, admin token file, hook
//! command), `[hooks]`, `[[check]]`s, `[[vip]]`s, the link's retransmission tuning
//! (`transport.retransmit`, `rto_*`, `give_up`, `max_attempts`), `resolve_every`,
//! `batch_heartbeats`, `beat_thread`, `[security] check_source`, `[process]`, the log settings. The key itself is
//! not in it either: nodes with different keys cannot hear each other at all.
//!
//! # How it is computed
//! [`canonical`] writes those settings as UTF-8 text, one `key=value` line each (every
//! line ends with `\n`), in a fixed order; durations as whole nanoseconds; booleans as
//! `true`/`false`; strings (the cluster name, addresses) as JSON strings; an absent
//! value as `-`. The digest is the first 8 bytes of SHA-256 of that text, read
//! big-endian (0 becomes 1: 0 means "no digest" on the wire). The first line names the
//! format version (`electd-config-digest 1`), so a later change of the text gives
//! different digests rather than equal ones for different settings.
//!
//! `electd run` puts the digest of its configuration in the CONFIG body it sends to
//! every peer (docs/wire.md §11); `SIGHUP` can compare the file on disk with the
//! running configuration the same way.

use super::Config;
use sha2::{Digest as _, Sha256};
use std::fmt::Write as _;
use std::time::Duration;

/// The version named on the first line of [`canonical`].
pub(crate) const FORMAT: u32 = 1;

/// A configuration digest (never 0; see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigDigest(pub u64);

impl std::fmt::Display for ConfigDigest {
    /// 16 lowercase hex digits, as `/status` and the logs show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl ConfigDigest {
    /// The digest of a canonical text (SHA-256, first 8 bytes big-endian, 0 → 1).
    pub(crate) fn of_text(text: &str) -> ConfigDigest {
        let hash = Sha256::digest(text.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash[..8]);
        ConfigDigest(u64::from_be_bytes(first).max(1))
    }
}

impl Config {
    /// The digest of this configuration's cluster-wide part (see [`digest`](self)).
    pub fn digest(&self) -> ConfigDigest {
        ConfigDigest::of_text(&canonical(self))
    }
}

fn ns(d: Duration) -> u128 {
    d.as_nanos()
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The canonical text of `c`'s cluster-wide settings (see the module documentation),
/// e.g. to show two nodes' texts side by side.
pub(crate) fn canonical(c: &Config) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("electd-config-digest {FORMAT}"));
    line(format!("cluster={}", json(&c.cluster)));
    let mut algorithms = c.algorithms.clone();
    algorithms.sort();
    let names: Vec<&str> = algorithms.iter().map(|a| a.as_str()).collect();
    line(format!("algorithms={}", names.join(",")));
    let t = &c.timing;
    line(format!("timing.heartbeat={}", ns(t.heartbeat)));
    line(format!("timing.failure_timeout={}", ns(t.failure_timeout)));
    line(format!("timing.answer_timeout={}", ns(t.answer_timeout)));
    line(format!(
        "timing.coordinator_timeout={}",
        ns(t.coordinator_timeout)
    ));
    line(format!(
        "timing.election_timeout={}..{}",
        ns(t.election_timeout_min),
        ns(t.election_timeout_max)
    ));
    line(format!(
        "transport.multicast={}",
        c.multicast
            .map_or_else(|| "-".to_string(), |m| json(&m.to_string()))
    ));
    let o = &c.options;
    line(format!("raft.pre_vote={}", o.pre_vote));
    line(format!("raft.check_quorum={}", o.check_quorum));
    line(format!("raft.ranked_timeouts={}", o.ranked_timeouts));
    for &kind in &algorithms {
        let p = o.policy.preempt_for(kind);
        line(format!(
            "policy.{kind}=preempt:{},preempt_delay:{}",
            p.preempt,
            ns(p.delay)
        ));
    }
    for &kind in &algorithms {
        let quorum = o.lease.require_quorum.contains(&kind);
        let drift = o
            .lease
            .clock_drift
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or_else(|| "-".to_string(), |(_, d)| ns(*d).to_string());
        line(format!(
            "lease.{kind}=require_quorum:{quorum},clock_drift:{drift}"
        ));
    }
    for p in &c.peers {
        let addr = p.name.clone().unwrap_or_else(|| p.addr.to_string());
        let http = p.http_name.clone().unwrap_or_else(|| p.http.to_string());
        let listen = p
            .listen
            .map_or_else(|| "-".to_string(), |l| json(&l.to_string()));
        let mut s = String::new();
        let _ = write!(
            s,
            "peer={} addr={} http={} listen={listen} priority={}",
            p.id,
            json(&addr),
            json(&http),
            o.policy.priority(p.id)
        );
        line(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const BASE: &str = r#"
cluster = "prod"
algorithms = ["bully", "raft"]
[timing]
heartbeat = "10ms"
failure_timeout = "100ms"
[security]
insecure = true
[state]
ephemeral = true
[[peer]]
id = 1
addr = "127.0.0.1:5740"
http = "127.0.0.1:5741"
[[peer]]
id = 2
addr = "127.0.0.1:5750"
http = "127.0.0.1:5751"
[[peer]]
id = 3
addr = "127.0.0.1:5760"
http = "127.0.0.1:5761"
"#;

    fn load(text: &str, node: u32, env: &[(&str, &str)]) -> Config {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        // As `config check` loads it: what this machine allows (the real-time class of
        // `[process]`) is a note, not an error, and not in the digest either way.
        Config::parse_elsewhere(
            text,
            Path::new("electd.toml"),
            Path::new("/tmp"),
            env,
            Some(node),
        )
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .0
    }

    fn digest(text: &str) -> ConfigDigest {
        load(text, 1, &[]).digest()
    }

    /// `BASE` with `from` replaced by `to` (which must occur).
    fn edit(from: &str, to: &str) -> String {
        assert!(BASE.contains(from), "{from:?} not in the base config");
        BASE.replacen(from, to, 1)
    }

    #[test]
    fn every_node_of_one_file_has_the_same_digest() {
        let d = digest(BASE);
        for node in [2, 3] {
            assert_eq!(load(BASE, node, &[]).digest(), d, "node {node}");
        }
        // The same settings written differently: the digest is of what they mean.
        let reordered = edit(
            "algorithms = [\"bully\", \"raft\"]",
            "algorithms = [\"raft\", \"bully\"]",
        );
        assert_eq!(digest(&reordered), d, "the order of `algorithms`");
        let explicit = edit(
            "id = 2\n",
            &format!(
                "id = 2\npriority = {}\n",
                crate::contract::policy::DEFAULT_PRIORITY
            ),
        );
        assert_eq!(digest(&explicit), d, "the default priority written out");
        let spelled = edit("heartbeat = \"10ms\"", "heartbeat = \"10000us\"");
        assert_eq!(digest(&spelled), d, "one duration spelled two ways");
    }

    #[test]
    fn node_local_settings_do_not_change_the_digest() {
        let d = digest(BASE);
        // Only checked for a writable directory, never created.
        let state = std::env::temp_dir().join("electd-digest-{node}.state");
        let local = [
            (
                "[state]\nephemeral = true",
                format!("[state]\nfile = {:?}", state.display().to_string()),
            ),
            (
                "[security]\ninsecure = true",
                "[security]\ninsecure = true\ncheck_source = false".to_string(),
            ),
            (
                "[timing]",
                "[hooks]\non_leader_change = \"/bin/true\"\nhook_timeout = \"9s\"\n\
                 [transport]\nretransmit = \"3ms\"\nresolve_every = \"5s\"\n\
                 batch_heartbeats = false\n[process]\nrealtime_priority = 7\n[timing]"
                    .to_string(),
            ),
        ];
        for (from, to) in &local {
            assert_eq!(digest(&edit(from, to)), d, "{to}");
        }
        // Paths of this node, and its id, from the environment.
        let env = [
            ("ELECTD_STATE_FILE", state.to_str().unwrap()),
            ("ELECTD_NODE_ID", "3"),
        ];
        let text = edit("[state]\nephemeral = true", "");
        let with_env = Config::parse(
            &text,
            Path::new("electd.toml"),
            Path::new("/tmp"),
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            None,
        )
        .unwrap();
        assert_eq!(with_env.node_id, 3);
        assert_eq!(with_env.digest(), d);
        // A check of this node's own.
        let check = format!("{BASE}\n[[check]]\nname = \"db\"\ncommand = [\"/bin/true\"]\n");
        assert_eq!(digest(&check), d);
        // A virtual address of this node's own (on an interface every machine has).
        let vip = format!("{BASE}\n[[vip]]\naddress = \"10.0.0.100/24\"\ninterface = \"lo\"\nalgorithm = \"bully\"\n");
        assert_eq!(digest(&vip), d);
    }

    #[test]
    fn every_cluster_wide_setting_changes_the_digest() {
        let d = digest(BASE);
        let edits = [
            ("cluster = \"prod\"", "cluster = \"prod2\""),
            (
                "algorithms = [\"bully\", \"raft\"]",
                "algorithms = [\"bully\"]",
            ),
            ("heartbeat = \"10ms\"", "heartbeat = \"20ms\""),
            ("failure_timeout = \"100ms\"", "failure_timeout = \"120ms\""),
            ("[timing]", "[timing]\nelection_timeout = \"150ms..300ms\""),
            ("[timing]", "[timing]\nanswer_timeout = \"15ms\""),
            ("[timing]", "[timing]\ncoordinator_timeout = \"70ms\""),
            ("[timing]", "[raft]\npre_vote = false\n[timing]"),
            ("[timing]", "[raft]\ncheck_quorum = false\n[timing]"),
            ("[timing]", "[raft]\nranked_timeouts = false\n[timing]"),
            ("[timing]", "[policy]\npreempt = false\n[timing]"),
            (
                "[timing]",
                "[policy.bully]\npreempt_delay = \"1s\"\n[timing]",
            ),
            ("[timing]", "[lease]\nrequire_quorum = true\n[timing]"),
            ("[timing]", "[lease]\nclock_drift = \"1ms\"\n[timing]"),
            (
                "[timing]",
                "[transport]\nmulticast = \"239.255.70.1:5740\"\n[timing]",
            ),
            ("id = 2\n", "id = 2\npriority = 7\n"),
            ("id = 3\n", "id = 4\n"),
            ("127.0.0.1:5750", "127.0.0.1:5752"),
            ("127.0.0.1:5751", "127.0.0.1:5753"),
            ("id = 2\n", "id = 2\nlisten = \"0.0.0.0:5750\"\n"),
        ];
        let mut seen = std::collections::HashSet::from([d]);
        for (from, to) in edits {
            let e = digest(&edit(from, to));
            assert!(
                seen.insert(e),
                "{from:?} -> {to:?} gave a digest already seen"
            );
        }
        // The ring order is the roster's order.
        let swapped = BASE
            .replacen("id = 2\n", "id = 9\n", 1)
            .replacen("id = 3\n", "id = 2\n", 1);
        let swapped = swapped.replacen("id = 9\n", "id = 3\n", 1);
        assert_ne!(digest(&swapped), d, "peers 2 and 3 swapped in the ring");
    }

    #[test]
    fn the_canonical_text_and_its_digest() {
        let c = load(BASE, 1, &[]);
        let text = canonical(&c);
        assert!(text.starts_with("electd-config-digest 1\ncluster=\"prod\"\n"));
        assert!(text.ends_with(
            "peer=3 addr=\"127.0.0.1:5760\" http=\"127.0.0.1:5761\" listen=- priority=100\n"
        ));
        // The digest as docs/observability.md says to compute it.
        let hash = Sha256::digest(text.as_bytes());
        let expect = u64::from_be_bytes(hash[..8].try_into().unwrap());
        assert_eq!(c.digest(), ConfigDigest(expect));
        assert_eq!(c.digest().to_string(), format!("{expect:016x}"));
        // Algorithms in the order of their wire values, as docs/observability.md
        // says (it said "sorted by name", which gives hs before improved-bully).
        let mixed = load(
            &edit(
                "algorithms = [\"bully\", \"raft\"]",
                "algorithms = [\"hs\", \"raft\", \"lcr\", \"improved-bully\"]",
            ),
            1,
            &[],
        );
        assert!(
            canonical(&mixed).contains("\nalgorithms=improved-bully,lcr,hs,raft\n"),
            "{}",
            canonical(&mixed)
        );
        // A cluster name cannot forge a line.
        let evil = load(&edit("\"prod\"", "\"prod\\nalgorithms=lcr\""), 1, &[]);
        assert_eq!(canonical(&evil).lines().count(), text.lines().count());
    }
}
