//! What a `SIGHUP` changes in a running node, and what it does not.
//!
//! `electd run` re-reads only the key file on `SIGHUP` (key rotation,
//! docs/security.md); every other setting is read once, at start. So that an edited
//! file is never silently ignored, the reload also loads the file again and names every
//! key whose value on disk differs from the running one ([`Config::differences`]): those
//! take effect only after a restart.

use super::{Config, Peer};

/// What `SIGHUP` re-reads, for the log.
pub const RELOADED: &str = "the keys of security.key_file";

/// What needs a restart, for the log.
pub const NEEDS_RESTART: &str = "every other setting (roster, timing, transport, algorithms, \
     policy, lease, hooks, admin token, checks, vips, state file, security mode)";

/// A roster entry as written (a DNS name is compared as the name, not as what it
/// resolved to, which may change without an edit).
fn peer_as_written(p: &Peer) -> String {
    let addr = p.name.clone().unwrap_or_else(|| p.addr.to_string());
    format!("{} {addr} {} {:?}", p.id, p.http, p.listen)
}

impl Config {
    /// The keys whose value in `disk` (the file loaded again) differs from this running
    /// configuration, in the file's order. The keys themselves (the key file's content)
    /// are not compared: `SIGHUP` reloads them.
    pub fn differences(&self, disk: &Config) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |key: &str, a: String, b: String| {
            if a != b {
                out.push(key.to_string());
            }
        };
        cmp("cluster", self.cluster.clone(), disk.cluster.clone());
        cmp(
            "node_id",
            self.node_id.to_string(),
            disk.node_id.to_string(),
        );
        cmp(
            "algorithms",
            format!("{:?}", self.algorithms),
            format!("{:?}", disk.algorithms),
        );
        let (t, u) = (&self.timing, &disk.timing);
        for (key, a, b) in [
            ("timing.heartbeat", t.heartbeat, u.heartbeat),
            (
                "timing.failure_timeout",
                t.failure_timeout,
                u.failure_timeout,
            ),
            ("timing.answer_timeout", t.answer_timeout, u.answer_timeout),
            (
                "timing.coordinator_timeout",
                t.coordinator_timeout,
                u.coordinator_timeout,
            ),
            (
                "timing.election_timeout",
                t.election_timeout_min,
                u.election_timeout_min,
            ),
            (
                "timing.election_timeout",
                t.election_timeout_max,
                u.election_timeout_max,
            ),
        ] {
            if a != b && !out.iter().any(|k| k == key) {
                out.push(key.to_string());
            }
        }
        let mut cmp = |key: &str, a: String, b: String| {
            if a != b {
                out.push(key.to_string());
            }
        };
        cmp(
            "transport",
            format!(
                "{:?} {:?} {:?} {} {}",
                self.link,
                self.multicast,
                self.resolve_every,
                self.batch_heartbeats,
                self.beat_thread
            ),
            format!(
                "{:?} {:?} {:?} {} {}",
                disk.link,
                disk.multicast,
                disk.resolve_every,
                disk.batch_heartbeats,
                disk.beat_thread
            ),
        );
        let mode = |c: &Config| match c.security {
            super::Security::Insecure => "insecure".to_string(),
            super::Security::Keyring(_) => format!("{:?}", c.key_file),
        };
        cmp("security", mode(self), mode(disk));
        cmp(
            "security.check_source",
            self.check_source.to_string(),
            disk.check_source.to_string(),
        );
        cmp(
            "hooks",
            format!("{:?}", self.hooks),
            format!("{:?}", disk.hooks),
        );
        cmp(
            "admin.token_file",
            format!("{:?} {:?}", self.admin_token_file, self.admin_token),
            format!("{:?} {:?}", disk.admin_token_file, disk.admin_token),
        );
        let (o, p) = (&self.options, &disk.options);
        cmp(
            "raft",
            format!("{} {} {}", o.pre_vote, o.check_quorum, o.ranked_timeouts),
            format!("{} {} {}", p.pre_vote, p.check_quorum, p.ranked_timeouts),
        );
        cmp(
            "policy",
            format!("{:?}", o.policy),
            format!("{:?}", p.policy),
        );
        cmp("lease", format!("{:?}", o.lease), format!("{:?}", p.lease));
        cmp(
            "state",
            format!("{:?} {}", self.raft_state_file, self.ephemeral),
            format!("{:?} {}", disk.raft_state_file, disk.ephemeral),
        );
        cmp(
            "process.realtime_priority",
            format!("{:?}", self.realtime_priority),
            format!("{:?}", disk.realtime_priority),
        );
        let roster = |c: &Config| c.peers.iter().map(peer_as_written).collect::<Vec<_>>();
        let (a, b) = (roster(self), roster(disk));
        if a.len() != b.len() {
            out.push("peer (the roster)".to_string());
        } else {
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                if x != y {
                    out.push(format!("peer[{i}]"));
                }
            }
        }
        let checks = |c: &Config| format!("{:?}", c.checks);
        if checks(self) != checks(disk) {
            out.push("check".to_string());
        }
        if format!("{:?}", self.vips) != format!("{:?}", disk.vips) {
            out.push("vip".to_string());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    const TEXT: &str = "cluster = \"t\"\nnode_id = 1\nalgorithms = [\"bully\"]\n\
        [timing]\nheartbeat = \"10ms\"\nfailure_timeout = \"100ms\"\n\
        [security]\ninsecure = true\n\
        [[peer]]\nid = 1\naddr = \"127.0.0.1:7001\"\nhttp = \"127.0.0.1:8001\"\n\
        [[peer]]\nid = 2\naddr = \"127.0.0.1:7002\"\nhttp = \"127.0.0.1:8002\"\n";

    fn parse(text: &str) -> Config {
        Config::parse(
            text,
            Path::new("t.toml"),
            Path::new("/nonexistent"),
            Vec::new(),
            None,
        )
        .expect("valid")
    }

    #[test]
    fn the_keys_that_differ_are_named_and_an_unchanged_file_has_none() {
        let running = parse(TEXT);
        assert_eq!(running.differences(&parse(TEXT)), Vec::<String>::new());
        let edits = [
            (
                "heartbeat = \"10ms\"",
                "heartbeat = \"20ms\"",
                "timing.heartbeat",
            ),
            ("cluster = \"t\"", "cluster = \"u\"", "cluster"),
            (
                "http = \"127.0.0.1:8002\"",
                "http = \"127.0.0.1:8012\"",
                "peer[1]",
            ),
            (
                "algorithms = [\"bully\"]",
                "algorithms = [\"bully\", \"ring\"]",
                "algorithms",
            ),
        ];
        for (from, to, key) in edits {
            let disk = parse(&TEXT.replace(from, to));
            assert_eq!(running.differences(&disk), vec![key.to_string()], "{to}");
        }
    }
}
