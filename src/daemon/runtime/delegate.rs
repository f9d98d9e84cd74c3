//! An idle leader's next heartbeats, handed to the beat thread
//! ([`crate::daemon::beater`]) and booked when taken back.

use super::send::shares;
use super::*;
use crate::daemon::beater::{self, Beat, Beater};

impl Driver {
    /// Start the beat thread, sending on a duplicate of the heartbeat socket `beats`,
    /// where the runtime may hand it beats: no multicast, no trace (a trace records
    /// every datagram as the node sends it), a failure timeout of at least four beats
    /// ([`beater::ahead`]).
    pub(super) fn start_beater(&mut self, beats: &HeartbeatSocket) {
        if self.multicast.is_some() || self.shared.tracer().is_some() {
            return;
        }
        if beater::ahead(self.cfg.timing.heartbeat, self.cfg.timing.failure_timeout) == 0 {
            return;
        }
        let started = beats.sender().and_then(Beater::start);
        match started {
            Ok(b) => self.beater = Some(b),
            Err(e) => {
                tracing::warn!("cannot start the beat thread (every beat from the runtime): {e}")
            }
        }
    }

    /// After a turn: when all the node owes next is heartbeats, seal the next ones
    /// (up to [`beater::ahead`], each before any other deadline) and hand them to the
    /// beat thread; the runtime's next turn is then the beat after them (or the other
    /// deadline, if sooner). Only after a turn of the timer (`timed`) that followed
    /// another with no datagram or command between them: a leader that is being
    /// talked to (a new leader while its members adopt it, an election around it)
    /// sends its beats itself, one turn at a time, and seals each beat once however
    /// busy it is (a leader of 256 members seals 255 datagrams per beat; handing eight
    /// beats at once in the middle of an announcement would put 2,040 seals on cores
    /// the announcement is short of).
    pub(super) fn hand_beats(&mut self, timed: bool) {
        self.beats_wake = None;
        if !timed {
            self.beats_quiet = false;
            return;
        }
        if !std::mem::replace(&mut self.beats_quiet, true) {
            return;
        }
        let Some(n) = self
            .beater
            .as_ref()
            .map(|_| beater::ahead(self.cfg.timing.heartbeat, self.cfg.timing.failure_timeout))
        else {
            return;
        };
        // A beat held for a write, or a paused node, stays with the runtime.
        if self.paused
            || self.writing()
            || !self.held.is_empty()
            || !self.holding.is_empty()
            || self.shared.tracer().is_some()
        {
            return;
        }
        let Some((first, other)) = self.node.beat_only() else {
            return;
        };
        let other = other
            .into_iter()
            .chain(self.drift.as_ref().map(|_| self.config_due))
            .min();
        let now = self.clock();
        if first <= now {
            return;
        }
        let hb = self.cfg.timing.heartbeat;
        let dgs = self.node.beat_datagrams();
        let mut beats = Vec::new();
        for i in 0..n {
            let at = first + hb * i;
            if other.is_some_and(|o| at >= o) {
                break;
            }
            let datagrams = self.seal_beat(&dgs);
            if datagrams.is_empty() {
                break;
            }
            beats.push(Beat {
                at: (self.origin + at).into_std(),
                datagrams,
            });
        }
        if beats.is_empty() {
            return;
        }
        let own = first + hb * beats.len() as u32;
        self.beats_wake = Some(other.map_or(own, |o| o.min(own)));
        self.handed = true;
        if let Some(b) = &self.beater {
            b.hand(beats);
        }
    }

    /// Before anything else in a turn: take back the beats not sent yet, and book
    /// those sent (the node counts them and moves its next beat, the metrics count
    /// their bytes and how late each beat left, the `send` check their results).
    pub(super) fn reclaim_beats(&mut self) {
        // The node's deadlines are the runtime's again (a leave after this waits on
        // them).
        self.beats_wake = None;
        if !std::mem::take(&mut self.handed) {
            return;
        }
        let Some(b) = &self.beater else {
            return;
        };
        let sent = b.take();
        let passed = u32::try_from(sent.len()).unwrap_or(u32::MAX);
        let skipped = sent.iter().filter(|s| s.1.skipped()).count();
        let beats = passed - u32::try_from(skipped).unwrap_or(passed);
        for (beat, sent) in sent {
            if sent.skipped() {
                continue;
            }
            self.shared.metrics.timer_late(sent.late);
            for (d, r) in beat.datagrams.iter().zip(sent.results) {
                if self.sent(r, d.addr, d.to) {
                    for (&g, share) in d.groups.iter().zip(shares(d.bytes.len(), d.groups.len())) {
                        self.shared.metrics.group_datagram_sent(g, share);
                    }
                }
            }
        }
        self.node.beats_sent(passed, beats);
    }

    /// One beat's datagrams sealed as a flush seals them
    /// ([`Driver::seal_unicast`]), each with the next counter towards its peer.
    fn seal_beat(&mut self, dgs: &[(NodeId, Datagram)]) -> Vec<beater::Sealed> {
        let (mut sealed, mut groups) = (Vec::with_capacity(dgs.len()), Vec::new());
        self.seal_unicast(dgs, &mut sealed, &mut groups);
        sealed
            .into_iter()
            .map(|s| beater::Sealed {
                to: s.to,
                addr: self.wire_addr(s.addr),
                groups: groups[s.groups].to_vec(),
                bytes: s.bytes,
            })
            .collect()
    }
}
