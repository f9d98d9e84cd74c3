//! Helpers of the tests of runtimes in this process (HTTP API, hooks, health checks,
//! network options): a `Shared` built directly (no daemon), a real server on
//! 127.0.0.1:0, and a small HTTP/1.1 client of its own (hyper) that can read SSE.

use electd::contract::algorithm::{AlgorithmKind, Options, Timing};
use electd::daemon::metrics::Metrics;
use electd::daemon::runtime::{self, RuntimeConfig, Start};
use electd::daemon::shared::{Control, GroupView, Shared};
use electd::node::link::LinkConfig;
use electd::NodeId;
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// The runtime config of node `id` in a test cluster of real runtimes on loopback:
/// `algorithms` over `peers`, heartbeat 10 ms, failure timeout 200 ms, the link's
/// defaults, no key, no state file; `sources` as in `RuntimeConfig`. The timing is
/// checked with `Timing::validate`, as the config loader would.
pub(crate) fn runtime_config(
    id: NodeId,
    cluster: &str,
    peers: Vec<(NodeId, SocketAddr)>,
    algorithms: Vec<AlgorithmKind>,
    sources: Option<std::collections::HashMap<NodeId, Vec<SocketAddr>>>,
) -> RuntimeConfig {
    let cfg = RuntimeConfig {
        id,
        cluster: cluster.into(),
        peers,
        algorithms,
        timing: Timing {
            heartbeat: Duration::from_millis(10),
            failure_timeout: Duration::from_millis(200),
            answer_timeout: Duration::from_millis(40),
            coordinator_timeout: Duration::from_millis(120),
            election_timeout_min: Duration::from_millis(100),
            election_timeout_max: Duration::from_millis(200),
        },
        options: Options::default(),
        link: LinkConfig::default(),
        keys: None,
        incarnation: runtime::incarnation_now(),
        start: Start::Electing,
        state_file: None,
        sources,
    };
    cfg.timing
        .validate(cfg.link.retransmit, cfg.link.give_up)
        .expect("the test timing keeps the relations the config enforces");
    cfg
}

/// Deadline of every wait in these tests.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

pub(crate) fn shared(
    node: NodeId,
    algorithms: &[AlgorithmKind],
    token: Option<&str>,
) -> (Arc<Shared>, mpsc::Receiver<Control>) {
    let metrics = Metrics::new(node, algorithms).expect("metrics");
    let (s, rx) = Shared::new(
        node,
        "test".to_string(),
        algorithms.to_vec(),
        metrics,
        token.map(str::to_string),
    );
    (Arc::new(s), rx)
}

pub(crate) fn view(algorithm: AlgorithmKind, leader: Option<NodeId>, term: u64) -> GroupView {
    GroupView {
        algorithm,
        state: if leader.is_some() {
            "follower"
        } else {
            "electing"
        },
        leader,
        term,
        since: 1_700_000_000.0,
        last_election_ms: Some(3.0),
        electing: leader.is_none(),
        ineligible: Vec::new(),
        lease: Default::default(),
    }
}

pub(crate) struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    pub(crate) async fn start(shared: Arc<Shared>) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(electd::http::serve(listener, shared, async move {
            let _ = rx.await;
        }));
        Server {
            addr,
            stop: Some(stop),
            task,
        }
    }

    /// Ask for a graceful shutdown and wait for the server to finish.
    pub(crate) async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let done = tokio::time::timeout(DEADLINE, &mut self.task).await;
        assert!(
            matches!(done, Ok(Ok(Ok(())))),
            "server did not shut down cleanly: {done:?}"
        );
    }
}

pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

async fn open(
    addr: SocketAddr,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> hyper::Response<Incoming> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "electd");
    if let Some(t) = token {
        req = req.header("authorization", t);
    }
    let req = req.body(Empty::<Bytes>::new()).expect("request");
    tokio::time::timeout(DEADLINE, sender.send_request(req))
        .await
        .expect("response in time")
        .expect("response")
}

/// One request; `auth` is the whole `Authorization` header value.
pub(crate) async fn call(
    addr: SocketAddr,
    method: Method,
    path: &str,
    auth: Option<&str>,
) -> Reply {
    let res = open(addr, method, path, auth).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = tokio::time::timeout(DEADLINE, res.into_body().collect())
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

pub(crate) async fn get(addr: SocketAddr, path: &str) -> Reply {
    call(addr, Method::GET, path, None).await
}

/// A server-sent events client.
pub(crate) struct Sse {
    pub status: StatusCode,
    pub content_type: String,
    body: Incoming,
    buf: String,
}

/// One SSE event: its `event:` name and `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub event: String,
    pub data: String,
}

impl SseEvent {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {:?}", self.data))
    }
}

impl Sse {
    pub(crate) async fn open(addr: SocketAddr, path: &str) -> Sse {
        let res = open(addr, Method::GET, path, None).await;
        Sse {
            status: res.status(),
            content_type: res
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
            body: res.into_body(),
            buf: String::new(),
        }
    }

    /// The next event (comments skipped), or None when the stream ends; panics
    /// after [`DEADLINE`].
    pub(crate) async fn next(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(DEADLINE, self.next_inner())
            .await
            .expect("SSE event before the deadline")
    }

    async fn next_inner(&mut self) -> Option<SseEvent> {
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut ev = SseEvent {
                    event: "message".to_string(),
                    data: String::new(),
                };
                let mut has_data = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        ev.event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        ev.data.push_str(v.trim_start());
                        has_data = true;
                    }
                }
                if has_data {
                    return Some(ev);
                }
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.push_str(&String::from_utf8_lossy(&data));
                    }
                }
                Some(Err(_)) | None => return None,
            }
        }
    }
}

/// Wait until `check` holds, polling every few milliseconds, or panic after
/// [`DEADLINE`] with `what`.
pub(crate) async fn wait_until<F: FnMut() -> bool>(what: &str, mut check: F) {
    let start = tokio::time::Instant::now();
    while !check() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
