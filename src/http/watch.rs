//! `GET /watch[?algorithm=A]`: server-sent events of leader changes.
//!
//! The stream starts with the current state of every selected group (`initial: true`),
//! then sends one `leader` event per change this node sees:
//!
//! ```text
//! event: leader
//! data: {"node":3,"algorithm":"bully","leader":5,"term":2,"role":"follower","at_ms":1700000000000,"at_us":1700000000000000,"fault":false,"paused":false,"initial":false,"lease":"none"}
//! ```
//!
//! `lease` is `none` when the group keeps no lease, else `quorum` with
//! `lease_remaining_ms` (what is left of this node's leadership lease when the event is
//! sent: 0 on followers and right after an election, until a majority has answered;
//! docs/leases.md).
//! `fault` is true while a failing health check makes this node ineligible; `paused`
//! in every event while the node is paused (`POST /admin/pause`): the pause's own, a
//! FAULT change, and the first events of a stream opened meanwhile.
//! `leader` is null when the node knows no leader (`role` is then `none`); `at_ms` is
//! the unix time of the change in milliseconds, `at_us` the same in microseconds. Subscribing and copying the snapshot
//! happen atomically ([`crate::daemon::shared::Shared::watch`]), so no change falls
//! between the two. A client too slow to keep up gets a `lagged` event
//! (`{"missed": n}`) followed by a fresh snapshot (and the changes after it), never a
//! silent gap and never a stale change after the present state. A comment is sent
//! every [`KEEP_ALIVE`] (1 s) of silence, so that a client can tell a quiet node from a
//! stopped one (`electd watch` gives up after three periods) and proxies do not close
//! an idle stream; the stream ends when the server shuts down.

use super::error::ApiError;
use super::params::{self, Need};
use super::App;
use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::shared::{GroupView, LeaderEvent};
use crate::NodeId;
use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::Stream;
use serde::Serialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch as signal;

/// The period of the keep-alive comment of a silent stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(1);

#[derive(Serialize)]
struct WatchEvent<'a> {
    #[serde(flatten)]
    event: &'a LeaderEvent,
    initial: bool,
    lease: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_remaining_ms: Option<u64>,
}

/// The lease as the snapshot holds it when the event is sent.
fn lease_of(
    shared: &crate::daemon::shared::Shared,
    event: &LeaderEvent,
) -> (&'static str, Option<u64>) {
    shared
        .group(event.algorithm)
        .map(|g| g.lease)
        .unwrap_or_default()
        .remaining()
}

fn leader_event(event: &LeaderEvent, initial: bool, lease: (&'static str, Option<u64>)) -> Event {
    let (lease, lease_remaining_ms) = lease;
    let data = serde_json::to_string(&WatchEvent {
        event,
        initial,
        lease,
        lease_remaining_ms,
    })
    .unwrap_or_default();
    Event::default().event("leader").data(data)
}

fn snapshot(
    node: NodeId,
    groups: &[GroupView],
    only: Option<AlgorithmKind>,
    paused: bool,
) -> Vec<Event> {
    groups
        .iter()
        .filter(|g| only.is_none_or(|a| a == g.algorithm))
        .map(|g| {
            let mut e = LeaderEvent::new(node, g.algorithm, g.leader, g.term)
                .stamped((g.since * 1e6).max(0.0) as u64);
            // A node in FAULT says so from the first event (it said false until the
            // next change).
            e.fault = g
                .ineligible
                .contains(&crate::contract::policy::Ineligible::Fault);
            e.paused = paused;
            leader_event(&e, true, g.lease.remaining())
        })
        .collect()
}

struct Watch {
    app: App,
    only: Option<AlgorithmKind>,
    rx: broadcast::Receiver<LeaderEvent>,
    closing: signal::Receiver<bool>,
    pending: VecDeque<Event>,
    /// What the snapshot showed of each group, until the group's first live event:
    /// the runtime publishes its status before it announces the change, so a stream
    /// opened between the two has the change in its snapshot and then as an event.
    /// That event, the same as the snapshot, is not sent twice.
    shown: Vec<(AlgorithmKind, Shown)>,
}

/// A group as an event shows it: leader, term, `fault`, `paused`.
type Shown = (Option<NodeId>, u64, bool, bool);

fn shown(
    groups: &[GroupView],
    only: Option<AlgorithmKind>,
    paused: bool,
) -> Vec<(AlgorithmKind, Shown)> {
    groups
        .iter()
        .filter(|g| only.is_none_or(|a| a == g.algorithm))
        .map(|g| {
            let fault = g
                .ineligible
                .contains(&crate::contract::policy::Ineligible::Fault);
            (g.algorithm, (g.leader, g.term, fault, paused))
        })
        .collect()
}

pub(super) async fn watch(
    State(app): State<App>,
    query: RawQuery,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let only = params::algorithm(&query, &app.shared, Need::Any)?;
    let (rx, groups) = app.shared.watch();
    let paused = app.shared.is_paused();
    let pending = snapshot(app.shared.node, &groups, only, paused).into();
    let closing = app.closing.clone();
    let state = Watch {
        app,
        only,
        rx,
        closing,
        pending,
        shown: shown(&groups, only, paused),
    };
    let stream = futures_util::stream::unfold(state, next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

async fn next(mut w: Watch) -> Option<(Result<Event, Infallible>, Watch)> {
    loop {
        if *w.closing.borrow() {
            return None;
        }
        if let Some(e) = w.pending.pop_front() {
            return Some((Ok(e), w));
        }
        tokio::select! {
            _ = w.closing.changed() => {
                // A dropped sender (server gone) ends the stream too.
                if w.closing.has_changed().is_err() {
                    return None;
                }
            }
            r = w.rx.recv() => match r {
                Ok(e) if w.only.is_none_or(|a| a == e.algorithm) => {
                    let first = w.shown.iter().position(|(a, _)| *a == e.algorithm);
                    let echo = first.is_some_and(|k| {
                        w.shown.swap_remove(k).1 == (e.leader, e.term, e.fault, e.paused)
                    });
                    if !echo {
                        let lease = lease_of(&w.app.shared, &e);
                        w.pending.push_back(leader_event(&e, false, lease));
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    let data = serde_json::json!({ "missed": missed }).to_string();
                    w.pending.push_back(Event::default().event("lagged").data(data));
                    // Start over from a fresh subscription and snapshot, taken
                    // atomically: the backlog is older than the snapshot, skip it.
                    let (rx, groups) = w.app.shared.watch();
                    w.rx = rx;
                    let paused = w.app.shared.is_paused();
                    w.pending.extend(snapshot(w.app.shared.node, &groups, w.only, paused));
                    w.shown = shown(&groups, w.only, paused);
                }
                Err(RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::AlgorithmKind::Bully;
    use crate::daemon::metrics::Metrics;
    use crate::daemon::shared::Shared;
    use std::sync::Arc;

    fn text(e: &Event) -> String {
        format!("{e:?}")
    }

    /// A node running Bully, and the API's state around it (with the sender that keeps
    /// it open).
    fn bully_app() -> (Arc<Shared>, App, signal::Sender<bool>) {
        let metrics = Metrics::new(1, &[Bully]).expect("metrics");
        let (s, _rx) = Shared::new(1, "t".into(), vec![Bully], metrics, None);
        let s = Arc::new(s);
        let (open, closing) = signal::channel(false);
        let app = App {
            shared: s.clone(),
            closing,
        };
        (s, app, open)
    }

    /// More changes than the event buffer holds while the client does not read: it
    /// gets `lagged`, the present state, then only what happens afterwards.
    #[tokio::test]
    async fn a_slow_watcher_gets_lagged_then_the_present() {
        let (s, app, _open) = bully_app();
        let closing = app.closing.clone();
        let (rx, _) = s.watch();
        let w = Watch {
            app,
            only: None,
            rx,
            closing,
            pending: VecDeque::new(),
            shown: Vec::new(),
        };
        let n = 1000u64; // far more than the broadcast buffer
        for term in 1..=n {
            s.emit(LeaderEvent::new(1, Bully, Some(2), term));
        }
        let (e, w) = next(w).await.expect("lagged");
        let e = e.unwrap_or_default();
        assert!(text(&e).contains("lagged"), "{}", text(&e));
        let (e, w) = next(w).await.expect("snapshot");
        let e = e.unwrap_or_default();
        assert!(text(&e).contains(&format!("term\\\":{n},")), "{}", text(&e));
        assert!(text(&e).contains("initial\\\":true"), "{}", text(&e));
        // The next event is a change made after the snapshot, not the backlog.
        s.emit(LeaderEvent::new(1, Bully, Some(1), n + 1));
        let (e, _w) = next(w).await.expect("change");
        let e = e.unwrap_or_default();
        assert!(
            text(&e).contains(&format!("term\\\":{},", n + 1)),
            "{}",
            text(&e)
        );
    }

    /// The runtime publishes its status, then announces the change: a stream opened
    /// between the two shows the change in its first event and does not send it again
    /// (it did: one change seen twice). The next change comes as usual.
    #[tokio::test]
    async fn a_change_in_the_snapshot_is_not_sent_again() {
        use crate::daemon::shared::Lease;
        use futures_util::StreamExt;
        let (s, app, _open) = bully_app();
        s.publish_status(vec![GroupView {
            algorithm: Bully,
            state: "follower",
            leader: Some(2),
            term: 5,
            since: 1.0,
            last_election_ms: None,
            electing: false,
            ineligible: Vec::new(),
            lease: Lease::None,
        }]);
        let sse = watch(State(app), RawQuery(None)).await.expect("a stream");
        let mut stream = Box::pin(sse_events(sse));
        s.emit(LeaderEvent::new(1, Bully, Some(2), 5));
        s.emit(LeaderEvent::new(1, Bully, Some(3), 6));
        let first = stream.next().await.expect("the snapshot");
        assert!(
            first.contains("\"term\":5,") && first.contains("\"initial\":true"),
            "{first}"
        );
        let second = stream.next().await.expect("the change");
        assert!(
            second.contains("\"term\":6,") && second.contains("\"initial\":false"),
            "{second}"
        );
    }

    /// The data of each event a `/watch` response streams.
    fn sse_events(
        sse: Sse<impl Stream<Item = Result<Event, Infallible>> + Send + 'static>,
    ) -> impl Stream<Item = String> {
        use axum::response::IntoResponse;
        use futures_util::StreamExt;
        let body = sse.into_response().into_body().into_data_stream();
        body.filter_map(|chunk| async move {
            let text = String::from_utf8(chunk.ok()?.to_vec()).ok()?;
            text.lines()
                .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
                .map(str::to_string)
        })
    }
}
