//! The round-trip estimator of one peer (RFC 6298): smoothed round trip, its
//! variation, the retransmission timeout and its backoff (the rules are in the
//! [link's module documentation](super)).

use super::slab::heap_ns;
use super::{Link, LinkConfig};
use crate::NodeId;
use std::time::Duration;

/// Round-trip estimate of one peer (RFC 6298), as computed: the smoothed round trip
/// and its variation in nanoseconds, computed as [`Duration`]s so the arithmetic is
/// exactly the one on durations. Stored flat in [`Peer`](super::peers::Peer).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rtt {
    pub(super) srtt_ns: u64,
    pub(super) var_ns: u64,
    /// Doublings of the RTO since the last valid sample.
    pub(super) backoff: u8,
    /// A sample was taken (`srtt_ns` and `var_ns` are meaningful).
    pub(super) sampled: bool,
}

impl Rtt {
    /// Smoothed round trip and its variation; `None` before the first sample.
    pub(super) fn srtt(&self) -> Option<(Duration, Duration)> {
        self.sampled.then(|| {
            (
                Duration::from_nanos(self.srtt_ns),
                Duration::from_nanos(self.var_ns),
            )
        })
    }
    pub(super) fn sample(&mut self, r: Duration) {
        let (srtt, var) = match self.srtt() {
            None => (r, r / 2),
            Some((srtt, var)) => {
                let dev = srtt.abs_diff(r);
                ((srtt * 7 + r) / 8, (var * 3 + dev) / 4)
            }
        };
        // Saturating: a round trip is never 584 years.
        self.srtt_ns = heap_ns(srtt);
        self.var_ns = heap_ns(var);
        self.sampled = true;
        self.backoff = 0;
    }
    pub(super) fn base(&self, cfg: &LinkConfig) -> Duration {
        match self.srtt() {
            None => cfg.retransmit,
            Some((srtt, var)) => cfg.clamp(srtt + var * 4),
        }
    }
    /// The RTO for a message sent now.
    pub(super) fn rto(&self, cfg: &LinkConfig) -> Duration {
        let shift = self.backoff.min(16);
        cfg.clamp(self.base(cfg).saturating_mul(1 << shift))
    }
}

impl Link {
    /// The retransmission timeout a new message to `peer` would get now.
    pub(crate) fn rto(&self, peer: NodeId) -> Duration {
        self.index
            .find(peer)
            .map(|i| self.peers[i].rtt())
            .unwrap_or_default()
            .rto(&self.cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

    /// Round trips beyond 32-bit nanoseconds (4.29 s) saturate: the RTO stays at the
    /// ceiling, where it would be clamped anyway.
    #[test]
    fn round_trips_past_32_bit_nanoseconds_saturate_at_the_ceiling() {
        let cfg = LinkConfig::default();
        let mut link = Link::new(1, 1, ROSTER, cfg.clone());
        let d = link.send(Duration::ZERO, 2, AlgorithmKind::Bully, election(1));
        link.receive(Duration::from_secs(10), &ack_from(2, d.seq));
        assert_eq!(link.rto(2), cfg.rto_max);
        let i = link.index.find(2).unwrap();
        assert_eq!(link.peers[i].srtt_ns, u32::MAX);
    }

    /// RFC 6298 §2: the first sample R gives SRTT = R, RTTVAR = R/2; the next one
    /// R' gives RTTVAR = ¾·RTTVAR + ¼·|SRTT − R'|, SRTT = ⅞·SRTT + ⅛·R'; RTO =
    /// SRTT + 4·RTTVAR within the floor and the ceiling.
    #[test]
    fn the_rto_follows_measured_round_trips() {
        let cfg = LinkConfig {
            retransmit: ms(50),
            rto_min: ms(1),
            rto_max: ms(500),
            give_up: ms(900),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        assert_eq!(l.rto(2), cfg.retransmit, "no sample yet");
        let d = l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        l.receive(ms(8), &ack_from(2, d.seq));
        let (srtt, var) = (ms(8), ms(4));
        assert_eq!(l.rto(2), srtt + var * 4);
        let d = l.send(ms(100), 2, AlgorithmKind::Bully, election(2));
        l.receive(ms(100 + 16), &ack_from(2, d.seq));
        let r = ms(16);
        let var = (var * 3 + srtt.abs_diff(r)) / 4;
        let srtt = (srtt * 7 + r) / 8;
        assert_eq!(l.rto(2), srtt + var * 4);
        // Floor and ceiling.
        let mut fast = Link::new(
            1,
            1,
            ROSTER,
            LinkConfig {
                rto_min: ms(5),
                ..cfg.clone()
            },
        );
        let d = fast.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        fast.receive(ms(0), &ack_from(2, d.seq));
        assert_eq!(fast.rto(2), ms(5));
        let d = l.send(ms(200), 3, AlgorithmKind::Bully, election(1));
        l.receive(ms(200 + 400), &ack_from(3, d.seq));
        assert_eq!(l.rto(3), cfg.rto_max);
    }

    /// Karn's rule and backoff: a retransmitted message gives no sample, every
    /// retransmission timeout doubles the peer's RTO (for new messages too) and only a
    /// fresh sample from a message sent once brings it back.
    #[test]
    fn karn_rule_and_backoff_kept_until_a_fresh_sample() {
        let cfg = LinkConfig {
            retransmit: ms(10),
            rto_min: ms(10),
            rto_max: ms(80),
            give_up: ms(1000),
            max_attempts: None,
        };
        let mut l = Link::new(1, 1, ROSTER, cfg.clone());
        let (mut tx, mut failed) = (Vec::new(), Vec::new());
        let d = l.send(ms(0), 2, AlgorithmKind::Bully, election(1));
        let mut now = ms(0);
        let mut sends = vec![now];
        for _ in 0..5 {
            now = l.next_deadline().unwrap();
            l.on_timeout(now, &mut tx, &mut failed);
            sends.push(now);
        }
        let gaps: Vec<u64> = sends
            .windows(2)
            .map(|w| (w[1] - w[0]).as_millis() as u64)
            .collect();
        assert_eq!(gaps, vec![10, 20, 40, 80, 80], "doubling up to the ceiling");
        assert_eq!(l.stats.retransmissions, 5);
        assert_eq!(l.rto(2), cfg.rto_max, "backed off for new messages too");
        // The late ack of the retransmitted message: no sample (Karn), RTO stays.
        l.receive(now + ms(1), &ack_from(2, d.seq));
        assert_eq!(l.rto(2), cfg.rto_max);
        // A message sent once and acked: a fresh sample resets the backoff.
        let d = l.send(now + ms(2), 2, AlgorithmKind::Bully, election(2));
        l.receive(now + ms(4), &ack_from(2, d.seq));
        assert_eq!(l.rto(2), cfg.rto_min);
        assert!(failed.is_empty());
    }
}
