//! `[timing]` and `[transport]`: the durations, the link's retransmission settings and
//! multicast; the relations between them are [`Timing::validate`]'s.

use super::raw::RawConfig;
use super::validate::{ms, Validator};
use super::{ConfigError, Peer};
use crate::contract::algorithm::{AlgorithmKind, Timing};
use crate::node::link::LinkConfig;
use crate::NodeId;
use std::net::SocketAddr;
use std::time::Duration;

/// The validated `[timing]` and `[transport]` sections.
pub(super) struct Transport {
    pub(super) timing: Timing,
    pub(super) link: LinkConfig,
    pub(super) resolve_every: Duration,
    pub(super) multicast: Option<SocketAddr>,
}

impl Validator<'_> {
    /// `[timing]` and `[transport]`; `peers` and `node_id` for the multicast group's
    /// address family.
    pub(super) fn transport(
        &self,
        raw: &RawConfig,
        peers: &[Peer],
        node_id: NodeId,
        algorithms: &[AlgorithmKind],
    ) -> Result<Transport, ConfigError> {
        let d = Timing::default();
        let t = &raw.timing;
        let heartbeat = self.duration("timing.heartbeat", &t.heartbeat, d.heartbeat)?;
        if heartbeat < super::validate::MIN_HEARTBEAT {
            return Err(self.err(
                "timing.heartbeat",
                format!(
                    "{} is below 1ms: the leader would beat faster than it can turn",
                    ms(heartbeat)
                ),
            ));
        }
        let failure_timeout = self.duration(
            "timing.failure_timeout",
            &t.failure_timeout,
            d.failure_timeout,
        )?;
        let answer_timeout =
            self.duration("timing.answer_timeout", &t.answer_timeout, d.answer_timeout)?;
        let coordinator_timeout = self.duration(
            "timing.coordinator_timeout",
            &t.coordinator_timeout,
            d.coordinator_timeout,
        )?;
        let (election_timeout_min, election_timeout_max) = match &t.election_timeout {
            None => (d.election_timeout_min, d.election_timeout_max),
            Some(s) => self.range("timing.election_timeout", s)?,
        };
        let dl = LinkConfig::for_failure_timeout(failure_timeout);
        let retransmit = self.duration(
            "transport.retransmit",
            &raw.transport.retransmit,
            dl.retransmit,
        )?;
        let max_attempts = match raw.transport.max_attempts {
            None => None,
            Some(n) if (1..=32).contains(&n) => Some(n as u32),
            Some(n) => {
                return Err(self.err("transport.max_attempts", format!("{n} is outside 1 ..= 32")))
            }
        };
        let rto_min = self.duration("transport.rto_min", &raw.transport.rto_min, retransmit)?;
        let rto_max = self.duration(
            "transport.rto_max",
            &raw.transport.rto_max,
            (retransmit * 8).max(failure_timeout / 8),
        )?;
        // Without `give_up`, a legacy `max_attempts` keeps its old meaning: the time of
        // that many sends, `retransmit` doubling (capped at 8×).
        let legacy_give_up = max_attempts.map(|n| {
            (0..n)
                .map(|a| retransmit * (1u32 << a.min(3)))
                .sum::<Duration>()
        });
        let give_up = self.duration(
            "transport.give_up",
            &raw.transport.give_up,
            legacy_give_up.unwrap_or(dl.give_up),
        )?;
        if rto_min.is_zero() || rto_min > rto_max {
            return Err(self.err(
                "transport.rto_min",
                format!(
                    "{} must be above zero and not above transport.rto_max ({})",
                    ms(rto_min),
                    ms(rto_max)
                ),
            ));
        }
        let link = LinkConfig {
            retransmit,
            rto_min,
            rto_max,
            give_up,
            max_attempts,
        };
        let timing = Timing {
            heartbeat,
            failure_timeout,
            answer_timeout,
            coordinator_timeout,
            election_timeout_min,
            election_timeout_max,
        };
        let uses = crate::contract::algorithm::TimingUse {
            detector: algorithms.iter().any(|k| k.info().uses_failure_detector()),
            randomized: algorithms.iter().any(|k| !k.info().uses_failure_detector()),
        };
        timing
            .validate_for(retransmit, give_up, uses)
            .map_err(|e| {
                // A legacy `max_attempts` without `give_up` set the give-up time: blame it.
                let key = if e.key == "transport.give_up"
                    && raw.transport.give_up.is_none()
                    && max_attempts.is_some()
                {
                    "transport.max_attempts"
                } else {
                    e.key
                };
                self.err(key, e.message)
            })?;
        let resolve_every = self.duration(
            "transport.resolve_every",
            &raw.transport.resolve_every,
            Duration::from_secs(30),
        )?;
        let multicast = match &raw.transport.multicast {
            None => None,
            Some(s) => {
                let a: SocketAddr = s.parse().map_err(|_| {
                    self.err(
                        "transport.multicast",
                        format!("{s:?} is not \"group:port\" like \"239.255.70.1:5740\""),
                    )
                })?;
                if !a.ip().is_multicast() {
                    return Err(self.err(
                        "transport.multicast",
                        format!("{} is not a multicast address", a.ip()),
                    ));
                }
                if a.port() == 0 {
                    return Err(self.err("transport.multicast", "the port must not be 0"));
                }
                let bind = peers.iter().find(|p| p.id == node_id).map(Peer::bind_addr);
                if let Some(bind) = bind.filter(|b| b.is_ipv4() != a.is_ipv4()) {
                    return Err(self.err(
                        "transport.multicast",
                        format!(
                            "group {} and this node's bind address {bind} are of different IP \
                             versions: the node could not join the group",
                            a.ip()
                        ),
                    ));
                }
                Some(a)
            }
        };
        Ok(Transport {
            timing,
            link,
            resolve_every,
            multicast,
        })
    }

    /// `"A..B"` or `"A"` (meaning A..2A).
    fn range(&self, key: &str, s: &str) -> Result<(Duration, Duration), ConfigError> {
        let (lo, hi) = match s.split_once("..") {
            Some((a, b)) => {
                let b = b.strip_prefix('=').unwrap_or(b);
                (
                    self.duration(key, &Some(a.to_string()), Duration::ZERO)?,
                    self.duration(key, &Some(b.to_string()), Duration::ZERO)?,
                )
            }
            None => {
                let v = self.duration(key, &Some(s.to_string()), Duration::ZERO)?;
                (v, v * 2)
            }
        };
        if lo >= hi {
            return Err(self.err(
                key,
                format!(
                    "empty range {}..{}: Raft needs a randomized timeout (lo < hi) to break split votes (§5.2)",
                    ms(lo),
                    ms(hi)
                ),
            ));
        }
        Ok((lo, hi))
    }
}
