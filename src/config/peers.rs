//! The roster: ids, UDP and HTTP addresses (IP literals or DNS names), bind addresses,
//! and the rule that every peer is reachable from this node's socket.

use super::raw::RawConfig;
use super::validate::Validator;
use super::{ConfigError, Peer};
use crate::NodeId;
use std::collections::HashSet;
use std::net::{SocketAddr, ToSocketAddrs};

impl Validator<'_> {
    /// This node's id (`node_override` beats the file) and the roster in file order,
    /// every address parsed (names resolved once), no id or address twice, this node's
    /// own names resolved, every peer reachable from its bind address.
    pub(super) fn roster(
        &self,
        raw: &RawConfig,
        node_override: Option<NodeId>,
    ) -> Result<(NodeId, Vec<Peer>), ConfigError> {
        if raw.peer.is_empty() {
            return Err(self.err("peer", "the roster is empty: add one [[peer]] per node"));
        }
        let node_id = match (node_override, raw.node_id) {
            (Some(n), _) => n,
            (None, Some(n)) => NodeId::try_from(n)
                .ok()
                .filter(|&n| n != 0)
                .ok_or_else(|| self.err("node_id", format!("{n} is not a node id")))?,
            (None, None) => {
                return Err(self.err(
                    "node_id",
                    "not set: give --node-id N, ELECTD_NODE_ID or node_id in the file",
                ))
            }
        };
        let mut peers = Vec::with_capacity(raw.peer.len());
        let mut http_unresolved = Vec::with_capacity(raw.peer.len());
        let (mut ids, mut udp, mut http) = (HashSet::new(), HashSet::new(), HashSet::new());
        for (i, p) in raw.peer.iter().enumerate() {
            let key = |f: &str| format!("peer[{i}].{f}");
            let id = NodeId::try_from(p.id)
                .ok()
                .filter(|&id| id != 0)
                .ok_or_else(|| {
                    self.err(
                        key("id"),
                        format!("{} is not a node id (1 ..= {})", p.id, NodeId::MAX),
                    )
                })?;
            if !ids.insert(id) {
                return Err(self.err(key("id"), format!("node id {id} is listed twice")));
            }
            let own = i64::from(node_id) == p.id;
            let (addr, name) = self.peer_addr(&key("addr"), &p.addr, own)?;
            if !udp.insert(name.clone().unwrap_or_else(|| addr.to_string())) {
                return Err(self.err(
                    key("addr"),
                    format!("{} is already the address of another peer", p.addr.trim()),
                ));
            }
            let (h, http_name) = self.peer_addr(&key("http"), &p.http, own)?;
            http_unresolved.push(http_name.is_some() && h.ip().is_unspecified());
            if !http.insert(http_name.clone().unwrap_or_else(|| h.to_string())) {
                return Err(self.err(
                    key("http"),
                    format!(
                        "{} is already the HTTP address of another peer",
                        p.http.trim()
                    ),
                ));
            }
            let listen = match &p.listen {
                Some(l) => Some(self.addr(&key("listen"), l)?),
                None => None,
            };
            // Every address the entry resolves to now: the sources accepted from this
            // peer with check_source (the runtime adds what later re-resolutions find).
            let sources: Vec<SocketAddr> = match &name {
                None => vec![addr],
                Some(n) => n
                    .to_socket_addrs()
                    .map(|found| found.collect())
                    .unwrap_or_default(),
            };
            peers.push(Peer {
                id,
                addr,
                name,
                http: h,
                http_name,
                listen,
                sources,
            });
        }
        if !ids.contains(&node_id) {
            let mut known: Vec<_> = ids.iter().copied().collect();
            known.sort_unstable();
            return Err(self.err(
                "node_id",
                format!("node {node_id} is not in the roster (peer ids: {known:?})"),
            ));
        }
        // This node binds its own addresses: a name of its own must resolve now.
        if let Some(i) = peers.iter().position(|p| p.id == node_id) {
            let me = &peers[i];
            let unresolved = |a: SocketAddr| a.ip().is_unspecified();
            if me.listen.is_none() && me.name.is_some() && unresolved(me.addr) {
                return Err(self.err(
                    format!("peer[{i}].addr"),
                    format!(
                        "{} (this node's own address) does not resolve: it must, to be bound \
                         (or set listen = \"0.0.0.0:{}\")",
                        raw.peer[i].addr.trim(),
                        me.addr.port()
                    ),
                ));
            }
            if http_unresolved[i] {
                return Err(self.err(
                    format!("peer[{i}].http"),
                    format!(
                        "{} (this node's own HTTP address) does not resolve",
                        raw.peer[i].http.trim()
                    ),
                ));
            }
        }

        self.check_families(&peers, node_id, raw.security.check_source.unwrap_or(true))?;
        Ok((node_id, peers))
    }

    pub(super) fn addr(&self, key: &str, s: &str) -> Result<SocketAddr, ConfigError> {
        let a = self.addrs(key, s)?[0];
        if a.port() == 0 {
            return Err(self.err(key, port_zero(s)));
        }
        Ok(a)
    }

    /// Every address `s` stands for (non-empty): itself, or what the name resolves to.
    fn addrs(&self, key: &str, s: &str) -> Result<Vec<SocketAddr>, ConfigError> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(vec![a]);
        }
        let found: Vec<SocketAddr> = s
            .to_socket_addrs()
            .map_err(|e| {
                self.err(
                    key,
                    format!("{s:?} is not an address like \"10.0.0.1:5740\" ({e})"),
                )
            })?
            .collect();
        if found.is_empty() {
            return Err(self.err(key, format!("{s:?} resolves to no address")));
        }
        Ok(found)
    }

    /// A roster address: an IP literal, or `host:port` with a DNS name. A name that
    /// does not resolve (yet) is not an error: it comes back as the unspecified
    /// address with the port, and the runtime keeps resolving it.
    /// `own`: this node's entry, whose unresolved names are errors reported by the
    /// caller (no "will be retried" warning first).
    fn peer_addr(
        &self,
        key: &str,
        s: &str,
        own: bool,
    ) -> Result<(SocketAddr, Option<String>), ConfigError> {
        let s = s.trim();
        if let Ok(a) = s.parse::<SocketAddr>() {
            if a.port() == 0 {
                return Err(self.err(key, port_zero(s)));
            }
            return Ok((a, None));
        }
        let bad = || {
            self.err(
                key,
                format!("{s:?} is not an address like \"10.0.0.1:5740\" or \"host.example:5740\""),
            )
        };
        let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(self.err(key, port_zero(s)));
        }
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
        if !host_ok {
            return Err(bad());
        }
        match (host, port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(a)) => Ok((a, Some(s.to_string()))),
            Ok(None) | Err(_) => {
                if !own {
                    tracing::warn!("{key}: {s} does not resolve yet; it will be retried");
                }
                Ok((
                    SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), port),
                    Some(s.to_string()),
                ))
            }
        }
    }

    /// Every peer must be reachable from the socket this node binds: an IPv4 socket
    /// cannot send to an IPv6 peer, nor a socket bound to one IPv6 address to an IPv4
    /// peer. Only a dual-stack bind (`listen = "[::]:port"`) reaches both, and then
    /// only without `check_source`: this node's datagrams to a peer of the other family
    /// leave from an address of that family, which is not this node's roster address.
    /// Names that do not resolve yet are checked by the runtime when they do.
    fn check_families(
        &self,
        peers: &[Peer],
        node_id: NodeId,
        check_source: bool,
    ) -> Result<(), ConfigError> {
        let Some(me) = peers.iter().find(|p| p.id == node_id) else {
            return Ok(());
        };
        let bind = me.bind_addr();
        let dual = bind.is_ipv6() && bind.ip().is_unspecified();
        if dual && !check_source {
            return Ok(());
        }
        let family = |a: SocketAddr| if a.is_ipv4() { "IPv4" } else { "IPv6" };
        for (i, p) in peers.iter().enumerate() {
            if p.id == node_id {
                continue;
            }
            let candidates: Vec<SocketAddr> = match &p.name {
                None => vec![p.addr],
                Some(_) => p.sources.clone(),
            };
            if candidates.is_empty() {
                continue;
            }
            if dual {
                // check_source: the peer only accepts this node's roster address family.
                let mine = me.resolved().map(|a| a.is_ipv4());
                if mine.is_none() || candidates.iter().any(|a| Some(a.is_ipv4()) == mine) {
                    continue;
                }
                return Err(self.err(
                    format!("peer[{i}].addr"),
                    format!(
                        "{} is {} but this node's address {} is not: its datagrams to peer {} \
                         would leave from an address that peer's source check does not know; \
                         use one address family for the whole roster (or set \
                         security.check_source = false)",
                        candidates[0],
                        family(candidates[0]),
                        me.addr,
                        p.id
                    ),
                ));
            }
            if candidates.iter().any(|a| reachable_from(bind, *a)) {
                continue;
            }
            return Err(self.err(
                format!("peer[{i}].addr"),
                format!(
                    "{} is {} but this node (id {node_id}) binds {bind} ({}): it could never send to \
                     peer {}; use one address family for the whole roster (or bind both with \
                     listen = \"[::]:{}\" and set security.check_source = false)",
                    candidates[0],
                    family(candidates[0]),
                    family(bind),
                    p.id,
                    bind.port()
                ),
            ));
        }
        Ok(())
    }
}

fn port_zero(s: &str) -> String {
    format!(
        "{s:?} has port 0, which binds a random port no peer knows: give the port the \
         others use"
    )
}

/// Can a socket bound to `bind` send to `to`? (IPv4 to IPv4; a dual-stack `[::]`
/// socket to both; a socket bound to one IPv6 address to IPv6 only.)
pub(crate) fn reachable_from(bind: SocketAddr, to: SocketAddr) -> bool {
    match (bind, to) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) => true,
        (SocketAddr::V4(_), SocketAddr::V6(_)) => false,
        (SocketAddr::V6(b), SocketAddr::V4(_)) => b.ip().is_unspecified(),
        (SocketAddr::V6(_), SocketAddr::V6(_)) => true,
    }
}
