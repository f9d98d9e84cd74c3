//! Shared machinery of the ring family ([`super::ring`], [`super::lcr`], [`super::hs`]):
//! routing on the logical ring with dead members skipped, the restart bound of an
//! election, leader/epoch bookkeeping and the split-brain rule.
//!
//! # Skipping dead members (the ring re-formed over live nodes)
//! The literature assumes nobody fails during a ring election. electd keeps, per
//! node, the set of members it believes dead (*suspected*): the leader its failure
//! detector lost, and members the reliable link gave up on. A message is routed to the
//! first member in its direction that is not suspected. A suspect is trusted again as
//! soon as anything is heard from it (`on_peer_alive`) or its id is seen in a message
//! (it was alive when it handled that message).
//!
//! ## A give-up is a strike, not a verdict
//! The link gives up on a message unacknowledged for `give_up` (¾·failure_timeout by
//! default). Under heavy loss that happens to live members too: at 30 % loss each way
//! a send and its ack both get through with probability 0.49, so the 4–5 sends that
//! fit in `give_up` all fail about 3–7 % of the time. Skipping the member at the first
//! give-up made laps pass live nodes (electing a lower one) and dropped messages whose
//! next hop was their own origin (a Hirschberg–Sinclair reply to its candidate): the
//! round then waited out its restart timer, [B, 2B] — seconds. So when the link
//! reports a message undeliverable
//! ([`crate::contract::algorithm::Algorithm::on_peer_unreachable`]), a member not yet
//! suspected gets the same message again (a retransmission, [`RingView::gave_up`]);
//! only [`STRIKES`] give-ups in a row for one message, with nothing heard from the
//! member in between, make it suspected, and the message then goes to the next member.
//! A dead member the failure detector did not report therefore costs `STRIKES` ·
//! `give_up` once (then it is skipped at once); the lost leader is suspected by the
//! detector itself and skipped at once, its pending messages handed back.
//!
//! Suspicion expires: [`SUSPICION_ROUNDS`] restart bounds after the first suspect
//! (`Timer::Suspicion`) the set is emptied, so a live member that the link gave up on
//! during heavy loss, and that never sends to this node (on a unidirectional ring
//! only a leader talks to its predecessor), is tried again. A member really dead
//! then costs one link give-up again, at most once per expiry period, so restarts
//! still make progress.
//!
//! Every message that travels round the ring has an *origin* (initiator, candidate,
//! leader) at which its lap ends. If routing would have to skip the origin itself,
//! the origin is gone and the message is dropped: a lap never circulates forever.
//!
//! # Dead laps
//! Under loss several laps of one election run at once (every follower's detector
//! fires; a lap's ELECTION is re-sent after a give-up and arrives late). The first lap
//! to complete decides epoch e + 1 (e: the highest epoch the lap saw) and its
//! COORDINATOR lap installs that token. A lap still travelling carries an epoch ≤ e;
//! before this rule every node it passed joined it again, and its completion decided
//! e + 2 naming the same leader — then e + 3 for the next late lap: terms 2 → 8 in
//! 0.5 s after one leader kill. Now a node of the list ring ([`super::ring`]) that
//! follows a leader drops an ELECTION whose epoch is below the epoch of the token it holds ([`Leadership::dead_lap`]):
//! every node that adopted a token numbers any election it starts or forwards at or
//! above that token, so such a lap was started before the token was decided, by a
//! node that had not heard of it. Its initiator learns the leader from the leader's
//! heartbeat (and calls an election above it if it outranks it, [`on_foreign`]) or
//! restarts at its timer; a node that lost its leader (no leader followed) forwards
//! every lap, so an election after a real failure is never dropped. On a clean
//! network one lap runs per election and no node holds a token above it: the message
//! counts of the literature are unchanged. LCR and Hirschberg–Sinclair number their
//! rounds, and round r decides epoch r: a late message of a decided round is of the
//! node's own round and cannot decide again (its candidate has won it), and one of an
//! older round is dropped (a node not electing then starts a new round, for a sender
//! that missed the result); `tests/sim/convergence.rs` measures no churn there.
//!
//! # Claims, false alarms and a node cut off in one direction
//! - A follower follows a claimant ranked above its own leader at once (its leader
//!   steps down to that claimant too), instead of waiting a failure timeout for its
//!   leader's silence; see [`on_foreign`].
//! - A node whose detector lost its leader to silence and hears that leader again
//!   while its election runs follows it again and leaves the election; a lap that
//!   comes back to a node following a leader ranked above the lap's choice is not
//!   decided ([`follows_above`]): the lap skipped that live leader.
//! - A node whose own elections reached nobody (it won them alone: cut off in the
//!   direction it sends, while it still hears the others) does not answer every claim
//!   it hears with a new election and a new term: it backs off ([`elect_on_claim`]).

use crate::contract::algorithm::{Durable, GroupConfig, LeaderLoss, Out, Timer, Timing, Token};
use crate::contract::message::Message;
use crate::NodeId;
use std::collections::BTreeSet;
use std::time::Duration;

/// How many restart bounds a suspicion lasts.
pub(crate) const SUSPICION_ROUNDS: u32 = 4;

/// How many times in a row the link must give up on a member, with nothing heard
/// from it in between, before the member is skipped (see "A give-up is a strike").
pub const STRIKES: u32 = 2;

/// At most this many re-sent messages are remembered per node (the oldest is
/// forgotten first: its next give-up then counts as a first strike again).
const RESENT_MAX: usize = 64;

/// Where a message goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// Send it to this member (the first live one in the direction of travel).
    To(NodeId),
    /// The lap's origin lies in the way and is suspected dead: drop the message.
    OriginGone,
    /// Every other member is suspected: this node is alone.
    Alone,
}

/// This node's view of the logical ring.
#[derive(Clone, Debug)]
pub(crate) struct RingView {
    me: NodeId,
    ring: std::sync::Arc<[NodeId]>,
    pos: usize,
    suspected: BTreeSet<NodeId>,
    /// Messages sent again to the member the link gave up on them for (first strike),
    /// oldest first.
    resent: std::collections::VecDeque<(NodeId, Message)>,
    /// This node's elections in a row that reached nobody (won alone while other
    /// members exist); reset by any election message from another member.
    futile: u32,
    /// An election called by a claim was put off (see [`elect_on_claim`]) and waits
    /// for `Timer::Retry`.
    deferred: bool,
    /// The election message being handled is the first one from another member
    /// since this node's elections reached nobody (see [`RingView::back_in_touch`]).
    back_in_touch: bool,
    /// Members suspected while this node was cut off and trusted again when it came
    /// back (see [`RingView::heard_election`]): one give-up skips such a member.
    doubtful: BTreeSet<NodeId>,
    /// Suspected members this node's failure detector lost as its leader (see
    /// [`RingView::suspect_lost`]): not trusted again by coming back from a cut.
    lost: BTreeSet<NodeId>,
    /// Messages pending to a member newly suspected come back at once
    /// ([`RingView::handing_back`]).
    hand_back: bool,
}

/// What to do with a message the link gave up on ([`RingView::gave_up`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strike {
    /// First strike: send the message to the same member again.
    Resend,
    /// The member is suspected now (or was already): route the message past it.
    Skip,
}

impl RingView {
    /// The ring of group `cfg`, nobody suspected.
    pub(crate) fn new(cfg: &GroupConfig) -> Self {
        RingView {
            me: cfg.me,
            ring: cfg.ring.clone(),
            pos: cfg.my_position(),
            suspected: BTreeSet::new(),
            resent: std::collections::VecDeque::new(),
            futile: 0,
            deferred: false,
            back_in_touch: false,
            doubtful: BTreeSet::new(),
            lost: BTreeSet::new(),
            hand_back: false,
        }
    }

    /// Messages still pending to a member newly suspected come back at once, to be
    /// routed past it ([`Out::suspected`]), instead of each at its own give-up: in
    /// the nemesis run an HS reply handled a moment before the second strike on a
    /// member cut off waited a give-up of its own (1,550 ms against 1,483). For an
    /// algorithm that drops what comes back of an older round (LCR, HS); Ring routes
    /// every ELECTION it gets back, and an old one alone would complete a lap here.
    pub(crate) fn handing_back(mut self) -> Self {
        self.hand_back = true;
        self
    }

    /// Number of roster members (alive or not).
    pub(crate) fn len(&self) -> usize {
        self.ring.len()
    }

    /// Is `id` a roster member?
    pub(crate) fn contains(&self, id: NodeId) -> bool {
        self.ring.contains(&id)
    }

    /// The next hop clockwise (`clockwise`) or counter-clockwise for a message whose
    /// lap ends at `origin`.
    pub(crate) fn hop(&self, clockwise: bool, origin: NodeId) -> Hop {
        let n = self.ring.len();
        for k in 1..n {
            let i = if clockwise {
                (self.pos + k) % n
            } else {
                (self.pos + n - k) % n
            };
            let p = self.ring[i];
            if !self.suspected.contains(&p) {
                return Hop::To(p);
            }
            if p == origin {
                return Hop::OriginGone;
            }
        }
        Hop::Alone
    }

    /// The failure detector lost `peer`, this node's leader: suspected like a member
    /// the link gave up on, and kept suspected when this node comes back from a cut
    /// ([`RingView::heard_election`]): its silence was heard after the cut, not caused
    /// by it.
    pub(crate) fn suspect_lost(&mut self, peer: NodeId, bound: Duration, out: &mut Out) {
        self.suspect(peer, bound, out);
        if self.suspected.contains(&peer) {
            self.lost.insert(peer);
        }
    }

    /// The link gave up on `peer`. The first suspect arms the expiry timer; see
    /// [`RingView::handing_back`] for what is pending to it.
    pub(crate) fn suspect(&mut self, peer: NodeId, bound: Duration, out: &mut Out) {
        if peer != self.me && self.contains(peer) {
            if self.suspected.is_empty() {
                out.set_timer_exact(Timer::Suspicion, bound * SUSPICION_ROUNDS);
            }
            if self.suspected.insert(peer) && self.hand_back {
                out.suspected(peer);
            }
        }
    }

    /// The link gave up on `msg` to `peer` (unacknowledged for `give_up`). A member
    /// not yet suspected gets the message again ([`Strike::Resend`], remembered as
    /// re-sent); a give-up of a message already re-sent to it, or a give-up on a
    /// member already suspected (the failure detector lost it), makes it suspected:
    /// [`Strike::Skip`]. Anything heard from `peer` meanwhile ([`RingView::trust`])
    /// forgets its re-sent messages, so only [`STRIKES`] give-ups in a row with
    /// silence in between skip a member.
    pub(crate) fn gave_up(
        &mut self,
        peer: NodeId,
        msg: &Message,
        bound: Duration,
        out: &mut Out,
    ) -> Strike {
        if peer == self.me || !self.contains(peer) || self.suspected.contains(&peer) {
            return Strike::Skip;
        }
        if self.doubtful.remove(&peer) {
            // Suspected before, while this node was cut off, and not heard since: one
            // give-up is enough.
            self.suspect(peer, bound, out);
            return Strike::Skip;
        }
        if let Some(i) = self.resent.iter().position(|(p, m)| *p == peer && m == msg) {
            self.resent.remove(i);
            self.suspect(peer, bound, out);
            return Strike::Skip;
        }
        if self.resent.len() >= RESENT_MAX {
            self.resent.pop_front();
        }
        self.resent.push_back((peer, msg.clone()));
        out.send(peer, msg.clone());
        Strike::Resend
    }

    /// This node's own election found every other member suspected and was decided
    /// here alone: it reached nobody (a no-op on a ring of one).
    pub(crate) fn won_alone(&mut self) {
        if self.ring.len() > 1 {
            self.futile = self.futile.saturating_add(1);
        }
    }

    /// An election message from another member arrived: this node is reached again.
    /// A node whose elections reached nobody suspects every other member because it
    /// was itself cut off; back in touch, it trusts them all again, on probation: a
    /// member that is really down is skipped after one give-up (G) instead of S. Its
    /// next round would otherwise go round only the members it happened to hear from:
    /// in the nemesis run, node 5 came back through the drained node 4 alone, its lap
    /// went 5, 4, 5 with nobody eligible on it, and LCR waited 2.55 s for a restart
    /// timer.
    pub(crate) fn heard_election(&mut self) {
        self.back_in_touch = self.futile > 0;
        if self.back_in_touch {
            // Except a leader this node's detector lost: a member back from a cut
            // whose leader then died sent its lap to the dead leader on probation and
            // waited a give-up (HS 950 ms against a bound of 733 in the nemesis run).
            let (lost, cut): (BTreeSet<NodeId>, BTreeSet<NodeId>) =
                std::mem::take(&mut self.suspected)
                    .into_iter()
                    .partition(|p| self.lost.contains(p));
            self.suspected = lost;
            self.doubtful = cut;
            self.resent.clear();
        }
        self.futile = 0;
        self.deferred = false;
    }

    /// Is the election message being handled the first one from another member since
    /// this node's last elections reached nobody (it won them alone, cut off)? Then
    /// the round this node is in never left it: a member still in an older round
    /// cannot learn of it, and waiting for the restart timer would stall both rounds
    /// (the nemesis run's LCR/HS stretch after a partition healed). LCR and HS start
    /// a round above both instead of dropping the older message.
    pub(crate) fn back_in_touch(&self) -> bool {
        self.back_in_touch
    }

    /// Elections in a row that reached nobody.
    pub(crate) fn futile(&self) -> u32 {
        self.futile
    }

    /// The expiry timer fired: trust everybody again.
    pub(crate) fn forget_suspects(&mut self) {
        self.suspected.clear();
        self.doubtful.clear();
        self.lost.clear();
        self.resent.clear();
    }

    /// `peer` was heard from (directly or through a message it handled).
    pub(crate) fn trust(&mut self, peer: NodeId) {
        self.suspected.remove(&peer);
        self.doubtful.remove(&peer);
        self.lost.remove(&peer);
        if !self.resent.is_empty() {
            self.resent.retain(|(p, _)| *p != peer);
        }
    }
}

/// How long one election may take before a node restarts it, for a ring of `n`
/// members and an algorithm whose election needs at most `hops_per_member · n`
/// sequential hops on a live ring (ring: 2, LCR: 3, HS: 10 — see each module).
///
/// One hop takes at most Ttrans ≤ T/2 (`answer_timeout` T = 2·Ttrans + Tprocess), so
/// the lap itself takes at most `hops_per_member · n · T/2`. Skipping a dead member
/// costs [`STRIKES`] link give-ups in a row, each of which the configuration keeps
/// below `failure_timeout`; one such skip is budgeted, and `coordinator_timeout` (T')
/// is added as slack. An election that meets more dead members than that is
/// restarted, and the restart is faster because the members found dead are now
/// skipped at once.
pub fn election_bound(timing: &Timing, n: usize, hops_per_member: u32) -> Duration {
    let hops = (n as u32).saturating_mul(hops_per_member);
    timing.coordinator_timeout
        + timing.failure_timeout * STRIKES
        + (timing.answer_timeout / 2) * hops
}

/// Arm the restart timer of an election (randomised in [bound, 2·bound] so that
/// the members of a stalled election do not all restart at once).
pub(crate) fn arm_restart(bound: Duration, out: &mut Out) {
    out.set_timer(Timer::Retry, bound, bound * 2);
}

/// Arm the watchdog of a node without leader that is not electing.
pub(crate) fn arm_watchdog(t: &Timing, out: &mut Out) {
    let t = t.failure_timeout;
    out.set_timer(Timer::Retry, t, t * 2);
}

/// Leader belief and fencing token of one ring-family node (the same names as the
/// Bully family's `Leadership`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Leadership {
    /// The leader followed (this node's own id when it leads).
    pub leader: Option<NodeId>,
    /// `[policy] preempt` / `preempt_delay` (the textbook unless set at build).
    pub(crate) hold: crate::algorithms::bully_common::Holdback,
    /// The token last adopted (kept when the leader is lost): never decreases.
    token: Token,
    /// Highest epoch (round) seen in any message: a new election is numbered above it.
    seen: u64,
    /// The leader this node's failure detector last gave up on for silence, until a
    /// leader is adopted again (its heartbeat heard later is a false alarm's end).
    lost_to_silence: Option<NodeId>,
    /// The leader followed took part in the round under way here (its candidacy or
    /// its id in a lap was heard in it): see [`leader_lost`].
    leader_in_round: bool,
}

impl Leadership {
    /// A round starts or is joined here: nobody heard in it yet.
    pub(crate) fn new_round(&mut self) {
        self.leader_in_round = false;
    }

    /// `candidate` was heard standing in the round under way (LCR's and HS's
    /// candidacies, the ids a ring lap collected).
    pub(crate) fn heard_in_round(&mut self, candidate: NodeId) {
        if self.leader == Some(candidate) {
            self.leader_in_round = true;
        }
    }

    /// No leader, no token yet, with the preemption switches of the group.
    pub(crate) fn with_hold(hold: crate::algorithms::bully_common::Holdback) -> Self {
        Leadership {
            hold,
            ..Leadership::default()
        }
    }

    /// The epoch of the token held (the exported term).
    pub(crate) fn epoch(&self) -> u64 {
        self.token.term
    }

    /// Highest epoch known: a new election is numbered above it.
    pub(crate) fn highest(&self) -> u64 {
        self.seen.max(self.token.term)
    }

    /// Learn an epoch from any message.
    pub(crate) fn observe(&mut self, epoch: u64) {
        self.seen = self.seen.max(epoch);
    }

    /// Is an election message of `epoch` a *dead lap* here (see "Dead laps" in the
    /// module documentation)? This node follows a leader whose token's epoch is
    /// above `epoch`: the lap was started before that token was decided (or by a node
    /// that had not heard of it), and completing it could only decide the same
    /// leader again with a higher term.
    pub(crate) fn dead_lap(&self, epoch: u64) -> bool {
        self.leader.is_some() && epoch < self.token.term
    }

    /// Would following `leader` of `epoch` keep the token from going back?
    pub(crate) fn accepts(&self, leader: NodeId, epoch: u64) -> bool {
        self.token.admits(Token::new(epoch, leader))
    }

    /// Follow `leader` with `epoch`, unless that token is below the one held (then
    /// only the epoch is learned). Returns whether it was adopted.
    pub(crate) fn adopt(&mut self, leader: NodeId, epoch: u64, out: &mut Out) -> bool {
        self.observe(epoch);
        if !self.accepts(leader, epoch) {
            return false;
        }
        self.token = Token::new(epoch, leader);
        self.leader = Some(leader);
        self.lost_to_silence = None;
        out.leader_changed(self.leader, epoch);
        true
    }

    /// Forget the leader (lost or resigned); returns who it was. The token is kept.
    pub(crate) fn lose(&mut self, out: &mut Out) -> Option<NodeId> {
        let old = self.leader.take();
        if old.is_some() {
            out.leader_changed(None, self.token.term);
        }
        old
    }

    /// What survives a crash: the token held.
    pub(crate) fn durable(&self) -> Durable {
        Durable {
            term: self.token.term,
            voted_for: (self.token.leader != 0).then_some(self.token.leader),
        }
    }

    /// Stored state of a previous life (never moves the token back).
    pub(crate) fn restore(&mut self, state: Durable) {
        self.token = self
            .token
            .max(Token::new(state.term, state.voted_for.unwrap_or(0)));
        self.observe(state.term);
    }
}

/// The leader followed re-announced itself with a higher epoch (seen in its
/// heartbeat): take the new token.
pub(crate) fn leader_term(a: &mut impl RingMember, from: NodeId, epoch: u64, out: &mut Out) {
    if a.leader() == Some(from) && a.lead().epoch() < epoch {
        a.lead().adopt(from, epoch, out);
    }
}

/// This leader learned of a term at or above its own: a new election numbered above
/// it (which elects the highest live id again, with a fresh token).
pub(crate) fn term_behind(a: &mut impl RingMember, term: u64, out: &mut Out) {
    let me = a.me();
    a.lead().observe(term);
    if a.leader() == Some(me) && !a.busy() {
        elect_on_claim(a, term, out);
    }
}

/// Longest backoff of an election called by a claim, in restart bounds (`2^3`).
pub const BACKOFF_MAX_SHIFT: u32 = 3;

/// An election called by another node's claim (a foreign heartbeat or the answer to
/// this leader's): at once, unless this node's last elections reached nobody (it won
/// them alone: a node cut off in the direction it sends, which still hears the
/// others). Then each new election would only raise its term once more per link
/// give-up; it is put off instead until `Timer::Retry`, drawn in
/// [B·2^(k−1), B·2^k] after the k-th futile election in a row (k capped at
/// 1 + [`BACKOFF_MAX_SHIFT`]), and claims heard meanwhile do not re-arm it. Any
/// election message from another member ends the backoff.
pub(crate) fn elect_on_claim(a: &mut impl RingMember, epoch: u64, out: &mut Out) {
    let futile = a.view().futile();
    if futile == 0 {
        a.elect_above(epoch, out);
        return;
    }
    a.lead().observe(epoch);
    if !a.view().deferred {
        a.view().deferred = true;
        let wait = a.bound() * (1u32 << (futile - 1).min(BACKOFF_MAX_SHIFT));
        out.set_timer(Timer::Retry, wait, wait * 2);
    }
}

/// What a node of the ring family does about a heartbeat from `from`, a leader it
/// does not follow (split brain after a partition heals, or a node the laps skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Foreign {
    /// Call an election: its lap visits every live member and elects the highest.
    Elect,
    /// Follow `from` without an election.
    Follow,
    /// Let others act (this node's own leader will see `from` too).
    Ignore,
}

/// The split-brain rule shared by the ring family:
/// - a claimant higher than this node is followed by a node that leads or has no
///   leader (a leader steps down), and by a follower whose leader it outranks (that
///   leader steps down to it too when it hears it: the follower does not wait a
///   failure timeout for its leader's silence — after a one-way cut heals, say).
///   A follower ignores a claimant ranked below its own leader (that leader hears
///   the claimant too and reacts). The caller follows only a claim whose token is
///   not below the one held ([`Leadership::accepts`]); a follower leaves an older
///   claim to its leader, which calls an election above it;
/// - a claimant lower than this node is wrong while this node is alive: a node that
///   leads, has no leader, or follows a leader also lower than itself (it was skipped
///   by the lap that chose them) calls an election, whose lap elects the highest live
///   id. The caller numbers that election above the claimant's epoch.
///
/// "Higher" and "lower" are by rank (eligible, priority, id): by id without priorities.
///
/// A node holding back (`[policy] preempt = false`, or its `preempt_delay` not yet
/// passed) and not leading treats a lower claimant like a higher one.
pub(crate) fn on_foreign(
    cfg: &GroupConfig,
    leader: Option<NodeId>,
    from: NodeId,
    holding: bool,
) -> Foreign {
    let me = cfg.me;
    let free = leader.is_none() || leader == Some(me);
    let holding = holding && leader != Some(me);
    if cfg.outranks(from, me) || !cfg.options.policy.eligible(me) || holding {
        if free || leader.is_some_and(|l| cfg.outranks(from, l)) {
            Foreign::Follow
        } else {
            Foreign::Ignore
        }
    } else if free || leader.is_some_and(|l| cfg.outranks(me, l)) {
        Foreign::Elect
    } else {
        Foreign::Ignore
    }
}

/// What the handlers shared by the ring family need from an algorithm.
pub(crate) trait RingMember {
    /// This node's id.
    fn me(&self) -> NodeId;
    /// Its group configuration (roster, timing, policy).
    fn cfg(&self) -> &GroupConfig;
    /// Its view of the ring.
    fn view(&mut self) -> &mut RingView;
    /// Its leader belief and token.
    fn lead(&mut self) -> &mut Leadership;
    /// The leader it follows.
    fn leader(&self) -> Option<NodeId>;
    /// Restart bound of one election.
    fn bound(&self) -> Duration;
    /// Taking part in an election?
    fn busy(&self) -> bool;
    /// Is the election under way newer than a leadership claim made in `epoch`?
    fn running_is_newer(&self, epoch: u64) -> bool;
    /// Start an election numbered above `epoch`.
    fn elect_above(&mut self, epoch: u64, out: &mut Out);
    /// Leave the election under way: a leader of `epoch` was found.
    fn stand_down(&mut self, epoch: u64, out: &mut Out);
}

/// A (re)started member: alone, it leads; called to elect (a cold start, the
/// textbook's policy), it listens first for one rank wait per member ranked above it
/// (`bully_common::listen_before_electing`, the Bully family's rule), so that the top
/// member's lap goes first and the others join it instead of sending laps of their
/// own towards successors still booting (64 processes started one after another:
/// the first lap reached a successor not bound yet at every hop, 63 retransmissions in
/// the simulator; 256: 510); the top member elects at once. Holding back (no
/// preemption, or a delay), it listens under the watchdog: a live leader heard
/// meanwhile is followed.
pub(crate) fn start(a: &mut impl RingMember, call_election: bool, out: &mut Out) {
    if a.view().len() == 1 {
        a.elect_above(0, out);
    } else if call_election && a.lead().hold.textbook() {
        let (higher, timing) = (a.cfg().higher(), a.cfg().timing.clone());
        if crate::algorithms::bully_common::listen_before_electing(&higher, &timing, out) {
            a.elect_above(0, out);
        }
    } else {
        arm_watchdog(&a.cfg().timing, out);
    }
}

/// The timers every ring-family algorithm arms: a suspicion expires; an election that
/// did not finish in time (or a watchdog without a leader) calls a new one.
pub(crate) fn timer_fired(a: &mut impl RingMember, timer: Timer, out: &mut Out) {
    if timer == Timer::Suspicion {
        a.view().forget_suspects();
    }
    if timer == Timer::Retry {
        let deferred = std::mem::take(&mut a.view().deferred);
        let me = a.me();
        // A round that stalled while this node kept following a live leader it does
        // not outrank (its detector still hears it; the round was another member's,
        // started when it came back from a cut and then left for that same leader): a
        // new round would only unseat that leader. The nemesis run's nodes 1 and 2
        // stayed in such a round for the whole restart bound and then started one
        // that the leader joined just before it was drained: LCR 3.85 s without a
        // leader. The node leaves the round instead.
        let moot = a.busy()
            && !deferred
            && a.leader()
                .is_some_and(|l| l != me && !a.cfg().outranks(me, l));
        if moot {
            a.stand_down(0, out);
        } else if a.busy() || a.leader().is_none() || deferred {
            a.elect_above(0, out);
        }
    }
    if timer == Timer::Preempt {
        let me = a.me();
        let below = a.leader().is_some_and(|l| a.cfg().outranks(me, l));
        if a.lead().hold.fired(below) && !a.busy() {
            a.elect_above(0, out);
        }
    }
}

/// The accessors of [`RingMember`] every ring-family algorithm implements alike, from
/// its fields `cfg`, `view`, `lead` and `bound` (expanded inside `impl RingMember`).
macro_rules! ring_member_accessors {
    () => {
        fn me(&self) -> NodeId {
            self.cfg.me
        }
        fn cfg(&self) -> &GroupConfig {
            &self.cfg
        }
        fn view(&mut self) -> &mut RingView {
            &mut self.view
        }
        fn lead(&mut self) -> &mut Leadership {
            &mut self.lead
        }
        fn leader(&self) -> Option<NodeId> {
            self.lead.leader
        }
        fn bound(&self) -> Duration {
            self.bound
        }
    };
}
pub(crate) use ring_member_accessors;

/// [`RingMember`] for an algorithm that numbers its election rounds (LCR, HS): fields
/// `cfg`, `view`, `lead`, `bound`, `active`, `round` and a method `elect(&mut self, out)`.
macro_rules! ring_member_with_rounds {
    ($t:ty) => {
        impl RingMember for $t {
            $crate::algorithms::ring_common::ring_member_accessors!();
            fn busy(&self) -> bool {
                self.active
            }
            fn running_is_newer(&self, epoch: u64) -> bool {
                epoch < self.round
            }
            fn elect_above(&mut self, epoch: u64, out: &mut Out) {
                self.round = self.round.max(epoch);
                self.elect(out);
            }
            fn stand_down(&mut self, epoch: u64, out: &mut Out) {
                self.active = false;
                out.cancel_timer(Timer::Retry);
                self.round = self.round.max(epoch);
            }
        }
    };
}
pub(crate) use ring_member_with_rounds;

/// The [`Algorithm`](crate::contract::algorithm::Algorithm) methods LCR and HS share
/// word for word (both number their election rounds), expanded inside each one's
/// `impl Algorithm`: fields `cfg`, `view`, `lead`, `active`, `round`, methods
/// `elect(&mut self, out)` and `win(&mut self, out)`, and [`RingMember`] in scope.
macro_rules! rounds_algorithm_methods {
    () => {
        fn on_timer(&mut self, timer: Timer, out: &mut Out) {
            ring_common::timer_fired(self, timer, out);
        }
        fn on_peer_alive(&mut self, peer: NodeId, _out: &mut Out) {
            self.view.trust(peer);
        }

        fn config_mut(&mut self) -> &mut GroupConfig {
            &mut self.cfg
        }

        fn take_over(&mut self, out: &mut Out) -> bool {
            if !self.cfg.eligible() {
                return false;
            }
            // A round of its own above every token seen, decided without messages: the
            // announcement lap alone.
            self.round = self.round.max(self.lead.highest()).saturating_add(1);
            self.active = false;
            self.win(out);
            self.lead.leader == Some(self.me())
        }

        $crate::algorithms::ring_common::ring_leadership_methods!(active);
    };
}
pub(crate) use rounds_algorithm_methods;

/// The [`Algorithm`](crate::contract::algorithm::Algorithm) methods every ring-family
/// member shares word for word (leader loss and claims, the token, durable state, the
/// state name), over the member's field that says it takes part in an election
/// (`$electing`: LCR's and HS's `active`, Ring's `participant`).
macro_rules! ring_leadership_methods {
    ($electing:ident) => {
        fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
            ring_common::leader_lost(self, why, out);
        }

        fn on_foreign_leader(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
            ring_common::foreign_leader(self, from, epoch, out);
        }

        fn call_election(&mut self, out: &mut Out) {
            if !self.$electing {
                self.elect(out);
            }
        }

        fn leader(&self) -> Option<NodeId> {
            self.lead.leader
        }

        fn term(&self) -> u64 {
            self.lead.epoch()
        }

        fn on_leader_term(&mut self, from: NodeId, term: u64, out: &mut Out) {
            ring_common::leader_term(self, from, term, out);
        }

        fn on_term_behind(&mut self, term: u64, out: &mut Out) {
            ring_common::term_behind(self, term, out);
        }

        fn durable(&self) -> Option<Durable> {
            Some(self.lead.durable())
        }

        fn restore(&mut self, state: Durable) {
            self.lead.restore(state);
        }

        fn state(&self) -> &'static str {
            ring_common::state_name(self.$electing, self.lead.leader, self.me())
        }

        fn is_electing(&self) -> bool {
            self.$electing
        }
    };
}
pub(crate) use ring_leadership_methods;

/// The failure detector lost the leader (silent for a whole failure timeout, or it
/// resigned): skip it at once instead of waiting for the link to give up on it, and
/// call an election unless one is under way. A leader lost to silence is remembered
/// until a leader is adopted: hearing it again during the election is a false alarm
/// ([`foreign_leader`]).
pub(crate) fn leader_lost(a: &mut impl RingMember, why: LeaderLoss, out: &mut Out) {
    let (me, bound) = (a.me(), a.bound());
    let old = a.leader().filter(|&l| l != me);
    if let Some(old) = old {
        a.view().suspect_lost(old, bound, out);
    }
    a.lead().lose(out);
    if why == LeaderLoss::Silent {
        a.lead().lost_to_silence = old;
    }
    // An election under way that the leader just lost took part in was started
    // around that leader, alive then: its id may be the one the round carries (it
    // swallowed the others), so the round would wait for its restart bound. HS's did
    // for 5.3 s when a member back from a cut started a round and the leader, the
    // highest id, died in it. A round above it starts now instead. A round the leader
    // was not heard in is the failover's own (started by a member whose detector fired
    // a moment earlier): it goes on. Starting above it too made every detection a new
    // round: 64 LCR members took four laps (727 messages) instead of one.
    let in_round = std::mem::take(&mut a.lead().leader_in_round);
    if !a.busy() || (old.is_some() && in_round) {
        a.elect_above(0, out);
    }
}

/// A heartbeat from `from`, a leader this node does not follow: [`on_foreign`].
pub(crate) fn foreign_leader(a: &mut impl RingMember, from: NodeId, epoch: u64, out: &mut Out) {
    if !a.view().contains(from) {
        return;
    }
    a.view().trust(from);
    let me = a.me();
    let holding = a.lead().hold.holding();
    if a.busy() && a.running_is_newer(epoch) {
        // The election under way is newer than that claim, but this node must not go
        // on claiming leadership against a higher node meanwhile.
        if a.cfg().outranks(from, me) && a.leader() == Some(me) && !a.lead().adopt(from, epoch, out)
        {
            a.lead().lose(out);
        }
        // A node whose failure detector gave up on its leader for silence (a run of
        // lost heartbeats) and hears that leader again, with a token it may follow,
        // while its election runs: a false alarm. It follows the leader again and
        // leaves the election, whose lap skips that leader and would elect a lower
        // node past it. Its own lap coming back later is not decided while it
        // follows a higher leader (see `follows_above`).
        if a.leader().is_none()
            && a.lead().lost_to_silence == Some(from)
            && on_foreign(a.cfg(), None, from, holding) == Foreign::Follow
            && a.lead().accepts(from, epoch)
        {
            follow(a, from, epoch, out);
            return;
        }
        // A member that may not lead (stepped down for want of a quorum, drained,
        // failing a check) cannot win the election under way, and one that stepped
        // down cut off from the majority runs it on its own side only: its laps come
        // back with nobody to announce, and waiting for the restart timer left the
        // members of a healed minority without a leader for up to 2B (the nemesis
        // run, partition [1, 4] | [2, 3, 5]). A live leader it hears, with a token it
        // may follow, is followed at once; a newer election's result still replaces
        // it when it comes round.
        if a.leader().is_none()
            && !a.cfg().eligible()
            && on_foreign(a.cfg(), None, from, holding) == Foreign::Follow
            && a.lead().accepts(from, epoch)
        {
            follow(a, from, epoch, out);
        }
        return;
    }
    let free = a.leader().is_none() || a.leader() == Some(me);
    match on_foreign(a.cfg(), a.leader(), from, holding) {
        Foreign::Elect => elect_on_claim(a, epoch, out),
        // Following it would take the token back (it came back without its state):
        // an election numbered above both makes it leader with a fresh token. A
        // follower leaves that to its leader, which hears the claim too.
        Foreign::Follow if !a.lead().accepts(from, epoch) => {
            if free && !a.busy() {
                elect_on_claim(a, epoch, out);
            }
        }
        Foreign::Follow => follow(a, from, epoch, out),
        Foreign::Ignore => {}
    }
}

/// Leave any election under way and follow `from` with `epoch`.
fn follow(a: &mut impl RingMember, from: NodeId, epoch: u64, out: &mut Out) {
    let me = a.me();
    a.stand_down(epoch, out);
    a.lead().adopt(from, epoch, out);
    let below = a.cfg().outranks(me, from);
    a.lead().hold.following(below, out);
}

/// Does this node follow a leader ranked above `candidate`? Then a lap that comes
/// back naming `candidate` skipped that live leader (the lap of an election this node
/// left for it): it is not decided here.
pub(crate) fn follows_above(a: &impl RingMember, candidate: NodeId) -> bool {
    a.leader()
        .is_some_and(|l| l != a.me() && a.cfg().outranks(l, candidate))
}

/// `/status` state name of a ring-family node.
pub(crate) fn state_name(busy: bool, leader: Option<NodeId>, me: NodeId) -> &'static str {
    match leader {
        _ if busy => "electing",
        Some(l) if l == me => "leader",
        Some(_) => "follower",
        None => "no-leader",
    }
}
