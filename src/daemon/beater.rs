//! The leader's heartbeats between the runtime's turns, from a thread of their own.
//!
//! An idle leader's runtime woke once per heartbeat period to send the same heartbeats
//! again, and each such turn (the task switch, the runtime, the node, sealing, metrics)
//! cost about as much as the sending itself (docs/bench/idle/README.md, "Round 29").
//! When all a node owes next is heartbeats ([`crate::node::Node::beat_only`]), the
//! runtime seals the next few beats ahead, each datagram with its own counter, and
//! hands them to this thread, which sends each beat at its instant (one `sendmmsg`)
//! and does nothing else; after a stall that overran several instants it sends the
//! last one due and skips the others, as the node resumes its own schedule. The
//! runtime's own next turn comes after them.
//!
//! The guarantees:
//! - **Nothing stale leaves.** Every turn of the runtime begins by taking back what
//!   was not sent yet ([`Beater::take`]), under the lock the thread sends under: after
//!   that, nothing the node has not decided since goes out. A beat sent before it is
//!   one the node would have sent at that instant itself.
//! - **A stuck runtime falls silent.** The thread holds at most the beats of a failure
//!   timeout less two periods (see [`ahead`]), sealed in advance: a runtime that stops
//!   turning (a deadlock, a bug) stops the heartbeats that long after its last turn,
//!   and its followers detect it as they would a crash, that much later.
//! - **Every beat is counted.** The runtime books what the thread sent when it takes
//!   back the rest: the node counts the heartbeats ([`crate::node::Node::beats_sent`]),
//!   the metrics their bytes and how late each left (`electd_timer_lateness_seconds`),
//!   the `send` check their errors; all lag the wire by at most the beats held.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One datagram of a beat, sealed.
pub(crate) struct Sealed {
    pub(crate) to: crate::NodeId,
    pub(crate) addr: SocketAddr,
    /// The groups whose messages it carries (its bytes are shared out among them).
    pub(crate) groups: Vec<crate::contract::algorithm::AlgorithmKind>,
    pub(crate) bytes: Vec<u8>,
}

/// One beat: its instant and its datagrams (one per peer).
pub(crate) struct Beat {
    pub(crate) at: Instant,
    pub(crate) datagrams: Vec<Sealed>,
}

/// What the thread did with one beat.
pub(crate) struct Sent {
    /// How late after its instant the thread sent it.
    pub(crate) late: Duration,
    /// Each datagram's result, in order; none for a beat skipped (a later one was due
    /// too when the thread ran: after a stall it sends the last beat due, no burst,
    /// as the node does).
    pub(crate) results: Vec<std::io::Result<usize>>,
}

impl Sent {
    pub(crate) fn skipped(&self) -> bool {
        self.results.is_empty()
    }
}

#[derive(Default)]
struct Plan {
    beats: Vec<Beat>,
    /// Results of `beats[..sent.len()]`.
    sent: Vec<Sent>,
    stop: bool,
}

/// The beat thread: started with the runtime on a real socket, stopped when dropped.
pub(crate) struct Beater {
    state: Arc<(Mutex<Plan>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How many beats may be handed to the thread at once, at heartbeat `hb` and failure
/// timeout `f`: the thread's beats and the runtime's own beat after them span at most
/// `f − hb`, so the runtime turns at least once per failure timeout, and a runtime
/// that stops turning falls silent at most `f − 2 hb` after its last turn. None when
/// `f < 3 hb` (every beat is then the runtime's own).
pub(crate) fn ahead(hb: Duration, f: Duration) -> u32 {
    let hb = hb.as_nanos().max(1);
    let periods = f.as_nanos() / hb;
    u32::try_from(periods.saturating_sub(2)).unwrap_or(u32::MAX)
}

impl Beater {
    /// Start the thread, sending on `socket` (a duplicate of the node's own).
    pub(crate) fn start(socket: UdpSocket) -> std::io::Result<Beater> {
        let state: Arc<(Mutex<Plan>, Condvar)> = Arc::default();
        let theirs = state.clone();
        let thread = std::thread::Builder::new()
            .name("electd-beats".into())
            .spawn(move || {
                crate::daemon::sched::enter_here();
                run(&socket, &theirs)
            })?;
        Ok(Beater {
            state,
            thread: Some(thread),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Plan> {
        // A panic on the thread cannot leave the plan half made: take it as it is.
        self.state.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand over `beats` (in time order), replacing nothing: the plan must be empty
    /// (taken back by [`Beater::take`]).
    pub(crate) fn hand(&self, beats: Vec<Beat>) {
        let mut plan = self.lock();
        debug_assert!(plan.beats.is_empty());
        plan.beats = beats;
        plan.sent.clear();
        drop(plan);
        self.state.1.notify_one();
    }

    /// Take back the plan: the beats sent, each with its results, and nothing more
    /// leaves once this returns.
    pub(crate) fn take(&self) -> Vec<(Beat, Sent)> {
        let mut plan = self.lock();
        let sent = std::mem::take(&mut plan.sent);
        let mut beats = std::mem::take(&mut plan.beats);
        beats.truncate(sent.len());
        beats.into_iter().zip(sent).collect()
    }
}

impl Drop for Beater {
    fn drop(&mut self) {
        self.lock().stop = true;
        self.state.1.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(socket: &UdpSocket, state: &(Mutex<Plan>, Condvar)) {
    let fd = std::os::fd::AsRawFd::as_raw_fd(socket);
    let mut plan = state.0.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if plan.stop {
            return;
        }
        let next = plan.sent.len();
        let Some(first) = plan.beats.get(next).map(|b| b.at) else {
            plan = state.1.wait(plan).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = Instant::now();
        if now < first {
            plan = state
                .1
                .wait_timeout(plan, first - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        // Every beat due but the last is skipped: a stalled thread (a stopped process,
        // a busy machine) resumes with one beat, as the node does.
        let last = (next..plan.beats.len())
            .take_while(|&i| plan.beats[i].at <= now)
            .last()
            .unwrap_or(next);
        for _ in next..last {
            plan.sent.push(Sent {
                late: Duration::ZERO,
                results: Vec::new(),
            });
        }
        let at = plan.beats[last].at;
        let msgs: Vec<(&[u8], SocketAddr)> = plan.beats[last]
            .datagrams
            .iter()
            .map(|d| (d.bytes.as_slice(), d.addr))
            .collect();
        let late = now.saturating_duration_since(at);
        let results = send_all(fd, &msgs);
        plan.sent.push(Sent { late, results });
    }
}

/// Send `msgs` without waiting: one result per datagram (a full send buffer loses the
/// datagram, as a lost heartbeat).
fn send_all(fd: std::os::fd::RawFd, msgs: &[(&[u8], SocketAddr)]) -> Vec<std::io::Result<usize>> {
    let mut out = Vec::with_capacity(msgs.len());
    let mut rest = msgs;
    while !rest.is_empty() {
        match super::socket::send_mmsg(fd, rest) {
            Ok(k) if k > 0 => {
                let k = k.min(rest.len());
                out.extend(rest[..k].iter().map(|m| Ok(m.0.len())));
                rest = &rest[k..];
            }
            Ok(_) => {
                out.push(Err(std::io::ErrorKind::WriteZero.into()));
                rest = &rest[1..];
            }
            Err(e) => {
                out.push(Err(e));
                rest = &rest[1..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ahead_leaves_the_runtime_a_turn_within_a_failure_timeout() {
        let ms = Duration::from_millis;
        for (hb, f) in [
            (10, 100),
            (40, 400),
            (10, 30),
            (4, 20),
            (10, 50),
            (50, 250),
            (7, 100),
        ] {
            let n = ahead(ms(hb), ms(f));
            // The thread's beats and the runtime's own after them span at most f − hb
            // from the runtime's last beat ...
            assert!((u64::from(n) + 1) * hb <= f - hb, "hb {hb} f {f}: {n}");
            // ... and one more would not.
            assert!((u64::from(n) + 2) * hb > f - hb, "hb {hb} f {f}: {n}");
        }
        assert_eq!(ahead(ms(10), ms(20)), 0, "two periods: none");
        assert_eq!(
            ahead(ms(10), ms(30)),
            1,
            "keepalived's three periods: every other beat"
        );
    }

    #[test]
    fn the_thread_sends_each_beat_at_its_instant_and_nothing_after_take() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let to = rx.local_addr().unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = Beater::start(tx).unwrap();
        let start = Instant::now();
        let beat = |i: u8, at: Instant| Beat {
            at,
            datagrams: vec![Sealed {
                to: 1,
                addr: to,
                groups: Vec::new(),
                bytes: vec![i; 3],
            }],
        };
        // One due now, one an hour away.
        let later = start + Duration::from_secs(3600);
        b.hand(vec![beat(1, start), beat(3, later)]);
        let mut buf = [0u8; 16];
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[1; 3]);
        // Sent and booked under one hold of the lock, before the thread waits for the
        // next: taking back now finds it.
        let taken = b.take();
        assert_eq!(taken.len(), 1, "the due beat booked");
        for (beat, sent) in &taken {
            assert!(!sent.skipped());
            assert_eq!(sent.results.len(), beat.datagrams.len());
            assert!(
                sent.results.iter().all(|r| matches!(r, Ok(3))),
                "{:?}",
                sent.results
            );
        }
        // Two beats overdue at once: only the last leaves (no burst), the first is
        // booked as skipped.
        let past = Instant::now() - Duration::from_millis(20);
        b.hand(vec![beat(5, past), beat(6, past), beat(7, later)]);
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[6; 3], "the last beat due, not the first");
        let taken = b.take();
        assert_eq!(taken.len(), 2);
        assert!(taken[0].1.skipped() && !taken[1].1.skipped());
        // The hour-away beat was taken back: the next datagram is the next plan's.
        b.hand(vec![beat(4, Instant::now())]);
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[4; 3], "a taken-back beat was sent");
        assert_eq!(b.take().len(), 1);
        // Taken back before its instant: never sent, though it would have left first.
        let soon = Instant::now() + Duration::from_millis(30);
        b.hand(vec![beat(8, soon)]);
        assert_eq!(b.take().len(), 0, "nothing sent yet");
        b.hand(vec![beat(9, soon + Duration::from_millis(30))]);
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(
            &buf[..n],
            &[9; 3],
            "a beat taken back before its instant left"
        );
        drop(b);
    }
}
