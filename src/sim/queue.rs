//! The simulator's packed event queue: events by virtual time in FIFO buckets, a
//! datagram in flight packed into 20 bytes where it fits (its body kept once per
//! sender while in flight), boxed otherwise.

use super::{Sim, Time};
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::message::Message;
use crate::node::Datagram;
use crate::NodeId;
use std::collections::VecDeque;

/// A queued event: 20 bytes. A datagram in flight is packed: a bare ack (half of
/// the traffic of a large election) inline, a datagram with a body inline but for the
/// body (in [`Bodies`]), as long as its sequence (or ack) fits in 32 bits, its
/// incarnation in 16 (a bare ack's in 32) and it is not traced; anything else boxed
/// in [`Others`] (with its id in the trace). `to`, `node`: node index.
pub(super) enum Payload {
    Ack {
        ack: u32,
        to: u32,
        from: NodeId,
        incarnation: u32,
    },
    Data {
        seq: u32,
        to: u32,
        from: NodeId,
        body: u32,
        incarnation: u16,
        group: AlgorithmKind,
    },
    /// The slot in [`Sim::others`].
    Other(u32),
    Wake {
        node: u32,
    },
    /// A busy node is free again: it takes the next input from its inbox.
    Ready {
        node: u32,
    },
}

const _: () = assert!(size_of::<Payload>() == 20);

/// The datagrams in flight that do not fit [`Payload`]'s packed forms, boxed, by slot.
#[derive(Default)]
pub(super) struct Others {
    slots: Vec<Option<Box<(u32, u32, Datagram)>>>,
    free: Vec<u32>,
}

impl Others {
    fn put(&mut self, o: (u32, u32, Datagram)) -> u32 {
        let o = Some(Box::new(o));
        if let Some(s) = self.free.pop() {
            self.slots[s as usize] = o;
            return s;
        }
        self.slots.push(o);
        // (Four billion boxed datagrams in flight would not fit in memory first.)
        u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
    }

    fn take(&mut self, s: u32) -> Option<(u32, u32, Datagram)> {
        let o = *self.slots.get_mut(s as usize)?.take()?;
        if self.free.len() + 1 == self.slots.len() {
            // None left: give a burst's memory back.
            self.slots = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(s);
        }
        Some(o)
    }
}

/// Events of one instant, FIFO, in chunks of at most [`Bucket::CHUNK`]: a burst of
/// millions of events (a Bully election on thousands of nodes) grows chunk by chunk
/// instead of doubling one buffer, and each chunk is freed as soon as it is consumed.
#[derive(Default)]
pub(super) struct Bucket {
    chunks: VecDeque<VecDeque<Payload>>,
}

impl Bucket {
    const CHUNK: usize = 4096;

    fn push(&mut self, p: Payload) {
        match self.chunks.back_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push_back(p),
            _ => {
                let mut c = VecDeque::new();
                c.push_back(p);
                self.chunks.push_back(c);
            }
        }
    }

    fn pop(&mut self) -> Option<Payload> {
        loop {
            let front = self.chunks.front_mut()?;
            if let Some(p) = front.pop_front() {
                if front.is_empty() {
                    self.chunks.pop_front();
                }
                return Some(p);
            }
            self.chunks.pop_front();
        }
    }

    fn is_empty(&self) -> bool {
        self.chunks.iter().all(|c| c.is_empty())
    }
}

/// The bodies of the datagrams in flight, by slot: in chunks, so that a burst does not
/// double one buffer, and freed when none is left. A body equal to the one its sender
/// put last, while that one is still in flight, shares its slot (a Bully node's OKs to
/// every lower member, its ELECTION to every higher one).
#[derive(Default)]
pub(super) struct Bodies {
    chunks: Vec<Vec<Body>>,
    free: Vec<u32>,
    /// Slots in use.
    used: usize,
}

/// A slot of [`Bodies`]: the body and the datagrams in flight that carry it.
pub(super) struct Body {
    msg: Option<Message>,
    refs: u32,
}

impl Bodies {
    const CHUNK: usize = 1 << 16;

    fn get_mut(&mut self, s: u32) -> Option<&mut Body> {
        let i = s as usize;
        self.chunks
            .get_mut(i / Self::CHUNK)?
            .get_mut(i % Self::CHUNK)
    }

    /// Keep `m` for one more datagram in flight; `last`: the slot its sender put last
    /// (a hint, updated; any slot holding an equal body may be shared).
    fn put(&mut self, m: Message, last: &mut u32) -> u32 {
        if let Some(b) = self.get_mut(*last) {
            if b.refs < u32::MAX && b.msg.as_ref() == Some(&m) {
                b.refs += 1;
                return *last;
            }
        }
        self.used += 1;
        let body = Body {
            msg: Some(m),
            refs: 1,
        };
        if let Some(s) = self.free.pop() {
            let i = s as usize;
            self.chunks[i / Self::CHUNK][i % Self::CHUNK] = body;
            *last = s;
            return s;
        }
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(body),
            _ => {
                let mut c = Vec::with_capacity(Self::CHUNK);
                c.push(body);
                self.chunks.push(c);
            }
        }
        let n = self.chunks.len() - 1;
        let s = (n * Self::CHUNK + self.chunks[n].len() - 1) as u32;
        *last = s;
        s
    }

    fn take(&mut self, s: u32) -> Option<Message> {
        let b = self.get_mut(s)?;
        if b.refs > 1 {
            b.refs -= 1;
            return b.msg.clone();
        }
        let m = b.msg.take()?;
        b.refs = 0;
        self.used -= 1;
        if self.used == 0 {
            self.chunks = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(s);
        }
        Some(m)
    }

    /// Room for another body (slot numbers are u32).
    fn has_room(&self) -> bool {
        self.used < u32::MAX as usize
    }
}

pub(super) fn nanos(t: Time) -> u64 {
    t.as_nanos().min(u64::MAX as u128) as u64
}

impl Sim {
    pub(super) fn push(&mut self, at: Time, payload: Payload) {
        self.queued += 1;
        self.queue.entry(nanos(at)).or_default().push(payload);
    }

    pub(super) fn next_at(&self) -> Option<u64> {
        self.queue.first_key_value().map(|(t, _)| *t)
    }

    pub(super) fn pop(&mut self) -> Option<(u64, Payload)> {
        let mut entry = self.queue.first_entry()?;
        let t = *entry.key();
        let payload = entry.get_mut().pop();
        if entry.get().is_empty() {
            entry.remove();
        }
        self.queued -= 1;
        payload.map(|p| (t, p))
    }

    /// `d` for node index `to` as a queued event (see [`Payload`]).
    pub(super) fn pack(&mut self, to: u32, trace_id: u32, d: Datagram) -> Payload {
        let narrow = |v: u64| u32::try_from(v).ok();
        let fits = trace_id == 0
            && narrow(d.incarnation).is_some()
            && narrow(d.seq).is_some()
            && narrow(d.ack).is_some();
        match d {
            Datagram {
                from,
                incarnation,
                seq: 0,
                ack,
                group: None,
                body: None,
            } if fits => Payload::Ack {
                ack: ack as u32,
                to,
                from,
                incarnation: incarnation as u32,
            },
            Datagram {
                from,
                incarnation,
                seq,
                ack: 0,
                group: Some(group),
                body: Some(body),
            } if fits && incarnation <= u64::from(u16::MAX) && self.bodies.has_room() => {
                let sender = self.index.get(from).unwrap_or(usize::MAX);
                if sender != usize::MAX && self.last_body.len() <= sender {
                    self.last_body.resize(sender + 1, u32::MAX);
                }
                let mut none = u32::MAX;
                let last = self.last_body.get_mut(sender).unwrap_or(&mut none);
                Payload::Data {
                    seq: seq as u32,
                    to,
                    from,
                    incarnation: incarnation as u16,
                    body: self.bodies.put(body, last),
                    group,
                }
            }
            d => Payload::Other(self.others.put((to, trace_id, d))),
        }
    }

    /// The datagram of a queued event packed by [`Sim::pack`]: (node index, datagram,
    /// trace id); `None` for the other events.
    pub(super) fn unpack(&mut self, payload: Payload) -> Option<(u32, Datagram, u32)> {
        match payload {
            Payload::Ack {
                ack,
                to,
                from,
                incarnation,
            } => {
                let d = Datagram {
                    from,
                    incarnation: u64::from(incarnation),
                    seq: 0,
                    ack: u64::from(ack),
                    group: None,
                    body: None,
                };
                Some((to, d, 0))
            }
            Payload::Data {
                seq,
                to,
                from,
                incarnation,
                body,
                group,
            } => {
                let d = Datagram {
                    from,
                    incarnation: u64::from(incarnation),
                    seq: u64::from(seq),
                    ack: 0,
                    group: Some(group),
                    body: self.bodies.take(body),
                };
                Some((to, d, 0))
            }
            Payload::Other(s) => {
                let (to, trace_id, d) = self.others.take(s)?;
                Some((to, d, trace_id))
            }
            Payload::Wake { .. } | Payload::Ready { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::contract::message::ElectionTag;

    /// Every shape of datagram comes out of the queue as it went in: bare acks and
    /// datagrams with a body (packed), and what does not fit the packed forms (an
    /// incarnation above 32 bits, or 16 with a body, a sequence or ack above 32 bits, a traced datagram, a
    /// datagram with both a sequence and an ack, a body without a group), boxed.
    #[test]
    fn queued_datagrams_come_out_as_they_went_in() {
        let mut sim = Sim::new(SimConfig::new(AlgorithmKind::Bully, 3, 1)).unwrap();
        let election = Message::Election {
            tag: ElectionTag {
                initiator: 2,
                seq: 7,
            },
            epoch: 3,
        };
        let base = Datagram {
            from: 2,
            incarnation: 5,
            seq: 0,
            ack: 0,
            group: None,
            body: None,
        };
        let shapes = [
            Datagram {
                ack: 9,
                ..base.clone()
            },
            Datagram {
                seq: 4,
                group: Some(AlgorithmKind::Ring),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                group: Some(AlgorithmKind::Bully),
                body: Some(Message::Heartbeat { term: 1, leader: 2 }),
                ..base.clone()
            },
            Datagram {
                incarnation: 1 << 40,
                ack: 9,
                ..base.clone()
            },
            Datagram {
                incarnation: u64::MAX,
                seq: 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                seq: 4,
                ack: 3,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                seq: 4,
                body: Some(election.clone()),
                ..base.clone()
            },
            base.clone(),
            Datagram {
                ack: 1 << 32,
                ..base.clone()
            },
            Datagram {
                seq: crate::node::link::BROADCAST_SEQ | 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            Datagram {
                incarnation: 1 << 16,
                seq: 4,
                group: Some(AlgorithmKind::Bully),
                body: Some(election.clone()),
                ..base.clone()
            },
            // A bare ack keeps 32 bits of incarnation inline.
            Datagram {
                incarnation: 1 << 16,
                ack: 9,
                ..base.clone()
            },
        ];
        // Untraced (trace id 0), then all of them again traced.
        let traced = |i: usize| if i < shapes.len() { 0 } else { 100 + i as u32 };
        let all: Vec<Datagram> = shapes.iter().chain(&shapes).cloned().collect();
        let packed: Vec<Payload> = all
            .iter()
            .enumerate()
            .map(|(i, d)| sim.pack(i as u32, traced(i), d.clone()))
            .collect();
        assert!(matches!(packed[0], Payload::Ack { .. }));
        assert!(matches!(packed[1], Payload::Data { .. }));
        assert!(matches!(packed[2], Payload::Data { .. }));
        // (Nothing at all, shape 7, packs as an ack of nothing.)
        assert!(matches!(packed[7], Payload::Ack { .. }));
        assert!(matches!(packed[11], Payload::Ack { .. }));
        for (i, p) in packed.iter().enumerate().skip(3) {
            if i != 7 && i != 11 {
                assert!(matches!(p, Payload::Other(_)), "shape {i} is boxed");
            }
        }
        assert_eq!(sim.bodies.used, 2, "the packed bodies wait in the slab");
        for (i, (p, d)) in packed.into_iter().zip(all).enumerate() {
            assert_eq!(sim.unpack(p), Some((i as u32, d, traced(i))), "shape {i}");
        }
        assert_eq!(sim.bodies.used, 0);
        assert!(sim.bodies.chunks.is_empty(), "freed once empty");
        assert!(sim.others.slots.is_empty(), "freed once empty");
    }

    /// A sender's equal bodies in a row share a slot until the last datagram carrying
    /// it is delivered; each delivery gets the body whole, and a different body (or a
    /// stale hint) gets a slot of its own.
    #[test]
    fn equal_bodies_share_a_slot_while_in_flight() {
        let mut b = Bodies::default();
        let ok = Message::Ok {
            responder: 5,
            tag: ElectionTag {
                initiator: 1,
                seq: 1,
            },
        };
        let other = Message::Resign { epoch: 2 };
        let mut last = u32::MAX;
        let s1 = b.put(ok.clone(), &mut last);
        let s2 = b.put(ok.clone(), &mut last);
        let s3 = b.put(ok.clone(), &mut last);
        assert_eq!((s1, s2, s3), (s1, s1, s1));
        assert_eq!(b.used, 1, "one slot for three datagrams");
        let s4 = b.put(other.clone(), &mut last);
        assert_ne!(s4, s1);
        assert_eq!(last, s4);
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.used, 2);
        assert_eq!(b.take(s1), Some(ok.clone()));
        assert_eq!(b.take(s1), None, "taken as often as put, no more");
        assert_eq!(b.used, 1);
        // A hint to a slot freed and reused for another body shares nothing.
        let mut stale = s1;
        let s5 = b.put(other.clone(), &mut stale);
        let s6 = b.put(ok.clone(), &mut stale);
        assert_ne!(s5, s6);
        assert_eq!(b.take(s4), Some(other.clone()));
        assert_eq!(b.take(s5), Some(other));
        assert_eq!(b.take(s6), Some(ok));
        assert_eq!(b.used, 0);
        assert!(b.chunks.is_empty(), "freed once empty");
    }
}
