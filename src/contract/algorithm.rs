//! The contract between an election algorithm and whatever drives it.
//!
//! An algorithm is a pure state machine. Its inputs are the calls of [`Algorithm`]
//! (started, message from a peer, timer fired, peer unreachable, leader lost); its
//! outputs are [`Effect`]s pushed into an [`Out`] — send, broadcast, set or cancel a
//! timer given as a duration *range*, leader changed. Algorithm code holds no socket,
//! clock, thread or random generator: the driver (the simulator, the turmoil harness
//! or the UDP runtime, all through [`crate::node::Node`]) applies the effects, picks
//! each timer's value from its own seeded generator and feeds the resulting inputs
//! back. The same algorithm code therefore runs unchanged everywhere.

use crate::contract::message::Message;
use crate::NodeId;
use serde::Serialize;
use std::time::Duration;

/// Declares [`AlgorithmKind`] and [`AlgorithmKind::ALL`] from one list, so that the
/// list of every algorithm cannot drift from the enum: a variant added to the list is
/// in `ALL`, and every exhaustive `match` on the kind (the registry, the codec, …)
/// fails to compile until it handles it.
macro_rules! algorithm_kinds {
    ($( $(#[$doc:meta])* $variant:ident, )*) => {
        /// The election algorithms electd implements; each runs as an independent group.
        /// What each one is lives in its file (`INFO`); `AlgorithmKind::info` (the
        /// registry, `crate::algorithms::registry`) maps a kind to it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum AlgorithmKind {
            $( $(#[$doc])* $variant, )*
        }

        impl AlgorithmKind {
            /// Every algorithm, in declaration order (`kind as usize` is its index).
            pub const ALL: [AlgorithmKind; 0 $( + { let _ = AlgorithmKind::$variant; 1 } )*] =
                [$( AlgorithmKind::$variant, )*];
        }
    };
}

algorithm_kinds! {
    /// Garcia-Molina's Bully algorithm (1982).
    Bully,
    /// The Improved Bully algorithm (Soundarabai et al., 2014).
    ImprovedBully,
    /// The ring algorithm (an election lap, then a coordinator lap).
    Ring,
    /// Chang and Roberts' ring election (LCR, 1979).
    Lcr,
    /// Hirschberg and Sinclair's bidirectional ring election (1980).
    Hs,
    /// Raft's leader election (Ongaro and Ousterhout, 2014).
    Raft,
}

/// Timers an algorithm may arm. Setting a timer that is already armed re-arms it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// Bully family: no OK within T = 2·Ttrans + Tprocess ⇒ nobody higher is alive.
    Answer,
    /// Bully family: got an OK but no COORDINATOR within T' ⇒ start again.
    Coordinator,
    /// An election that has not finished in time is restarted (ring family), or a node
    /// without a leader calls one (watchdog).
    Retry,
    /// Raft: randomized election timeout.
    Election,
    /// Raft: the leader's heartbeat period.
    Heartbeat,
    /// Raft: check-quorum period of a leader; at a follower, the end of its leader
    /// lease (stickiness: `election_timeout_min` after the last heartbeat).
    Quorum,
    /// Ring family: forget the members suspected dead, so that a member wrongly
    /// suspected during message loss is tried again.
    Suspicion,
    /// Policy: a node following a lower-ranked leader takes over when this fires
    /// (`[policy] preempt_delay`).
    Preempt,
    /// Bully family without preemption: a (re)started node has listened two heartbeat
    /// periods, time enough to hear a live leader's heartbeat.
    Listen,
}

/// Why the driver says the leader is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderLoss {
    /// The failure detector heard nothing for `failure_timeout`.
    Silent,
    /// The leader announced it is leaving (graceful shutdown).
    Resigned,
    /// The driver was told the leader is gone and this node must act at once (the
    /// simulator's "this node detects the crash" step): the textbook reaction, as
    /// every node had on silence before the Bully family let the successor go first.
    Told,
}

/// An output of an algorithm, applied by the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// One logical message to one peer.
    Send {
        /// The peer.
        to: NodeId,
        /// The message.
        msg: Message,
    },
    /// The same message to every other roster member (alive or not); counted once per
    /// recipient. The transport may use multicast for it.
    Broadcast {
        /// The message.
        msg: Message,
    },
    /// Arm `timer` to fire after a delay the driver picks uniformly in `[min, max]`.
    SetTimer {
        /// Which timer.
        timer: Timer,
        /// Shortest delay.
        min: Duration,
        /// Longest delay.
        max: Duration,
    },
    /// Disarm `timer`.
    CancelTimer(Timer),
    /// This node's belief about the leader or its term changed; (`term`, `leader`) is
    /// the fencing [`Token`].
    LeaderChanged {
        /// The leader now believed (`None`: none known).
        leader: Option<NodeId>,
        /// The term of the token held.
        term: u64,
    },
    /// This node started (or joined as a candidate) an election.
    ElectionStarted,
    /// This node now routes past `peer`, a member it suspects dead: every message of
    /// this group still waiting for `peer`'s acknowledgement comes back at once, as
    /// if the link gave up on it ([`Algorithm::on_peer_unreachable`]), instead of
    /// each at its own give-up.
    Suspected(NodeId),
}

/// Collects the effects of one input; the driver drains it after every call.
#[derive(Debug, Default)]
#[must_use = "effects must be applied by the driver"]
pub struct Out {
    effects: Vec<Effect>,
}

impl Out {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }
    /// [`Effect::Suspected`].
    pub(crate) fn suspected(&mut self, peer: NodeId) {
        self.effects.push(Effect::Suspected(peer));
    }
    /// [`Effect::Send`].
    pub(crate) fn send(&mut self, to: NodeId, msg: Message) {
        self.effects.push(Effect::Send { to, msg });
    }
    /// [`Effect::Broadcast`].
    pub(crate) fn broadcast(&mut self, msg: Message) {
        self.effects.push(Effect::Broadcast { msg });
    }
    /// [`Effect::SetTimer`].
    pub(crate) fn set_timer(&mut self, timer: Timer, min: Duration, max: Duration) {
        self.effects.push(Effect::SetTimer { timer, min, max });
    }
    /// A timer with a fixed delay.
    pub(crate) fn set_timer_exact(&mut self, timer: Timer, after: Duration) {
        self.set_timer(timer, after, after);
    }
    /// [`Effect::CancelTimer`].
    pub(crate) fn cancel_timer(&mut self, timer: Timer) {
        self.effects.push(Effect::CancelTimer(timer));
    }
    /// [`Effect::LeaderChanged`].
    pub(crate) fn leader_changed(&mut self, leader: Option<NodeId>, term: u64) {
        self.effects.push(Effect::LeaderChanged { leader, term });
    }
    /// [`Effect::ElectionStarted`].
    pub(crate) fn election_started(&mut self) {
        self.effects.push(Effect::ElectionStarted);
    }
    /// Take the effects, in the order they were pushed.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Effect> {
        self.effects.drain(..)
    }
    /// Effects the buffer holds without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.effects.capacity()
    }
}

/// The fencing token of one group, the same definition for every algorithm: the
/// leadership's term (Raft's term; the epoch of the Bully family; the election round of
/// the ring family) and its leader, ordered lexicographically (term first, then leader
/// id).
///
/// - A node never adopts a token below the one it holds ([`Token::admits`]); the token
///   survives restarts in the state file.
/// - A new leadership takes a term above the highest the node has seen; a node that did
///   not see the highest (it came back with an empty disk, or announced at the same
///   time as a higher id, in the same term) is answered by the others with their token
///   (`heartbeat_ack`: term and leader) and takes a new leadership above its term.
/// - Two leaders of one group (the two sides of a partition, for the Bully and ring
///   families) never hold the same token: they differ at least in the leader id.
///
/// `/status` and `/watch` carry it as `term` and `leader`, `electd_term` exports the
/// term, hooks get `ELECTD_TERM` and `ELECTD_LEADER`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Token {
    /// The term (epoch, round) of the leadership; compared first.
    pub term: u64,
    /// The leader of that term (0: none known yet).
    pub leader: NodeId,
}

impl Token {
    /// The token of `leader` in `term`.
    pub fn new(term: u64, leader: NodeId) -> Token {
        Token { term, leader }
    }

    /// May a node holding `self` adopt `next`? Only a token at least as high: the
    /// token a node holds never goes back.
    pub(crate) fn admits(self, next: Token) -> bool {
        next >= self
    }

    /// The token as one integer, for a fencing resource that compares integers:
    /// `term · 2^32 + leader`, ordered exactly as the pair (terms below 2^32).
    pub fn as_u64(self) -> u64 {
        self.term.saturating_mul(1 << 32) | u64::from(self.leader)
    }
}

/// How far ahead of a node's own highest term a datagram may move it in one step:
/// a term, epoch or round more than this above what the group has seen is refused and
/// counted as `future_epoch`. Large enough for any real history (a node back after
/// missing two billion elections still catches up in one step), small enough that no
/// datagram, even from a key holder, can push a term to the end of its range. (A term
/// up to twice this ahead is taken at the second datagram: see `Node::receive`.)
pub const MAX_TERM_AHEAD: u64 = 1 << 31;

/// Timing parameters shared by all algorithms (config `[timing]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Leader heartbeat period; must be well below `failure_timeout`.
    pub heartbeat: Duration,
    /// A follower that hears no heartbeat for this long declares the leader lost.
    pub failure_timeout: Duration,
    /// Bully family T: bound on ELECTION → OK round trip (2·Ttrans + Tprocess).
    pub answer_timeout: Duration,
    /// Bully family T': how long to wait for COORDINATOR after an OK. Also the ring
    /// family's bound on one election before it is restarted.
    pub coordinator_timeout: Duration,
    /// Raft election timeout range (randomized, §5.2: e.g. 150–300 ms).
    pub election_timeout_min: Duration,
    /// Upper end of that range.
    pub election_timeout_max: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat: Duration::from_millis(10),
            failure_timeout: Duration::from_millis(100),
            answer_timeout: Duration::from_millis(10),
            coordinator_timeout: Duration::from_millis(50),
            election_timeout_min: Duration::from_millis(100),
            election_timeout_max: Duration::from_millis(200),
        }
    }
}

/// Which timing relations apply ([`Timing::validate_for`]): whether some group has a
/// heartbeat failure detector, and whether some group elects on randomized timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimingUse {
    /// A group watches its leader with the heartbeat failure detector.
    pub detector: bool,
    /// A group elects on randomized election timeouts (Raft).
    pub randomized: bool,
}

/// A timing relation that does not hold: the configuration key to change and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct TimingError {
    /// The key to blame (`timing.heartbeat`, `transport.give_up`, …).
    pub key: &'static str,
    /// What is wrong, with the values involved.
    pub message: String,
}

impl Timing {
    /// The relations between the timing parameters and the link's `retransmit` and
    /// `give_up` that every driver relies on; the first one broken is the error. The
    /// configuration loader, `demo`, the bench and the tests check their timings here.
    ///
    /// - every duration above zero, and the Raft range not empty;
    /// - `heartbeat` below `failure_timeout` (followers would declare a live leader lost);
    /// - `answer_timeout` (T) above `retransmit` (one lost ELECTION or OK would make a
    ///   node win before the retransmission arrives);
    /// - `coordinator_timeout` (T') above 2·T + `retransmit` (Improved Bully waits T at
    ///   the initiator and T again at the cross-check, plus a retransmission);
    /// - `give_up` between `retransmit` and `failure_timeout` (a dead peer must be
    ///   declared unreachable before the failure detector reacts, or ring elections
    ///   stall on it);
    /// - `election_timeout_min` above `heartbeat` (Raft followers would time out
    ///   between heartbeats).
    pub fn validate(&self, retransmit: Duration, give_up: Duration) -> Result<(), TimingError> {
        let every = TimingUse {
            detector: true,
            randomized: true,
        };
        self.validate_for(retransmit, give_up, every)
    }

    /// [`Timing::validate`] for the groups that run only (`uses`, which the caller
    /// reads from their algorithms' facts: this layer does not know them): Raft's
    /// relations (its range, above the heartbeat) when a group elects on randomized
    /// timeouts, the failure detector's and the Bully family's (`heartbeat` below
    /// `failure_timeout`, T, T', `give_up`) when a group has a failure detector. A
    /// Bully cluster with a 100 ms heartbeat was refused over Raft's default election
    /// timeout, which it never uses.
    pub fn validate_for(
        &self,
        retransmit: Duration,
        give_up: Duration,
        uses: TimingUse,
    ) -> Result<(), TimingError> {
        let raft = uses.randomized;
        let detector = uses.detector;
        let fail = |key: &'static str, message: String| Err(TimingError { key, message });
        let ms = |d: Duration| humantime::format_duration(d).to_string();
        for (key, d) in [
            ("timing.heartbeat", self.heartbeat),
            ("timing.failure_timeout", self.failure_timeout),
            ("timing.answer_timeout", self.answer_timeout),
            ("timing.coordinator_timeout", self.coordinator_timeout),
            ("timing.election_timeout", self.election_timeout_min),
            ("transport.retransmit", retransmit),
        ] {
            if d.is_zero() {
                return fail(key, "must be above zero".into());
            }
        }
        if raft && self.election_timeout_min >= self.election_timeout_max {
            return fail(
                "timing.election_timeout",
                format!(
                    "empty range {}..{}: Raft needs a randomized timeout (lo < hi) to break split votes (§5.2)",
                    ms(self.election_timeout_min),
                    ms(self.election_timeout_max)
                ),
            );
        }
        if detector && self.heartbeat >= self.failure_timeout {
            return fail(
                "timing.heartbeat",
                format!(
                    "{} is not below timing.failure_timeout ({}): followers would declare a live leader lost",
                    ms(self.heartbeat),
                    ms(self.failure_timeout)
                ),
            );
        }
        if detector && self.answer_timeout <= retransmit {
            return fail(
                "timing.answer_timeout",
                format!(
                    "{} is not above transport.retransmit ({}): one lost ELECTION or OK would make a node \
                     win before the retransmission arrives",
                    ms(self.answer_timeout),
                    ms(retransmit)
                ),
            );
        }
        let t_prime_min = self.answer_timeout * 2 + retransmit;
        if detector && self.coordinator_timeout <= t_prime_min {
            return fail(
                "timing.coordinator_timeout",
                format!(
                    "{} is not above 2 × timing.answer_timeout + transport.retransmit ({}): T' must leave \
                     the answering node time to finish its own election",
                    ms(self.coordinator_timeout),
                    ms(t_prime_min)
                ),
            );
        }
        if detector && (give_up >= self.failure_timeout || give_up <= retransmit) {
            return fail(
                "transport.give_up",
                format!(
                    "the link gives up on a peer after {}, not between transport.retransmit ({}) \
                     and timing.failure_timeout ({}): a dead peer must be declared unreachable \
                     before the failure detector reacts, or ring elections stall on it",
                    ms(give_up),
                    ms(retransmit),
                    ms(self.failure_timeout)
                ),
            );
        }
        if raft && self.election_timeout_min <= self.heartbeat {
            return fail(
                "timing.election_timeout",
                format!(
                    "{} is not above timing.heartbeat ({}): Raft followers would time out between heartbeats",
                    ms(self.election_timeout_min),
                    ms(self.heartbeat)
                ),
            );
        }
        Ok(())
    }
}

/// Algorithm-specific switches (config `[raft]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Options {
    /// Raft pre-vote (Ongaro's thesis §9.6): ask before raising the term.
    pub pre_vote: bool,
    /// Raft check-quorum: a leader that has not heard a majority within an election
    /// timeout steps down.
    pub check_quorum: bool,
    /// Raft ranked election timeouts: followers draw their timeout from a slot of the
    /// range chosen by their rank (higher ids first, the current leader skipped)
    /// instead of uniformly from the whole range (§5.2). Off = the textbook.
    pub ranked_timeouts: bool,
    /// Priorities and preemption (config `[[peer]] priority`, `[policy]`); the default
    /// is the textbook.
    pub policy: crate::contract::policy::Policy,
    /// `[lease]`: which groups keep a quorum lease and the clock-drift bound.
    pub lease: LeaseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pre_vote: true,
            check_quorum: true,
            ranked_timeouts: true,
            policy: crate::contract::policy::Policy::default(),
            lease: LeaseOptions::default(),
        }
    }
}

/// `[lease]` and `[lease.<algorithm>]` (see [`crate::node::Node::lease`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeaseOptions {
    /// Groups (other than Raft, whose lease follows from check-quorum) whose followers
    /// answer each heartbeat of their leader, so that the leader knows whether a
    /// majority still hears it (`require_quorum = true`).
    pub require_quorum: Vec<AlgorithmKind>,
    /// Per group, the clock-drift bound subtracted from every lease; a group not
    /// listed uses a tenth of its base timeout.
    pub clock_drift: Vec<(AlgorithmKind, Duration)>,
}

/// State an algorithm needs to survive a crash: the highest term it has seen (the
/// fencing token must never go back), and Raft's `votedFor` (Ongaro & Ousterhout 2014,
/// Figure 2, "persistent state on all servers"). Without it a restarted Raft voter
/// could vote twice in one term, and a restarted leader of any algorithm would announce
/// a term the cluster has already used.
///
/// The driver reads it with [`Algorithm::durable`] after every input and must store it
/// before it puts the datagrams produced by that input on the wire — except a non-Raft
/// follower's adoption of another leader's token (`voted_for` that leader), which it may
/// store right after them (when that step was its only input and the previous write
/// succeeded), reporting the token (status, events) only after the write is attempted; on restart it hands the stored value back with
/// [`Algorithm::restore`] before `on_start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Durable {
    /// The term of the token held (Raft: `currentTerm`).
    pub term: u64,
    /// Raft: the candidate voted for in `term`. The Bully and ring families: the leader
    /// of the token held (the leader this node accepted for `term`).
    pub voted_for: Option<NodeId>,
}

/// Everything an algorithm instance is built from.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// This node's id.
    pub me: NodeId,
    /// Every roster member including `me`, in logical ring order (ring algorithms send
    /// to the next entry, wrapping). Bully-family code only looks at the ids. Shared
    /// (one copy for every group of a node, and every node of a simulation).
    pub ring: std::sync::Arc<[NodeId]>,
    /// The cluster's timing.
    pub timing: Timing,
    /// The algorithm switches (`[raft]`).
    pub options: Options,
    /// Boot counter of this node; election tags and epochs of a restarted node must
    /// not collide with those of its previous life.
    pub incarnation: u64,
}

impl GroupConfig {
    /// Members ranked above `me` (by (eligible, priority, id): the ids greater than
    /// `me` without priorities), lowest rank first; never-leader members excluded (they
    /// never answer as candidates).
    pub(crate) fn higher(&self) -> Vec<NodeId> {
        let p = &self.options.policy;
        let mut v: Vec<NodeId> = self
            .ring
            .iter()
            .copied()
            .filter(|&x| p.eligible(x) && p.outranks(x, self.me))
            .collect();
        v.sort_unstable_by_key(|&x| p.rank(x));
        v
    }
    /// Does `a` rank above `b` (eligible, priority, id)?
    pub(crate) fn outranks(&self, a: NodeId, b: NodeId) -> bool {
        self.options.policy.outranks(a, b)
    }
    /// May this node lead (priority above 0, and not made ineligible at run time)?
    pub(crate) fn eligible(&self) -> bool {
        self.options.policy.eligible(self.me)
    }
    /// Make this node eligible or not at run time (see
    /// [`crate::contract::policy::Policy::ineligible`]).
    pub(crate) fn set_eligible(&mut self, eligible: bool) {
        if eligible {
            self.options.policy.ineligible.remove(&self.me);
        } else {
            self.options.policy.ineligible.insert(self.me);
        }
    }
    /// Position of `me` in the ring.
    pub(crate) fn my_position(&self) -> usize {
        self.ring.iter().position(|&p| p == self.me).unwrap_or(0)
    }
    /// A majority of the roster (Raft's quorum).
    pub(crate) fn majority(&self) -> usize {
        self.ring.len() / 2 + 1
    }
}

/// One election algorithm instance at one node (see the module doc for the contract).
///
/// Every method gets `out` to push effects into; none may block, sleep, read a clock
/// or draw randomness. Input from the network may be arbitrary: a method must never
/// panic on it, only ignore what does not make sense.
pub trait Algorithm: Send + std::fmt::Debug {
    /// The node (re)started. With `call_election` the node calls an election at once
    /// (the textbook rule for a restarted process); without it the node waits for
    /// others and arms a watchdog so that it is never left without a leader forever.
    fn on_start(&mut self, call_election: bool, out: &mut Out);

    /// A message from a peer (already authenticated and de-duplicated).
    fn on_message(&mut self, from: NodeId, msg: Message, out: &mut Out);

    /// A timer set earlier fired.
    fn on_timer(&mut self, timer: Timer, out: &mut Out);

    /// The reliable link gave up delivering `msg` to `peer` after its last attempt.
    fn on_peer_unreachable(&mut self, peer: NodeId, msg: Message, out: &mut Out);

    /// A peer the link had given up on was heard from again.
    fn on_peer_alive(&mut self, _peer: NodeId, _out: &mut Out) {}

    /// The failure detector lost the current leader (or the leader resigned).
    fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out);

    /// A heartbeat from `from`, which claims leadership with `epoch`, while this node
    /// follows someone else (or nobody). Used to resolve split brain after a heal.
    fn on_foreign_leader(&mut self, from: NodeId, epoch: u64, out: &mut Out);

    /// The operator asked for an election (admin API).
    fn call_election(&mut self, out: &mut Out);

    /// Who this node believes leads, if anyone.
    fn leader(&self) -> Option<NodeId>;

    /// Term of the fencing [`Token`] this node holds (only grows).
    fn term(&self) -> u64;

    /// The leader this node follows sent a heartbeat with a higher `term` than the
    /// token this node holds (the leader re-announced above a term it learned): take it.
    fn on_leader_term(&mut self, _from: NodeId, _term: u64, _out: &mut Out) {}

    /// A heartbeat of `from` claims leadership below the token this node holds. Does
    /// the algorithm answer that claim itself (returns true), so that the node must not
    /// also answer it with the term held? By default it does not: the node answers
    /// with [`Message::HeartbeatAck`], and the claimant takes a new term above it.
    /// The Bully family answers a claimant below a live leader with that leader's
    /// COORDINATOR, which the claimant follows; the term alone would instead make it
    /// re-elect above the leader it should follow.
    fn answers_stale_claim(&self, _from: NodeId) -> bool {
        false
    }

    /// This node leads, and a peer answered its heartbeat with a token (`term`, leader)
    /// above the leader's own (that peer holds a token the leader never saw, e.g. the
    /// leader came back with an empty disk, or another leadership of the same term under
    /// a higher id): a new leadership must be taken above `term`.
    fn on_term_behind(&mut self, _term: u64, _out: &mut Out) {}

    /// Short state name for `/status` (`"follower"`, `"electing"`, …).
    fn state(&self) -> &'static str;

    /// Is an election in progress at this node?
    fn is_electing(&self) -> bool;

    /// Should the node run the generic heartbeat failure detector for this group?
    /// (Raft has its own heartbeats and election timeout.)
    fn uses_failure_detector(&self) -> bool {
        true
    }

    /// State to keep on stable storage (see [`Durable`]).
    fn durable(&self) -> Option<Durable>;

    /// Restore what [`Algorithm::durable`] returned in the previous life, before
    /// `on_start`.
    fn restore(&mut self, _state: Durable) {}

    /// The group's configuration, to change this node's standing at run time
    /// ([`GroupConfig::set_eligible`]): an ineligible node ranks like a never-leader
    /// from its next input on.
    fn config_mut(&mut self) -> &mut GroupConfig;

    /// This node leads and has just become ineligible: give the leadership up so that
    /// the others elect without it. The node has already told the others (RESIGN) for
    /// the groups on the heartbeat failure detector; the default then handles it like
    /// a resigned leader (the Bully and ring families lose it and, ineligible, do not
    /// stand again). Raft overrides it with its own hand-over.
    fn step_down(&mut self, out: &mut Out) {
        self.on_leader_lost(LeaderLoss::Resigned, out);
    }

    /// The priorities in [`GroupConfig::options`] changed at run time (this node's, by a
    /// weighted health check, or its leader's, advertised): recompute what was derived
    /// from them (the Bully family's list of members ranked above).
    fn policy_changed(&mut self) {}

    /// Leadership transfer: this node's leader handed it the leadership
    /// ([`crate::contract::message::Message::Handoff`]). Announce this node as leader
    /// with a token above every one seen, as the algorithm announces a winner
    /// (COORDINATOR, the ring's result lap), without an election. False if the
    /// algorithm has no such step (Raft transfers with TimeoutNow) or this node may
    /// not lead.
    fn take_over(&mut self, _out: &mut Out) -> bool {
        false
    }
}

#[cfg(test)]
mod token_tests {
    use super::Token;

    #[test]
    fn tokens_order_by_term_then_leader_and_so_does_the_integer() {
        let seq = [
            Token::new(0, 0),
            Token::new(1, 5),
            Token::new(2, 3),
            Token::new(2, 4),
            Token::new(3, 1),
            Token::new(u64::from(u32::MAX), u32::MAX),
        ];
        for w in seq.windows(2) {
            assert!(w[0] < w[1], "{w:?}");
            assert!(w[0].admits(w[1]) && !w[1].admits(w[0]), "{w:?}");
            assert!(w[0].as_u64() < w[1].as_u64(), "{w:?}");
        }
        assert!(Token::new(2, 4).admits(Token::new(2, 4)), "the token held");
        assert_eq!(Token::new(3, 7).as_u64(), (3 << 32) | 7);
    }
}

#[cfg(test)]
mod timing_tests {
    use super::Timing;
    use std::time::Duration;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// The link's defaults for a 100 ms failure timeout (node::link).
    fn check(t: &Timing) -> Result<(), &'static str> {
        t.validate(MS(5), MS(75)).map_err(|e| e.key)
    }

    #[test]
    fn the_default_timing_keeps_every_relation() {
        assert_eq!(check(&Timing::default()), Ok(()));
    }

    #[test]
    fn each_broken_relation_names_its_key() {
        let d = Timing::default;
        let cases: [(Timing, &str); 7] = [
            (
                Timing {
                    heartbeat: Duration::ZERO,
                    ..d()
                },
                "timing.heartbeat",
            ),
            (
                Timing {
                    election_timeout_max: MS(100),
                    ..d()
                },
                "timing.election_timeout",
            ),
            (
                Timing {
                    heartbeat: MS(100),
                    ..d()
                },
                "timing.heartbeat",
            ),
            (
                Timing {
                    answer_timeout: MS(5),
                    ..d()
                },
                "timing.answer_timeout",
            ),
            // T' must exceed 2·T + retransmit = 25 ms.
            (
                Timing {
                    coordinator_timeout: MS(25),
                    ..d()
                },
                "timing.coordinator_timeout",
            ),
            (
                Timing {
                    failure_timeout: MS(75),
                    ..d()
                },
                "transport.give_up",
            ),
            (
                Timing {
                    election_timeout_min: MS(10),
                    ..d()
                },
                "timing.election_timeout",
            ),
        ];
        for (t, key) in cases {
            assert_eq!(check(&t), Err(key), "{t:?}");
        }
        assert_eq!(
            Timing {
                coordinator_timeout: MS(26),
                ..d()
            }
            .validate(MS(5), MS(75)),
            Ok(())
        );
        assert_eq!(
            d().validate(MS(5), MS(5)).map_err(|e| e.key),
            Err("transport.give_up"),
            "give_up must be above retransmit"
        );
    }
}
