//! The bodies: each domain [`Message`] to its protobuf body and back, with every
//! field validated, and the algorithms' wire values.

use super::*;

impl Codec {
    pub(super) fn member(&self, id: u32, field: &'static str) -> Result<NodeId, WireError> {
        if self.roster.contains(&id) {
            Ok(id)
        } else {
            Err(WireError::InvalidField(field))
        }
    }

    pub(super) fn tag(&self, t: Option<proto::ElectionTag>) -> Result<ElectionTag, WireError> {
        let t = t.ok_or(WireError::InvalidField("tag"))?;
        // The default tag (initiator 0) is what a node that never ran an election holds.
        if t.initiator != 0 {
            self.member(t.initiator, "tag.initiator")?;
        }
        Ok(ElectionTag {
            initiator: t.initiator,
            seq: t.seq,
        })
    }

    pub(super) fn message_of(&self, body: Body) -> Result<Message, WireError> {
        Ok(match body {
            Body::Election(m) => Message::Election {
                tag: self.tag(m.tag)?,
                epoch: m.epoch,
            },
            Body::Ok(m) => Message::Ok {
                responder: self.member(m.responder, "ok.responder")?,
                tag: self.tag(m.tag)?,
            },
            Body::Coordinator(m) => Message::Coordinator {
                leader: self.member(m.leader, "coordinator.leader")?,
                epoch: m.epoch,
                tag: self.tag(m.tag)?,
            },
            Body::YouAreCoordinator(m) => Message::YouAreCoordinator {
                tag: self.tag(m.tag)?,
                epoch: m.epoch,
            },
            Body::RingElection(m) => {
                if m.ids.len() > 2 * self.roster.len() {
                    return Err(WireError::InvalidField("ring_election.ids"));
                }
                for &id in &m.ids {
                    self.member(id, "ring_election.ids")?;
                }
                Message::RingElection {
                    initiator: self.member(m.initiator, "ring_election.initiator")?,
                    ids: m.ids,
                    epoch: m.epoch,
                }
            }
            Body::RingCoordinator(m) => Message::RingCoordinator {
                initiator: self.member(m.initiator, "ring_coordinator.initiator")?,
                leader: self.member(m.leader, "ring_coordinator.leader")?,
                epoch: m.epoch,
            },
            Body::LcrElection(m) => Message::LcrElection {
                candidate: self.member(m.candidate, "lcr_election.candidate")?,
                round: m.round,
            },
            Body::LcrElected(m) => Message::LcrElected {
                leader: self.member(m.leader, "lcr_elected.leader")?,
                epoch: m.epoch,
            },
            Body::Probe(m) => {
                if m.phase > MAX_PHASE {
                    return Err(WireError::InvalidField("probe.phase"));
                }
                Message::Probe {
                    candidate: self.member(m.candidate, "probe.candidate")?,
                    phase: m.phase,
                    hops: m.hops,
                    to_right: m.to_right,
                    round: m.round,
                }
            }
            Body::Reply(m) => {
                if m.phase > MAX_PHASE {
                    return Err(WireError::InvalidField("reply.phase"));
                }
                Message::Reply {
                    candidate: self.member(m.candidate, "reply.candidate")?,
                    phase: m.phase,
                    to_right: m.to_right,
                    round: m.round,
                }
            }
            Body::Terminate(m) => Message::Terminate {
                leader: self.member(m.leader, "terminate.leader")?,
                epoch: m.epoch,
            },
            Body::RequestVote(m) => Message::RequestVote {
                term: m.term,
                pre_vote: m.pre_vote,
                transfer: m.transfer,
            },
            Body::Vote(m) => Message::Vote {
                term: m.term,
                granted: m.granted,
                pre_vote: m.pre_vote,
            },
            Body::Heartbeat(m) => Message::Heartbeat {
                term: m.term,
                leader: self.member(m.leader, "heartbeat.leader")?,
            },
            Body::HeartbeatAck(m) => Message::HeartbeatAck {
                term: m.term,
                leader: match m.leader {
                    0 => 0,
                    l => self.member(l, "heartbeat_ack.leader")?,
                },
            },
            Body::Resign(m) => Message::Resign { epoch: m.epoch },
            Body::TimeoutNow(m) => Message::TimeoutNow { term: m.term },
            Body::Priority(m) => Message::Priority {
                term: m.term,
                priority: m.priority,
            },
            Body::Handoff(m) => Message::Handoff {
                epoch: m.epoch,
                to: self.member(m.to, "handoff.to")?,
            },
            Body::AckOnly(_) | Body::Config(_) | Body::Beats(_) => {
                return Err(WireError::InvalidField("body"))
            }
        })
    }
}

impl Codec {
    /// The messages of a BEATS body from `head`'s sender (docs/wire.md §12): a body
    /// without an entry, an entry without a message, or entries not in strictly
    /// ascending `algorithm` order drop the datagram (`invalid_field`); a message out of
    /// range (`invalid_field`), not of its group, or in an entry naming no group electd
    /// knows (`algorithm`) is dropped alone.
    pub(super) fn beats_of(
        &self,
        head: &Datagram,
        b: proto::Beats,
    ) -> Result<Vec<Result<Datagram, WireError>>, WireError> {
        let malformed = || WireError::InvalidField("beats");
        // One order for one content (§3): each group once, by its wire value.
        if b.entries.is_empty()
            || b.entries
                .windows(2)
                .any(|w| w[0].algorithm >= w[1].algorithm)
        {
            return Err(malformed());
        }
        let mut out = Vec::new();
        for beat in b.entries {
            let group = proto::Algorithm::try_from(beat.algorithm)
                .ok()
                .and_then(algorithm_from_proto);
            let bodies = [
                beat.heartbeat.map(Body::Heartbeat),
                beat.heartbeat_ack.map(Body::HeartbeatAck),
                beat.priority.map(Body::Priority),
            ];
            let before = out.len();
            for body in bodies.into_iter().flatten() {
                let one = group.ok_or(WireError::Algorithm).and_then(|group| {
                    let msg = self.message_of(body)?;
                    if !group.info().carries(msg.kind()) {
                        return Err(WireError::Algorithm);
                    }
                    Ok(Datagram {
                        group: Some(group),
                        body: Some(msg),
                        ..head.clone()
                    })
                });
                out.push(one);
            }
            if out.len() == before {
                return Err(malformed());
            }
        }
        Ok(out)
    }
}

/// The BEATS body of `beats` (see [`Codec::encode_beats`]): one entry per group, in
/// ascending wire value, each with at most one message of each type.
pub(super) fn beats_to_proto(
    beats: &[(AlgorithmKind, &Message)],
) -> Result<proto::Beats, WireError> {
    let taken = || WireError::InvalidField("beats");
    if beats.is_empty() {
        return Err(taken());
    }
    let mut entries: Vec<proto::Beat> = Vec::new();
    for &(group, msg) in beats {
        let algorithm = algorithm_to_proto(group) as i32;
        let i = match entries.iter().position(|e| e.algorithm == algorithm) {
            Some(i) => i,
            None => {
                entries.push(proto::Beat {
                    algorithm,
                    ..Default::default()
                });
                entries.len() - 1
            }
        };
        let entry = &mut entries[i];
        match to_body(msg) {
            Body::Heartbeat(m) if entry.heartbeat.is_none() => entry.heartbeat = Some(m),
            Body::HeartbeatAck(m) if entry.heartbeat_ack.is_none() => entry.heartbeat_ack = Some(m),
            Body::Priority(m) if entry.priority.is_none() => entry.priority = Some(m),
            _ => return Err(taken()),
        }
    }
    entries.sort_by_key(|e| e.algorithm);
    Ok(proto::Beats { entries })
}

pub(super) fn tag_to_proto(t: &ElectionTag) -> Option<proto::ElectionTag> {
    Some(proto::ElectionTag {
        initiator: t.initiator,
        seq: t.seq,
    })
}

pub(super) fn to_body(m: &Message) -> Body {
    match m {
        Message::Election { tag, epoch } => Body::Election(proto::Election {
            tag: tag_to_proto(tag),
            epoch: *epoch,
        }),
        Message::Ok { responder, tag } => Body::Ok(proto::Ok {
            responder: *responder,
            tag: tag_to_proto(tag),
        }),
        Message::Coordinator { leader, epoch, tag } => Body::Coordinator(proto::Coordinator {
            leader: *leader,
            epoch: *epoch,
            tag: tag_to_proto(tag),
        }),
        Message::YouAreCoordinator { tag, epoch } => {
            Body::YouAreCoordinator(proto::YouAreCoordinator {
                tag: tag_to_proto(tag),
                epoch: *epoch,
            })
        }
        Message::RingElection {
            initiator,
            ids,
            epoch,
        } => Body::RingElection(proto::RingElection {
            initiator: *initiator,
            ids: ids.clone(),
            epoch: *epoch,
        }),
        Message::RingCoordinator {
            initiator,
            leader,
            epoch,
        } => Body::RingCoordinator(proto::RingCoordinator {
            initiator: *initiator,
            leader: *leader,
            epoch: *epoch,
        }),
        Message::LcrElection { candidate, round } => Body::LcrElection(proto::LcrElection {
            candidate: *candidate,
            round: *round,
        }),
        Message::LcrElected { leader, epoch } => Body::LcrElected(proto::LcrElected {
            leader: *leader,
            epoch: *epoch,
        }),
        Message::Probe {
            candidate,
            phase,
            hops,
            to_right,
            round,
        } => Body::Probe(proto::Probe {
            candidate: *candidate,
            phase: *phase,
            hops: *hops,
            to_right: *to_right,
            round: *round,
        }),
        Message::Reply {
            candidate,
            phase,
            to_right,
            round,
        } => Body::Reply(proto::Reply {
            candidate: *candidate,
            phase: *phase,
            to_right: *to_right,
            round: *round,
        }),
        Message::Terminate { leader, epoch } => Body::Terminate(proto::Terminate {
            leader: *leader,
            epoch: *epoch,
        }),
        Message::RequestVote {
            term,
            pre_vote,
            transfer,
        } => Body::RequestVote(proto::RequestVote {
            term: *term,
            pre_vote: *pre_vote,
            transfer: *transfer,
        }),
        Message::Vote {
            term,
            granted,
            pre_vote,
        } => Body::Vote(proto::Vote {
            term: *term,
            granted: *granted,
            pre_vote: *pre_vote,
        }),
        Message::Heartbeat { term, leader } => Body::Heartbeat(proto::Heartbeat {
            term: *term,
            leader: *leader,
        }),
        Message::HeartbeatAck { term, leader } => Body::HeartbeatAck(proto::HeartbeatAck {
            term: *term,
            leader: *leader,
        }),
        Message::Resign { epoch } => Body::Resign(proto::Resign { epoch: *epoch }),
        Message::TimeoutNow { term } => Body::TimeoutNow(proto::TimeoutNow { term: *term }),
        Message::Priority { term, priority } => Body::Priority(proto::Priority {
            term: *term,
            priority: *priority,
        }),
        Message::Handoff { epoch, to } => Body::Handoff(proto::Handoff {
            epoch: *epoch,
            to: *to,
        }),
    }
}

/// The wire value of each algorithm (`proto/electd.proto`'s `Algorithm`): this match
/// and [`algorithm_from_proto`] are exhaustive, so a new kind or a new proto value
/// does not compile until it is mapped both ways.
pub(super) fn algorithm_to_proto(k: AlgorithmKind) -> proto::Algorithm {
    match k {
        AlgorithmKind::Bully => proto::Algorithm::Bully,
        AlgorithmKind::ImprovedBully => proto::Algorithm::ImprovedBully,
        AlgorithmKind::Ring => proto::Algorithm::Ring,
        AlgorithmKind::Lcr => proto::Algorithm::Lcr,
        AlgorithmKind::Hs => proto::Algorithm::Hs,
        AlgorithmKind::Raft => proto::Algorithm::Raft,
    }
}

pub(super) fn algorithm_from_proto(a: proto::Algorithm) -> Option<AlgorithmKind> {
    match a {
        proto::Algorithm::Unspecified => None,
        proto::Algorithm::Bully => Some(AlgorithmKind::Bully),
        proto::Algorithm::ImprovedBully => Some(AlgorithmKind::ImprovedBully),
        proto::Algorithm::Ring => Some(AlgorithmKind::Ring),
        proto::Algorithm::Lcr => Some(AlgorithmKind::Lcr),
        proto::Algorithm::Hs => Some(AlgorithmKind::Hs),
        proto::Algorithm::Raft => Some(AlgorithmKind::Raft),
    }
}

#[cfg(test)]
#[test]
fn algorithm_wire_values_map_both_ways() {
    for k in AlgorithmKind::ALL {
        assert_ne!(algorithm_to_proto(k), proto::Algorithm::Unspecified, "{k}");
        assert_eq!(algorithm_from_proto(algorithm_to_proto(k)), Some(k), "{k}");
    }
}
