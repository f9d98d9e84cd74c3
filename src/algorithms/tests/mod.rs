//! Shared helpers of the algorithms' unit tests (the tests themselves sit beside each
//! algorithm: `tests/<algorithm>.rs`, wired from the algorithm's file).
//!
//! A test builds one instance, feeds it inputs through [`Algorithm`] and inspects the
//! effects of each input as an [`Fx`]: who was sent what, which timers were armed or
//! cancelled, which leader changes were published.

use crate::contract::algorithm::{Algorithm, Effect, GroupConfig, Options, Out, Timer, Timing};
use crate::contract::message::Message;
use crate::NodeId;

/// The configuration of node `me` in a roster listed in ring order, with the default
/// timing and options and boot counter 1.
pub(super) fn cfg(me: NodeId, ring: &[NodeId]) -> GroupConfig {
    GroupConfig {
        me,
        ring: ring.into(),
        timing: Timing::default(),
        options: Options::default(),
        incarnation: 1,
    }
}

/// Run one input against `alg` and return the effects it produced.
pub(super) fn step<A: Algorithm + ?Sized>(alg: &mut A, input: impl FnOnce(&mut A, &mut Out)) -> Fx {
    let mut out = Out::new();
    input(alg, &mut out);
    Fx(out.drain().collect())
}

/// Shorthands for the inputs of the [`Algorithm`] trait.
pub(super) fn start<A: Algorithm + ?Sized>(alg: &mut A, call_election: bool) -> Fx {
    step(alg, |a, out| a.on_start(call_election, out))
}

pub(super) fn deliver<A: Algorithm + ?Sized>(alg: &mut A, from: NodeId, msg: Message) -> Fx {
    step(alg, |a, out| a.on_message(from, msg, out))
}

pub(super) fn fire<A: Algorithm + ?Sized>(alg: &mut A, timer: Timer) -> Fx {
    step(alg, |a, out| a.on_timer(timer, out))
}

/// The effects of one input.
#[derive(Debug, Clone)]
pub(super) struct Fx(pub Vec<Effect>);

impl Fx {
    /// Point-to-point sends, in order.
    pub(super) fn sends(&self) -> Vec<(NodeId, Message)> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Effect::Send { to, msg } => Some((*to, msg.clone())),
                _ => None,
            })
            .collect()
    }

    /// Messages sent to `to`.
    pub(super) fn sent_to(&self, to: NodeId) -> Vec<Message> {
        self.sends()
            .into_iter()
            .filter(|(t, _)| *t == to)
            .map(|(_, m)| m)
            .collect()
    }

    /// Recipients of point-to-point sends, in order.
    pub(super) fn recipients(&self) -> Vec<NodeId> {
        self.sends().into_iter().map(|(t, _)| t).collect()
    }

    /// Broadcast messages, in order.
    pub(super) fn broadcasts(&self) -> Vec<Message> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Effect::Broadcast { msg } => Some(msg.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every message put on the wire (sends and broadcasts).
    pub(super) fn messages(&self) -> Vec<Message> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Effect::Send { msg, .. } | Effect::Broadcast { msg } => Some(msg.clone()),
                _ => None,
            })
            .collect()
    }

    /// Was `timer` armed (set or re-armed) by this input?
    pub(super) fn armed(&self, timer: Timer) -> bool {
        self.0
            .iter()
            .any(|e| matches!(e, Effect::SetTimer { timer: t, .. } if *t == timer))
    }

    /// The `[min, max]` range `timer` was last armed with.
    pub(super) fn armed_range(
        &self,
        timer: Timer,
    ) -> Option<(std::time::Duration, std::time::Duration)> {
        self.0.iter().rev().find_map(|e| match e {
            Effect::SetTimer { timer: t, min, max } if *t == timer => Some((*min, *max)),
            _ => None,
        })
    }

    /// Was `timer` cancelled by this input (and not armed again after)?
    pub(super) fn cancelled(&self, timer: Timer) -> bool {
        let mut last = None;
        for e in &self.0 {
            match e {
                Effect::CancelTimer(t) if *t == timer => last = Some(false),
                Effect::SetTimer { timer: t, .. } if *t == timer => last = Some(true),
                _ => {}
            }
        }
        last == Some(false)
    }

    /// Published leader changes `(leader, term)`, in order.
    pub(super) fn leader_changes(&self) -> Vec<(Option<NodeId>, u64)> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Effect::LeaderChanged { leader, term } => Some((*leader, *term)),
                _ => None,
            })
            .collect()
    }

    /// The last leader published by this input, if it published one.
    pub(super) fn new_leader(&self) -> Option<Option<NodeId>> {
        self.leader_changes().last().map(|(l, _)| *l)
    }

    pub(super) fn started_election(&self) -> bool {
        self.0.iter().any(|e| matches!(e, Effect::ElectionStarted))
    }

    /// No message on the wire and no leader change (timers may move).
    pub(super) fn is_quiet(&self) -> bool {
        self.messages().is_empty() && self.leader_changes().is_empty()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Messages that make no sense for the algorithm under test: other algorithms'
/// vocabulary, forged or out-of-range fields, ids outside the roster. Each algorithm
/// test feeds them from every roster member and from strangers.
pub(super) fn garbage() -> Vec<Message> {
    use crate::contract::message::ElectionTag;
    let tag = ElectionTag {
        initiator: 999,
        seq: u64::MAX,
    };
    vec![
        Message::Election {
            tag,
            epoch: u64::MAX,
        },
        Message::Ok {
            responder: 999,
            tag,
        },
        Message::Coordinator {
            leader: 999,
            epoch: u64::MAX,
            tag,
        },
        Message::YouAreCoordinator {
            tag,
            epoch: u64::MAX,
        },
        Message::RingElection {
            initiator: 999,
            ids: vec![],
            epoch: u64::MAX,
        },
        Message::RingElection {
            initiator: 1,
            ids: vec![999, 0, u32::MAX],
            epoch: 0,
        },
        Message::RingCoordinator {
            initiator: 0,
            leader: 999,
            epoch: u64::MAX,
        },
        Message::LcrElection {
            candidate: 999,
            round: u64::MAX,
        },
        Message::LcrElected {
            leader: 0,
            epoch: u64::MAX,
        },
        Message::Probe {
            candidate: 999,
            phase: u32::MAX,
            hops: u32::MAX,
            to_right: true,
            round: u64::MAX,
        },
        Message::Reply {
            candidate: 999,
            phase: u32::MAX,
            to_right: false,
            round: u64::MAX,
        },
        Message::Terminate {
            leader: 999,
            epoch: u64::MAX,
        },
        Message::RequestVote {
            term: u64::MAX,
            pre_vote: false,
            transfer: false,
        },
        Message::Vote {
            term: u64::MAX,
            granted: true,
            pre_vote: false,
        },
        Message::Heartbeat {
            term: u64::MAX,
            leader: 999,
        },
        Message::HeartbeatAck {
            term: u64::MAX,
            leader: 0,
        },
        Message::Resign { epoch: u64::MAX },
        Message::TimeoutNow { term: u64::MAX },
        Message::Priority {
            term: u64::MAX,
            priority: u32::MAX,
        },
        Message::Handoff {
            epoch: u64::MAX,
            to: 999,
        },
    ]
}

/// [`garbage`] without the message types in `own`: the vocabulary of the other
/// algorithms (and of the node layer), which the algorithm under test must ignore.
pub(super) fn foreign_vocabulary(own: &[crate::contract::message::MessageType]) -> Vec<Message> {
    garbage()
        .into_iter()
        .filter(|m| !own.contains(&m.kind()))
        .collect()
}

/// Start `alg` with `call_election` and return the effects of the input that called
/// the election: `on_start` itself, or — for a node that defers its first election by
/// a random delay (cold-start jitter) — the timer it armed for it.
pub(super) fn start_electing<A: Algorithm + ?Sized>(alg: &mut A) -> Fx {
    let fx = start(alg, true);
    if fx.started_election() {
        return fx;
    }
    let armed: Vec<Timer> =
        fx.0.iter()
            .filter_map(|e| match e {
                Effect::SetTimer { timer, .. } => Some(*timer),
                _ => None,
            })
            .collect();
    for timer in armed {
        let fx = fire(alg, timer);
        if fx.started_election() {
            return fx;
        }
    }
    panic!("on_start(call_election = true) never called an election: {fx:?}");
}
