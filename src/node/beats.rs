//! One liveness datagram per peer per turn: a node that leads several groups (or
//! answers several groups' heartbeats) sends each peer its heartbeats, heartbeat acks
//! and priority adverts of one turn together, as one BEATS datagram (docs/wire.md §12),
//! instead of one datagram per group.
//!
//! The node's output stays one [`Datagram`] per message (the simulator, the traces
//! and the metrics see the same messages as before); [`pack`] says how the driver
//! puts them on the wire. Every group the node leads beats on one schedule
//! ([`super::timers::heartbeat_grid`], Raft's heartbeat timer included when the node
//! runs several groups), so a turn holds every group's heartbeat.

use super::Datagram;
use crate::contract::message::MessageType;
use crate::NodeId;

/// One datagram to put on the wire, made of the node's transmits.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A datagram as the node made it.
    One(NodeId, &'a Datagram),
    /// Liveness messages of one turn for one peer (at least two, at most one of each
    /// type per group), all of one sender and incarnation: one BEATS datagram.
    Beats(NodeId, Vec<&'a Datagram>),
}

/// Can `d` share a datagram: a liveness message of a group (heartbeat, heartbeat
/// ack, priority), with no link sequence and no ack?
pub(crate) fn is_beat(d: &Datagram) -> bool {
    d.seq == 0
        && d.ack == 0
        && d.group.is_some()
        && d.body.as_ref().is_some_and(|m| m.kind().is_liveness())
}

/// The key of a message's place in a BEATS body: its group and type.
fn slot(
    d: &Datagram,
) -> (
    Option<crate::contract::algorithm::AlgorithmKind>,
    Option<MessageType>,
) {
    (d.group, d.body.as_ref().map(|m| m.kind()))
}

/// The datagrams of `transmits` as they go on the wire: every peer's liveness
/// messages together ([`Packet::Beats`]) where there are at least two of them, placed
/// where the first of them was; a second message of one type for one group (two
/// heartbeat acks of one group in one turn) goes alone; everything else goes as the
/// node made it, in the node's order.
pub(crate) fn pack(transmits: &[(NodeId, Datagram)]) -> Vec<Packet<'_>> {
    let mut out: Vec<Packet<'_>> = Vec::with_capacity(transmits.len());
    // Peer → index in `out` of its BEATS under construction.
    let mut open: super::fxhash::FxHashMap<NodeId, usize> = Default::default();
    for (to, d) in transmits {
        if !is_beat(d) {
            out.push(Packet::One(*to, d));
            continue;
        }
        let at = open.get(to).copied();
        if let Some(Packet::Beats(_, beats)) = at.map(|i| &mut out[i]) {
            let fits = beats.iter().all(|b| slot(b) != slot(d))
                && beats[0].from == d.from
                && beats[0].incarnation == d.incarnation;
            if fits {
                beats.push(d);
                continue;
            }
            out.push(Packet::One(*to, d));
            continue;
        }
        open.insert(*to, out.len());
        out.push(Packet::Beats(*to, vec![d]));
    }
    for p in &mut out {
        if let Packet::Beats(to, beats) = p {
            if beats.len() == 1 {
                *p = Packet::One(*to, beats[0]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
