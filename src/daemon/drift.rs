//! Configuration drift: which peers run with a configuration whose cluster-wide part
//! differs from this node's (docs/observability.md, "Configuration drift").
//!
//! Every node sends its configuration digest ([`crate::config::digest`]) in a CONFIG
//! datagram (docs/wire.md §11) to every peer when it starts and every
//! [`CONFIG_EVERY`] after, and answers the first CONFIG of each incarnation of a peer
//! with its own (the peer may just have started and not know it yet). [`Drift`] keeps
//! the last digest heard from each peer and says when a peer starts or stops
//! differing; the runtime turns that into the `electd_config_mismatch{peer}` gauge, the
//! `config` object of `/status` and one log line per change. A peer that never sent a
//! digest (not heard from yet, or an electd from before CONFIG) is unknown, not a
//! mismatch.

use crate::config::digest::ConfigDigest;
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Period of the CONFIG datagrams a node sends every peer (besides the ones at start
/// and the answers): it only repairs a lost one, a digest changes only with a restart.
pub(crate) const CONFIG_EVERY: Duration = Duration::from_secs(30);

/// What this node last heard from each peer.
#[derive(Clone, Debug)]
pub(crate) struct Drift {
    mine: ConfigDigest,
    /// Every roster member but this node, with (incarnation, digest) once heard.
    peers: BTreeMap<NodeId, Option<(u64, ConfigDigest)>>,
}

/// What one CONFIG changed (see [`Drift::heard`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Heard {
    /// The first digest of this incarnation of the peer: answer it with this node's.
    pub(crate) answer: bool,
    /// The peer started (`Some(true)`) or stopped (`Some(false)`) differing.
    pub(crate) changed: Option<bool>,
    /// The peer's digest is new to this node (first heard, or another than before):
    /// what `/status` shows changed.
    pub new: bool,
}

/// One peer in `/status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct PeerConfig {
    /// The peer's roster id.
    pub id: NodeId,
    /// Its last digest (16 hex digits), `null` until it sent one.
    pub(crate) digest: Option<String>,
    /// It differs from this node's.
    pub(crate) mismatch: bool,
}

/// The `config` object of `/status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ConfigView {
    /// This node's digest (16 hex digits).
    pub(crate) digest: String,
    /// The peers whose last digest differs, in id order (empty: no drift seen).
    pub(crate) mismatch: Vec<NodeId>,
    /// Every peer, in id order.
    pub(crate) peers: Vec<PeerConfig>,
}

impl Drift {
    /// This node's digest `mine`; `peers`: the roster without this node.
    pub(crate) fn new(mine: ConfigDigest, peers: impl IntoIterator<Item = NodeId>) -> Drift {
        Drift {
            mine,
            peers: peers.into_iter().map(|p| (p, None)).collect(),
        }
    }

    /// This node's digest.
    pub(crate) fn mine(&self) -> ConfigDigest {
        self.mine
    }

    /// The roster without this node, in id order.
    pub(crate) fn peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.peers.keys().copied()
    }

    /// Peer `peer`, of `incarnation`, sent `digest` (a datagram the gate accepted).
    pub(crate) fn heard(&mut self, peer: NodeId, incarnation: u64, digest: ConfigDigest) -> Heard {
        let Some(slot) = self.peers.get_mut(&peer) else {
            return Heard {
                answer: false,
                changed: None,
                new: false,
            };
        };
        let before = slot.replace((incarnation, digest));
        let was = before.is_some_and(|(_, d)| d != self.mine);
        let is = digest != self.mine;
        Heard {
            answer: before.is_none_or(|(inc, _)| inc != incarnation),
            changed: (was != is).then_some(is),
            new: before.map(|(_, d)| d) != Some(digest),
        }
    }

    /// The peers whose last digest differs, in id order.
    pub(crate) fn mismatched(&self) -> Vec<NodeId> {
        self.peers
            .iter()
            .filter(|(_, h)| h.is_some_and(|(_, d)| d != self.mine))
            .map(|(&p, _)| p)
            .collect()
    }

    /// What `/status` shows.
    pub(crate) fn view(&self) -> ConfigView {
        ConfigView {
            digest: self.mine.to_string(),
            mismatch: self.mismatched(),
            peers: self
                .peers
                .iter()
                .map(|(&id, h)| PeerConfig {
                    id,
                    digest: h.map(|(_, d)| d.to_string()),
                    mismatch: h.is_some_and(|(_, d)| d != self.mine),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINE: ConfigDigest = ConfigDigest(0xaaaa);
    const OTHER: ConfigDigest = ConfigDigest(0xbbbb);

    /// docs/security.md, "What one forged datagram can and cannot do": a forged CONFIG
    /// (insecure mode, or an insider) makes the peer look drifted, and no longer than
    /// until the peer's own next CONFIG, which undoes it whatever incarnation it claims.
    #[test]
    fn a_forged_config_lasts_until_the_peers_next_one() {
        let mut d = Drift::new(MINE, [2, 3]);
        assert_eq!(d.heard(2, 10, MINE).changed, None);
        // Forged: another digest, an incarnation ahead of the real one.
        assert_eq!(d.heard(2, 19, OTHER).changed, Some(true));
        assert_eq!(d.mismatched(), vec![2]);
        // The real peer's next CONFIG (at most CONFIG_EVERY later) ends it.
        assert_eq!(d.heard(2, 10, MINE).changed, Some(false));
        assert!(d.mismatched().is_empty());
    }

    #[test]
    fn a_change_is_reported_once_and_unknown_is_not_a_mismatch() {
        let mut d = Drift::new(MINE, [2, 3]);
        assert!(d.mismatched().is_empty(), "nothing heard: nothing differs");
        assert_eq!(d.view().peers[0].digest, None);
        // The first digest of an incarnation is answered, a repeat is not.
        let h = d.heard(2, 10, MINE);
        assert_eq!(
            h,
            Heard {
                answer: true,
                changed: None,
                new: true,
            }
        );
        assert_eq!(
            d.view().peers[0].digest.as_deref(),
            Some("000000000000aaaa")
        );
        let again = d.heard(2, 10, MINE);
        assert!(!again.answer && !again.new);
        // Starts differing: reported once, however often it is heard.
        assert_eq!(d.heard(3, 7, OTHER).changed, Some(true));
        for _ in 0..3 {
            assert_eq!(d.heard(3, 7, OTHER).changed, None);
        }
        assert_eq!(d.mismatched(), vec![3]);
        let v = d.view();
        assert_eq!(v.digest, "000000000000aaaa");
        assert_eq!(v.mismatch, vec![3]);
        assert_eq!(v.peers[1].digest.as_deref(), Some("000000000000bbbb"));
        assert!(v.peers[1].mismatch && !v.peers[0].mismatch);
        // Restarted with the right file: a new incarnation, answered, and the end of
        // the mismatch reported.
        assert_eq!(
            d.heard(3, 8, MINE),
            Heard {
                answer: true,
                changed: Some(false),
                new: true,
            }
        );
        assert!(d.mismatched().is_empty());
        // Not a roster member (the gate drops those; still nothing recorded).
        assert_eq!(d.heard(9, 1, OTHER).changed, None);
        assert_eq!(d.peers().collect::<Vec<_>>(), vec![2, 3]);
    }
}
