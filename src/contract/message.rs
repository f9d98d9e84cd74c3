//! Domain messages exchanged by the election algorithms.
//!
//! These are the types algorithm code sees. The wire module (`wire.rs`) is the only
//! place that maps them to and from protobuf; the simulator passes them as values.

use crate::NodeId;
use serde::Serialize;
use std::fmt;

/// Identifies one Bully-family election cascade: every ELECTION sent because of the
/// same initial detection carries the same tag, so a node joins each cascade once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ElectionTag {
    /// The node that started the cascade.
    pub initiator: NodeId,
    /// Grows with every election the initiator starts (incarnation in the high bits).
    pub seq: u64,
}

/// One logical message of an election algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Bully family: "I am calling an election" (sent to every higher id).
    Election { tag: ElectionTag, epoch: u64 },
    /// Bully family: answer to ELECTION; Improved Bully reads `responder`.
    Ok { responder: NodeId, tag: ElectionTag },
    /// Bully family: the winner announces itself to every other roster member.
    Coordinator {
        leader: NodeId,
        epoch: u64,
        tag: ElectionTag,
    },
    /// Improved Bully: the initiator hands the election to its highest responder.
    YouAreCoordinator { tag: ElectionTag, epoch: u64 },
    /// Ring: the election message with every id it has passed.
    RingElection {
        initiator: NodeId,
        ids: Vec<NodeId>,
        epoch: u64,
    },
    /// Ring: the result lap.
    RingCoordinator {
        initiator: NodeId,
        leader: NodeId,
        epoch: u64,
    },
    /// Chang–Roberts: a candidate id travelling clockwise.
    LcrElection { candidate: NodeId, round: u64 },
    /// Chang–Roberts: the ELECTED lap.
    LcrElected { leader: NodeId, epoch: u64 },
    /// Hirschberg–Sinclair: a probe of `candidate` in `phase`, `hops` travelled so far.
    Probe {
        candidate: NodeId,
        phase: u32,
        hops: u32,
        to_right: bool,
        round: u64,
    },
    /// Hirschberg–Sinclair: a probe bounced back towards its candidate.
    Reply {
        candidate: NodeId,
        phase: u32,
        to_right: bool,
        round: u64,
    },
    /// Hirschberg–Sinclair: the terminate (leader announcement) lap.
    Terminate { leader: NodeId, epoch: u64 },
    /// Raft §5.2 RequestVote (or a pre-vote request, §9.6 of Ongaro's thesis: typed and
    /// counted as `pre_vote`).
    RequestVote { term: u64, pre_vote: bool },
    /// Raft vote reply (`pre_vote_response` when it answers a pre-vote).
    Vote {
        term: u64,
        granted: bool,
        pre_vote: bool,
    },
    /// Leader liveness beacon (failure detector; Raft's empty AppendEntries).
    Heartbeat { term: u64, leader: NodeId },
    /// A follower's answer to a heartbeat. Raft: its term (used by check-quorum;
    /// `leader` is 0). The groups on the heartbeat failure detector: the fencing token
    /// held, `(term, leader)` (`leader` 0 when none is known), sent to a claimant below
    /// it; the leader id is needed because two leaderships of one term differ only in it.
    HeartbeatAck { term: u64, leader: NodeId },
    /// A leader leaving gracefully: elect now instead of waiting for the failure timeout.
    Resign { epoch: u64 },
}

/// The `type` label of a message (lower snake case, stable: metrics and reports use it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    Election,
    Ok,
    Coordinator,
    YouAreCoordinator,
    RingElection,
    RingCoordinator,
    LcrElection,
    LcrElected,
    Probe,
    Reply,
    Terminate,
    RequestVote,
    Vote,
    Heartbeat,
    HeartbeatAck,
    Resign,
    /// Raft pre-vote request (`Message::RequestVote` with `pre_vote`), thesis §9.6.
    PreVote,
    /// Raft pre-vote reply (`Message::Vote` with `pre_vote`).
    PreVoteResponse,
}

impl MessageType {
    /// Every type, in a fixed order (tables, metrics pre-registration).
    pub const ALL: [MessageType; 18] = [
        MessageType::Election,
        MessageType::Ok,
        MessageType::Coordinator,
        MessageType::YouAreCoordinator,
        MessageType::RingElection,
        MessageType::RingCoordinator,
        MessageType::LcrElection,
        MessageType::LcrElected,
        MessageType::Probe,
        MessageType::Reply,
        MessageType::Terminate,
        MessageType::RequestVote,
        MessageType::Vote,
        MessageType::Heartbeat,
        MessageType::HeartbeatAck,
        MessageType::Resign,
        MessageType::PreVote,
        MessageType::PreVoteResponse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Election => "election",
            MessageType::Ok => "ok",
            MessageType::Coordinator => "coordinator",
            MessageType::YouAreCoordinator => "you_are_coordinator",
            MessageType::RingElection => "ring_election",
            MessageType::RingCoordinator => "ring_coordinator",
            MessageType::LcrElection => "lcr_election",
            MessageType::LcrElected => "lcr_elected",
            MessageType::Probe => "probe",
            MessageType::Reply => "reply",
            MessageType::Terminate => "terminate",
            MessageType::RequestVote => "request_vote",
            MessageType::Vote => "vote",
            MessageType::Heartbeat => "heartbeat",
            MessageType::HeartbeatAck => "heartbeat_ack",
            MessageType::Resign => "resign",
            MessageType::PreVote => "pre_vote",
            MessageType::PreVoteResponse => "pre_vote_response",
        }
    }

    /// Liveness traffic, counted apart from the election messages of the literature.
    pub fn is_liveness(self) -> bool {
        matches!(self, MessageType::Heartbeat | MessageType::HeartbeatAck)
    }

    /// Sent through the reliable link (sequence, ack, retransmission)? Liveness
    /// traffic is fire-and-forget: a lost heartbeat is superseded by the next one.
    pub fn is_reliable(self) -> bool {
        !self.is_liveness()
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Message {
    pub fn kind(&self) -> MessageType {
        match self {
            Message::Election { .. } => MessageType::Election,
            Message::Ok { .. } => MessageType::Ok,
            Message::Coordinator { .. } => MessageType::Coordinator,
            Message::YouAreCoordinator { .. } => MessageType::YouAreCoordinator,
            Message::RingElection { .. } => MessageType::RingElection,
            Message::RingCoordinator { .. } => MessageType::RingCoordinator,
            Message::LcrElection { .. } => MessageType::LcrElection,
            Message::LcrElected { .. } => MessageType::LcrElected,
            Message::Probe { .. } => MessageType::Probe,
            Message::Reply { .. } => MessageType::Reply,
            Message::Terminate { .. } => MessageType::Terminate,
            Message::RequestVote { pre_vote: true, .. } => MessageType::PreVote,
            Message::RequestVote { .. } => MessageType::RequestVote,
            Message::Vote { pre_vote: true, .. } => MessageType::PreVoteResponse,
            Message::Vote { .. } => MessageType::Vote,
            Message::Heartbeat { .. } => MessageType::Heartbeat,
            Message::HeartbeatAck { .. } => MessageType::HeartbeatAck,
            Message::Resign { .. } => MessageType::Resign,
        }
    }
}
