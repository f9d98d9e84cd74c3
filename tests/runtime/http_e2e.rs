//! End to end over real UDP on 127.0.0.1: three runtimes (the code of `electd run`)
//! with their HTTP APIs; a `/watch` client on node 1 sees the failover when the
//! leader is paused through the admin API, and sees it come back on resume.
//! Bully elects the highest live id (Garcia-Molina 1982), so the leaders are known.

use crate::common::http::{call, get, shared, wait_until, Server, Sse};
use electd::contract::algorithm::{AlgorithmKind::Bully, Options, Timing};
use electd::daemon::runtime::{self, RuntimeConfig, Start};
use electd::daemon::shared::Shared;
use electd::daemon::socket::bind_udp;
use electd::node::link::LinkConfig;
use electd::NodeId;
use hyper::{Method, StatusCode};
use std::sync::Arc;
use std::time::Duration;

const BEARER: &str = "Bearer 0123456789abcdef-e2e";

/// Read SSE events until one says `leader` (non-initial): at most 200 events and
/// 20 seconds in all (each read has its own deadline too).
async fn until_leader(sse: &mut Sse, want: NodeId) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for _ in 0..200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no event with leader {want} in time"
        );
        let e = sse.next().await.expect("stream open");
        let j = e.json();
        if j["initial"] == false && j["leader"] == want {
            return;
        }
    }
    panic!("200 events without leader {want}");
}

// The runtime's future is not `Send` (it owns the node): run it on a LocalSet.
#[tokio::test]
async fn watch_sees_a_real_failover() {
    tokio::task::LocalSet::new().run_until(scenario()).await;
}

async fn scenario() {
    let ids: [NodeId; 3] = [1, 2, 3];
    let sockets: Vec<_> = ids
        .iter()
        .map(|_| bind_udp("127.0.0.1:0".parse().expect("addr")).expect("bind"))
        .collect();
    let peers: Vec<_> = ids
        .iter()
        .zip(&sockets)
        .map(|(&id, s)| (id, s.local_addr().expect("addr")))
        .collect();
    let timing = Timing {
        heartbeat: Duration::from_millis(20),
        failure_timeout: Duration::from_millis(200),
        answer_timeout: Duration::from_millis(40),
        coordinator_timeout: Duration::from_millis(120),
        ..Timing::default()
    };
    let link = LinkConfig::default();
    timing
        .validate(link.retransmit, link.give_up)
        .expect("the test timing keeps the relations the config enforces");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut nodes: Vec<(Arc<Shared>, Server)> = Vec::new();
    let mut runtimes = Vec::new();
    for (&id, socket) in ids.iter().zip(sockets) {
        let (s, control) = shared(id, &[Bully], Some(&BEARER[7..]));
        let server = Server::start(s.clone()).await;
        let cfg = RuntimeConfig {
            id,
            cluster: "test".into(),
            peers: peers.clone(),
            algorithms: vec![Bully],
            timing: timing.clone(),
            options: Options::default(),
            link: link.clone(),
            keys: None,
            incarnation: runtime::incarnation_now(),
            start: Start::Electing,
            state_file: None,
            sources: Some(peers.iter().map(|&(id, a)| (id, vec![a])).collect()),
        };
        let mut until = stopped.clone();
        runtimes.push(tokio::task::spawn_local(runtime::run(
            socket,
            cfg,
            s.clone(),
            control,
            async move {
                let _ = until.wait_for(|s| *s).await;
            },
        )));
        nodes.push((s, server));
    }
    let agree = |want: NodeId, on: &[usize]| {
        on.iter()
            .all(|&i| nodes[i].0.group(Bully).and_then(|g| g.leader) == Some(want))
    };
    wait_until("nodes 1-3 to agree on 3", || agree(3, &[0, 1, 2])).await;

    let a1 = nodes[0].1.addr;
    let mut watch = Sse::open(a1, "/watch?algorithm=bully").await;
    let first = watch.next().await.expect("initial").json();
    assert_eq!(
        (first["leader"].clone(), first["initial"].clone()),
        (3.into(), true.into())
    );

    // Crash the leader (pause): node 1's watcher sees node 2 take over.
    let r = call(nodes[2].1.addr, Method::POST, "/admin/pause", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    until_leader(&mut watch, 2).await;
    let a2 = nodes[1].1.addr;
    assert_eq!(
        get(a2, "/is-leader?algorithm=bully").await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(nodes[2].1.addr, "/metrics").await.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "a paused node looks down to Prometheus"
    );

    // Resume: the highest id bullies its way back.
    let r = call(nodes[2].1.addr, Method::POST, "/admin/resume", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    until_leader(&mut watch, 3).await;
    wait_until("all to agree on 3 again", || agree(3, &[0, 1, 2])).await;
    assert_eq!(
        get(a2, "/is-leader?algorithm=bully").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let text = get(a1, "/metrics").await.body;
    assert!(
        text.contains("electd_leader{algorithm=\"bully\",node=\"1\"} 3"),
        "{text}"
    );

    let _ = stop.send(true);
    for r in runtimes {
        let done = tokio::time::timeout(crate::common::http::DEADLINE, r).await;
        assert!(matches!(done, Ok(Ok(Ok(())))), "runtime stopped: {done:?}");
    }
    for (_, server) in nodes {
        server.stop().await;
    }
}
