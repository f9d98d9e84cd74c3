//! Raft leader election without a log (Ongaro & Ousterhout, "In Search of an
//! Understandable Consensus Algorithm", USENIX ATC 2014, §5.1–§5.2 and §9.3), with the
//! pre-vote, check-quorum and leader-stickiness extensions of Ongaro's PhD thesis
//! ("Consensus: Bridging Theory and Practice", 2014, §9.6 and §4.2.3).
//!
//! # Assumptions
//! - Asynchronous network: messages may be lost, duplicated, reordered or delayed
//!   without bound. **Safety (at most one leader per term) holds regardless**; timing
//!   only matters for liveness (the randomized timeouts must exceed the round trip).
//! - Crash-recovery with stable storage: `term` and `voted_for` are exported through
//!   [`Algorithm::durable`] and restored after a restart (Figure 2, persistent state).
//!   The driver must store them before it transmits what the same input produced.
//! - A fixed roster; a majority is `⌊N/2⌋ + 1` of it, dead members included.
//!
//! # Roles and messages
//! Every node is a follower, pre-candidate, candidate or leader and holds a *term*
//! that only grows. A follower that hears no leader for a randomized election timeout
//! (`set_timer(Election, election_timeout_min, election_timeout_max)`) campaigns:
//! - **pre-vote** (thesis §9.6, on by default): without touching its term it asks
//!   every peer `pre_vote(term+1)`; a peer grants if it would grant a real vote and is
//!   not following a live leader. Only with a majority of grants does it go on. A node
//!   cut off from the majority therefore never raises its term, and cannot depose a
//!   healthy leader when it comes back;
//! - **RequestVote** (§5.2): term + 1, vote for itself, `request_vote(term)` to every
//!   peer. A peer grants at most one vote per term (first come, first served); a
//!   candidate with a majority of votes leads that term, and sends a `heartbeat` at
//!   once and then every `heartbeat` period. Any message with a higher term turns the
//!   receiver into a follower of that term (§5.1).
//!
//! Every request is answered (grant or rejection) so candidates learn a lost election
//! early (as in etcd: a majority of rejections returns to follower).
//!
//! # Extensions beyond §5.2
//! - **Leader stickiness** (thesis §4.2.3): a follower that heard from its leader
//!   within `election_timeout_min` (its *lease*, timer `Quorum`), and the leader
//!   itself, reject votes and pre-votes of a higher term without adopting that term.
//! - **Check-quorum** (thesis §6.2, on by default): every `election_timeout_min / 2`
//!   the leader checks that a majority (itself included) answered a heartbeat during
//!   the last two periods, a whole minimum election timeout (as etcd allows a whole
//!   election timeout); if not it steps down. A loss burst or a link flap shorter than
//!   that does not unseat a healthy leader; a leader cut off from the majority steps
//!   down between `min` and `1.5·min` after the cut. A new leader counts the votes
//!   of its term as the answers of the period before its first check, so that check
//!   also looks at a whole `min`: before, it judged a new leader on half of one, and a
//!   leader of 255 followers on two busy cores had not read a majority of answers 200
//!   ms after its election and stepped down (docs/bench/ANALYSIS.md, round 21).
//! - A stale leader's heartbeat (lower term) is answered with the receiver's term, so
//!   a node whose term ran ahead is not stuck forever behind the stickiness rule
//!   (etcd does the same when pre-vote or check-quorum is on).
//! - **Graceful leave** (`resign`, like etcd's `TimeoutNow`): followers of the leaving
//!   leader drop their lease and campaign after a random delay in
//!   `[0, election_timeout_max − election_timeout_min]` instead of a full timeout.
//! - **Cold start** (`on_start(call_election = true)`): not at once, since a whole
//!   cluster booting together would split every vote. With ranked timeouts (the
//!   default) the node listens one heartbeat plus one *cold-start step* per member
//!   ranked above it, with no ceiling (a quarter step of jitter): the step is the
//!   widest of two heartbeats, half of `min` and `(max − min) / N`. The top member
//!   campaigns first; the others hear its pre-vote, then its heartbeats, before their
//!   wait runs out. Booted one after another
//!   (a shell loop, a service manager: about 14 ms apart for 64 processes on two
//!   cores), the cold start costs one campaign, 4(N − 1) messages, as long as the
//!   boot gap stays below the step, whatever the order; before, every node campaigned
//!   within `max − min` of its boot, towards peers not running yet (docs/bench/
//!   ANALYSIS.md, round 10). The price: a cold start without the top m members waits
//!   m steps longer. Until it hears a leader, no vote and no deferral makes a node
//!   wait less than that (round 21: at 256 members they did, and some 190 members
//!   campaigned together). Textbook (ranked timeouts off): a random delay in
//!   `[0, max − min]`. Without `call_election` it waits a full timeout.
//! - **Ranked deferral**: with ranked timeouts, a follower without a live leader (none
//!   known, or its lease ran out) that grants a pre-vote to a member ranked above it
//!   restarts its election timeout, as a real vote does (§5.2): the higher member's
//!   campaign runs alone even when its pre-vote round outlasts a slot on a loaded
//!   host; a pre-candidate ranked below ends its own round. Once per term: a member
//!   whose rounds cannot win holds the others back for one timeout. In a failover
//!   the next rank's slot starts a heartbeat after the first's; at 256 members on
//!   two cores the first's pre-vote round took longer, and the second ran a round of
//!   its own beside it (docs/bench/ANALYSIS.md, round 21).
//! - **Large rosters**: with more members than heartbeat-wide slots in `max − min`,
//!   the members past the last slot share a window that runs on past `max`, to four
//!   times `max − min` after `min`, doubled by each of their campaigns that found no
//!   leader (up to 32 times), so that they do not all campaign at once when the top
//!   ranks have not won ([`Raft::election_window`]).
//! - **Operator election** (`call_election`): a follower or candidate campaigns at
//!   once (pre-vote first when enabled, so a healthy leader's followers refuse it); a
//!   leader hands over: it sends `resign` and becomes a follower without a lease.
//!
//! # Message count (clean start, N nodes, one initiator, nobody following a leader)
//! Pre-vote: (N−1) `pre_vote` + (N−1) `pre_vote_response`; then (N−1) `request_vote` +
//! (N−1) `vote`: **4(N−1)** election messages, 2(N−1) without pre-vote. Heartbeats and
//! their acks are liveness traffic, counted apart.
//!
//! The term is the fencing token ([`Algorithm::term`]).

use crate::contract::algorithm::AlgorithmKind;
use crate::contract::algorithm::{Algorithm, Durable, GroupConfig, LeaderLoss, Out, Timer};
use crate::contract::formulas::{self, Case, RingOrder};
use crate::contract::info::{Elects, Info, Recovery};
use crate::contract::message::Message;
use crate::contract::message::MessageType;
use crate::NodeId;
use std::collections::BTreeSet;
use std::time::Duration;

/// With ranked timeouts the top follower fires `heartbeat / LEASE_MARGIN_DIV` (or half
/// a slot, if less) after its own lease ends (`Raft::election_window`). The other
/// followers' leases end `min` after the same heartbeat, which the leader sends to all
/// of them in one burst (one flush of its datagrams, not timed here), and a pre-vote
/// needs a majority out of its lease, not every member.
/// The margin was half a heartbeat, 20 ms at 256 members (heartbeat 40 ms), most of
/// what Raft's failover there exceeded 1.3 × `min` by; at an eighth (5 ms) every one
/// of 30 failovers at 256 processes was one campaign (docs/bench/ANALYSIS.md, round
/// 26).
pub const LEASE_MARGIN_DIV: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Follower,
    /// Asking pre-votes for `term + 1` (the term itself is unchanged).
    PreCandidate,
    /// Asking votes for `term` (already voted for itself).
    Candidate,
    Leader,
}

/// Raft election at one node (see the module documentation).
#[derive(Debug)]
pub struct Raft {
    cfg: GroupConfig,
    role: Role,
    term: u64,
    voted_for: Option<NodeId>,
    leader: Option<NodeId>,
    /// Follower: heard from `leader` within `election_timeout_min`.
    lease: bool,
    /// The term in which this node last deferred to a higher member's pre-vote
    /// ([`Raft::defers_to`]): once per term, so that a member whose rounds reach
    /// this node but cannot win holds it back for one timeout, not for ever.
    deferred_in: Option<u64>,
    /// Campaigns this node started since it last heard a leader (or led): the
    /// members past the last whole slot back off with it ([`Raft::election_window`]).
    campaigns: u32,
    /// Started in a cold start and no leader heard since: every wait for an election
    /// lasts at least the cold-start wait of this node's rank ([`Raft::arm_election`]).
    cold: bool,
    /// Candidate / pre-candidate: peers that granted (self included) or rejected.
    granted: BTreeSet<NodeId>,
    rejected: BTreeSet<NodeId>,
    /// Leader: peers that acknowledged a heartbeat since the last quorum check.
    active: BTreeSet<NodeId>,
    /// Leader: those of the period before (check-quorum looks at both periods).
    active_before: BTreeSet<NodeId>,
}

impl Raft {
    /// A node of group `cfg`, not yet started.
    pub fn new(cfg: GroupConfig) -> Self {
        Raft {
            cfg,
            role: Role::Follower,
            term: 0,
            voted_for: None,
            leader: None,
            lease: false,
            deferred_in: None,
            campaigns: 0,
            cold: false,
            granted: BTreeSet::new(),
            rejected: BTreeSet::new(),
            active: BTreeSet::new(),
            active_before: BTreeSet::new(),
        }
    }

    fn me(&self) -> NodeId {
        self.cfg.me
    }

    fn min(&self) -> Duration {
        self.cfg.timing.election_timeout_min
    }

    fn max(&self) -> Duration {
        self.cfg.timing.election_timeout_max.max(self.min())
    }

    /// The election timeout, §5.2: uniform in `[min, max]`, or with ranked timeouts
    /// a slot of that range (see [`Raft::election_window`]).
    ///
    /// In a cold start, until a leader is heard, never shorter than the cold-start wait
    /// ([`Raft::cold_window`]): a member that restarted its timeout for the top
    /// member's vote round (a vote, a deferral) would otherwise fire `min` plus its
    /// slot later, 0.6–0.8 s at 256 members where its rank waits up to 20 s. At 256
    /// processes on two cores some 190 of them did that together, 0.6 s after the top
    /// members' rounds that had not won yet, and the cluster stayed leaderless
    /// (docs/bench/ANALYSIS.md, round 21).
    fn arm_election(&self, out: &mut Out) {
        let (lo, hi) = self.election_window(true);
        let (lo, hi) = (self.min() + lo, self.min() + hi);
        match self
            .cold_window()
            .filter(|&(cold_lo, _)| self.cold && cold_lo > lo)
        {
            Some((cold_lo, cold_hi)) => out.set_timer(Timer::Election, cold_lo, cold_hi),
            None => out.set_timer(Timer::Election, lo, hi),
        }
    }

    /// The cold-start wait with ranked timeouts: a heartbeat, then one cold-start step
    /// ([`Raft::cold_step`]) per member ranked above, a quarter step of jitter.
    fn cold_window(&self) -> Option<(Duration, Duration)> {
        if !self.cfg.options.ranked_timeouts {
            return None;
        }
        let step = self.cold_step();
        let lo =
            self.cfg.timing.heartbeat.saturating_add(
                step.saturating_mul(u32::try_from(self.rank()).unwrap_or(u32::MAX)),
            );
        Some((lo, lo.saturating_add(step / 4)))
    }

    /// Campaign soon, with only the randomized part of the timeout (graceful leave,
    /// cold start): whoever draws the shortest delay usually wins without a split.
    fn arm_election_soon(&self, out: &mut Out) {
        let (lo, hi) = self.election_window(false);
        out.set_timer(Timer::Election, lo, hi);
    }

    /// Cold start with ranked timeouts: listen a heartbeat, then one cold-start step
    /// ([`Raft::cold_step`]) per member ranked above, no ceiling; the top member
    /// campaigns first (see the module documentation, "Cold start"). Textbook: only
    /// the randomized part of the timeout, `[0, max − min]`.
    fn arm_cold_start(&self, out: &mut Out) {
        match self.cold_window() {
            Some((lo, hi)) => out.set_timer(Timer::Election, lo, hi),
            None => self.arm_election_soon(out),
        }
    }

    /// How much longer a starting node listens than the member ranked just above it:
    /// long enough for that member's pre-vote to reach it, so that it defers instead of
    /// campaigning beside it. Two heartbeats (one for the pre-vote round on a loaded
    /// host, one for the datagram to arrive), half of `min` (Raft's timing rule puts a
    /// broadcast and its answers well within `min`; a booting host is slower than a
    /// settled one) or a ranked slot, whichever is widest. In a busy start the processes
    /// boot one after another (about 14 ms apart for 64 `electd run` on two cores); as
    /// long as that gap is below the step, the top member boots and campaigns before
    /// anyone below it stops listening, whatever the boot order. With two heartbeats
    /// alone (80 ms at 256 members, heartbeat 40 ms), the members just below the top
    /// often stopped listening before its pre-vote arrived: 256 processes on two cores
    /// sent 1,020 to 3,060 election messages per cold start where one campaign sends
    /// 1,020 (docs/bench/ANALYSIS.md, round 25).
    fn cold_step(&self) -> Duration {
        let spread = self.max() - self.min();
        (spread / (self.cfg.ring.len().max(1) as u32))
            .max(self.cfg.timing.heartbeat * 2)
            .max(self.min() / 2)
    }

    /// Roster members ranked above this node, the leader it follows not counted.
    fn rank(&self) -> usize {
        self.cfg
            .ring
            .iter()
            .filter(|&&p| self.cfg.outranks(p, self.me()) && Some(p) != self.leader)
            .count()
    }

    /// Ranked timeouts: does a pre-vote of `from` restart this follower's timeout (or
    /// end this pre-candidate's round)? Yes when `from` ranks above and this node has
    /// no live leader (none known, or its lease ran out): the ranks exist so that the
    /// higher member's campaign runs alone, and on a loaded host its pre-vote round
    /// can outlast the slot (or cold-start step) that separates it from this one.
    /// Once per term: a member whose rounds reach this node but cannot win (cut off
    /// from the answers, or from a majority) must not hold it back for ever.
    fn defers_to(&self, from: NodeId) -> bool {
        self.cfg.options.ranked_timeouts
            && matches!(self.role, Role::Follower | Role::PreCandidate)
            && !(self.lease && self.leader.is_some())
            && self.deferred_in != Some(self.term)
            && self.cfg.outranks(from, self.me())
    }

    /// The part of the timeout above `min`, as a range within `[0, max − min]` (but
    /// for the members past the last slot of a large roster, below).
    ///
    /// Textbook (§5.2): the whole spread. Ranked: the spread is cut into N slots;
    /// this node's rank is the number of roster members with a higher id, the leader it
    /// follows not counted, so the highest follower fires first and the others one
    /// slot later each. Within its slot a node draws from the first quarter (jitter
    /// separates nodes that disagree on the leader). After a crash the failover then
    /// takes about `min` instead of the minimum of N−1 uniform draws, and two
    /// candidates rarely collide. `after_lease` adds a margin before the first slot,
    /// an eighth of a heartbeat ([`LEASE_MARGIN_DIV`]) or half a slot if less: the
    /// other followers' leases end `min` after the same heartbeat, and a pre-vote that
    /// arrives while they still hold them would be refused.
    ///
    /// A slot is at least a heartbeat wide: the next rank must not fire before the
    /// previous one's vote round (a broadcast and N−1 answers) is over, and on a
    /// loaded host that round takes milliseconds. With many members (more than
    /// spread / heartbeat: 10 at the default timing) the ranks past the last whole
    /// slot share what the slots leave, widened to a quarter slot per member sharing
    /// it up to the second half of the range, each drawing from all of it: they
    /// campaign only if the members whose slots come first stayed silent, and then as
    /// the textbook's random draw, except that the window runs on past `max`: to 4
    /// ranges (`max − min`) after `min`, doubled by each campaign of the member that
    /// found no leader, up to 32. At 256 members (heartbeat 40 ms, range 400..800 ms)
    /// what the slots leave is 20 ms; when a leader stepped down and the top ranks had
    /// not won, some 190 of them campaigned together and kept campaigning, tens of
    /// rounds a second with no round finishing (docs/bench/ANALYSIS.md, round 21).
    fn election_window(&self, after_lease: bool) -> (Duration, Duration) {
        let spread = self.max() - self.min();
        if !self.cfg.options.ranked_timeouts {
            return (Duration::ZERO, spread);
        }
        // One slot per roster member: without a known leader every member has a rank.
        let width = (spread / (self.cfg.ring.len().max(1) as u32))
            .max(self.cfg.timing.heartbeat)
            .min(spread);
        let rank = self.rank();
        let margin = if after_lease {
            (self.cfg.timing.heartbeat / LEASE_MARGIN_DIV).min(width / 2)
        } else {
            Duration::ZERO
        };
        // Whole slots that fit after the margin.
        let slots = if width.is_zero() {
            u128::MAX
        } else {
            spread.saturating_sub(margin).as_nanos() / width.as_nanos()
        };
        if rank as u128 >= slots {
            // Past the last whole slot: share what the slots leave, widened to a
            // quarter slot (a slot's jitter) per member sharing it, up to the second
            // half of the range and never into the first slot. Shared by several, the
            // window ends 4 ranges after `min`, and each campaign without result since
            // a leader was last heard doubles that, up to 32 ranges.
            let after_slots = (margin + width * slots as u32).min(spread);
            let sharing = (self.cfg.ring.len() as u128).saturating_sub(slots);
            let quarter_slots =
                (width / 4).saturating_mul(u32::try_from(sharing).unwrap_or(u32::MAX));
            let wide = spread.saturating_sub(quarter_slots);
            let lo = after_slots.min(wide.max(spread / 2).max(margin + width));
            let hi = if sharing >= 2 {
                spread.saturating_mul(1 << (2 + self.campaigns.min(3)))
            } else {
                spread
            };
            return (lo.min(spread.saturating_sub(width / 4)), hi);
        }
        let lo = (margin + width * rank as u32).min(spread);
        (lo, (lo + width / 4).min(spread))
    }

    /// Period of the leader's quorum check: half the minimum election timeout, so a
    /// leader without a majority steps down within one minimum election timeout.
    fn quorum_period(&self) -> Duration {
        (self.min() / 2).max(Duration::from_millis(1))
    }

    /// Would this node refuse a (pre-)vote of a higher term? (thesis §4.2.3)
    fn in_lease(&self) -> bool {
        match self.role {
            Role::Leader => true,
            Role::Follower => self.lease && self.leader.is_some(),
            _ => false,
        }
    }

    fn set_leader(&mut self, leader: Option<NodeId>, out: &mut Out) {
        self.leader = leader;
        out.leader_changed(leader, self.term);
    }

    /// Become a follower of `term` (≥ the current one), following `leader` if known.
    fn become_follower(&mut self, term: u64, leader: Option<NodeId>, out: &mut Out) {
        if term > self.term {
            self.term = term;
            self.voted_for = None;
        }
        if self.role == Role::Leader {
            out.cancel_timer(Timer::Heartbeat);
        }
        self.role = Role::Follower;
        self.lease = false;
        out.cancel_timer(Timer::Quorum);
        self.granted.clear();
        self.rejected.clear();
        self.active.clear();
        self.active_before.clear();
        self.set_leader(leader, out);
        self.arm_election(out);
    }

    /// Start a campaign: pre-vote first if enabled and `pre`, else a real election.
    fn campaign(&mut self, pre: bool, out: &mut Out) {
        if self.role == Role::Leader {
            return;
        }
        if !self.cfg.eligible() {
            // Never leader (priority 0): it votes, but never stands.
            self.arm_election(out);
            return;
        }
        if !matches!(self.role, Role::PreCandidate | Role::Candidate) {
            out.election_started();
        }
        if pre || self.role != Role::PreCandidate {
            // A new round (not the real vote that follows a won pre-vote).
            self.campaigns = self.campaigns.saturating_add(1);
        }
        if self.role == Role::Follower {
            out.cancel_timer(Timer::Quorum);
        }
        self.lease = false;
        self.granted.clear();
        self.rejected.clear();
        self.granted.insert(self.me());
        if pre && self.cfg.options.pre_vote {
            self.role = Role::PreCandidate;
            self.set_leader(None, out);
            self.arm_election(out);
            out.broadcast(Message::RequestVote {
                term: self.term.saturating_add(1),
                pre_vote: true,
                transfer: false,
            });
        } else {
            self.stand(false, out);
        }
        self.tally(out);
    }

    /// Become a candidate of the next term and ask for votes (`transfer`: on the
    /// leader's TimeoutNow).
    fn stand(&mut self, transfer: bool, out: &mut Out) {
        self.role = Role::Candidate;
        self.term = self.term.saturating_add(1);
        self.voted_for = Some(self.me());
        self.set_leader(None, out);
        self.arm_election(out);
        out.broadcast(Message::RequestVote {
            term: self.term,
            pre_vote: false,
            transfer,
        });
    }

    /// Count the answers of the current (pre-)campaign and act on a decision.
    fn tally(&mut self, out: &mut Out) {
        let majority = self.cfg.majority();
        if self.granted.len() >= majority {
            match self.role {
                Role::PreCandidate => self.campaign(false, out),
                Role::Candidate => self.become_leader(out),
                _ => {}
            }
        } else if self.rejected.len() >= majority {
            // Lost: wait a fresh randomized timeout as a follower (etcd's VoteLost).
            self.become_follower(self.term, None, out);
        }
    }

    fn become_leader(&mut self, out: &mut Out) {
        self.role = Role::Leader;
        self.campaigns = 0;
        self.cold = false;
        // The votes of this term are the answers of the period before the first
        // quorum check, so that check too looks at a whole minimum election timeout
        // (see the module documentation, "Check-quorum").
        self.active.clear();
        self.active_before = std::mem::take(&mut self.granted);
        self.active_before.remove(&self.me());
        self.rejected.clear();
        out.cancel_timer(Timer::Election);
        self.set_leader(Some(self.me()), out);
        self.heartbeat(out);
        if self.cfg.options.check_quorum {
            out.set_timer_exact(Timer::Quorum, self.quorum_period());
        }
    }

    fn heartbeat(&mut self, out: &mut Out) {
        out.broadcast(Message::Heartbeat {
            term: self.term,
            leader: self.me(),
        });
        out.set_timer_exact(Timer::Heartbeat, self.cfg.timing.heartbeat);
    }

    /// Leadership transfer (thesis §3.10): this node's leader tells it to campaign now.
    /// It does, at once and without pre-vote, asking the voters to disregard the
    /// leader they heard recently (`transfer`). Only from the leader of its own term,
    /// and only if this node may lead.
    fn on_timeout_now(&mut self, from: NodeId, term: u64, out: &mut Out) {
        if term != self.term
            || self.leader != Some(from)
            || self.role != Role::Follower
            || !self.cfg.eligible()
        {
            return;
        }
        out.election_started();
        out.cancel_timer(Timer::Quorum);
        self.lease = false;
        self.granted.clear();
        self.rejected.clear();
        self.granted.insert(self.me());
        self.stand(true, out);
        self.tally(out);
    }

    fn on_request_vote(
        &mut self,
        from: NodeId,
        term: u64,
        pre: bool,
        transfer: bool,
        out: &mut Out,
    ) {
        let reject = |me: &Self, out: &mut Out| {
            out.send(
                from,
                Message::Vote {
                    term: me.term,
                    granted: false,
                    pre_vote: pre,
                },
            )
        };
        // A transfer's candidate was sent by the leader itself: the lease that keeps
        // disruptive candidates out does not apply to it (thesis §3.10, §4.2.3).
        if term < self.term || (term > self.term && self.in_lease() && !transfer) {
            // Stale request, or a disruptive one while a leader is alive: refuse without
            // adopting its term (§5.1; thesis §4.2.3).
            return reject(self, out);
        }
        if term > self.term && !pre {
            self.become_follower(term, None, out);
        }
        let free = self.voted_for.is_none() && self.leader.is_none();
        let can_vote = self.voted_for == Some(from) || free || (pre && term > self.term);
        if !can_vote {
            return reject(self, out);
        }
        if !pre {
            self.voted_for = Some(from);
            self.arm_election(out);
        } else if self.defers_to(from) {
            // Ranked: a member above campaigns; let it finish before this node's own
            // timeout competes with it (as a real vote restarts the timeout, §5.2).
            // A leader whose lease ran out is given up here, as the node's own
            // campaign would have: deferring again and again (to a member that cannot
            // win) must not leave a dead leader named.
            // A pre-candidate steps back likewise: two rounds side by side (the boot
            // of the top members further apart than a cold-start step) split the
            // real votes between them.
            if self.leader.is_some() {
                self.set_leader(None, out);
            }
            if self.role == Role::PreCandidate {
                self.role = Role::Follower;
                self.granted.clear();
                self.rejected.clear();
            }
            self.deferred_in = Some(self.term);
            self.arm_election(out);
        }
        out.send(
            from,
            Message::Vote {
                term,
                granted: true,
                pre_vote: pre,
            },
        );
    }

    fn on_vote(&mut self, from: NodeId, term: u64, granted: bool, pre: bool, out: &mut Out) {
        if term > self.term && !(pre && granted) {
            // A granted pre-vote carries the proposed term; anything else with a higher
            // term means this node is behind.
            return self.become_follower(term, None, out);
        }
        let counts = match (self.role, pre) {
            (Role::PreCandidate, true) => !granted || term == self.term.saturating_add(1),
            (Role::Candidate, false) => term == self.term,
            _ => false,
        };
        if !counts {
            return;
        }
        if granted {
            self.granted.insert(from);
        } else {
            self.rejected.insert(from);
        }
        self.tally(out);
    }

    fn on_heartbeat(&mut self, from: NodeId, term: u64, leader: NodeId, out: &mut Out) {
        if leader != from {
            return; // malformed: a heartbeat speaks only for its sender
        }
        if term < self.term {
            // Tell a stale leader about the newer term so it steps down.
            out.send(
                from,
                Message::HeartbeatAck {
                    term: self.term,
                    leader: 0,
                },
            );
            return;
        }
        if term == self.term && self.role == Role::Leader {
            return; // two leaders in one term cannot happen; ignore a forged claim
        }
        self.campaigns = 0; // a leader heard: no back-off, no cold start
        self.cold = false;
        if term > self.term || self.role != Role::Follower || self.leader != Some(from) {
            self.become_follower(term, Some(from), out);
        }
        self.lease = true;
        out.set_timer_exact(Timer::Quorum, self.min());
        self.arm_election(out);
        out.send(
            from,
            Message::HeartbeatAck {
                term: self.term,
                leader: 0,
            },
        );
    }

    fn on_heartbeat_ack(&mut self, from: NodeId, term: u64, out: &mut Out) {
        if term > self.term {
            self.become_follower(term, None, out);
        } else if term == self.term && self.role == Role::Leader {
            self.active.insert(from);
        }
    }

    /// Only the current leader of the current term can resign.
    fn on_resign(&mut self, from: NodeId, epoch: u64, out: &mut Out) {
        if epoch == self.term && self.leader == Some(from) && self.role == Role::Follower {
            self.leader_left(out);
        }
    }

    /// The leader left gracefully: forget it and campaign soon (etcd's TimeoutNow).
    fn leader_left(&mut self, out: &mut Out) {
        self.lease = false;
        out.cancel_timer(Timer::Quorum);
        self.set_leader(None, out);
        self.arm_election_soon(out);
    }
}

impl Algorithm for Raft {
    fn on_start(&mut self, call_election: bool, out: &mut Out) {
        self.role = Role::Follower;
        self.lease = false;
        // Publishes a restored term (no leader yet).
        self.set_leader(None, out);
        if call_election {
            // A whole cluster booting together would split every vote if all
            // campaigned at the same instant: ranked, the top member first.
            self.cold = true;
            self.arm_cold_start(out);
        } else {
            self.arm_election(out);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Message, out: &mut Out) {
        if from == self.me() || !self.cfg.ring.contains(&from) {
            return;
        }
        match msg {
            Message::RequestVote {
                term,
                pre_vote,
                transfer,
            } => self.on_request_vote(from, term, pre_vote, transfer, out),
            Message::TimeoutNow { term } => self.on_timeout_now(from, term, out),
            Message::Vote {
                term,
                granted,
                pre_vote,
            } => self.on_vote(from, term, granted, pre_vote, out),
            Message::Heartbeat { term, leader } => self.on_heartbeat(from, term, leader, out),
            Message::HeartbeatAck { term, .. } => self.on_heartbeat_ack(from, term, out),
            Message::Resign { epoch } => self.on_resign(from, epoch, out),
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out) {
        match (timer, self.role) {
            (Timer::Election, Role::Leader) => {}
            (Timer::Election, _) => self.campaign(true, out),
            (Timer::Heartbeat, Role::Leader) => self.heartbeat(out),
            (Timer::Quorum, Role::Leader) => {
                let heard = self.active.union(&self.active_before).count();
                if heard + 1 < self.cfg.majority() {
                    // Check-quorum: no majority heard within an election timeout.
                    self.become_follower(self.term, None, out);
                } else {
                    self.active_before = std::mem::take(&mut self.active);
                    out.set_timer_exact(Timer::Quorum, self.quorum_period());
                }
            }
            (Timer::Quorum, _) => self.lease = false,
            _ => {}
        }
    }

    fn on_peer_unreachable(&mut self, _peer: NodeId, _msg: Message, _out: &mut Out) {
        // Nothing to do: the election timeout covers lost requests and replies.
    }

    fn on_leader_lost(&mut self, why: LeaderLoss, out: &mut Out) {
        match (why, self.role) {
            (_, Role::Leader) => {}
            (LeaderLoss::Resigned, _) => self.leader_left(out),
            // Told the leader is gone: behave as if the election timeout fired.
            (LeaderLoss::Silent | LeaderLoss::Told, _) => self.campaign(true, out),
        }
    }

    fn config_mut(&mut self) -> &mut GroupConfig {
        &mut self.cfg
    }

    fn step_down(&mut self, out: &mut Out) {
        // The hand-over of `call_election` on a leader; ineligible, this node then
        // never campaigns (`campaign`), so a follower wins.
        if self.role == Role::Leader {
            self.call_election(out);
        }
    }

    fn on_foreign_leader(&mut self, _from: NodeId, _epoch: u64, _out: &mut Out) {
        // Not used: Raft gets heartbeats in `on_message` and resolves terms itself.
    }

    fn call_election(&mut self, out: &mut Out) {
        if self.role == Role::Leader {
            // Hand over: the followers campaign soon, this node only after a full
            // timeout (and it grants votes at once: it holds no lease any more).
            out.broadcast(Message::Resign { epoch: self.term });
            self.become_follower(self.term, None, out);
        } else {
            self.campaign(true, out);
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.leader
    }

    fn term(&self) -> u64 {
        self.term
    }

    fn state(&self) -> &'static str {
        match self.role {
            Role::Follower => "follower",
            Role::PreCandidate => "pre-candidate",
            Role::Candidate => "candidate",
            Role::Leader => "leader",
        }
    }

    fn is_electing(&self) -> bool {
        matches!(self.role, Role::PreCandidate | Role::Candidate)
    }

    fn uses_failure_detector(&self) -> bool {
        false
    }

    fn durable(&self) -> Option<Durable> {
        Some(Durable {
            term: self.term,
            voted_for: self.voted_for,
        })
    }

    fn restore(&mut self, state: Durable) {
        // Never move backwards (a stale copy must not undo a newer vote).
        if state.term >= self.term {
            self.term = state.term;
            self.voted_for = state.voted_for;
        }
    }
}

/// What the program knows about Raft's election (see [`crate::contract::info`]).
pub(crate) const INFO: Info = Info {
    name: "raft",
    aliases: &[],
    title: "Raft leader election (Ongaro & Ousterhout 2014 §5.2)",
    summary: "Raft's leader election: terms and majority votes",
    build: |c| Box::new(Raft::new(c)),
    elects: Elects::MajorityWinner,
    recovery: Recovery::RandomizedTimeout,
    message_types: &[
        MessageType::PreVote,
        MessageType::PreVoteResponse,
        MessageType::RequestVote,
        MessageType::Vote,
    ],
    cases: || {
        vec![Case {
            algorithm: AlgorithmKind::Raft,
            order: RingOrder::Ascending,
            label: "raft".into(),
            formula: "4(N−1): (N−1)×(pre_vote, pre_vote_response, request_vote, vote) \
                      (Ongaro & Ousterhout 2014 §5.2; thesis §9.6 pre-vote)",
            expected: Some(|n| formulas::raft(n, true) as f64),
            exact: true,
        }]
    },
    policy_preempt: true,
    durable_vote: true,
};
#[cfg(test)]
#[path = "tests/raft.rs"]
mod tests;
