//! The runtime's health checks over real UDP on loopback (no root): a node whose sends
//! all fail reports `send` until one succeeds again; a node with a peer of an address
//! family its socket cannot reach reports `roster`. (The `persist` check with a real
//! process: tests/processes/operator_failures.rs.)

use crate::common::http::{runtime_config, shared, wait_until};
use electd::contract::algorithm::AlgorithmKind;
use electd::daemon::runtime::{self, RuntimeConfig};
use electd::daemon::shared::Shared;
use electd::daemon::socket::{bind_udp, Transport};
use electd::NodeId;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A UDP socket whose sends fail while `broken` is set, as when the route is gone.
struct Flaky {
    socket: tokio::net::UdpSocket,
    broken: Arc<AtomicBool>,
}

impl Transport for Flaky {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::NetworkUnreachable,
                "network unreachable (test)",
            ));
        }
        self.socket.send_to(buf, to).await
    }

    fn recv_from<'a>(
        &'a self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send + 'a {
        self.socket.recv_from(buf)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

fn cfg(id: NodeId, peers: Vec<(NodeId, SocketAddr)>) -> RuntimeConfig {
    runtime_config(id, "health", peers, vec![AlgorithmKind::Bully], None)
}

fn failing(s: &Shared, check: &str) -> Option<String> {
    s.problems()
        .into_iter()
        .find(|(c, _)| *c == check)
        .map(|p| p.1)
}

#[tokio::test]
async fn a_node_that_cannot_send_is_unhealthy_until_it_can() {
    let s1 = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let s2 = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let (a1, a2) = (s1.local_addr().unwrap(), s2.local_addr().unwrap());
    let peers = vec![(1, a1), (2, a2)];
    let broken = Arc::new(AtomicBool::new(false));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (n1, c1) = shared(1, &[AlgorithmKind::Bully], None);
    let (n2, c2) = shared(2, &[AlgorithmKind::Bully], None);
    let mut tasks = Vec::new();
    for (socket, s, c, id) in [
        (
            Flaky {
                socket: s1,
                broken: Arc::new(AtomicBool::new(false)),
            },
            n1.clone(),
            c1,
            1,
        ),
        (
            Flaky {
                socket: s2,
                broken: broken.clone(),
            },
            n2.clone(),
            c2,
            2,
        ),
    ] {
        let mut until = stopped.clone();
        tasks.push(tokio::spawn(runtime::run(
            socket,
            cfg(id, peers.clone()),
            s,
            c,
            async move {
                let _ = until.wait_for(|s| *s).await;
            },
        )));
    }
    let leader = |s: &Shared| s.group(AlgorithmKind::Bully).and_then(|g| g.leader);
    wait_until("node 2 leads both", || {
        leader(&n1) == Some(2) && leader(&n2) == Some(2)
    })
    .await;
    assert!(n2.problems().is_empty(), "{:?}", n2.problems());
    // The leader's sends (its heartbeats) start failing.
    broken.store(true, Ordering::SeqCst);
    wait_until("node 2's send check to fail", || {
        failing(&n2, "send").is_some()
    })
    .await;
    let why = failing(&n2, "send").unwrap();
    assert!(why.contains("network unreachable (test)"), "{why}");
    assert!(n2
        .metrics
        .encode()
        .contains("electd_health{check=\"send\",node=\"2\"} 0"));
    assert!(n1.problems().is_empty(), "{:?}", n1.problems());
    broken.store(false, Ordering::SeqCst);
    wait_until("node 2's send check to pass again", || {
        failing(&n2, "send").is_none()
    })
    .await;
    let _ = stop.send(true);
    for t in tasks {
        let r = tokio::time::timeout(crate::common::http::DEADLINE, t).await;
        assert!(matches!(r, Ok(Ok(Ok(())))), "{r:?}");
    }
}

#[tokio::test]
async fn a_peer_of_another_address_family_fails_the_roster_check() {
    let socket = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let me = socket.local_addr().unwrap();
    let v6: SocketAddr = "[::1]:7946".parse().unwrap();
    let (s, c) = shared(1, &[AlgorithmKind::Bully], None);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut until = stopped.clone();
    let task = tokio::spawn(runtime::run(
        socket,
        cfg(1, vec![(1, me), (2, v6)]),
        s.clone(),
        c,
        async move {
            let _ = until.wait_for(|s| *s).await;
        },
    ));
    wait_until("the roster check to fail", || {
        failing(&s, "roster").is_some()
    })
    .await;
    let why = failing(&s, "roster").unwrap();
    assert!(why.contains("peer 2 at [::1]:7946"), "{why}");
    let _ = stop.send(true);
    let r = tokio::time::timeout(crate::common::http::DEADLINE, task).await;
    assert!(matches!(r, Ok(Ok(Ok(())))), "{r:?}");
}
