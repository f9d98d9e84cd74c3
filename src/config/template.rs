//! `electd config init`: the text of a complete, commented cluster configuration for
//! N hosts, so a deployment starts from a working file instead of a blank page.
//!
//! # Contract
//! - The text is valid for [`crate::config::Config::load`] for every node id of the
//!   roster it writes (tested below), given that the key file it names exists.
//! - Every section and key of the format (see [`crate::config`]) appears, set or
//!   commented out with a one-line explanation, so the file doubles as reference.
//! - Addresses: either N consecutive IPv4 addresses from a base (`10.0.0.1`,
//!   `10.0.0.2`, …) or one host per node (IP literal or DNS name); every node uses the
//!   same UDP and HTTP ports (one node per host).
//! - Timings are for a LAN or a data centre (100 ms heartbeat, 1 s failure timeout),
//!   not the 10 ms figures of the loopback demo; the comments say how they relate.

use crate::contract::algorithm::AlgorithmKind;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// How the security section is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyChoice {
    /// `key_file = "…"` with this path (the file itself is not written).
    KeyFile(String),
    /// `insecure = true`: unauthenticated datagrams (tests and labs only).
    Insecure,
}

/// Where the nodes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hosts {
    /// N consecutive IPv4 addresses from this one.
    Base(Ipv4Addr),
    /// One host (IP or DNS name) per node, in node id order.
    List(Vec<String>),
}

/// The parameters of `electd config init`.
#[derive(Clone, Debug)]
pub struct Template {
    /// Roster size N (1 ..= 1000); the ids are 1 ..= N.
    pub nodes: usize,
    /// The cluster name (1 to 64 characters, no quotes).
    pub cluster: String,
    /// The algorithms every node runs (at least one).
    pub algorithms: Vec<AlgorithmKind>,
    /// Where the nodes are.
    pub hosts: Hosts,
    /// The UDP port of every node (election traffic).
    pub udp_port: u16,
    /// The HTTP API port of every node.
    pub http_port: u16,
    /// How the security section is written.
    pub key: KeyChoice,
    /// A multicast group for broadcasts, or `None` (unicast, commented-out example).
    pub multicast: Option<SocketAddr>,
}

/// Why a template cannot be written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TemplateError {
    /// The node count is outside 1 ..= 1000.
    #[error("--nodes must be 1 ..= 1000 (got {0})")]
    Nodes(usize),
    /// The host list and the node count disagree.
    #[error("--hosts lists {hosts} hosts but --nodes is {nodes}")]
    HostCount {
        /// Hosts listed.
        hosts: usize,
        /// Nodes asked for.
        nodes: usize,
    },
    /// The base address plus N − 1 does not fit in IPv4.
    #[error("--base-addr {base}: {nodes} consecutive addresses run past 255.255.255.255")]
    BaseOverflow {
        /// The first address.
        base: Ipv4Addr,
        /// Nodes asked for.
        nodes: usize,
    },
    /// Two nodes would share a host (one node per host: the ports are the same).
    #[error("host {0:?} is listed twice")]
    DuplicateHost(String),
    /// A host that cannot be written into `host:port`.
    #[error("host {0:?} is empty or contains a space, quote or port")]
    BadHost(String),
    /// The cluster name is empty, too long or quoted.
    #[error("--cluster must be 1 to 64 characters without quotes")]
    Cluster,
    /// The algorithm list is empty.
    #[error("no algorithm given")]
    NoAlgorithm,
    /// The multicast address is not a multicast group (or has port 0).
    #[error("{0} is not a multicast group")]
    Multicast(SocketAddr),
}

impl Template {
    /// The host of every node, in node id order (node id = index + 1).
    pub(crate) fn host_list(&self) -> Result<Vec<String>, TemplateError> {
        let n = self.nodes;
        if n == 0 || n > 1000 {
            return Err(TemplateError::Nodes(n));
        }
        match &self.hosts {
            Hosts::Base(base) => {
                let start = u32::from(*base);
                (0..n as u32)
                    .map(|i| {
                        start
                            .checked_add(i)
                            .map(|a| Ipv4Addr::from(a).to_string())
                            .ok_or(TemplateError::BaseOverflow {
                                base: *base,
                                nodes: n,
                            })
                    })
                    .collect()
            }
            Hosts::List(list) => {
                if list.len() != n {
                    return Err(TemplateError::HostCount {
                        hosts: list.len(),
                        nodes: n,
                    });
                }
                let mut seen = std::collections::HashSet::new();
                for h in list {
                    let bad = h.is_empty()
                        || h.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
                        || (h.contains(':') && h.parse::<IpAddr>().is_err());
                    if bad {
                        return Err(TemplateError::BadHost(h.clone()));
                    }
                    if !seen.insert(h.as_str()) {
                        return Err(TemplateError::DuplicateHost(h.clone()));
                    }
                }
                Ok(list.clone())
            }
        }
    }

    /// The configuration text.
    pub fn render(&self) -> Result<String, TemplateError> {
        let hosts = self.host_list()?;
        if self.cluster.trim().is_empty()
            || self.cluster.len() > 64
            || self.cluster.contains(['"', '\\'])
        {
            return Err(TemplateError::Cluster);
        }
        if self.algorithms.is_empty() {
            return Err(TemplateError::NoAlgorithm);
        }
        if let Some(m) = self.multicast {
            if !m.ip().is_multicast() || m.port() == 0 {
                return Err(TemplateError::Multicast(m));
            }
        }
        let algos = self
            .algorithms
            .iter()
            .map(|k| format!("\"{}\"", k.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let mut t = String::new();
        let w = &mut t;
        let _ = writeln!(
            w,
            "# electd cluster configuration: {} node(s), written by `electd config init`.\n\
             # Copy this same file to every node and start each with its own id:\n\
             #   electd run --config electd.toml --node-id N\n\
             # (or ELECTD_NODE_ID=N). Any scalar key can be overridden per node by an\n\
             # ELECTD_<SECTION>_<KEY> environment variable, e.g. ELECTD_TIMING_HEARTBEAT=50ms.\n",
            self.nodes
        );
        let _ = writeln!(
            w,
            "# Datagrams of another cluster name are dropped.\ncluster = \"{}\"\n",
            self.cluster
        );
        let _ = writeln!(
            w,
            "# Each algorithm runs as an independent election group over the same socket.\n\
             # Available: {}.\nalgorithms = [{algos}]\n",
            AlgorithmKind::available()
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            w,
            "[timing]\n\
             heartbeat = \"100ms\"          # leader beacon period; must be below failure_timeout\n\
             failure_timeout = \"1s\"       # silence after which followers declare the leader lost\n\
             answer_timeout = \"300ms\"     # Bully T: wait for OK; above transport.retransmit\n\
             coordinator_timeout = \"1s\"   # Bully T': wait for COORDINATOR; above 2 T + retransmit\n\
             election_timeout = \"1s..2s\"  # Raft randomized timeout; above heartbeat\n"
        );
        let mcast = match self.multicast {
            Some(m) => format!("multicast = \"{m}\""),
            None => "# multicast = \"239.255.70.1:5740\"".to_string(),
        };
        let _ = writeln!(
            w,
            "[transport]\n\
             retransmit = \"50ms\"          # retransmission timeout until a round trip is measured; then adaptive\n\
             # give_up = \"750ms\"         # unacked this long: peer unreachable (default 3/4 x failure_timeout)\n\
             resolve_every = \"30s\"        # re-resolve DNS peer names this often (and when one is unreachable)\n\
             # batch_heartbeats = true     # followers read heartbeats in batches, as of their arrival\n\
             # beat_thread = true          # an idle leader's heartbeats leave from a thread of their own\n\
             # Send broadcasts (COORDINATOR, heartbeats, ...) as one datagram to a multicast\n\
             # group that every node joins (one LAN segment; see deploy/README.md):\n\
             {mcast}\n"
        );
        match &self.key {
            KeyChoice::KeyFile(k) => {
                let _ = writeln!(
                    w,
                    "[security]\n\
                     # The shared cluster key: `electd keygen --out {k}`, copied to every node\n\
                     # (mode 0600). A relative path is relative to this file.\n\
                     key_file = \"{}\"\n\
                     # insecure = true             # no authentication at all: test networks only\n",
                    toml_escape(k)
                );
            }
            KeyChoice::Insecure => {
                let _ = writeln!(
                    w,
                    "[security]\n\
                     # WARNING: no authentication. For test networks only; for anything else run\n\
                     # `electd keygen --out electd.key` and set key_file instead.\n\
                     insecure = true\n\
                     # key_file = \"electd.key\"\n"
                );
            }
        }
        let _ = writeln!(
            w,
            "[hooks]\n\
             # on_leader_change = \"/usr/local/bin/on-leader\"   # run on every leader change\n\
             # hook_timeout = \"5s\"\n\n\
             # A virtual address on the leader, added and announced by the daemon\n\
             # (needs CAP_NET_ADMIN and CAP_NET_RAW; docs/keepalived.md):\n\
             # [[vip]]\n\
             # address = \"10.0.0.100/24\"\n\
             # interface = \"eth0\"\n\
             # algorithm = \"bully\"\n\n\
             [admin]\n\
             # token_file = \"admin.token\"   # bearer token (16+ characters) for /admin/* routes\n\n\
             [raft]\n\
             pre_vote = true                # a rejoining node does not disrupt a healthy term\n\
             check_quorum = true            # a leader that loses its majority steps down\n\
             ranked_timeouts = true         # highest surviving id campaigns first (false: §5.2 random)\n\n\
             [state]\n\
             # Every group's fencing token (and Raft's term and vote) on disk, written before\n\
             # the datagrams that depend on it leave: a restarted node never goes back to an\n\
             # older token nor votes twice in a Raft term. Required with raft. `electd run`\n\
             # creates a missing directory (mode 0700; systemd: StateDirectory=electd);\n\
             # {{node}} becomes the node id, so one file serves every node:\n\
             file = \"/var/lib/electd/{{node}}.state\"\n\
             # ephemeral = true             # or run without it, knowingly (raft may vote twice)\n\n\
             [process]\n\
             # realtime_priority = 10       # SCHED_RR for the daemon's threads (needs CAP_SYS_NICE\n\
             #                              # or RLIMIT_RTPRIO); heartbeats on time on a busy machine\n"
        );
        let _ = writeln!(
            w,
            "# The roster, in logical ring order (ring, lcr and hs follow it). addr is the UDP\n\
             # address the others send to (the node binds it, unless `listen` overrides, e.g.\n\
             # listen = \"0.0.0.0:{}\" behind NAT); http serves /metrics, /status, /leader.\n\
             # A DNS name is resolved at start (a name that does not resolve yet is retried)\n\
             # and again every transport.resolve_every.",
            self.udp_port
        );
        for (i, h) in hosts.iter().enumerate() {
            let host = match h.parse::<IpAddr>() {
                Ok(IpAddr::V6(_)) => format!("[{h}]"),
                _ => h.clone(),
            };
            let _ = writeln!(
                w,
                "\n[[peer]]\nid = {}\naddr = \"{host}:{}\"\nhttp = \"{host}:{}\"",
                i + 1,
                self.udp_port,
                self.http_port
            );
        }
        Ok(t)
    }
}

fn toml_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Security};
    use std::path::Path;

    fn template(nodes: usize, hosts: Hosts, key: KeyChoice) -> Template {
        Template {
            nodes,
            cluster: "test".into(),
            algorithms: AlgorithmKind::available(),
            hosts,
            udp_port: 5740,
            http_port: 5741,
            key,
            multicast: None,
        }
    }

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("electd-tpl-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Write, then load the file as every node of the roster would.
    fn load_all(t: &Template, d: &Path) -> Vec<Config> {
        let file = d.join("electd.toml");
        std::fs::write(&file, t.render().unwrap()).unwrap();
        // The state file's directory (/var/lib/electd on the nodes): the test's own.
        let state = format!("{}/{{node}}.state", d.display());
        (1..=t.nodes as u32)
            .map(|id| {
                Config::load(
                    &file,
                    vec![("ELECTD_STATE_FILE".to_string(), state.clone())],
                    Some(id),
                )
                .unwrap_or_else(|e| panic!("node {id}: {e}"))
            })
            .collect()
    }

    #[test]
    fn every_node_of_a_base_address_roster_loads_it() {
        let d = dir("base");
        crate::security::keyring::write_key_file(&d.join("electd.key")).unwrap();
        let t = template(
            7,
            Hosts::Base("10.0.0.250".parse().unwrap()),
            KeyChoice::KeyFile("electd.key".into()),
        );
        let configs = load_all(&t, &d);
        for (i, c) in configs.iter().enumerate() {
            let id = i as u32 + 1;
            assert_eq!(c.node_id, id);
            assert_eq!(c.ring(), (1..=7).collect::<Vec<u32>>());
            assert_eq!(c.algorithms, AlgorithmKind::available());
            assert!(matches!(c.security, Security::Keyring(_)));
            // 10.0.0.250 + i crosses into 10.0.1.x after 255.
            let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 250)) + i as u32);
            assert_eq!(c.me().addr, SocketAddr::new(ip.into(), 5740));
            assert_eq!(c.me().http, SocketAddr::new(ip.into(), 5741));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn host_lists_insecure_ipv6_and_multicast() {
        let d = dir("hosts");
        let mut t = template(
            3,
            Hosts::List(vec!["fd00::1".into(), "::1".into(), "fd00::3".into()]),
            KeyChoice::Insecure,
        );
        t.multicast = Some("[ff15::70:1]:5740".parse().unwrap());
        t.algorithms = vec![AlgorithmKind::Raft, AlgorithmKind::Bully];
        let configs = load_all(&t, &d);
        assert_eq!(configs[1].me().addr, "[::1]:5740".parse().unwrap());
        assert_eq!(configs[0].security, Security::Insecure);
        assert_eq!(configs[0].multicast, t.multicast);
        assert_eq!(
            configs[2].algorithms,
            vec![AlgorithmKind::Raft, AlgorithmKind::Bully]
        );
        // The state file is set, per node (its directory must exist: the test's own
        // stands in).
        let text = t
            .render()
            .unwrap()
            .replace("/var/lib/electd/", &format!("{}/", d.display()));
        let file = d.join("state.toml");
        std::fs::write(&file, text).unwrap();
        let c = Config::load(&file, Vec::new(), Some(2)).unwrap();
        assert_eq!(c.raft_state_file, Some(d.join("2.state")));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let base = Hosts::Base("10.0.0.1".parse().unwrap());
        let t = template(0, base.clone(), KeyChoice::Insecure);
        assert_eq!(t.render(), Err(TemplateError::Nodes(0)));
        let t = template(
            3,
            Hosts::List(vec!["a".into(), "b".into()]),
            KeyChoice::Insecure,
        );
        assert!(matches!(t.render(), Err(TemplateError::HostCount { .. })));
        let t = template(
            2,
            Hosts::List(vec!["a".into(), "a".into()]),
            KeyChoice::Insecure,
        );
        assert!(matches!(t.render(), Err(TemplateError::DuplicateHost(_))));
        let t = template(
            2,
            Hosts::List(vec!["a:5740".into(), "b".into()]),
            KeyChoice::Insecure,
        );
        assert!(matches!(t.render(), Err(TemplateError::BadHost(_))));
        let t = template(
            3,
            Hosts::Base("255.255.255.254".parse().unwrap()),
            KeyChoice::Insecure,
        );
        assert!(matches!(
            t.render(),
            Err(TemplateError::BaseOverflow { .. })
        ));
        let mut t = template(2, base, KeyChoice::Insecure);
        t.multicast = Some("10.0.0.1:5740".parse().unwrap());
        assert!(matches!(t.render(), Err(TemplateError::Multicast(_))));
    }
}
