//! Background DNS lookups of roster names: never blocking the task, at start, every
//! `resolve_every`, every second for names that did not resolve, and at once when the
//! link declares a peer unreachable.

use super::*;

/// How long one DNS lookup may take.
pub(super) const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Retry period of a name that did not resolve.
pub(super) const RETRY_UNRESOLVED: Duration = Duration::from_secs(1);

/// Background DNS lookups of roster names (see the module documentation).
#[derive(Debug, Default)]
pub(super) struct Resolver {
    pub(super) names: HashMap<NodeId, String>,
    pub(super) every: Duration,
    pub(super) v4_only: bool,
    pub(super) tx: Option<mpsc::Sender<(NodeId, Option<SocketAddr>)>>,
    pub(super) in_flight: std::collections::HashSet<NodeId>,
    /// When each name was last resolved successfully.
    pub(super) last_ok: HashMap<NodeId, Instant>,
    /// Names whose last lookup failed (logged once per failure streak).
    pub(super) failing: std::collections::HashSet<NodeId>,
}

impl Resolver {
    pub(super) fn new(
        net: &NetOptions,
        v4_only: bool,
        tx: mpsc::Sender<(NodeId, Option<SocketAddr>)>,
    ) -> Resolver {
        Resolver {
            names: net.names.iter().cloned().collect(),
            every: if net.resolve_every.is_zero() {
                Duration::from_secs(30)
            } else {
                net.resolve_every
            },
            v4_only,
            tx: Some(tx),
            ..Resolver::default()
        }
    }

    /// Start a lookup of `id`'s name unless one is running.
    pub(super) fn lookup(&mut self, id: NodeId) {
        let (Some(name), Some(tx)) = (self.names.get(&id), &self.tx) else {
            return;
        };
        if !self.in_flight.insert(id) {
            return;
        }
        let (name, tx, v4_only) = (name.clone(), tx.clone(), self.v4_only);
        tokio::spawn(async move {
            let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host(name)).await;
            let addr = match found {
                Ok(Ok(mut addrs)) => addrs.find(|a| !v4_only || a.is_ipv4()),
                _ => None,
            };
            let _ = tx.send((id, addr)).await;
        });
    }

    pub(super) fn resolved(
        &mut self,
        id: NodeId,
        r: Option<SocketAddr>,
        peers: &mut HashMap<NodeId, SocketAddr>,
    ) {
        self.in_flight.remove(&id);
        let name = self.names.get(&id).map(String::as_str).unwrap_or("?");
        match r {
            Some(addr) => {
                self.last_ok.insert(id, Instant::now());
                self.failing.remove(&id);
                match peers.insert(id, addr) {
                    Some(old) if old == addr => {}
                    Some(old) => {
                        tracing::info!(peer = id, %name, %old, new = %addr, "peer address changed")
                    }
                    None => tracing::info!(peer = id, %name, %addr, "peer address resolved"),
                }
            }
            None => {
                // Keep the last known address: a DNS hiccup must not cut a live peer off.
                if self.failing.insert(id) {
                    tracing::warn!(
                        peer = id,
                        %name,
                        known = peers.contains_key(&id),
                        "peer name does not resolve; retrying every {}s",
                        RETRY_UNRESOLVED.as_secs()
                    );
                }
            }
        }
    }
}

impl Driver {
    /// Look up the names that are due: never resolved, failing, or older than the period.
    pub(super) fn resolve_due(&mut self) {
        let r = &self.resolver;
        let due: Vec<NodeId> = r
            .names
            .keys()
            .copied()
            .filter(|id| {
                r.failing.contains(id)
                    || !self.peers.contains_key(id)
                    || r.last_ok.get(id).is_none_or(|t| t.elapsed() >= r.every)
            })
            .collect();
        for id in due {
            self.resolver.lookup(id);
        }
    }
}
