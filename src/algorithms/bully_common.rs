//! What the two Bully variants share: the leader/epoch bookkeeping, the announcement,
//! and the rule for a leadership claim (COORDINATOR or a foreign heartbeat).

use crate::contract::algorithm::{Durable, GroupConfig, LeaderLoss, Out, Timer, Timing, Token};
use crate::contract::message::{ElectionTag, Message};
use crate::NodeId;
use std::collections::BTreeMap;
use std::time::Duration;

/// The timers of an election attempt; all are cancelled once a leader is known.
const ELECTION_TIMERS: [Timer; 3] = [Timer::Answer, Timer::Coordinator, Timer::Retry];

/// How to answer a leadership claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Claim {
    /// A lower id claims to lead while this node is alive: call an election (bully it).
    Bully,
    /// A claim below the token this node holds (an old announcement reordered or
    /// retransmitted, or a leader that came back without its state): not adopted. A
    /// live claimant learns the higher term from this node's answer to its heartbeat
    /// and takes a new term above it.
    Stale,
    /// Adopt the claimant as leader.
    Follow,
    /// Already following it with that token: nothing changes.
    Keep,
}

/// Leader belief and fencing token of one Bully-family node.
#[derive(Debug, Default)]
pub(super) struct Leadership {
    pub leader: Option<NodeId>,
    /// The token last adopted (kept when the leader is lost): never decreases.
    token: Token,
    /// Highest epoch seen in any message (ELECTION, OK, … carry the sender's).
    seen: u64,
    /// Lower claimants this node answered as leader: claimant → (claimed epoch, the
    /// epoch it was answered with). One entry per claimant, so that several claiming
    /// at once are each answered once per claimed epoch.
    answered: BTreeMap<NodeId, (u64, u64)>,
}

impl Leadership {
    /// The epoch of the token held (the exported term).
    pub(super) fn epoch(&self) -> u64 {
        self.token.term
    }

    /// Highest epoch known: a new leadership takes one above it.
    pub(super) fn highest(&self) -> u64 {
        self.seen.max(self.token.term)
    }

    /// Learn an epoch from any message (ELECTION carries the sender's).
    pub(super) fn observe(&mut self, epoch: u64) {
        self.seen = self.seen.max(epoch);
    }

    /// What survives a crash: the token held.
    pub(super) fn durable(&self) -> Durable {
        Durable {
            term: self.token.term,
            voted_for: (self.token.leader != 0).then_some(self.token.leader),
        }
    }

    /// Stored state of a previous life (never moves the token back).
    pub(super) fn restore(&mut self, state: Durable) {
        let token = Token::new(state.term, state.voted_for.unwrap_or(0));
        self.token = self.token.max(token);
        self.observe(state.term);
    }

    /// Classify a claim by `leader` with `epoch`; `below` is true when the claimant
    /// ranks below this node (and this node does not hold back, see [`Holdback`]);
    /// `settled` is true when this node is a plain follower (not electing, not leading).
    pub(super) fn claim(
        &mut self,
        below: bool,
        leader: NodeId,
        epoch: u64,
        settled: bool,
    ) -> Claim {
        self.observe(epoch);
        if below {
            return Claim::Bully;
        }
        let token = Token::new(epoch, leader);
        if !self.token.admits(token) {
            return Claim::Stale;
        }
        if settled && self.leader == Some(leader) && token == self.token {
            return Claim::Keep;
        }
        Claim::Follow
    }

    /// This node leads and a lower id `from` claims leadership with `epoch` (its
    /// heartbeat or COORDINATOR). A claim at or below this leadership's epoch is below
    /// its token: the claimant is answered with the unchanged COORDINATOR, to it alone,
    /// once per claimed epoch, and follows it (returns false). A claim above this
    /// leadership's epoch (the claimant took a term this leader never saw) makes that
    /// COORDINATOR stale at the claimant and at whoever follows it: the leader has to
    /// take a new epoch above the claim (returns true: call an election), as when told
    /// its term is behind.
    pub(super) fn answer_lower(
        &mut self,
        me: NodeId,
        from: NodeId,
        epoch: u64,
        tag: ElectionTag,
        out: &mut Out,
    ) -> bool {
        self.observe(epoch);
        if epoch > self.token.term {
            return true;
        }
        let key = (epoch, self.token.term);
        if self.answered.insert(from, key) != Some(key) {
            reassert(me, self, tag, &[from], out);
        }
        false
    }

    /// Become leader: a new epoch above every one seen, COORDINATOR to every other
    /// roster member.
    pub(super) fn announce(&mut self, me: NodeId, tag: ElectionTag, out: &mut Out) {
        self.token = Token::new(self.highest().saturating_add(1), me);
        self.leader = Some(me);
        cancel_election_timers(out);
        out.broadcast(Message::Coordinator {
            leader: me,
            epoch: self.token.term,
            tag,
        });
        out.leader_changed(self.leader, self.token.term);
    }

    /// Follow `leader` of `epoch`; the caller checked with [`Leadership::claim`] that
    /// the token does not go back.
    pub(super) fn follow(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
        self.observe(epoch);
        self.token = self.token.max(Token::new(epoch, leader));
        self.leader = Some(leader);
        cancel_election_timers(out);
        out.leader_changed(self.leader, self.token.term);
    }

    /// The leader followed re-announced itself with a higher epoch (seen in its
    /// heartbeat): take the new token.
    pub(super) fn leader_term(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
        let token = Token::new(epoch, from);
        if self.leader == Some(from) && token.term > self.token.term {
            self.observe(epoch);
            self.token = token;
            out.leader_changed(self.leader, epoch);
        }
    }

    /// Forget the leader (reported lost); returns who it was. The token is kept.
    pub(super) fn lose(&mut self, out: &mut Out) -> Option<NodeId> {
        let old = self.leader.take();
        if old.is_some() {
            out.leader_changed(None, self.token.term);
        }
        old
    }
}

/// Nobody ranked above answered election `tag`: announce and return true, unless this
/// node may never lead (priority 0); then it waits under the watchdog for an eligible
/// node and returns false (the caller stays a follower).
pub(super) fn win(
    cfg: &GroupConfig,
    hold: &mut Holdback,
    lead: &mut Leadership,
    tag: ElectionTag,
    out: &mut Out,
) -> bool {
    if !cfg.eligible() {
        cancel_election_timers(out);
        arm_watchdog(&cfg.timing, out);
        return false;
    }
    hold.reset();
    lead.announce(cfg.me, tag, out);
    true
}

pub(super) fn cancel_election_timers(out: &mut Out) {
    for t in ELECTION_TIMERS {
        out.cancel_timer(t);
    }
}

/// Send ELECTION to every higher id and wait T for answers.
pub(super) fn send_elections(
    higher: &[NodeId],
    tag: ElectionTag,
    epoch: u64,
    t: &Timing,
    out: &mut Out,
) {
    for &h in higher {
        out.send(h, Message::Election { tag, epoch });
    }
    out.set_timer_exact(Timer::Answer, t.answer_timeout);
}

/// A (re)started node that is to call an election first listens for a random
/// [H, 2H] (H = heartbeat period), plus one [`rank_step`] for every member ranked
/// above it: a live leader's heartbeat or COORDINATOR, or a cascade
/// already under way, makes its own election unnecessary, and at a cold start of many
/// nodes the elections come in rank order — the highest id has nobody to ask and
/// announces at once (returns true), the next one calls only if that announcement has
/// not come — instead of all in the same few milliseconds (256 Bully nodes in one
/// process calling together never agreed). Improved Bully waited only [H, 2H] while
/// the rank wait was capped at a failure timeout (with it, a lossy, staggered cold
/// start of 64 nodes called its elections when the higher nodes were starting,
/// `tests/sim/storms.rs`); with the uncapped step it settles that start, and a busy start
/// in id order costs it the announcement instead of the all-initiating count
/// (`tests/sim/scale.rs`).
pub(super) fn listen_before_electing(higher: &[NodeId], t: &Timing, out: &mut Out) -> bool {
    if higher.is_empty() {
        return true;
    }
    let rank_wait = rank_step(t).saturating_mul(u32::try_from(higher.len()).unwrap_or(u32::MAX));
    out.set_timer(
        Timer::Retry,
        t.heartbeat + rank_wait,
        t.heartbeat * 2 + rank_wait,
    );
    false
}

/// How much longer a starting Bully node listens than the member ranked just above it:
/// one answer window plus one heartbeat period (T + H), or half a failure timeout if
/// that is longer (F/2: 50 ms at the README's timing, 200 ms at 256 members), with no
/// ceiling. In a busy start the nodes boot one after another (a shell or a service
/// manager spawning processes: about 14 ms apart for 64 `electd run` on two cores,
/// and further apart as the host gets busier); as long as that gap is below the step,
/// the top node boots and announces before any node below has stopped listening,
/// whatever the boot order. The step follows F because the docs scale F with the
/// roster and the host's load (deploy/README.md), and so does the boot gap: at 256
/// processes on two cores, T + H (80 ms) let a member just below the top call while
/// the top three were still starting in a quarter of the cold starts (two or three
/// announcements, 513–522 messages), F/2 in 2 of 80 (docs/bench/ANALYSIS.md, rounds
/// 25–26), as Raft's cold-start step is at least min/2 (`Raft::cold_step`).
/// The rank wait used to be one T per rank capped at a failure timeout: any start
/// spread beyond F + 2H (about 120 ms at the README's timing) made every node elect
/// towards peers not booted yet, the literature's all-initiating count with most of it
/// retransmitted until the link gave up (docs/bench/ANALYSIS.md, round 8). The step
/// counts the top member too: the node just below it, which used to listen [H, 2H]
/// alone, called towards a top process still booting. The price: a cold start without
/// the top m members waits m steps more before the next one calls.
pub fn rank_step(t: &Timing) -> Duration {
    (t.answer_timeout + t.heartbeat).max(t.failure_timeout / 2)
}

/// A leader asked by a lower node's election (`tag`) answers with its current
/// leadership, unchanged (same epoch), to the members of that cascade only, instead of
/// announcing a new epoch to everyone: its leadership did not change.
pub(super) fn reassert(
    me: NodeId,
    lead: &Leadership,
    tag: ElectionTag,
    to: &[NodeId],
    out: &mut Out,
) {
    let msg = Message::Coordinator {
        leader: me,
        epoch: lead.epoch(),
        tag,
    };
    for &n in to {
        out.send(n, msg.clone());
    }
}

/// The members a cascade `tag` reached (every member ranked from its initiator up, and
/// `from`), this node excepted.
pub(super) fn cascade_members(cfg: &GroupConfig, from: NodeId, tag: ElectionTag) -> Vec<NodeId> {
    cfg.ring
        .iter()
        .copied()
        .filter(|&n| {
            n != cfg.me && (n == tag.initiator || cfg.outranks(n, tag.initiator) || n == from)
        })
        .collect()
}

/// A node that starts without calling an election still calls one if no leader shows
/// up within [F, 2F] (F = failure timeout): nobody is left without a leader forever.
pub(super) fn arm_watchdog(t: &Timing, out: &mut Out) {
    out.set_timer(Timer::Retry, t.failure_timeout, t.failure_timeout * 2);
}

/// After losing the leader `old`: how many turns this node lets go first (0: it calls
/// an election at once), from the members ranked between this node and `old`.
///
/// - On a graceful resignation the successor (the highest-ranked node below the lost
///   leader) calls at once; the member k ranks below it waits k turns
///   ([`arm_successor_watchdog`]) for a COORDINATOR and calls one itself if none
///   comes, so a drained successor costs one turn, not a whole watchdog.
/// - On silence (the failure detector), in Bully (`second_calls`), the successor *and
///   the member just below it* call at once, and the member k ranks below the
///   successor waits k − 1 turns. The leader's silence may be the successor's too —
///   both killed, or cut off together on the other side of a partition, as a VIP's
///   holder and its backup in one rack — and then the second's election, sent to both
///   at once, ends in T instead of after a turn (T + 2H) of waiting for the successor.
///   With the successor alive the second's election costs three messages (its
///   ELECTION to the successor and the lost leader, the successor's OK), and it
///   follows the successor's COORDINATOR. Not in Improved Bully: there a 600 s
///   nemesis run with the rule had 13 failovers 16–103 ms beyond the model's bound —
///   by reading the algorithm, the second's election hands the group to the successor
///   (YOU_ARE_COORDINATOR) after its own T, and the successor, joining that cascade,
///   announces only then; so there only the successor calls, as on a resignation.
///
/// In the textbook every node that notices the silence calls an election: on a real
/// network they all notice it within a heartbeat of each other, and N survivors calling
/// at once cost about N²/2 ELECTION and OK messages; two cost at most three more. When
/// told to act ([`LeaderLoss::Told`]: the simulator's detection step, which the
/// literature's counts are about) a node calls at once, as in the textbook.
pub(super) fn turns_before(
    why: LeaderLoss,
    old: Option<NodeId>,
    higher: &[NodeId],
    cfg: &GroupConfig,
    second_calls: bool,
) -> usize {
    let between = |old: NodeId| {
        higher
            .iter()
            .filter(|&&h| h != old && !cfg.outranks(h, old))
            .count()
    };
    match (why, old) {
        (LeaderLoss::Resigned, Some(old)) => between(old),
        (LeaderLoss::Silent, Some(old)) if second_calls => between(old).saturating_sub(1),
        (LeaderLoss::Silent, Some(old)) => between(old),
        _ => 0,
    }
}

/// One turn of [`turns_before`]: the successor's election (its ELECTION to the lost
/// leader unanswered for T, then COORDINATOR) plus two heartbeats of margin for the
/// members' detectors firing up to a heartbeat apart.
pub(super) fn successor_turn(t: &Timing) -> Duration {
    t.answer_timeout + t.heartbeat * 2
}

/// The watchdog of a node that lets `turns` members ranked above it (below the lost
/// leader) go first: it calls its own election after `turns` turns
/// ([`successor_turn`]), drawn within one heartbeat more, unless a COORDINATOR
/// (or a higher node's heartbeat) came meanwhile.
pub(super) fn arm_successor_watchdog(turns: usize, t: &Timing, out: &mut Out) {
    let wait = successor_turn(t).saturating_mul(u32::try_from(turns).unwrap_or(u32::MAX));
    out.set_timer(Timer::Retry, wait, wait.saturating_add(t.heartbeat));
}

/// The preemption switches at one Bully-family node (`[policy] preempt`,
/// `preempt_delay`). With the defaults (preempt at once) it never holds back and the
/// textbook rules apply unchanged.
///
/// Otherwise a node that is not electing treats a leadership claim from a node ranked
/// below it like one from above: it follows (it *holds back*) instead of bullying. With
/// `preempt_delay` it arms [`Timer::Preempt`] when it starts following a lower-ranked
/// leader and calls its election when that fires; without preemption it never does.
/// Leaders still resolve a split brain by rank: a holding-back node is never a leader.
#[derive(Clone, Debug)]
pub(crate) struct Holdback {
    /// `None`: never take over; `Some(d)`: after following for `d`.
    after: Option<Duration>,
    /// The delay passed: take over from now on (until this node leads or restarts).
    ready: bool,
    /// (Re)started and still listening for a leader ([`Timer::Listen`] not fired yet).
    listening: bool,
    /// A lower node's ELECTION came while listening with no leader known.
    asked: bool,
}

impl Default for Holdback {
    /// The textbook: take over at once.
    fn default() -> Self {
        Holdback {
            after: Some(Duration::ZERO),
            ready: false,
            listening: false,
            asked: false,
        }
    }
}

impl Holdback {
    pub(crate) fn new(cfg: &GroupConfig, kind: crate::contract::algorithm::AlgorithmKind) -> Self {
        Holdback {
            after: cfg.options.policy.preempt_for(kind).after(),
            ready: false,
            listening: false,
            asked: false,
        }
    }

    /// The textbook: take over at once.
    pub(crate) fn textbook(&self) -> bool {
        self.after == Some(Duration::ZERO)
    }

    /// Does this node hold back now (instead of taking over from a lower leader)?
    pub(crate) fn holding(&self) -> bool {
        !self.textbook() && !self.ready
    }

    /// Back to holding (on a restart, or once this node leads).
    pub(crate) fn reset(&mut self) {
        self.ready = false;
    }

    /// This node started following a leader; `below`: that leader ranks below this
    /// node. Arms the delay if so.
    pub(crate) fn following(&self, below: bool, out: &mut Out) {
        if let Some(d) = self.after {
            if self.holding() && below {
                out.set_timer_exact(Timer::Preempt, d);
            }
        }
    }

    /// A (re)started node holding back starts listening for a leader: for two
    /// heartbeat periods ([`Timer::Listen`]) a live leader's heartbeat may still come.
    pub(crate) fn start_listening(&mut self, t: &Timing, out: &mut Out) {
        self.listening = true;
        self.asked = false;
        out.set_timer_exact(Timer::Listen, t.heartbeat * 2);
    }

    /// Still within those two heartbeat periods.
    pub(crate) fn listening(&self) -> bool {
        self.listening
    }

    /// A lower node's ELECTION came while listening with no leader known: answer it
    /// when the listening ends ([`Holdback::listened`]).
    pub(crate) fn ask(&mut self) {
        self.asked = true;
    }

    /// [`Timer::Listen`] fired: the listening is over. Returns whether an ELECTION
    /// came meanwhile.
    pub(crate) fn listened(&mut self) -> bool {
        self.listening = false;
        std::mem::take(&mut self.asked)
    }

    /// [`Timer::Preempt`] fired: take over from now on. Returns whether to call an
    /// election now (`below`: the leader followed still ranks below this node).
    pub(crate) fn fired(&mut self, below: bool) -> bool {
        self.ready = true;
        below
    }
}

/// The inherent methods Bully and Improved Bully share word for word, expanded inside
/// each one's `impl`: how a node ranks a claim of leadership against its own state.
/// Both keep `cfg`, a [`Leadership`] `lead`, a [`Holdback`] `hold`, a `state` with
/// `Leader` and `Follower`, `tag`, and define `me()`, `driving()` (it runs an election
/// of its own, which a claim does not restart) and `elect(tag, out)`.
macro_rules! shared_claim_methods {
    () => {
        /// A plain follower of a leader ranked above this node.
        fn following_higher(&self) -> bool {
            self.state == State::Follower
                && self
                    .lead
                    .leader
                    .is_some_and(|l| self.cfg.outranks(l, self.me()))
        }

        /// A plain follower holding back (no preemption, or its delay not yet passed).
        fn holding(&self) -> bool {
            self.state == State::Follower && self.hold.holding()
        }

        /// Someone claims leadership with `epoch` (COORDINATOR or a foreign heartbeat).
        fn on_claim(&mut self, leader: NodeId, epoch: u64, out: &mut Out) {
            let settled = self.state == State::Follower;
            let below = self.cfg.outranks(self.me(), leader) && !self.holding();
            match self.lead.claim(below, leader, epoch, settled) {
                // A leader answers a lower claimant below its token with its unchanged
                // COORDINATOR, to it alone, once per claimed epoch (its heartbeats win
                // over the claimant's followers), and does not announce again to
                // everyone: its leadership did not change. A claim above its epoch would
                // find that COORDINATOR stale: it takes a new epoch above the claim.
                Claim::Bully if self.state == State::Leader => {
                    let (me, tag) = (self.me(), self.tag);
                    if self.lead.answer_lower(me, leader, epoch, tag, out) {
                        self.elect(None, out);
                    }
                }
                // Following a higher leader: that leader hears the claim too and answers
                // it; a cascade from here would only reach the nodes above.
                Claim::Bully if self.following_higher() => {}
                Claim::Bully if !self.driving() => self.elect(None, out),
                Claim::Follow => {
                    self.state = State::Follower;
                    self.lead.follow(leader, epoch, out);
                    let below = self.cfg.outranks(self.me(), leader);
                    self.hold.following(below, out);
                }
                Claim::Bully | Claim::Stale | Claim::Keep => {}
            }
        }

        /// The preemption delay of a follower passed: take over if still ranked above
        /// the leader followed.
        fn preempt_fired(&mut self, out: &mut Out) {
            let below = self
                .lead
                .leader
                .is_some_and(|l| self.cfg.outranks(self.me(), l));
            if self.hold.fired(below) {
                self.elect(None, out);
            }
        }
    };
}
pub(super) use shared_claim_methods;

/// The [`Algorithm`](crate::contract::algorithm::Algorithm) methods Bully and Improved
/// Bully share word for word, expanded inside each one's `impl Algorithm`: both keep
/// what [`shared_claim_methods`] needs, `higher`, `joined`, `win(out)`, `electing()`
/// (taking part in an election: a lost leader then calls none).
macro_rules! shared_algorithm_methods {
    () => {
        fn on_start(&mut self, call_election: bool, out: &mut Out) {
            self.state = State::Follower;
            self.lead.leader = None;
            self.hold.reset();
            if !self.hold.textbook() {
                // Without preemption even the top node listens first, for as long as a
                // follower waits for a silent leader ([F, 2F]): a live leader heard
                // meanwhile is followed. Started passive or not, it listens: an ELECTION
                // from before its start must not make it unseat a leader not yet heard.
                common::arm_watchdog(&self.cfg.timing, out);
                self.hold.start_listening(&self.cfg.timing, out);
            } else if !call_election {
                common::arm_watchdog(&self.cfg.timing, out);
            } else if common::listen_before_electing(&self.higher, &self.cfg.timing, out) {
                self.elect(None, out);
            }
        }

        fn on_peer_unreachable(&mut self, _peer: NodeId, _msg: Message, _out: &mut Out) {
            // Silence is already handled by T and T'; nothing to add.
        }

        fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
            let old = self.lead.lose(out);
            if self.state == State::Leader {
                self.state = State::Follower;
            }
            // One election at a time: one is already running.
            if self.electing() {
                return;
            }
            match common::turns_before(why, old, &self.higher, &self.cfg, Self::SECOND_CALLS) {
                0 => self.elect(None, out),
                turns => common::arm_successor_watchdog(turns, &self.cfg.timing, out),
            }
        }

        fn on_foreign_leader(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
            // Driving an election, a higher node's heartbeat is the awaited answer (it
            // is alive and leads: its OK and COORDINATOR may be late or lost).
            let answer = self.driving() && self.cfg.outranks(from, self.me());
            if !self.driving() || answer {
                self.on_claim(from, epoch, out);
            }
        }

        fn call_election(&mut self, out: &mut Out) {
            if !self.driving() {
                self.elect(None, out);
            }
        }

        fn is_electing(&self) -> bool {
            self.electing()
        }

        fn leader(&self) -> Option<NodeId> {
            self.lead.leader
        }

        fn term(&self) -> u64 {
            self.lead.epoch()
        }

        fn on_leader_term(&mut self, from: NodeId, term: u64, out: &mut Out) {
            self.lead.leader_term(from, term, out);
        }

        fn answers_stale_claim(&self, from: NodeId) -> bool {
            // A live leader above the claimant answers it with its COORDINATOR (this node,
            // leading, or the higher leader it follows, which hears the claim too).
            matches!(self.state, State::Leader | State::Follower)
                && self.lead.leader.is_some_and(|l| self.cfg.outranks(l, from))
        }

        fn on_term_behind(&mut self, term: u64, out: &mut Out) {
            self.lead.observe(term);
            if self.state == State::Leader {
                // A term this leadership is below exists: take a new one by an election
                // (announced above it at once if nobody higher answers).
                self.elect(None, out);
            }
        }

        fn durable(&self) -> Option<Durable> {
            Some(self.lead.durable())
        }

        fn restore(&mut self, state: Durable) {
            self.lead.restore(state);
        }

        fn config_mut(&mut self) -> &mut GroupConfig {
            &mut self.cfg
        }

        fn policy_changed(&mut self) {
            self.higher = self.cfg.higher();
        }

        fn take_over(&mut self, out: &mut Out) -> bool {
            if !self.cfg.eligible() {
                return false;
            }
            self.tag = self.joined.fresh(self.cfg.me);
            self.win(out);
            self.state == State::Leader
        }
    };
}
pub(super) use shared_algorithm_methods;
