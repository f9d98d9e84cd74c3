//! Leader views of many nodes from their `/watch` server-sent-event streams.
//!
//! One thread per node reads `GET /watch?algorithm=A` (de-chunking the HTTP body) and
//! records each `leader` event with the [`Instant`] it arrived. Agreement is then
//! decided on events, not on polls: the moment the last survivor adopts the new
//! leader is known to within the loopback delivery of one SSE event (well under a
//! millisecond), where polling `/status` would add up to one polling period.

use electd::contract::algorithm::AlgorithmKind;
use electd::http::client::read_events;
use electd::NodeId;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What one node last said about its leader.
#[derive(Clone, Copy, Debug)]
pub struct View {
    pub leader: Option<NodeId>,
    /// When the event arrived here.
    pub at: Instant,
    /// When the node itself says the change happened (`at_us`, Unix microseconds).
    pub stamp_us: Option<u64>,
    /// When the node last said it had no leader (`at_us` of an event with no leader:
    /// its detector fired, or an election reached it).
    pub lost_us: Option<u64>,
    /// The stream is open and its initial snapshot has arrived.
    pub connected: bool,
    generation: u64,
}

type State = HashMap<NodeId, View>;

/// See the module documentation.
#[derive(Clone)]
pub struct Watchers {
    algorithm: AlgorithmKind,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Watchers {
    pub fn new(algorithm: AlgorithmKind) -> Watchers {
        Watchers {
            algorithm,
            shared: Arc::new((Mutex::new(HashMap::new()), Condvar::new())),
        }
    }

    /// (Re)connect to node `id`'s stream; an older stream of the same node is ignored
    /// from now on. Connection attempts are retried for `within` (the process may still
    /// be starting).
    pub fn connect(&self, id: NodeId, addr: SocketAddr, within: Duration) {
        let generation = {
            let mut s = self.lock();
            let g = s.get(&id).map(|v| v.generation + 1).unwrap_or(1);
            s.insert(
                id,
                View {
                    leader: None,
                    at: Instant::now(),
                    stamp_us: None,
                    lost_us: None,
                    connected: false,
                    generation: g,
                },
            );
            g
        };
        let me = self.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + within;
            while Instant::now() < deadline {
                if me.stream(id, addr, generation).is_ok() {
                    break;
                }
                if !me.is_current(id, generation) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            me.update(id, generation, |v| v.connected = false);
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_current(&self, id: NodeId, generation: u64) -> bool {
        self.lock()
            .get(&id)
            .is_some_and(|v| v.generation == generation)
    }

    fn update(&self, id: NodeId, generation: u64, f: impl FnOnce(&mut View)) {
        let mut s = self.lock();
        if let Some(v) = s.get_mut(&id).filter(|v| v.generation == generation) {
            f(v);
            self.shared.1.notify_all();
        }
    }

    /// Read one stream until it ends. Err if it could not be opened.
    fn stream(&self, id: NodeId, addr: SocketAddr, generation: u64) -> std::io::Result<()> {
        let path = format!("/watch?algorithm={}", self.algorithm);
        read_events(addr, &path, Duration::from_millis(200), None, |event| {
            self.event(id, generation, event, Instant::now());
            self.is_current(id, generation)
        })
    }

    fn event(&self, id: NodeId, generation: u64, text: &str, now: Instant) {
        let Some(data) = text.lines().find_map(|l| l.strip_prefix("data:")) else {
            return;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(data.trim()) else {
            return;
        };
        if v.get("algorithm").and_then(|a| a.as_str()) != Some(self.algorithm.as_str()) {
            return; // `lagged` notices; a fresh snapshot follows them
        }
        let leader = v
            .get("leader")
            .and_then(|l| l.as_u64())
            .map(|l| l as NodeId);
        let stamp = v.get("at_us").and_then(|t| t.as_u64());
        self.update(id, generation, |view| {
            if leader.is_none() && stamp.is_some() {
                view.lost_us = stamp;
            }
            // A later event naming the leader already followed (a new term of the same
            // leader, a snapshot after a reconnection) does not move when it was adopted.
            if !(view.connected && view.leader == leader) {
                view.leader = leader;
                view.at = now;
                view.stamp_us = stamp;
            }
            view.connected = true;
        });
    }

    /// Node `id`'s last reported leader; `None` while its stream is not open.
    pub fn leader_of(&self, id: NodeId) -> Option<Option<NodeId>> {
        let s = self.lock();
        s.get(&id).filter(|v| v.connected).map(|v| v.leader)
    }

    /// The leader every node of `nodes` agrees on (the highest of them where the
    /// algorithm promises it) and the moment the last of them adopted it.
    pub fn agreement(&self, nodes: &[NodeId]) -> Option<(NodeId, Instant)> {
        let s = self.lock();
        agreement(&s, nodes, self.algorithm)
    }

    /// When the first and the last of `nodes` adopted `leader`, by their own clocks
    /// (`at_us`, Unix microseconds; every node of the bench runs on this machine, so
    /// it is one clock): `None` unless every one of them follows `leader` and said when.
    /// Unlike the arrival of the events here, this leaves out how long a loaded machine
    /// took to schedule the bench's reader threads.
    pub fn adopted_span_us(&self, nodes: &[NodeId], leader: NodeId) -> Option<(u64, u64)> {
        let s = self.lock();
        let mut span: Option<(u64, u64)> = None;
        for id in nodes {
            let v = s
                .get(id)
                .filter(|v| v.connected && v.leader == Some(leader))?;
            let t = v.stamp_us?;
            span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
        span
    }

    /// Each of `nodes` with its last "no leader" stamp and the stamp of its current
    /// leader's adoption (Unix µs; `None` where it has none).
    pub fn stamps(&self, nodes: &[NodeId]) -> Vec<(NodeId, Option<u64>, Option<u64>)> {
        let s = self.lock();
        nodes
            .iter()
            .map(|&id| {
                let v = s.get(&id);
                (id, v.and_then(|v| v.lost_us), v.and_then(|v| v.stamp_us))
            })
            .collect()
    }

    /// The earliest moment, at or after `since_us`, at which one of `nodes` said it had
    /// no leader (by its own stamp): in a failover, the first survivor's detection.
    pub fn first_lost_us(&self, nodes: &[NodeId], since_us: u64) -> Option<u64> {
        let s = self.lock();
        nodes
            .iter()
            .filter_map(|id| s.get(id)?.lost_us)
            .filter(|&t| t >= since_us)
            .min()
    }

    /// Wait (on events, no polling) until [`Watchers::agreement`] holds for `nodes`,
    /// at most until `deadline`.
    pub fn wait_agreement(&self, nodes: &[NodeId], deadline: Instant) -> Option<(NodeId, Instant)> {
        let (m, cv) = &*self.shared;
        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(a) = agreement(&s, nodes, self.algorithm) {
                return Some(a);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            s = cv
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn agreement(s: &State, nodes: &[NodeId], kind: AlgorithmKind) -> Option<(NodeId, Instant)> {
    let mut leader = None;
    let mut last: Option<Instant> = None;
    for id in nodes {
        let v = s.get(id).filter(|v| v.connected)?;
        let l = v.leader?;
        if leader.is_some_and(|x| x != l) {
            return None;
        }
        leader = Some(l);
        last = Some(last.map_or(v.at, |t| t.max(v.at)));
    }
    let l = leader?;
    if !nodes.contains(&l) || (kind.elects_highest_id() && nodes.iter().max() != Some(&l)) {
        return None;
    }
    Some((l, last?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failover's first detection is the earliest stamp of an event without a
    /// leader after the take-down, whatever came after it on that node.
    #[test]
    fn the_first_loss_of_the_leader_is_read_from_the_events_stamps() {
        let w = Watchers::new(AlgorithmKind::Hs);
        for id in [1, 2, 3] {
            w.lock().insert(
                id,
                View {
                    leader: Some(3),
                    at: Instant::now(),
                    stamp_us: Some(100),
                    lost_us: None,
                    connected: true,
                    generation: 1,
                },
            );
        }
        let ev = |leader: &str, at_us: u64| {
            format!("data: {{\"algorithm\":\"hs\",\"leader\":{leader},\"at_us\":{at_us}}}\n")
        };
        let now = Instant::now();
        // Node 1 lost its leader at 900 (before the take-down at 1,000), then followed 3
        // again; node 2 lost it at 1,500 and adopted 1 at 1,700; node 1 at 1,400.
        w.event(1, 1, &ev("null", 900), now);
        w.event(1, 1, &ev("3", 950), now);
        assert_eq!(w.first_lost_us(&[1, 2], 1_000), None);
        w.event(2, 1, &ev("null", 1_500), now);
        w.event(2, 1, &ev("1", 1_700), now);
        w.event(1, 1, &ev("null", 1_400), now);
        assert_eq!(w.first_lost_us(&[1, 2], 1_000), Some(1_400));
        assert_eq!(w.first_lost_us(&[2], 1_000), Some(1_500));
        // An event of another algorithm, or of a stale stream, is not read.
        w.event(
            3,
            1,
            "data: {\"algorithm\":\"raft\",\"leader\":null,\"at_us\":1100}\n",
            now,
        );
        w.event(3, 7, &ev("null", 1_100), now);
        assert_eq!(w.first_lost_us(&[1, 2, 3], 1_000), Some(1_400));
        w.event(3, 1, &ev("null", 1_100), now);
        assert_eq!(w.first_lost_us(&[1, 2, 3], 1_000), Some(1_100));
    }

    #[test]
    fn agreement_needs_every_node_on_one_live_highest_leader() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(3);
        let view = |leader, at| View {
            leader,
            at,
            stamp_us: None,
            lost_us: None,
            connected: true,
            generation: 1,
        };
        let mut s = State::new();
        s.insert(1, view(Some(3), t0));
        s.insert(2, view(Some(3), t1));
        s.insert(3, view(Some(3), t0));
        let bully = AlgorithmKind::Bully;
        assert_eq!(agreement(&s, &[1, 2, 3], bully).map(|a| a.0), Some(3));
        assert_eq!(agreement(&s, &[1, 2, 3], bully).map(|a| a.1), Some(t1));
        // 3 is not a survivor: no agreement.
        assert!(agreement(&s, &[1, 2], bully).is_none());
        s.insert(2, view(Some(2), t1));
        assert!(agreement(&s, &[1, 2, 3], bully).is_none());
        // Raft accepts any live leader, Bully only the highest.
        s.insert(1, view(Some(2), t0));
        s.insert(3, view(Some(2), t0));
        assert!(agreement(&s, &[1, 2, 3], bully).is_none());
        assert!(agreement(&s, &[1, 2, 3], AlgorithmKind::Raft).is_some());
    }
}
