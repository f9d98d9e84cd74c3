//! The runtime's settings: [`RuntimeConfig`] and [`NetOptions`] converted from a
//! [`Config`], and what the gate and the node are built from.

use super::*;

/// How the node enters the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Call an election in every group at once (a (re)started process, the default).
    Electing,
    /// Wait for the others (each algorithm's watchdog still guarantees a leader).
    Passive,
}

/// Everything the runtime needs (built from a [`Config`], or directly in tests).
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// This node's id (a member of `peers`).
    pub id: NodeId,
    /// The cluster name every datagram carries.
    pub cluster: String,
    /// Roster in ring order with each member's UDP address.
    pub peers: Vec<(NodeId, SocketAddr)>,
    /// The groups to run, one per algorithm.
    pub algorithms: Vec<AlgorithmKind>,
    /// Heartbeat, failure timeout and election timeouts.
    pub timing: Timing,
    /// Raft switches (pre-vote, check-quorum, ranked timeouts).
    pub options: Options,
    /// Reliable-link retransmission settings.
    pub link: LinkConfig,
    /// `None` only with `insecure = true`.
    pub keys: Option<Keyring>,
    /// Boot id; see [`incarnation_now`].
    pub incarnation: u64,
    /// Whether to call an election at start or wait for the others.
    pub start: Start,
    /// Where durable algorithm state (every group's fencing token, Raft's vote) is kept
    /// across restarts.
    pub state_file: Option<std::path::PathBuf>,
    /// Allowed UDP source addresses per roster id (`[security] check_source`);
    /// `None` accepts any source.
    pub sources: Option<HashMap<NodeId, Vec<SocketAddr>>>,
}

impl RuntimeConfig {
    /// The runtime settings of `c`'s node; `incarnation` is this boot's id
    /// (see [`incarnation_now`]).
    pub fn from_config(c: &Config, incarnation: u64) -> RuntimeConfig {
        RuntimeConfig {
            id: c.node_id,
            cluster: c.cluster.clone(),
            peers: c.peers.iter().map(|p| (p.id, p.addr)).collect(),
            algorithms: c.algorithms.clone(),
            timing: c.timing.clone(),
            options: c.options.clone(),
            link: c.link.clone(),
            keys: match &c.security {
                Security::Keyring(k) => Some(k.clone()),
                Security::Insecure => None,
            },
            incarnation,
            start: Start::Electing,
            state_file: c.raft_state_file.clone(),
            sources: c
                .check_source
                .then(|| c.peers.iter().map(|p| (p.id, p.sources.clone())).collect()),
        }
    }

    pub(super) fn gate_config(&self, group: bool) -> GateConfig {
        GateConfig {
            me: self.id,
            cluster: self.cluster.clone(),
            roster: self.peers.iter().map(|p| p.0).collect(),
            keys: self.keys.clone(),
            sources: self.sources.clone(),
            group,
        }
    }

    pub(super) fn node_config(&self, incarnation: u64) -> NodeConfig {
        NodeConfig {
            id: self.id,
            ring: self.peers.iter().map(|p| p.0).collect(),
            algorithms: self.algorithms.clone(),
            timing: self.timing.clone(),
            options: self.options.clone(),
            link: self.link.clone(),
            incarnation,
            // Timer ranges are drawn from a generator seeded per node and per life.
            seed: incarnation ^ u64::from(self.id).rotate_left(40),
        }
    }
}

/// A boot id that grows across restarts: unix time in microseconds (at least 1).
pub fn incarnation_now() -> u64 {
    unix_micros().max(1)
}

/// The wall clock in unix microseconds (0 before 1970).
pub(crate) fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Network options beside [`RuntimeConfig`] (see the module documentation).
#[derive(Debug, Default)]
pub struct NetOptions {
    /// The group to send broadcasts to, and the socket that receives the group's
    /// datagrams (`None` when the node's own socket joined the group): see
    /// [`crate::daemon::socket::join_multicast`].
    pub multicast: Option<(SocketAddr, Option<tokio::net::UdpSocket>)>,
    /// Roster members given by DNS name (`host:port`), looked up in the background.
    pub names: Vec<(NodeId, String)>,
    /// Period of re-resolution (config `transport.resolve_every`); zero means 30 s.
    pub resolve_every: Duration,
    /// The socket that receives the followed leaders' heartbeats, read in batches
    /// (`None`: every datagram arrives on the main socket): see
    /// [`crate::daemon::heartbeats::bind_udp_pair`].
    pub heartbeats: Option<HeartbeatSocket>,
    /// An idle leader's heartbeats leave from a thread of their own between the
    /// runtime's turns (`transport.beat_thread`; see [`crate::daemon::beater`]). Off
    /// by default here, on by default in a configuration.
    pub beat_thread: bool,
    /// The state file, already opened (`electd run` opens it before it reports
    /// ready); `None`: the runtime opens `RuntimeConfig::state_file` itself.
    pub state: Option<durable::OpenedState>,
}

impl NetOptions {
    /// The DNS part from a configuration (multicast needs the bound socket: see
    /// [`crate::daemon::socket::join_multicast`]).
    pub fn from_config(c: &Config) -> NetOptions {
        NetOptions {
            multicast: None,
            heartbeats: None,
            names: c
                .peers
                .iter()
                .filter(|p| p.id != c.node_id)
                .filter_map(|p| p.name.clone().map(|n| (p.id, n)))
                .collect(),
            resolve_every: c.resolve_every,
            beat_thread: c.beat_thread,
            state: None,
        }
    }
}
