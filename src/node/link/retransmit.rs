//! Retransmission and the *peer unreachable* verdict: the deadline heap, backoff,
//! the timers of a fan-out's flight restarted by its acks, giving up after
//! `give_up`, and abandoning what was pending to a peer declared lost.

use super::peers::{GIVEN_UP, LOST};
use super::slab::{due, heap_ns, seq_key, undue, HELD, HELD_UNARMED, KEEP_SLOTS, LEFT};
use super::{Flight, Link, Undeliverable, BROADCAST_SEQ};
use crate::contract::algorithm::AlgorithmKind;
use crate::node::{Datagram, Time};
use crate::NodeId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// A fan-out to this many peers or more is a large flight: before its first ack, its
/// messages wait for the flight's ceiling ([`Link::flight_ceiling`]), not one RTO.
/// Measured on two cores: at 256 processes the first of 255 receivers had not acked
/// 17 ms after the send, and every COORDINATOR went twice without the wait; with the
/// wait at 63-peer fan-outs (64 processes), Raft's failovers turned into storms of
/// pre-vote rounds 3 times in 20 (17,250 messages in one; none in 30 without it; the
/// cause is not traced), so clusters of up to 128 members keep one RTO.
pub(super) const LARGE_FLIGHT: u32 = 128;

/// On a roster of this many members or more, a fan-in reply (a Raft vote or pre-vote
/// reply) waits for the flight ceiling before its first retransmission. Measured at 64
/// processes on two cores (docs/bench/ANALYSIS.md, round 22): most replies of a
/// pre-vote were acked more than 5 ms after they left, many more than 15 ms, and in
/// three cold starts of five 26–61 % of the election messages were replies sent again
/// after one RTO (5 ms, no round trip measured yet). The threshold itself was chosen,
/// not measured: the runs had 64 and 256 members; five-member clusters (the nemesis
/// run's) keep one RTO.
pub(super) const FAN_IN: u32 = 16;

impl Link {
    /// How long after its send a flight's acks may keep restarting the timers of the
    /// rest: the RTO ceiling, or half the give-up time if that is longer (a fan-out
    /// to a few hundred peers on a busy host takes tens of milliseconds to answer),
    /// never past the give-up time.
    pub(super) fn flight_ceiling(&self) -> Duration {
        self.cfg
            .rto_max
            .max(self.cfg.give_up / 2)
            .min(self.cfg.give_up)
    }

    /// When a message first sent at `first_sent` and (re)sent `now` is due next: one
    /// RTO later, or at its give-up time if that comes first.
    pub(super) fn next_try(&self, peer: NodeId, first_sent: Time, now: Time) -> Time {
        (now + self.rto(peer)).min(first_sent + self.cfg.give_up)
    }

    /// A message was first sent at `first_sent`: one more in the flight of that instant
    /// (the oldest remembered flight makes room).
    pub(super) fn flight_sent(&mut self, first_sent: u64) {
        if let Some(f) = self.flight_mut(first_sent) {
            f.size = f.size.saturating_add(1);
            return;
        }
        self.remember_flight(Flight {
            first_sent,
            last_ack: 0,
            size: 1,
        });
    }

    /// An ack of a message first sent at `first_sent` came back at `at`: remember it
    /// for the flight of that instant (the oldest remembered flight makes room).
    pub(super) fn flight_acked(&mut self, first_sent: u64, at: u64) {
        if let Some(f) = self.flight_mut(first_sent) {
            f.last_ack = f.last_ack.max(at);
            return;
        }
        self.remember_flight(Flight {
            first_sent,
            last_ack: at,
            size: 0,
        });
    }

    fn flight_mut(&mut self, first_sent: u64) -> Option<&mut Flight> {
        self.flights
            .iter_mut()
            .find(|f| f.first_sent == first_sent && f.known())
    }

    /// Put `f` in place of an empty entry or of the oldest flight, if that is older.
    fn remember_flight(&mut self, f: Flight) {
        if let Some(slot) = self
            .flights
            .iter_mut()
            .min_by_key(|g| (g.known(), g.first_sent))
        {
            if !slot.known() || slot.first_sent < f.first_sent {
                *slot = f;
            }
        }
    }

    /// The flight first sent at `first_sent`, if it is remembered.
    pub(super) fn flight(&self, first_sent: u64) -> Option<Flight> {
        self.flights
            .iter()
            .find(|f| f.first_sent == first_sent && f.known())
            .copied()
    }

    /// The slots holding the message `seq` (a broadcast sequence: every recipient's
    /// copy) to `peer`.
    fn slots_of(&self, peer: NodeId, seq: u64) -> Vec<(usize, u32)> {
        let key = seq_key(seq);
        let positions: Vec<usize> = if seq & BROADCAST_SEQ != 0 {
            (0..self.index.len as usize).collect()
        } else {
            self.index.find(peer).into_iter().collect()
        };
        positions
            .into_iter()
            .filter(|&i| self.full_seq(i, key) == Some(seq))
            .filter_map(|i| self.find_pending(i, key).map(|(_, s)| (i, s)))
            .collect()
    }

    /// The daemon holds back the first copy of `seq` to `peer` (a claim waiting for the
    /// disk, docs/architecture.md "Durable state"): until [`Link::departed`] says it
    /// left, it is not retransmitted, and its retransmission and give-up clocks have
    /// not started. A message sent before (a retransmission held back) is untouched.
    pub(crate) fn held(&mut self, peer: NodeId, seq: u64) {
        for (_, s) in self.slots_of(peer, seq) {
            let p = &mut self.slots[s as usize];
            if p.attempts == 1 {
                p.attempts = HELD;
            }
        }
    }

    /// The held message `seq` to `peer` left `now` (or was dropped unsent: it is then
    /// retransmitted as if lost): its clocks start now.
    pub(crate) fn departed(&mut self, now: Time, peer: NodeId, seq: u64) {
        let at_ns = heap_ns(now);
        for (i, s) in self.slots_of(peer, seq) {
            let attempts = self.slots[s as usize].attempts;
            if attempts != HELD && attempts != HELD_UNARMED {
                continue;
            }
            self.flight_sent(at_ns);
            let p = &mut self.slots[s as usize];
            p.first_sent_ns = at_ns;
            if attempts == HELD {
                // Its deadline is still in the heap: that entry arms it again.
                p.attempts = LEFT;
                continue;
            }
            p.attempts = 1;
            let key = p.key();
            let Some(id) = self.index.id(i) else {
                continue;
            };
            let at = self.next_try(id, now, now);
            self.live_top = None;
            self.retx.push(Reverse(due(heap_ns(at), i, key)));
        }
    }

    /// Earliest retransmission deadline, if any message is unacknowledged.
    pub(crate) fn next_deadline(&mut self) -> Option<Time> {
        while let Some(&Reverse(top)) = self.retx.peek() {
            let (i, key) = undue(top);
            if self.live_top == Some(top) || self.find_pending(i, key).is_some() {
                self.live_top = Some(top);
                break;
            }
            self.retx.pop();
        }
        if self.retx.is_empty() && self.retx.capacity() > KEEP_SLOTS {
            // Nothing in flight: give a burst's memory back.
            self.retx = BinaryHeap::new();
        }
        self.retx
            .peek()
            .map(|Reverse((t, _))| Duration::from_nanos(*t))
    }

    /// Retransmit what is due; messages past their last attempt come back as
    /// [`Undeliverable`].
    pub(crate) fn on_timeout(
        &mut self,
        now: Time,
        transmit: &mut Vec<(NodeId, Datagram)>,
        failed: &mut Vec<Undeliverable>,
    ) {
        while let Some(&Reverse(top)) = self.retx.peek() {
            let t = top.0;
            if t > heap_ns(now) {
                break;
            }
            self.retx.pop();
            let (i, key) = undue(top);
            let Some((_, s)) = self.find_pending(i, key) else {
                continue;
            };
            let Some(peer) = self.index.id(i) else {
                continue;
            };
            // One heap entry per message, always: a held message's entry is dropped
            // (`departed` pushes a new one), and the entry of one that left while it
            // was still in the heap is moved to one RTO after the departure.
            match self.slots[s as usize].attempts {
                HELD => {
                    self.slots[s as usize].attempts = HELD_UNARMED;
                    continue;
                }
                HELD_UNARMED => continue,
                LEFT => {
                    let p = &mut self.slots[s as usize];
                    p.attempts = 1;
                    let first = p.first_sent();
                    let at = self.next_try(peer, first, first);
                    if at > now {
                        self.retx.push(Reverse(due(heap_ns(at), i, key)));
                        continue;
                    }
                }
                _ => {}
            }
            let p = &self.slots[s as usize];
            let out_of_time = now >= p.first_sent() + self.cfg.give_up;
            let out_of_tries = self
                .cfg
                .max_attempts
                .is_some_and(|m| u32::from(p.attempts) >= m);
            if out_of_time || out_of_tries {
                let Some(p) = self.take_pending(i, key) else {
                    continue;
                };
                self.count_failure(i);
                self.peers[i].set(GIVEN_UP, true);
                failed.push(Undeliverable {
                    peer,
                    group: p.group,
                    msg: p.msg,
                });
                continue;
            }
            // A fan-out's acks come back one receiver after another (each has to be
            // woken and scheduled, on the same cores as the rest): while they keep
            // coming, the timers of the others restart from the latest one, as TCP
            // restarts its timer on every ack of new data (RFC 6298 §5.3), instead of
            // all of them firing one RTO after the send.
            // A flight's acks stretch the wait for the rest only up to its ceiling
            // after the send (see [`Link::flight_ceiling`]): a message lost in a large
            // flight (on a lossy network) is not left waiting while its flight's other
            // acks trickle in. A large fan-out with no ack yet waits for its ceiling:
            // its receivers share the machine (or the sender's core) and answer one
            // after another, so the first ack can come long after one round trip.
            let flight = self.flight(p.first_sent_ns);
            let latest = p.first_sent() + self.flight_ceiling();
            let restart = match flight {
                Some(f) if f.last_ack != 0 => {
                    Some((Duration::from_nanos(f.last_ack) + self.rto(peer)).min(latest))
                }
                Some(f) if f.size >= LARGE_FLIGHT => Some(latest),
                _ if p.attempts == 1 && self.fan_in_reply(p.msg) => Some(latest),
                _ => None,
            }
            .filter(|&at| at > now);
            if let Some(at) = restart {
                self.retx.push(Reverse(due(heap_ns(at), i, key)));
                continue;
            }
            // A retransmission timeout doubles the peer's RTO (RFC 6298 §5.5), for
            // new messages too, until a fresh sample.
            let (attempts, first_sent) = (p.attempts.saturating_add(1), p.first_sent());
            let mut rtt = self.peers[i].rtt();
            if rtt.rto(&self.cfg) < self.cfg.rto_max {
                rtt.backoff = (rtt.backoff + 1).min(16);
                self.peers[i].set_rtt(rtt);
            }
            let next = self.next_try(peer, first_sent, now);
            let p = &mut self.slots[s as usize];
            p.attempts = attempts;
            let (group, k) = (p.group, p.msg);
            let Some(msg) = self.kept.get(k).cloned() else {
                continue;
            };
            self.retx.push(Reverse(due(heap_ns(next), i, key)));
            self.stats.retransmissions += 1;
            self.stats.datagrams_sent += 1;
            let Some(seq) = self.full_seq(i, key) else {
                continue;
            };
            transmit.push((peer, self.datagram(seq, 0, Some(group), Some(msg))));
        }
    }

    /// Whether the kept message `k` is a fan-in reply on a roster large enough for
    /// the fan-in rule ([`FAN_IN`]).
    fn fan_in_reply(&self, k: u32) -> bool {
        self.members >= FAN_IN && self.kept.get(k).is_some_and(|m| m.kind().is_fan_in_reply())
    }

    /// The failure detector (or a leader change after the old leader's silence)
    /// declared `peer` lost: until it is heard from again, failures to it are counted
    /// in [`LinkStats::delivery_failures_to_lost`].
    pub(crate) fn declare_lost(&mut self, peer: NodeId) {
        let i = self.position(peer);
        self.peers[i].set(LOST, true);
    }

    pub(super) fn count_failure(&mut self, i: usize) {
        self.stats.delivery_failures += 1;
        if self.peers[i].has(LOST) {
            self.stats.delivery_failures_to_lost += 1;
        }
    }

    /// Number of messages waiting for an ack.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending
    }

    /// Give up now on every message of `group` still unacknowledged by `peer` (the
    /// failure detector declared `peer` lost: waiting out the retry budget would only
    /// delay the election by it). Returned in sending order; counted as delivery
    /// failures, and `peer` counts as given up until it is heard from again. Until
    /// then its later failures count as failures to a lost peer too
    /// ([`LinkStats::delivery_failures_to_lost`]).
    pub(crate) fn abandon(&mut self, peer: NodeId, group: AlgorithmKind) -> Vec<Undeliverable> {
        let i = self.position(peer);
        self.peers[i].set(LOST, true);
        let mut seqs = self.pending_seqs(i, Some(group));
        seqs.sort_unstable();
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            if let Some(m) = self.take_pending(i, seq) {
                self.count_failure(i);
                out.push(Undeliverable {
                    peer,
                    group: m.group,
                    msg: m.msg,
                });
            }
        }
        if !out.is_empty() {
            self.peers[i].set(GIVEN_UP, true);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

    #[test]
    fn abandon_hands_back_one_groups_pending_messages_in_order() {
        let mut l = Link::new(1, 1, ROSTER, LinkConfig::default());
        let t = Duration::ZERO;
        l.send(t, 5, AlgorithmKind::Ring, election(1));
        l.send(t, 5, AlgorithmKind::Bully, election(2));
        l.send(t, 5, AlgorithmKind::Ring, election(3));
        l.send(t, 4, AlgorithmKind::Ring, election(4));
        let gone = l.abandon(5, AlgorithmKind::Ring);
        let msgs: Vec<Message> = gone.into_iter().map(|u| u.msg).collect();
        assert_eq!(msgs, vec![election(1), election(3)]);
        assert_eq!(unacked_to(&l, 5), 1, "the other group's message stays");
        assert_eq!(unacked_to(&l, 4), 1);
        assert_eq!(l.stats.delivery_failures, 2);
        assert!(l.abandon(5, AlgorithmKind::Ring).is_empty());
        // Nothing abandoned is retransmitted.
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        l.on_timeout(Duration::from_secs(1), &mut tx, &mut failed);
        assert!(tx
            .iter()
            .all(|(_, d)| d.body != Some(election(1)) && d.body != Some(election(3))));
    }

    /// First RTO 5 ms (also the floor), ceiling 40 ms, give-up 75 ms: the link of a
    /// 100 ms failure timeout.
    fn lan() -> LinkConfig {
        LinkConfig {
            retransmit: ms(5),
            rto_min: ms(5),
            rto_max: ms(40),
            give_up: ms(75),
            max_attempts: None,
        }
    }

    /// One ELECTION to each of `peers` at time 0 (a flight); their sequences.
    fn fan_out(l: &mut Link, peers: &[NodeId]) -> Vec<u64> {
        peers
            .iter()
            .map(|&p| l.send(ms(0), p, AlgorithmKind::Bully, election(1)).seq)
            .collect()
    }

    /// A fan-out's acks restart the timers of the rest of its flight (RFC 6298 §5.3):
    /// receivers acking one after another, each within an RTO of the previous ack, get
    /// nothing twice; a receiver that never acks gets its copy again one RTO after the
    /// flight's last ack, and gives up at the usual time; a lone message is untouched.
    #[test]
    fn acks_of_a_fan_out_restart_the_timers_of_the_rest() {
        let cfg = lan();
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=9).collect();
        let seqs = fan_out(&mut l, &peers);
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        // Peers 2..=8 ack 4 ms apart (each past the 5 ms RTO of the send); 9 never does.
        for (i, (&peer, &seq)) in peers.iter().zip(&seqs).take(7).enumerate() {
            let at = ms(4 * (i as u64 + 1));
            while l.next_deadline().is_some_and(|d| d < at) {
                let d = l.next_deadline().unwrap();
                l.on_timeout(d, &mut tx, &mut failed);
            }
            l.receive(at, &ack_from(peer, seq));
        }
        assert_eq!(l.stats.retransmissions, 0, "{tx:?}");
        // Peer 9: again one RTO after the last ack (28 ms), then backed off, then given up.
        let (last_ack, rto) = (ms(28), l.rto(9));
        let mut first_retry = None;
        let mut now = ms(28);
        for _ in 0..20 {
            let Some(d) = l.next_deadline() else { break };
            now = d;
            l.on_timeout(now, &mut tx, &mut failed);
            if !tx.is_empty() && first_retry.is_none() {
                first_retry = Some(now);
            }
        }
        assert_eq!(first_retry, Some(last_ack + rto));
        assert_eq!(tx.len() as u64, l.stats.retransmissions);
        assert!(tx.iter().all(|(p, _)| *p == 9), "{tx:?}");
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].peer, 9);
        assert_eq!(now, cfg.give_up, "given up at the usual time");
        // A flight whose acks trickle in for longer than the RTO ceiling: what is not
        // acked by then goes again at the ceiling after the send, not later.
        let mut big = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=21).collect();
        let seqs: Vec<u64> = peers
            .iter()
            .map(|&p| big.send(ms(0), p, AlgorithmKind::Bully, election(1)).seq)
            .collect();
        let mut first_retry = None;
        for (i, (&peer, &seq)) in peers.iter().zip(&seqs).take(19).enumerate() {
            let at = ms(4 * (i as u64 + 1));
            while let Some(d) = big.next_deadline().filter(|&d| d < at) {
                let mut sent = Vec::new();
                big.on_timeout(d, &mut sent, &mut failed);
                if !sent.is_empty() && first_retry.is_none() {
                    first_retry = Some(d);
                }
            }
            big.receive(at, &ack_from(peer, seq));
        }
        assert_eq!(first_retry, Some(cfg.rto_max));
        // A lone message: its RTO after the send, as before.
        let mut lone = Link::new(1, 1, ROSTER, cfg.clone());
        lone.send(ms(100), 2, AlgorithmKind::Bully, election(1));
        assert_eq!(lone.next_deadline(), Some(ms(100) + cfg.retransmit));
    }

    /// A large fan-out (128 peers or more) on a busy host: before its first ack it
    /// waits for its ceiling, not one RTO; a smaller one goes again one RTO after the
    /// send. With a give-up time of 300 ms the ceiling is 150 ms (half of it), not the
    /// RTO ceiling of 50 ms: acks of 199 receivers trickling in 0.5 ms apart from 20 ms
    /// on (120 ms in all) leave nothing retransmitted but the copy to the one receiver
    /// that never acks, at the flight's ceiling.
    #[test]
    fn a_large_fan_out_waits_for_its_ceiling_before_its_first_ack() {
        let cfg = LinkConfig {
            retransmit: ms(5),
            rto_min: ms(5),
            rto_max: ms(50),
            give_up: ms(300),
            max_attempts: None,
        };
        let ceiling = ms(150);
        for (fan_out, first_retry) in [(LARGE_FLIGHT - 1, cfg.retransmit), (LARGE_FLIGHT, ceiling)]
        {
            let mut l = Link::new(1, 1, ROSTER, cfg.clone());
            for p in 2..2 + fan_out as NodeId {
                l.send(ms(0), p, AlgorithmKind::Bully, election(1));
            }
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            let mut at = None;
            while let Some(d) = l.next_deadline() {
                l.on_timeout(d, &mut tx, &mut failed);
                if !tx.is_empty() {
                    at = Some(d);
                    break;
                }
            }
            assert_eq!(at, Some(first_retry), "fan-out to {fan_out}");
            assert_eq!(tx.len(), fan_out as usize, "every copy once");
        }
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=201).collect();
        let seqs = fan_out(&mut l, &peers);
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        for (k, (&peer, &seq)) in peers.iter().zip(&seqs).take(199).enumerate() {
            let at = ms(20) + Duration::from_micros(500 * k as u64);
            while let Some(d) = l.next_deadline().filter(|&d| d < at) {
                l.on_timeout(d, &mut tx, &mut failed);
            }
            l.receive(at, &ack_from(peer, seq));
        }
        while let Some(d) = l.next_deadline().filter(|&d| d <= ceiling) {
            l.on_timeout(d, &mut tx, &mut failed);
        }
        let to: Vec<NodeId> = tx.iter().map(|(p, _)| *p).collect();
        assert_eq!(
            to,
            vec![201],
            "only the silent receiver's copy, at the ceiling"
        );
    }

    /// The fan-in rule: a Raft vote or pre-vote reply on a roster of [`FAN_IN`] members
    /// or more waits for the flight ceiling (here max(rto_max 40, give_up / 2) = 40 ms)
    /// before its first retransmission, then backs off as usual; on a smaller roster,
    /// and any other type on the large one, it goes again one RTO after the send. A
    /// vote held for the disk waits from its departure.
    #[test]
    fn a_fan_in_reply_on_a_large_roster_waits_for_the_ceiling() {
        let cfg = lan();
        let ceiling = ms(40);
        let large: Vec<NodeId> = (1..=FAN_IN as NodeId).collect();
        let small: Vec<NodeId> = (1..FAN_IN as NodeId).collect();
        let vote = |pre_vote| Message::Vote {
            term: 3,
            granted: true,
            pre_vote,
        };
        // When the reply to node 2, sent at 10 ms (or held and sent at 10 ms), goes again.
        let first_retry = |roster: &[NodeId], msg: Message, held: bool| {
            let mut l = Link::new(1, 1, roster, cfg.clone());
            let d = l.send(ms(if held { 0 } else { 10 }), 2, AlgorithmKind::Raft, msg);
            if held {
                l.held(2, d.seq);
                let (mut tx, mut failed) = (Vec::new(), Vec::new());
                while let Some(t) = l.next_deadline().filter(|&t| t < ms(10)) {
                    l.on_timeout(t, &mut tx, &mut failed);
                }
                assert!(tx.is_empty(), "nothing before it left: {tx:?}");
                l.departed(ms(10), 2, d.seq);
            }
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            while let Some(t) = l.next_deadline() {
                l.on_timeout(t, &mut tx, &mut failed);
                if !tx.is_empty() {
                    return t;
                }
            }
            panic!("never sent again");
        };
        for held in [false, true] {
            for pre_vote in [false, true] {
                assert_eq!(
                    first_retry(&large, vote(pre_vote), held),
                    ms(10) + ceiling,
                    "pre_vote {pre_vote}, held {held}"
                );
                assert_eq!(
                    first_retry(&small, vote(pre_vote), held),
                    ms(10) + cfg.retransmit,
                    "pre_vote {pre_vote}, held {held}, {} members",
                    small.len()
                );
            }
            assert_eq!(
                first_retry(&large, election(1), held),
                ms(10) + cfg.retransmit
            );
        }
        // After the wait the usual backoff, and the usual give-up time.
        let mut l = Link::new(1, 1, &large, cfg.clone());
        l.send(ms(0), 2, AlgorithmKind::Raft, vote(false));
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let mut at = Vec::new();
        while let Some(t) = l.next_deadline() {
            let before = tx.len();
            l.on_timeout(t, &mut tx, &mut failed);
            if tx.len() > before {
                at.push(t);
            }
        }
        assert_eq!(at.first(), Some(&ceiling), "{at:?}");
        assert!(at.windows(2).all(|w| w[1] > w[0]), "{at:?}");
        assert_eq!(failed.len(), 1);
        assert!(at.iter().all(|&t| t < cfg.give_up), "{at:?}");
    }

    /// A message the daemon holds back (a claim waiting for the disk) is not
    /// retransmitted before it has left, and its clocks start when it leaves: held for
    /// 30 ms, a fan-out of 8 goes out once, an ack 2 ms after its departure times a
    /// 2 ms round trip, and a receiver that never acks gets its copy again one RTO
    /// after the departure and is given up `give_up` after it, not after the build.
    /// A retransmission held back is only delayed, and a broadcast is held for every
    /// recipient at once.
    #[test]
    fn a_held_message_is_not_retransmitted_before_it_leaves() {
        let cfg = LinkConfig {
            retransmit: ms(5),
            rto_min: ms(1),
            rto_max: ms(40),
            give_up: ms(75),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=9).collect();
        let seqs = fan_out(&mut l, &peers);
        for (&p, &seq) in peers.iter().zip(&seqs) {
            l.held(p, seq);
        }
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        while let Some(d) = l.next_deadline().filter(|&d| d < ms(30)) {
            l.on_timeout(d, &mut tx, &mut failed);
        }
        assert!(tx.is_empty() && failed.is_empty(), "{tx:?} {failed:?}");
        assert_eq!(l.stats.retransmissions, 0);
        assert_eq!(l.next_deadline(), None, "no wakeup for what has not left");
        for (&p, &seq) in peers.iter().zip(&seqs) {
            l.departed(ms(30), p, seq);
        }
        assert_eq!(l.next_deadline(), Some(ms(30) + cfg.retransmit));
        // Peer 2 acks 2 ms after the departure: a sample of 2 ms, not 32.
        l.receive(ms(32), &ack_from(2, seqs[0]));
        assert_eq!(l.rto(2), ms(6), "SRTT 2 ms + 4 × RTTVAR 1 ms");
        // Peers 3..=8 ack one after another; 9 never does.
        for (k, (&p, &seq)) in peers.iter().zip(&seqs).enumerate().skip(1).take(6) {
            l.receive(ms(32 + k as u64), &ack_from(p, seq));
        }
        let mut first_retry = None;
        let mut now = ms(38);
        for _ in 0..50 {
            let Some(d) = l.next_deadline() else { break };
            now = d;
            l.on_timeout(now, &mut tx, &mut failed);
            if !tx.is_empty() && first_retry.is_none() {
                first_retry = Some(now);
            }
        }
        assert_eq!(
            first_retry,
            Some(ms(38) + cfg.retransmit),
            "one RTO after the last ack of its flight"
        );
        assert!(tx.iter().all(|(p, _)| *p == 9), "{tx:?}");
        assert_eq!(failed.len(), 1);
        assert_eq!(now, ms(30) + cfg.give_up, "given up give_up after it left");

        // A retransmission held back: the message left before, its clocks run on.
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let seq = l.send(ms(0), 2, AlgorithmKind::Bully, election(1)).seq;
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        l.on_timeout(ms(5), &mut tx, &mut failed);
        assert_eq!(tx.len(), 1);
        l.held(2, seq);
        assert!(l.next_deadline().is_some(), "still armed");
        l.departed(ms(6), 2, seq);
        l.on_timeout(ms(75), &mut tx, &mut failed);
        assert_eq!(failed.len(), 1, "given up 75 ms after its first send");

        // A broadcast: every recipient's copy is held and leaves together.
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let d = l.send_to_all(ms(0), &[2, 3, 4], AlgorithmKind::Bully, election(1));
        l.held(0, d.seq);
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        l.on_timeout(ms(20), &mut tx, &mut failed);
        assert!(tx.is_empty());
        l.departed(ms(20), 0, d.seq);
        assert_eq!(l.next_deadline(), Some(ms(25)));
        l.on_timeout(ms(25), &mut tx, &mut failed);
        assert_eq!(tx.len(), 3, "each recipient's copy again, by unicast");
    }

    /// The verdict is a time: a message unacked for `give_up` is undeliverable, however
    /// many sends that took, and not before.
    #[test]
    fn give_up_is_a_time_not_a_count() {
        for rto_max in [ms(10), ms(40)] {
            let cfg = LinkConfig {
                retransmit: ms(5),
                rto_min: ms(5),
                rto_max,
                give_up: ms(150),
                max_attempts: None,
            };
            let mut l = Link::new(1, 1, ROSTER, cfg.clone());
            l.send(ms(3), 2, AlgorithmKind::Bully, election(1));
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            let mut verdict = None;
            while let Some(at) = l.next_deadline() {
                l.on_timeout(at, &mut tx, &mut failed);
                if !failed.is_empty() {
                    verdict = Some(at);
                }
            }
            assert_eq!(verdict, Some(ms(3) + cfg.give_up), "{rto_max:?}");
            assert_eq!(l.stats.delivery_failures, 1);
        }
        // A legacy cap on sends still ends it earlier.
        let mut l = Link::new(
            1,
            1,
            ROSTER,
            LinkConfig {
                max_attempts: Some(2),
                ..LinkConfig::default()
            },
        );
        l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        while let Some(at) = l.next_deadline() {
            l.on_timeout(at, &mut tx, &mut failed);
        }
        assert_eq!((tx.len(), failed.len()), (1, 1));
    }

    /// Failures to a peer the failure detector declared lost are counted apart from
    /// failures to peers believed alive, until the lost peer is heard from again.
    #[test]
    fn failures_to_a_lost_peer_are_counted_apart() {
        let cfg = LinkConfig {
            give_up: ms(50),
            ..LinkConfig::default()
        };
        let mut l = Link::new(1, 1, ROSTER, cfg);
        let drain = |l: &mut Link| {
            let (mut tx, mut failed) = (Vec::new(), Vec::new());
            while let Some(at) = l.next_deadline() {
                l.on_timeout(at, &mut tx, &mut failed);
            }
            failed.len() as u64
        };
        // Peer 3 (the crashed leader) is declared lost with one message in flight.
        l.send(ms(0), 3, AlgorithmKind::Bully, election(1));
        assert_eq!(l.abandon(3, AlgorithmKind::Bully).len(), 1);
        // Later messages to it and one to the live peer 2 run out of time.
        l.send(ms(1), 3, AlgorithmKind::Bully, election(2));
        l.send(ms(1), 3, AlgorithmKind::Bully, election(3));
        l.send(ms(1), 2, AlgorithmKind::Bully, election(2));
        assert_eq!(drain(&mut l), 3);
        assert_eq!(l.stats.delivery_failures, 4);
        assert_eq!(l.stats.delivery_failures_to_lost, 3, "all but the one to 2");
        // Peer 3 is back: a failure to it now is a failure to a live peer.
        let mut hello = reliable(3, 1);
        hello.group = Some(AlgorithmKind::Bully);
        l.receive(ms(200), &hello);
        l.send(ms(201), 3, AlgorithmKind::Bully, election(4));
        assert_eq!(drain(&mut l), 1);
        assert_eq!(
            (l.stats.delivery_failures, l.stats.delivery_failures_to_lost),
            (5, 3)
        );
    }
}
