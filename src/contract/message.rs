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
    Election {
        /// The cascade this ELECTION belongs to.
        tag: ElectionTag,
        /// The highest epoch the sender has seen (receivers learn it).
        epoch: u64,
    },
    /// Bully family: answer to ELECTION; Improved Bully reads `responder`.
    Ok {
        /// The higher node that answers (and takes over the election).
        responder: NodeId,
        /// The cascade of the ELECTION answered.
        tag: ElectionTag,
    },
    /// Bully family: the winner announces itself to every other roster member.
    Coordinator {
        /// The new leader (the sender).
        leader: NodeId,
        /// The epoch of the new leadership (its fencing term).
        epoch: u64,
        /// The cascade that elected it.
        tag: ElectionTag,
    },
    /// Improved Bully: the initiator hands the election to its highest responder.
    YouAreCoordinator {
        /// The cascade being handed over.
        tag: ElectionTag,
        /// The highest epoch the initiator has seen.
        epoch: u64,
    },
    /// Ring: the election message with every id it has passed.
    RingElection {
        /// The node that started this lap (it ends the lap when the message returns).
        initiator: NodeId,
        /// Every id the message has passed, in ring order, starting with the initiator.
        ids: Vec<NodeId>,
        /// The highest epoch seen along the lap; the decision takes one above it.
        epoch: u64,
    },
    /// Ring: the result lap.
    RingCoordinator {
        /// The node that started the election lap (it ends this lap too).
        initiator: NodeId,
        /// The highest id collected by the election lap.
        leader: NodeId,
        /// The epoch of the new leadership.
        epoch: u64,
    },
    /// Chang–Roberts: a candidate id travelling clockwise.
    LcrElection {
        /// The id being carried; a node forwards it only if it beats its own.
        candidate: NodeId,
        /// The election round (round r elects epoch r).
        round: u64,
    },
    /// Chang–Roberts: the ELECTED lap.
    LcrElected {
        /// The winner, whose own id came back to it.
        leader: NodeId,
        /// The epoch of the new leadership (the round that elected it).
        epoch: u64,
    },
    /// Hirschberg–Sinclair: a probe of `candidate` in `phase`, `hops` travelled so far.
    Probe {
        /// The id probing its neighbourhood.
        candidate: NodeId,
        /// The phase k: the probe travels up to 2^k hops each way.
        phase: u32,
        /// Hops travelled so far in this direction.
        hops: u32,
        /// Travelling to the right (clockwise) rather than to the left.
        to_right: bool,
        /// The election round (round r elects epoch r).
        round: u64,
    },
    /// Hirschberg–Sinclair: a probe bounced back towards its candidate.
    Reply {
        /// The candidate the reply returns to.
        candidate: NodeId,
        /// The phase of the probe answered.
        phase: u32,
        /// The direction the probe travelled (the reply travels the other way).
        to_right: bool,
        /// The election round of the probe.
        round: u64,
    },
    /// Hirschberg–Sinclair: the terminate (leader announcement) lap.
    Terminate {
        /// The winner, whose probe came all the way round.
        leader: NodeId,
        /// The epoch of the new leadership (the round that elected it).
        epoch: u64,
    },
    /// Raft §5.2 RequestVote (or a pre-vote request, §9.6 of Ongaro's thesis: typed and
    /// counted as `pre_vote`).
    RequestVote {
        /// The candidate's term (for a pre-vote: the term it would take).
        term: u64,
        /// A pre-vote: asks whether a vote would be granted, changes no state.
        pre_vote: bool,
        /// Leadership transfer (thesis §3.10): the candidate campaigns because the
        /// leader told it to ([`Message::TimeoutNow`]), so voters grant it although
        /// they heard that leader recently.
        transfer: bool,
    },
    /// Raft vote reply (`pre_vote_response` when it answers a pre-vote).
    Vote {
        /// Granted: the request's term; refused: the voter's own term.
        term: u64,
        /// Whether the vote (or pre-vote) is granted.
        granted: bool,
        /// Answers a pre-vote request.
        pre_vote: bool,
    },
    /// Leader liveness beacon (failure detector; Raft's empty AppendEntries).
    Heartbeat {
        /// The term (epoch, round) of the sender's leadership.
        term: u64,
        /// The sender, the leader of that term.
        leader: NodeId,
    },
    /// A follower's answer to a heartbeat. Raft: its term (used by check-quorum;
    /// `leader` is 0). The groups on the heartbeat failure detector: the fencing token
    /// held, `(term, leader)` (`leader` 0 when none is known), sent to a claimant below
    /// it; the leader id is needed because two leaderships of one term differ only in it.
    HeartbeatAck {
        /// The term of the token (or, for Raft, of the follower).
        term: u64,
        /// The leader of that token; 0 for Raft or when none is known.
        leader: NodeId,
    },
    /// A leader leaving gracefully: elect now instead of waiting for the failure timeout.
    Resign {
        /// The epoch of the leadership being given up.
        epoch: u64,
    },
    /// Raft leadership transfer (thesis §3.10): the leader tells the target to start
    /// an election at once.
    TimeoutNow {
        /// The leader's term.
        term: u64,
    },
    /// A leader's priority while a weighted health check lowers it (and once more when
    /// it is back), sent with its heartbeats: followers rank it by this priority
    /// instead of the configured one, so one that now outranks it takes over
    /// (keepalived's priority in its adverts). Liveness traffic.
    Priority {
        /// The term of the sender's leadership.
        term: u64,
        /// Its effective priority (1..=255).
        priority: u32,
    },
    /// Leadership transfer in the Bully and ring families: the leader hands its
    /// leadership to `to`, which announces itself with a token above `epoch`.
    Handoff {
        /// The epoch of the leadership handed over.
        epoch: u64,
        /// The target (the receiver).
        to: NodeId,
    },
}

/// The `type` label of a message (lower snake case, stable: metrics and reports use it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// Bully family ELECTION ([`Message::Election`]).
    Election,
    /// Bully family OK, the answer to an ELECTION.
    Ok,
    /// Bully family COORDINATOR, the winner's announcement.
    Coordinator,
    /// Improved Bully: the initiator hands the election over.
    YouAreCoordinator,
    /// Ring: the election lap.
    RingElection,
    /// Ring: the result lap.
    RingCoordinator,
    /// Chang–Roberts: a candidate id.
    LcrElection,
    /// Chang–Roberts: the ELECTED lap.
    LcrElected,
    /// Hirschberg–Sinclair: a probe.
    Probe,
    /// Hirschberg–Sinclair: a reply to a probe.
    Reply,
    /// Hirschberg–Sinclair: the announcement lap.
    Terminate,
    /// Raft RequestVote (not a pre-vote).
    RequestVote,
    /// Raft vote reply (not to a pre-vote).
    Vote,
    /// Leader liveness beacon; counted as liveness, not election traffic.
    Heartbeat,
    /// Answer to a heartbeat; counted as liveness.
    HeartbeatAck,
    /// A leader stepping down gracefully.
    Resign,
    /// Raft pre-vote request (`Message::RequestVote` with `pre_vote`), thesis §9.6.
    PreVote,
    /// Raft pre-vote reply (`Message::Vote` with `pre_vote`).
    PreVoteResponse,
    /// Raft leadership transfer: start an election now.
    TimeoutNow,
    /// Bully and ring families: leadership handed to a chosen node.
    Handoff,
    /// A leader's lowered priority (weighted health checks); liveness.
    Priority,
}

impl MessageType {
    /// Every type, in a fixed order (tables, metrics pre-registration).
    pub const ALL: [MessageType; 21] = [
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
        MessageType::TimeoutNow,
        MessageType::Handoff,
        MessageType::Priority,
    ];

    /// The label: lower snake case, the same in metrics, traces and reports.
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
            MessageType::TimeoutNow => "timeout_now",
            MessageType::Handoff => "handoff",
            MessageType::Priority => "priority",
        }
    }

    /// Liveness traffic, counted apart from the election messages of the literature.
    pub fn is_liveness(self) -> bool {
        matches!(
            self,
            MessageType::Heartbeat | MessageType::HeartbeatAck | MessageType::Priority
        )
    }

    /// A reply to a request its sender sent to every member at once, of which it needs
    /// only a majority: Raft's vote and pre-vote replies. On a large roster they all
    /// reach the requester together, and the reliable link does not hurry their
    /// retransmission (the fan-in rule of `node::link`).
    pub fn is_fan_in_reply(self) -> bool {
        matches!(self, MessageType::Vote | MessageType::PreVoteResponse)
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
    /// The type label of this message; a pre-vote request or reply has its own
    /// type ([`MessageType::PreVote`], [`MessageType::PreVoteResponse`]).
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
            Message::TimeoutNow { .. } => MessageType::TimeoutNow,
            Message::Handoff { .. } => MessageType::Handoff,
            Message::Priority { .. } => MessageType::Priority,
        }
    }
}
