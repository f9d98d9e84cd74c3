//! The HTTP API of docs/architecture.md against a `Shared` built directly, as the runtime task
//! would feed it (no daemon needed): real TCP on 127.0.0.1, a real HTTP client.

use crate::common::http::{call, get, shared, view, Server, Sse};
use electd::contract::algorithm::AlgorithmKind::{self, Bully, Raft};
use electd::daemon::shared::{Control, LeaderEvent, Shared};
use hyper::{Method, StatusCode};
use std::sync::Arc;
use tokio::sync::mpsc;

const TOKEN: &str = "s3cret-token";
const BEARER: &str = "Bearer s3cret-token";

/// A stand-in for the runtime task: it answers control commands the way `electd run`
/// does (an election called at this node makes it leader with the next term) and
/// reports the change the way the runtime does, through `emit` and `publish_status`.
fn fake_runtime(shared: Arc<Shared>, mut rx: mpsc::Receiver<Control>) {
    tokio::spawn(async move {
        while let Some(c) = rx.recv().await {
            match c {
                Control::Elect(kind, reply) => {
                    let Some(mut g) = shared.group(kind) else {
                        let _ = reply.send(false);
                        continue;
                    };
                    let _ = reply.send(true);
                    g.leader = Some(shared.node);
                    g.term += 1;
                    g.state = "leader";
                    shared.emit(LeaderEvent::new(shared.node, kind, g.leader, g.term));
                    let mut all = shared.status();
                    for v in all.iter_mut().filter(|v| v.algorithm == kind) {
                        *v = g.clone();
                    }
                    shared.publish_status(all);
                }
                Control::Pause => shared.set_paused(true),
                Control::Resume => shared.set_paused(false),
                Control::Keys(_) | Control::Fault { .. } | Control::Penalty { .. } => {}
                Control::Transfer { reply, .. } => {
                    let _ = reply.send(Err("the stand-in runtime does not lead".into()));
                }
                // As the runtime: the groups' standing changes, and a leader that is
                // drained hands over (here to node 1, with the next term).
                Control::Drain {
                    algorithm,
                    on,
                    reply,
                } => {
                    let mut all = shared.status();
                    for v in all
                        .iter_mut()
                        .filter(|v| algorithm.is_none_or(|a| a == v.algorithm))
                    {
                        v.ineligible = if on {
                            vec![electd::contract::policy::Ineligible::Drained]
                        } else {
                            Vec::new()
                        };
                        if on && v.leader == Some(shared.node) {
                            v.leader = Some(1);
                            v.term += 1;
                            v.state = "follower";
                            shared.emit(LeaderEvent::new(
                                shared.node,
                                v.algorithm,
                                v.leader,
                                v.term,
                            ));
                        }
                    }
                    shared.publish_status(all);
                    let _ = reply.send(Ok(std::time::Duration::from_millis(500)));
                }
            }
        }
    });
}

async fn node3(token: Option<&str>) -> (Arc<Shared>, Server, mpsc::Receiver<Control>) {
    let (s, rx) = shared(3, &[Bully, Raft], token);
    s.publish_status(vec![view(Bully, Some(5), 1), view(Raft, Some(3), 4)]);
    let server = Server::start(s.clone()).await;
    (s, server, rx)
}

#[tokio::test]
async fn status_leader_and_is_leader() {
    let (s, server, _rx) = node3(None).await;
    let a = server.addr;

    let r = get(a, "/status").await;
    assert_eq!(r.status, StatusCode::OK);
    let j = r.json();
    assert_eq!(j["node"], 3);
    assert_eq!(j["cluster"], "test");
    assert_eq!(j["paused"], false);
    assert_eq!(j["groups"][0]["algorithm"], "bully");
    assert_eq!(j["groups"][0]["leader"], 5);
    assert_eq!(j["groups"][0]["term"], 1);
    assert_eq!(j["groups"][0]["last_election_ms"], 3.0);
    assert_eq!(j["groups"][1]["algorithm"], "raft");
    let only = get(a, "/status?algorithm=raft").await.json();
    assert_eq!(only["groups"].as_array().map(Vec::len), Some(1));

    let r = get(a, "/leader?algorithm=bully").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["leader"], 5);
    assert_eq!(r.json()["is_leader"], false);

    // Load-balancer check: 503 on a follower, 200 on the leader.
    assert_eq!(
        get(a, "/is-leader?algorithm=bully").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let r = get(a, "/is-leader?algorithm=raft").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["leader"], 3);

    // A group that has no leader: /leader says null.
    s.publish_status(vec![view(Bully, None, 2), view(Raft, Some(3), 4)]);
    let r = get(a, "/leader?algorithm=bully").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.json()["leader"].is_null());

    assert_eq!(get(a, "/healthz").await.body, "ok\n");
    let m = get(a, "/metrics").await;
    assert_eq!(m.status, StatusCode::OK);
    assert!(
        m.body.contains("electd_build_info{node=\"3\""),
        "{}",
        m.body
    );
    assert!(
        m.headers["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        m.headers
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_parameters_are_400_unknown_algorithms_404() {
    let (_s, server, _rx) = node3(None).await;
    let a = server.addr;
    for (path, code) in [
        ("/leader", StatusCode::BAD_REQUEST), // two groups: which one?
        ("/is-leader", StatusCode::BAD_REQUEST),
        ("/leader?algorithm=", StatusCode::BAD_REQUEST),
        ("/leader?algoritm=bully", StatusCode::BAD_REQUEST),
        (
            "/leader?algorithm=bully&algorithm=raft",
            StatusCode::BAD_REQUEST,
        ),
        ("/leader?algorithm=%zz", StatusCode::BAD_REQUEST),
        ("/watch?node=3", StatusCode::BAD_REQUEST),
        ("/leader?algorithm=paxos", StatusCode::NOT_FOUND),
        ("/is-leader?algorithm=ring", StatusCode::NOT_FOUND), // valid, not configured
        ("/watch?algorithm=paxos", StatusCode::NOT_FOUND),
        ("/status?algorithm=lcr", StatusCode::NOT_FOUND),
        ("/no-such-route", StatusCode::NOT_FOUND),
        // Routes without parameters refuse any.
        ("/healthz?x=1", StatusCode::BAD_REQUEST),
        ("/metrics?x=1", StatusCode::BAD_REQUEST),
        ("/readyz?algorithm=bully", StatusCode::BAD_REQUEST),
    ] {
        let r = get(a, path).await;
        assert_eq!(r.status, code, "{path}: {}", r.body);
        let msg = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(!msg.is_empty(), "{path}: no message in {}", r.body);
    }
    let r = get(a, "/leader?algorithm=paxos").await;
    assert!(
        r.body.contains("bully, raft"),
        "lists what runs: {}",
        r.body
    );
    // Names are accepted in their documented spellings.
    let (s1, _rx1) = shared(1, &[AlgorithmKind::ImprovedBully], None);
    s1.publish_status(vec![view(AlgorithmKind::ImprovedBully, Some(1), 1)]);
    let one = Server::start(s1).await;
    assert_eq!(
        get(one.addr, "/leader?algorithm=improved-bully")
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        get(one.addr, "/leader?algorithm=improved_bully")
            .await
            .status,
        StatusCode::OK
    );
    // A single group: the parameter may be left out.
    assert_eq!(get(one.addr, "/is-leader").await.status, StatusCode::OK);
    one.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn a_group_without_status_yet_is_503() {
    let (_s, _rx) = shared(2, &[Bully], None);
    let server = Server::start(_s.clone()).await;
    let r = get(server.addr, "/leader?algorithm=bully").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    server.stop().await;
}

#[tokio::test]
async fn admin_needs_the_bearer_token() {
    let (_s, server, mut rx) = node3(Some(TOKEN)).await;
    let a = server.addr;
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cret-tokenX"),
        Some("Basic czNjcmV0LXRva2Vu"),
        Some("Bearer "),
    ] {
        for path in [
            "/admin/pause",
            "/admin/resume",
            "/admin/election?algorithm=bully",
        ] {
            let r = call(a, Method::POST, path, auth).await;
            assert_eq!(
                r.status,
                StatusCode::UNAUTHORIZED,
                "{path} {auth:?}: {}",
                r.body
            );
            assert!(r.headers.contains_key("www-authenticate"));
        }
    }
    // Authentication comes first: a bad parameter without a token is still 401.
    let r = call(a, Method::POST, "/admin/election?algorithm=paxos", None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(
        rx.try_recv().is_err(),
        "no command may pass without the token"
    );

    // With the token: 400/404 for bad parameters, then the command reaches the runtime.
    let r = call(a, Method::POST, "/admin/pause?now=1", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = call(
        a,
        Method::POST,
        "/admin/election?algorithm=paxos",
        Some(BEARER),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = call(a, Method::POST, "/admin/pause", Some("bearer s3cret-token")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(matches!(rx.recv().await, Some(Control::Pause)));
    assert_eq!(r.json()["paused"], true);
    // A wrong method is 405 with a JSON error and the allowed method.
    for (method, path, allow) in [
        (Method::GET, "/admin/pause", "POST"),
        (Method::GET, "/admin/election", "POST"),
        (Method::POST, "/status", "GET, HEAD"),
        (Method::DELETE, "/healthz", "GET, HEAD"),
    ] {
        let r = call(a, method.clone(), path, Some(BEARER)).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        let msg = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(msg.contains(allow), "{method} {path}: {}", r.body);
        assert_eq!(
            r.headers.get("allow").map(|v| v.to_str().unwrap()),
            Some(allow)
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn admin_is_off_without_a_token() {
    let (_s, server, mut rx) = node3(None).await;
    let r = call(server.addr, Method::POST, "/admin/pause", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.json()["error"]
        .as_str()
        .unwrap_or_default()
        .contains("token_file"));
    assert!(rx.try_recv().is_err());
    server.stop().await;
}

#[tokio::test]
async fn pause_makes_the_node_look_down_and_resume_brings_it_back() {
    let (s, server, rx) = node3(Some(TOKEN)).await;
    fake_runtime(s.clone(), rx);
    let a = server.addr;
    let r = call(a, Method::POST, "/admin/pause", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        get(a, "/metrics").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        get(a, "/healthz").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // Node 3 leads raft, but a paused node must not attract traffic; the body
    // agrees with the status (issue 28, item 2).
    let r = get(a, "/is-leader?algorithm=raft").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.json()["is_leader"], false, "{}", r.body);
    assert!(r.json()["why"].as_str().unwrap_or("").contains("paused"));
    // The real runtime publishes a paused node's groups without a leader (as a crash
    // would leave them): `why` still says it is paused (docs/leases.md; it was absent).
    s.publish_status(vec![view(Bully, Some(5), 1), view(Raft, None, 4)]);
    for algorithm in ["raft", "bully"] {
        let r = get(a, &format!("/is-leader?algorithm={algorithm}")).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
        assert_eq!(r.json()["is_leader"], false, "{}", r.body);
        assert!(
            r.json()["why"].as_str().unwrap_or("").contains("paused"),
            "{}",
            r.body
        );
    }
    // A stream opened while paused says so from its first event (`electd watch` then
    // leaves the node out of the agreement, as `electd status` does).
    let mut w = Sse::open(a, "/watch?algorithm=bully").await;
    let first = w.next().await.expect("the initial event").json();
    assert_eq!(first["paused"], true, "{first}");
    // As before the pause (the fake runtime keeps what it was given).
    s.publish_status(vec![view(Bully, Some(5), 1), view(Raft, Some(3), 4)]);
    assert_eq!(get(a, "/status").await.json()["paused"], true);
    let r = call(
        a,
        Method::POST,
        "/admin/election?algorithm=bully",
        Some(BEARER),
    )
    .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let r = call(a, Method::POST, "/admin/resume", Some(BEARER)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(get(a, "/metrics").await.status, StatusCode::OK);
    let mut w = Sse::open(a, "/watch?algorithm=bully").await;
    let first = w.next().await.expect("the initial event").json();
    assert_eq!(first["paused"], false, "{first}");
    assert_eq!(
        get(a, "/is-leader?algorithm=raft").await.status,
        StatusCode::OK
    );
    server.stop().await;
}

#[tokio::test]
async fn admin_without_a_runtime_is_503() {
    let (_s, server, rx) = node3(Some(TOKEN)).await;
    drop(rx);
    let r = call(
        server.addr,
        Method::POST,
        "/admin/election?algorithm=bully",
        Some(BEARER),
    )
    .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    server.stop().await;
}

/// The feature users ask for most: a watcher sees the current leader at once, then
/// the change after a failover forced through the admin API.
#[tokio::test]
async fn watch_streams_the_failover() {
    let (s, server, rx) = node3(Some(TOKEN)).await;
    fake_runtime(s.clone(), rx);
    let a = server.addr;

    let mut bully = Sse::open(a, "/watch?algorithm=bully").await;
    assert_eq!(bully.status, StatusCode::OK);
    assert!(
        bully.content_type.starts_with("text/event-stream"),
        "{}",
        bully.content_type
    );
    let mut all = Sse::open(a, "/watch").await;

    let first = bully.next().await.expect("initial state");
    assert_eq!(first.event, "leader");
    let j = first.json();
    assert_eq!(
        (
            j["algorithm"].clone(),
            j["leader"].clone(),
            j["term"].clone()
        ),
        ("bully".into(), 5.into(), 1.into())
    );
    assert_eq!(j["initial"], true);
    assert_eq!(j["role"], "follower");
    let algos: Vec<_> = [all.next().await, all.next().await]
        .into_iter()
        .map(|e| e.expect("initial").json()["algorithm"].clone())
        .collect();
    assert_eq!(algos, vec!["bully", "raft"]);

    // Forced failover: node 3 takes bully over.
    let r = call(
        a,
        Method::POST,
        "/admin/election?algorithm=bully",
        Some(BEARER),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let change = bully.next().await.expect("the change").json();
    assert_eq!(change["leader"], 3);
    assert_eq!(change["term"], 2);
    assert_eq!(change["role"], "leader");
    assert_eq!(change["initial"], false);
    assert!(
        change["at_ms"].as_u64().unwrap_or(0) > 1_600_000_000_000,
        "{change}"
    );
    assert_eq!(all.next().await.expect("the change").json()["leader"], 3);
    assert_eq!(
        get(a, "/is-leader?algorithm=bully").await.status,
        StatusCode::OK
    );

    // The filter holds: a raft change is not on the bully stream.
    s.emit(LeaderEvent::new(3, Raft, None, 5));
    s.emit(LeaderEvent::new(3, Bully, Some(4), 3));
    let next = bully.next().await.expect("bully change").json();
    assert_eq!(
        (next["algorithm"].clone(), next["leader"].clone()),
        ("bully".into(), 4.into())
    );
    let raft = all.next().await.expect("raft change").json();
    assert_eq!(raft["algorithm"], "raft");
    assert!(raft["leader"].is_null());
    assert_eq!(raft["role"], "none");

    // A watcher that connects now sees the present, not the past.
    let mut late = Sse::open(a, "/watch?algorithm=bully").await;
    assert_eq!(late.next().await.expect("initial").json()["leader"], 4);

    // Shutdown ends the open streams, so it does not hang.
    server.stop().await;
    assert!(bully.next().await.is_none(), "stream ends at shutdown");
}

/// Health means health: a failing check turns /healthz and /readyz to 503 with the
/// reason, and the `electd_health` gauge to 0; clearing it brings them back.
#[tokio::test]
async fn failing_health_checks_make_healthz_and_readyz_fail() {
    let (s, server, _rx) = node3(None).await;
    let a = server.addr;
    assert_eq!(get(a, "/healthz").await.status, StatusCode::OK);
    assert_eq!(get(a, "/readyz").await.status, StatusCode::OK);
    for check in ["send", "persist", "roster"] {
        s.set_problem(check, Some(format!("{check} is broken")));
        let r = get(a, "/healthz").await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{check}");
        assert_eq!(r.json()["failing"][check], format!("{check} is broken"));
        assert!(r.json()["error"].as_str().unwrap().contains(check));
        assert_eq!(
            get(a, "/readyz").await.status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        let m = s.metrics.encode();
        let line = format!("electd_health{{check=\"{check}\",node=\"3\"}} 0");
        assert!(m.contains(&line), "{line} not in metrics");
        s.set_problem(check, None);
        assert_eq!(get(a, "/healthz").await.status, StatusCode::OK, "{check}");
    }
    // Ready needs a leader in every group.
    s.publish_status(vec![view(Bully, Some(5), 1), view(Raft, None, 4)]);
    let r = get(a, "/readyz").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        r.json()["error"].as_str().unwrap().contains("raft"),
        "{}",
        r.body
    );
    assert_eq!(get(a, "/healthz").await.status, StatusCode::OK);
    server.stop().await;
}

/// `lease`: `none` without `lease_remaining_ms`; `quorum` with what is left, and
/// `/is-leader` 503 on a leader whose lease has run out.
#[tokio::test]
async fn leader_answers_say_whether_a_lease_is_held_and_for_how_long() {
    use electd::daemon::shared::Lease;
    use std::time::{Duration, Instant};
    let (s, server, _rx) = node3(None).await;
    let a = server.addr;
    let r = get(a, "/is-leader?algorithm=raft").await;
    assert_eq!(r.json()["lease"], "none");
    assert!(r.json().get("lease_remaining_ms").is_none(), "{}", r.body);

    let mut held = view(Raft, Some(3), 4);
    held.lease = Lease::Until(Instant::now() + Duration::from_secs(60));
    s.publish_status(vec![view(Bully, Some(5), 1), held]);
    let r = get(a, "/is-leader?algorithm=raft").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["lease"], "quorum");
    let left = r.json()["lease_remaining_ms"].as_u64().expect("a number");
    assert!(left > 50_000 && left <= 60_000, "{left}");
    let leader = get(a, "/leader?algorithm=raft").await.json();
    assert_eq!(leader["lease"], "quorum");

    let mut gone = view(Raft, Some(3), 4);
    gone.lease = Lease::Until(Instant::now());
    s.publish_status(vec![view(Bully, Some(5), 1), gone]);
    let r = get(a, "/is-leader?algorithm=raft").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.json()["lease_remaining_ms"], 0);
    // Issue 28, item 2: the body agrees with the status, and says why.
    assert_eq!(r.json()["is_leader"], false, "{}", r.body);
    assert_eq!(r.json()["leader"], 3);
    assert!(
        r.json()["why"].as_str().unwrap_or("").contains("no lease"),
        "{}",
        r.body
    );
    let leader = get(a, "/leader?algorithm=raft").await.json();
    assert_eq!(leader["is_leader"], false);
    server.stop().await;
}

/// A 404 lists every route, and every route it lists exists (the list once left out
/// /admin/drain, /admin/undrain and /admin/transfer).
#[tokio::test]
async fn a_404_lists_exactly_the_routes_that_exist() {
    let (_s, server, _rx) = node3(None).await;
    let a = server.addr;
    let r = get(a, "/nope").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let said = r.json()["error"].as_str().unwrap_or_default().to_string();
    for route in electd::http::ROUTES {
        assert!(
            said.split_whitespace().any(|w| w == route),
            "{route} not in {said}"
        );
        let method = if route.starts_with("/admin/") {
            Method::POST
        } else {
            Method::GET
        };
        if route == "/watch" {
            continue; // a stream: it answers, and does not end
        }
        let r = call(a, method, route, None).await;
        assert_ne!(r.status, StatusCode::NOT_FOUND, "{route}: {}", r.body);
    }
    server.stop().await;
}

/// A drain the runtime could not write to the state file is not "done": 500 with the
/// runtime's words (it holds in the process only), not a 200 after the hand-over.
#[tokio::test]
async fn a_drain_that_is_not_on_disk_is_a_500_naming_why() {
    let (s, server, mut rx) = node3(Some(TOKEN)).await;
    tokio::spawn(async move {
        while let Some(cmd) = rx.recv().await {
            if let Control::Drain { reply, .. } = cmd {
                let _ = reply.send(Err(
                    "cannot write the state file: No space left on device".into()
                ));
            }
        }
    });
    let r = call(
        server.addr,
        Method::POST,
        "/admin/drain?algorithm=raft",
        Some(BEARER),
    )
    .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.body);
    assert!(
        r.body.contains("not on disk") && r.body.contains("No space left"),
        "{}",
        r.body
    );
    drop(s);
    server.stop().await;
}

/// docs/policy.md: `/watch` events carry `"fault": true` while a failing check makes
/// the node ineligible. The first events of a stream (the snapshot) said false for a
/// node in FAULT, until its next change (the audit).
#[tokio::test]
async fn the_first_watch_event_of_a_node_in_fault_says_so() {
    let (s, server, _rx) = node3(None).await;
    let mut faulty = view(Bully, Some(5), 1);
    faulty.ineligible = vec![electd::contract::policy::Ineligible::Fault];
    s.publish_status(vec![faulty, view(Raft, Some(3), 4)]);
    let mut all = Sse::open(server.addr, "/watch").await;
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 2 {
        let e = all.next().await.expect("an initial event").json();
        assert_eq!(e["initial"], true, "{e}");
        seen.insert(
            e["algorithm"].as_str().unwrap().to_string(),
            e["fault"].clone(),
        );
    }
    assert_eq!(seen["bully"], true, "{seen:?}");
    assert_eq!(seen["raft"], false, "{seen:?}");
    server.stop().await;
}
