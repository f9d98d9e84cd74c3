//! Retransmission and the *peer unreachable* verdict: the deadline heap, backoff,
//! the timers of a fan-out's flight restarted by its acks, giving up after
//! `give_up`, and abandoning what was pending to a peer declared lost.

use super::peers::{GIVEN_UP, LOST};
use super::slab::{due, heap_ns, undue, KEEP_SLOTS};
use super::{Link, Undeliverable};
use crate::contract::algorithm::AlgorithmKind;
use crate::node::{Datagram, Time};
use crate::NodeId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

impl Link {
    /// When a message first sent at `first_sent` and (re)sent `now` is due next: one
    /// RTO later, or at its give-up time if that comes first.
    pub(super) fn next_try(&self, peer: NodeId, first_sent: Time, now: Time) -> Time {
        (now + self.rto(peer)).min(first_sent + self.cfg.give_up)
    }

    /// The first deadline of a message to `peer` first sent `now`: its RTO, plus its
    /// place in the burst of messages first sent at the same instant times twice the
    /// ack spacing, at most the RTO ceiling after the send (module documentation).
    pub(super) fn first_try(&mut self, peer: NodeId, now: Time) -> Time {
        let at = heap_ns(now);
        let place = if self.burst.0 == at && self.burst.1 > 0 {
            self.burst.1
        } else {
            self.burst = (at, 0);
            0
        };
        self.burst.1 = self.burst.1.saturating_add(1);
        let rto = self.rto(peer);
        let wait = rto
            .saturating_add(self.burst_delay(place))
            .min(self.cfg.rto_max.max(rto));
        (now + wait).min(now + self.cfg.give_up)
    }

    /// What the `place`-th message of a burst (from 0) waits beyond its RTO.
    pub(super) fn burst_delay(&self, place: u32) -> Duration {
        self.ack_spacing().saturating_mul(place.saturating_mul(2))
    }

    /// The learned spacing of a flight's acks, or before any an eighth of the initial
    /// RTO.
    pub(super) fn ack_spacing(&self) -> Duration {
        if self.spacing_ns == 0 {
            self.cfg.retransmit / 8
        } else {
            Duration::from_nanos(self.spacing_ns)
        }
    }

    /// An ack of a message first sent at `first_sent` came back at `at`: remember it
    /// for the flight of that instant (the oldest remembered flight makes room).
    /// `sent_once`: that message was not retransmitted, so the gap since the flight's
    /// previous ack is a sample of the ack spacing.
    pub(super) fn flight_acked(&mut self, first_sent: u64, at: u64, sent_once: bool) {
        if let Some(f) = self.flights.iter_mut().find(|f| f.0 == first_sent) {
            let previous = f.1;
            f.1 = f.1.max(at);
            if sent_once && previous != 0 {
                let gap = at.saturating_sub(previous);
                let cap = heap_ns(self.cfg.rto_max / 16).max(1);
                let s = if self.spacing_ns == 0 {
                    gap
                } else {
                    (self.spacing_ns.saturating_mul(7).saturating_add(gap)) / 8
                };
                self.spacing_ns = s.clamp(1, cap);
            }
            return;
        }
        if let Some(oldest) = self.flights.iter_mut().min_by_key(|f| f.0) {
            if oldest.0 < first_sent {
                *oldest = (first_sent, at);
            }
        }
    }

    /// When the last ack of the flight first sent at `first_sent` came back, if any did.
    pub(super) fn flight_last_ack(&self, first_sent: u64) -> Option<u64> {
        self.flights
            .iter()
            .find(|f| f.0 == first_sent && f.1 != 0)
            .map(|f| f.1)
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
            // A flight's acks stretch the wait for the rest only up to the RTO ceiling
            // after the send: a message lost in a large flight (on a lossy network)
            // is not left waiting while its flight's other acks trickle in.
            let latest = p.first_sent() + self.cfg.rto_max.min(self.cfg.give_up);
            let restart = self
                .flight_last_ack(p.first_sent_ns)
                .map(|ack| (Duration::from_nanos(ack) + self.rto(peer)).min(latest))
                .filter(|&at| at > now);
            if let Some(at) = restart {
                self.retx.push(Reverse(due(heap_ns(at), i, key)));
                continue;
            }
            // A retransmission timeout doubles the peer's RTO (RFC 6298 §5.5), for
            // new messages too, until a fresh sample.
            let (attempts, first_sent) = (p.attempts.saturating_add(1), p.first_sent());
            let mut rtt = self.peers[i].rtt();
            if rtt.rto(&self.cfg, self.initial_rto()) < self.cfg.rto_max {
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

    /// A fan-out's acks restart the timers of the rest of its flight (RFC 6298 §5.3):
    /// receivers acking one after another, each within an RTO of the previous ack, get
    /// nothing twice; a receiver that never acks gets its copy again one RTO after the
    /// flight's last ack, and gives up at the usual time; a lone message is untouched.
    #[test]
    fn acks_of_a_fan_out_restart_the_timers_of_the_rest() {
        let cfg = LinkConfig {
            retransmit: ms(5),
            rto_min: ms(5),
            rto_max: ms(40),
            give_up: ms(75),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=9).collect();
        let seqs: Vec<u64> = peers
            .iter()
            .map(|&p| l.send(ms(0), p, AlgorithmKind::Bully, election(1)).seq)
            .collect();
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
        // (The acks' 4 ms gaps taught the link a wide ack spacing, so peer 9, never
        // sampled, has a long first RTO: the RTO ceiling after the send comes first.)
        assert_eq!(first_retry, Some((last_ack + rto).min(cfg.rto_max)));
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
        assert_eq!(lone.next_deadline(), Some(ms(100) + lone.initial_rto()));
    }

    /// A burst fan-out whose first ack comes back after the RTO learned on quiet round
    /// trips (a loaded host: the receivers are woken one after another; issue 31's
    /// 64 processes on two cores): the j-th message of the burst waits j times twice
    /// the ack spacing more, so only the first one (a lone message's RTO) goes again;
    /// before, every message of the burst was sent twice. Then the spacing is learned
    /// from the gaps between the flight's acks, and the next burst's places follow it.
    #[test]
    fn a_burst_waits_for_its_acks_one_place_after_another() {
        let cfg = LinkConfig::for_failure_timeout(ms(100));
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let peers: Vec<NodeId> = (2..=41).collect();
        // Quiet round trips of 1 ms to every peer: the RTO is the floor.
        for (k, &p) in peers.iter().enumerate() {
            let t = ms(10 * k as u64);
            let d = l.send(t, p, AlgorithmKind::Bully, election(1));
            l.receive(t + ms(1), &ack_from(p, d.seq));
        }
        let rto = l.rto(2);
        assert_eq!(rto, cfg.rto_min);
        let spacing = l.ack_spacing();
        assert_eq!(spacing, cfg.retransmit / 8, "no flight's acks seen yet");
        // The burst, and its acks: the first 1.2 RTO after the send, then 0.3 ms apart.
        let t0 = ms(1000);
        let seqs: Vec<u64> = peers
            .iter()
            .map(|&p| l.send(t0, p, AlgorithmKind::Bully, election(2)).seq)
            .collect();
        let first_ack = t0 + rto * 6 / 5;
        let gap = Duration::from_micros(300);
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        for (j, (&p, &seq)) in peers.iter().zip(&seqs).enumerate() {
            let at = first_ack + gap * j as u32;
            while let Some(d) = l.next_deadline().filter(|&d| d < at) {
                l.on_timeout(d, &mut tx, &mut failed);
            }
            l.receive(at, &ack_from(p, seq));
        }
        // Place j waits rto + 2·j·spacing: only place 0 is due before the first ack.
        let due_early = (0..peers.len() as u32)
            .filter(|&j| t0 + rto + spacing * 2 * j < first_ack)
            .count() as u64;
        assert_eq!(due_early, 1);
        assert_eq!(l.stats.retransmissions, due_early, "{tx:?}");
        assert!(l.stats.retransmissions * 10 <= peers.len() as u64);
        assert!(failed.is_empty());
        // The gaps between the flight's acks (sent once) are the spacing now.
        let learned = l.ack_spacing();
        assert!(
            learned < spacing && learned >= gap / 2,
            "learned {learned:?} from gaps of {gap:?}"
        );
        let mut next = Link::new(1, 1, ROSTER, cfg.clone());
        next.spacing_ns = heap_ns(learned);
        let t1 = ms(2000);
        for (j, &p) in peers.iter().enumerate().take(3) {
            next.send(t1, p, AlgorithmKind::Bully, election(3));
            let due = next.retx.iter().map(|r| r.0 .0).max().unwrap();
            let want = t1 + next.rto(p) + learned * 2 * j as u32;
            assert_eq!(Duration::from_nanos(due), want, "place {j}");
        }
        // Never past the RTO ceiling after the send.
        let mut capped = Link::new(1, 1, ROSTER, cfg.clone());
        for &p in &peers {
            capped.send(t1, p, AlgorithmKind::Bully, election(3));
        }
        let latest = capped.retx.iter().map(|r| r.0 .0).max().unwrap();
        assert_eq!(Duration::from_nanos(latest), t1 + cfg.rto_max);
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
