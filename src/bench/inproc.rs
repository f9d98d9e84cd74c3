//! Many node runtimes in this process, each with its own UDP socket on 127.0.0.1
//! (real datagrams through the kernel's loopback), for the message-efficiency and
//! 64-node benchmarks. Leader changes are collected from every node's event channel
//! (the one `/watch` serves) with the [`Instant`] they were received.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::contract::message::MessageType;
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{run, RuntimeConfig, Start};
use electd::daemon::shared::{Control, Shared};
use electd::daemon::socket::bind_udp;
use electd::node::link::LinkConfig;
use electd::security::keyring::{Key, Keyring};
use electd::NodeId;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Counters of one group summed over every node, from the Prometheus registries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    /// Election messages sent (liveness excluded): the literature's count.
    pub messages: u64,
    pub received: u64,
    /// Heartbeats and heartbeat acks sent.
    pub liveness: u64,
    pub datagrams: u64,
    pub bytes: u64,
    pub retransmissions: u64,
    pub delivery_failures: u64,
    /// The part of `delivery_failures` addressed to a peer declared lost.
    pub delivery_failures_to_lost: u64,
}

/// See the module documentation.
pub struct InProc {
    pub kind: AlgorithmKind,
    pub nodes: Vec<Arc<Shared>>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    events: mpsc::UnboundedReceiver<(Instant, NodeId, Option<NodeId>)>,
    /// Each node's last leader (None until it reports one).
    pub views: HashMap<NodeId, Option<NodeId>>,
}

impl InProc {
    /// Start one runtime per id (`ids` in ring order) running group `kind`.
    pub async fn start(
        ids: &[NodeId],
        kind: AlgorithmKind,
        timing: &Timing,
        link: &LinkConfig,
        start: Start,
    ) -> anyhow::Result<InProc> {
        let mut sockets = Vec::with_capacity(ids.len());
        let mut peers = Vec::with_capacity(ids.len());
        for &id in ids {
            let s = bind_udp("127.0.0.1:0".parse()?)?;
            peers.push((id, s.local_addr()?));
            sockets.push(s);
        }
        let keys = Keyring::new(Key::new(electd::security::keyring::random_key()?));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (tx, events) = mpsc::unbounded_channel();
        let mut nodes = Vec::new();
        let mut tasks = Vec::new();
        for (socket, &id) in sockets.into_iter().zip(ids) {
            let cfg = RuntimeConfig {
                id,
                cluster: "bench".into(),
                peers: peers.clone(),
                algorithms: vec![kind],
                timing: timing.clone(),
                options: Options::default(),
                link: link.clone(),
                keys: Some(keys.clone()),
                incarnation: electd::daemon::runtime::incarnation_now() + u64::from(id),
                start,
                state_file: None,
                sources: Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect()),
            };
            let metrics = Metrics::new(id, &[kind])?;
            let (shared, control) = Shared::new(id, "bench".into(), vec![kind], metrics, None);
            let shared = Arc::new(shared);
            let mut rx = shared.subscribe();
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                while let Ok(e) = rx.recv().await {
                    if tx.send((Instant::now(), e.node, e.leader)).is_err() {
                        break;
                    }
                }
            }));
            nodes.push(shared.clone());
            let mut stopped = stopped.clone();
            tasks.push(tokio::spawn(async move {
                let shutdown = async move {
                    let _ = stopped.wait_for(|s| *s).await;
                };
                if let Err(e) = run(socket, cfg, shared, control, shutdown).await {
                    tracing::warn!("bench runtime {id}: {e}");
                }
            }));
        }
        Ok(InProc {
            kind,
            nodes,
            stop,
            tasks,
            events,
            views: ids.iter().map(|&i| (i, None)).collect(),
        })
    }

    pub fn ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|s| s.node).collect()
    }

    pub fn node(&self, id: NodeId) -> Option<&Arc<Shared>> {
        self.nodes.iter().find(|s| s.node == id)
    }

    pub async fn command(&self, id: NodeId, c: Control) -> bool {
        match self.node(id) {
            Some(s) => s.command(c).await,
            None => false,
        }
    }

    /// The leader `among` agree on (the highest of them where the algorithm promises
    /// it), from the events received so far.
    pub fn agreement(&self, among: &[NodeId]) -> Option<NodeId> {
        let mut leader = None;
        for id in among {
            let l = (*self.views.get(id)?)?;
            if leader.is_some_and(|x| x != l) {
                return None;
            }
            leader = Some(l);
        }
        let l = leader?;
        let top = among.iter().max();
        (among.contains(&l) && (!self.kind.elects_highest_id() || top == Some(&l))).then_some(l)
    }

    /// Apply events until `among` agree (returns the leader and the instant of the
    /// event that completed the agreement) or `deadline` passes.
    pub async fn wait_agreement(
        &mut self,
        among: &[NodeId],
        deadline: Instant,
    ) -> Option<(NodeId, Instant)> {
        if let Some(l) = self.agreement(among) {
            return Some((l, Instant::now()));
        }
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let (at, node, leader) = tokio::time::timeout(left, self.events.recv())
                .await
                .ok()??;
            self.views.insert(node, leader);
            if let Some(l) = self.agreement(among) {
                return Some((l, at));
            }
        }
    }

    /// Every node's status says `leader` and nobody is electing.
    pub fn settled_on(&self, leader: NodeId) -> bool {
        self.nodes.iter().all(|s| {
            s.group(self.kind)
                .is_some_and(|g| g.leader == Some(leader) && !g.electing)
        })
    }

    /// Counters of the group summed over every node.
    pub fn counters(&self) -> Counters {
        let kind = self.kind.as_str();
        let mut c = Counters::default();
        for s in &self.nodes {
            let text = s.metrics.encode();
            let m = |name: &str, labels: &[(&str, &str)]| {
                electd::http::client::metric_sum(&text, name, labels) as u64
            };
            for t in MessageType::ALL {
                let l = [("algorithm", kind), ("type", t.as_str())];
                let sent = m("electd_messages_sent_total", &l);
                if t.is_liveness() {
                    c.liveness += sent;
                } else {
                    c.messages += sent;
                    c.received += m("electd_messages_received_total", &l);
                }
            }
            c.datagrams += m("electd_datagrams_sent_total", &[]);
            c.bytes += m("electd_bytes_sent_total", &[]);
            c.retransmissions += m("electd_retransmissions_total", &[]);
            c.delivery_failures += m("electd_delivery_failures_total", &[]);
            c.delivery_failures_to_lost += m("electd_delivery_failures_to_lost_total", &[]);
        }
        c
    }

    /// Stop every runtime and wait for them.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        drop(self.events);
        for t in self.tasks {
            t.abort();
            let _ = t.await;
        }
    }
}
