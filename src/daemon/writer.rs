//! The state file's writer: a thread of its own that stores the node's latest durable
//! state while the runtime's task goes on.
//!
//! A write ends with an `fdatasync`, which takes 0.2–0.5 ms on an idle disk and tens of
//! milliseconds on a busy one (44 ms median beside a `dd … conv=fsync` writer,
//! docs/bench/detect/README.md). Made on the runtime's one task, that flush held up
//! every group of the node: no heartbeat of any group left while one group's claim was
//! being stored, and on a busy disk that was enough for the other groups' followers to
//! call elections. On this thread only the groups whose new state is not on disk yet
//! wait for it (the runtime holds back their datagrams and its reports, see
//! `daemon/runtime/persist.rs`); the rest of the node runs on.
//!
//! - **One request outstanding, the latest wins**: a state submitted while a write is
//!   under way replaces any submitted state not yet started, so the thread always
//!   writes the newest state next and never more than one write behind. Every state
//!   is at least as far on as the ones before it (terms only rise), so a later record
//!   covers an earlier one.
//! - **Each write is reported** with the sequence number it was submitted with, the
//!   state written, and whether it worked.
//! - **The drained groups** (`POST /admin/drain`) are written at once by the caller,
//!   under the same lock, with the groups as last written; every later write carries
//!   them.
//! - **Inline**, when the runtime runs on a simulated clock (turmoil's, in the tests): the
//!   write is made in [`Writer::submit`] and its report returned from it, so that a
//!   seeded test stays deterministic.

use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::durable::{DurableError, StateFile, States};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;

/// One write made: the state it stored and whether that worked.
#[derive(Debug)]
pub(crate) struct Written {
    /// The number the state was submitted with ([`Writer::submit`]).
    pub(crate) seq: u64,
    /// The groups' state written.
    pub(crate) groups: States,
    /// Whether it is on disk.
    pub(crate) result: Result<(), DurableError>,
    /// How long the write took, the file's lock awaited included (the datagrams held
    /// for the state waited that long for the disk).
    pub(crate) took: Duration,
}

/// What the runtime and the thread share besides the file: the next state to write and
/// what is on disk.
struct Queue {
    /// The drained groups, written with every record.
    drained: Vec<AlgorithmKind>,
    /// The groups' state as last written (what a drain is written with).
    on_disk: States,
    /// The next state to write, with its number.
    next: Option<(u64, States)>,
    /// Tests: the next write says it has the file's lock on the first channel, then
    /// waits (holding it) until the second's sender says go, or is dropped.
    #[cfg(test)]
    gate: Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>,
    /// Tests: the next drain write fails as a full disk would.
    #[cfg(test)]
    fail_drain: bool,
    /// Tests: the next state writes fail as a full disk would.
    #[cfg(test)]
    fail_writes: u32,
}

/// The file under a lock of its own, held for a whole write (the queue's is not: a
/// state submitted while a write runs never waits for the disk), the queue, the
/// thread's wakeup, and whether the writer was dropped (outside the locks: a drop must
/// not wait for a write under way). Lock order: the file, then the queue.
struct Slot {
    file: Mutex<StateFile>,
    queue: Mutex<Queue>,
    wake: Condvar,
    quit: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic on the writer thread poisons the lock; the state behind it is whole (a
    // write either happened or not), so go on with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer of one state file (see the module documentation).
pub(crate) struct Writer {
    slot: Arc<Slot>,
    /// Reports of the thread; `None` when writing inline.
    reports: Option<mpsc::UnboundedReceiver<Written>>,
}

impl Writer {
    /// A writer of `file`, which holds `groups` and `drained` now: on a thread of its
    /// own if `threaded` (and the thread could be started), else inline.
    pub(crate) fn new(
        file: StateFile,
        groups: States,
        drained: Vec<AlgorithmKind>,
        threaded: bool,
    ) -> Writer {
        let slot = Arc::new(Slot {
            file: Mutex::new(file),
            queue: Mutex::new(Queue {
                drained,
                on_disk: groups,
                next: None,
                #[cfg(test)]
                gate: None,
                #[cfg(test)]
                fail_drain: false,
                #[cfg(test)]
                fail_writes: 0,
            }),
            wake: Condvar::new(),
            quit: AtomicBool::new(false),
        });
        let mut w = Writer {
            slot,
            reports: None,
        };
        if !threaded {
            return w;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let slot = w.slot.clone();
        match std::thread::Builder::new()
            .name("electd-state".into())
            .spawn(move || {
                super::sched::enter_here();
                write_loop(&slot, &tx)
            }) {
            // Not joined (see `Drop`).
            Ok(_) => w.reports = Some(rx),
            Err(e) => tracing::warn!(
                "cannot start the state file's writer thread ({e}): writing on the \
                 runtime's task instead"
            ),
        }
        w
    }

    /// Whether writes are made on a thread (reported by [`Writer::written`]).
    pub(crate) fn threaded(&self) -> bool {
        self.reports.is_some()
    }

    /// Store `groups` as write number `seq`. On a thread: queued, replacing a state
    /// submitted earlier and not started yet, and reported later by
    /// [`Writer::written`] (this never waits for a write under way); inline: written
    /// now and reported here.
    pub(crate) fn submit(&self, seq: u64, groups: States) -> Option<Written> {
        if self.threaded() {
            lock(&self.slot.queue).next = Some((seq, groups));
            self.slot.wake.notify_one();
            return None;
        }
        Some(write(&self.slot, seq, groups))
    }

    /// The next report of a write made on the thread; never, when writing inline.
    pub(crate) async fn written(&mut self) -> Option<Written> {
        match &mut self.reports {
            Some(rx) => rx.recv().await,
            None => std::future::pending().await,
        }
    }

    /// Write `drained` now, with the groups' state as last written (after the write
    /// under way, if any); every later write carries it too.
    pub(crate) fn store_drained(&self, drained: &[AlgorithmKind]) -> Result<(), DurableError> {
        let mut file = lock(&self.slot.file);
        #[cfg(test)]
        if std::mem::take(&mut lock(&self.slot.queue).fail_drain) {
            return Err(DurableError::Io {
                path: "test".into(),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            });
        }
        let on_disk = lock(&self.slot.queue).on_disk.clone();
        file.store(&on_disk, drained)?;
        lock(&self.slot.queue).drained = drained.to_vec();
        Ok(())
    }
}

#[cfg(test)]
impl Writer {
    /// A full disk for the next drain write.
    pub(crate) fn fail_next_drain(&self) {
        lock(&self.slot.queue).fail_drain = true;
    }

    /// A full disk for the next `n` state writes.
    pub(crate) fn fail_next_writes(&self, n: u32) {
        lock(&self.slot.queue).fail_writes = n;
    }

    /// A slow disk: the next write waits, holding the file's lock, until the returned
    /// [`Stall`] is dropped.
    pub(crate) fn stall(&self) -> Stall {
        let (go, gate) = std::sync::mpsc::channel();
        let (reached, at_gate) = std::sync::mpsc::channel();
        lock(&self.slot.queue).gate = Some((reached, gate));
        Stall { go, at_gate }
    }
}

/// A stalled write (tests): dropping it lets the write go on.
#[cfg(test)]
pub(crate) struct Stall {
    #[allow(dead_code)] // Held for its drop: the write waits until the sender goes.
    go: std::sync::mpsc::Sender<()>,
    at_gate: std::sync::mpsc::Receiver<()>,
}

#[cfg(test)]
impl Stall {
    /// Wait, at most `limit`, for the write to be under way and waiting (holding the
    /// file's lock); whether it is.
    pub(crate) fn under_way(&self, limit: Duration) -> bool {
        self.at_gate.recv_timeout(limit).is_ok()
    }
}

impl Drop for Writer {
    /// The thread finishes the write under way and the one queued, then ends. It is
    /// not waited for: a disk that does not answer must not keep the process from
    /// stopping (the runtime waits a bounded time for the write under way before it
    /// leaves; a record torn by the exit is the crash the two slots are for).
    fn drop(&mut self) {
        self.slot.quit.store(true, Ordering::Release);
        self.slot.wake.notify_one();
    }
}

/// Write `groups` (number `seq`) with the drained groups as they are now, holding the
/// file's lock for the whole write and the queue's only to read and note.
fn write(slot: &Slot, seq: u64, groups: States) -> Written {
    let start = std::time::Instant::now();
    let mut file = lock(&slot.file);
    #[cfg(test)]
    {
        // A slow disk (`Writer::stall`): the write waits holding the file's lock.
        let gate = lock(&slot.queue).gate.take();
        if let Some((reached, gate)) = gate {
            let _ = reached.send(());
            let _ = gate.recv();
        }
    }
    // The groups this node does not run (its configuration changed since they were
    // written) keep their state: a start that runs them again must not begin below
    // their terms, nor forget a Raft vote (a second vote in that term).
    #[cfg(test)]
    {
        let mut q = lock(&slot.queue);
        if q.fail_writes > 0 {
            q.fail_writes -= 1;
            return Written {
                seq,
                groups,
                result: Err(DurableError::Io {
                    path: "test".into(),
                    source: std::io::Error::from_raw_os_error(libc::ENOSPC),
                }),
                took: start.elapsed(),
            };
        }
    }
    let (drained, all) = {
        let q = lock(&slot.queue);
        let mut all = groups.clone();
        for (kind, d) in &q.on_disk {
            if !all.iter().any(|(k, _)| k == kind) {
                all.push((*kind, *d));
            }
        }
        (q.drained.clone(), all)
    };
    let result = file.store(&all, &drained);
    if result.is_ok() {
        lock(&slot.queue).on_disk = all;
    }
    Written {
        seq,
        groups,
        result,
        took: start.elapsed(),
    }
}

fn write_loop(slot: &Slot, reports: &mpsc::UnboundedSender<Written>) {
    loop {
        let job = {
            let mut q = lock(&slot.queue);
            loop {
                if let Some(job) = q.next.take() {
                    break Some(job);
                }
                if slot.quit.load(Ordering::Acquire) {
                    break None;
                }
                // Bounded: a drop's wakeup may come between the check above and the wait.
                q = slot
                    .wake
                    .wait_timeout(q, Duration::from_secs(1))
                    .map_or_else(|e| e.into_inner().0, |(g, _)| g);
            }
        };
        let Some((seq, groups)) = job else {
            return;
        };
        if reports.send(write(slot, seq, groups)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::Durable;
    use crate::daemon::durable::load_saved;

    fn path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("electd-writer-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("node.state")
    }

    fn raft(term: u64) -> States {
        vec![(
            AlgorithmKind::Raft,
            Durable {
                term,
                voted_for: Some(1),
            },
        )]
    }

    #[tokio::test]
    async fn the_thread_writes_the_latest_state_and_reports_each_write() {
        let p = path("thread");
        let (file, saved) = StateFile::open(&p).unwrap();
        let mut w = Writer::new(file, saved.groups, saved.drained, true);
        assert!(w.threaded());
        for term in 1..=50 {
            assert!(
                w.submit(term, raft(term)).is_none(),
                "queued, not written here"
            );
        }
        // Reports come in order, each of a state submitted; the last is term 50.
        let mut last = 0;
        while last < 50 {
            let r = w.written().await.expect("a report");
            assert!(r.seq > last, "in order: {} after {last}", r.seq);
            assert_eq!(r.groups, raft(r.seq));
            r.result.expect("written");
            last = r.seq;
        }
        assert_eq!(load_saved(&p).unwrap().groups, raft(50));
        // A drain is written with the groups as last written, and kept by later writes.
        w.store_drained(&[AlgorithmKind::Bully]).unwrap();
        let s = load_saved(&p).unwrap();
        assert_eq!(
            (s.groups, s.drained),
            (raft(50), vec![AlgorithmKind::Bully])
        );
        w.submit(51, raft(51));
        w.written().await.unwrap().result.unwrap();
        let s = load_saved(&p).unwrap();
        assert_eq!(
            (s.groups, s.drained),
            (raft(51), vec![AlgorithmKind::Bully])
        );
        drop(w);
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[tokio::test]
    async fn a_state_submitted_during_a_slow_write_does_not_wait_for_the_disk() {
        let p = path("slow");
        let (file, saved) = StateFile::open(&p).unwrap();
        let mut w = Writer::new(file, saved.groups, saved.drained, true);
        let go = w.stall();
        w.submit(1, raft(1));
        // The thread is in the write, holding the file.
        assert!(
            go.under_way(Duration::from_secs(20)),
            "the write is under way"
        );
        assert!(w.slot.file.try_lock().is_err(), "holding the file");
        // Submitting the next state returns while that write waits for the disk.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                w.submit(2, raft(2));
                let _ = tx.send(());
            });
            let returned = rx.recv_timeout(Duration::from_secs(10));
            drop(go);
            assert!(returned.is_ok(), "submit waited for the write under way");
        });
        let mut last = 0;
        while last < 2 {
            let r = w.written().await.expect("a report");
            r.result.expect("written");
            last = r.seq;
        }
        assert_eq!(load_saved(&p).unwrap().groups, raft(2));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn inline_writes_before_submit_returns() {
        let p = path("inline");
        let (file, saved) = StateFile::open(&p).unwrap();
        let w = Writer::new(file, saved.groups, saved.drained, false);
        assert!(!w.threaded());
        let r = w.submit(7, raft(7)).expect("reported at once");
        assert_eq!((r.seq, r.groups.clone()), (7, raft(7)));
        r.result.unwrap();
        assert_eq!(load_saved(&p).unwrap().groups, raft(7));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    /// A node started with fewer groups than its state file holds (its configuration
    /// changed for a while) keeps the others' fencing tokens and Raft's vote in the
    /// file: only the groups it ran were written back, and a later start that ran
    /// Raft again began at term 0 with no vote (a second vote in term 3; the audit).
    #[test]
    fn the_state_of_groups_not_run_stays_in_the_file() {
        let p = path("kept");
        let (file, saved) = StateFile::open(&p).unwrap();
        let w = Writer::new(file, saved.groups, saved.drained, false);
        let bully = |term| {
            vec![(
                AlgorithmKind::Bully,
                Durable {
                    term,
                    voted_for: Some(3),
                },
            )]
        };
        let mut both = bully(2);
        both.extend(raft(3));
        w.submit(1, both).unwrap().result.unwrap();
        drop(w);
        // A life that runs Bully alone.
        let (file, saved) = StateFile::open(&p).unwrap();
        let w = Writer::new(file, saved.groups, saved.drained, false);
        let r = w.submit(2, bully(5)).unwrap();
        r.result.unwrap();
        assert_eq!(r.groups, bully(5), "the report holds what was submitted");
        let on_disk = load_saved(&p).unwrap().groups;
        assert!(on_disk.contains(&bully(5)[0]), "{on_disk:?}");
        assert!(
            on_disk.contains(&raft(3)[0]),
            "Raft's term and vote kept: {on_disk:?}"
        );
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_not_lost() {
        let p = path("fail");
        let (file, saved) = StateFile::open(&p).unwrap();
        let mut w = Writer::new(file, saved.groups, saved.drained, true);
        // The directory gone: the file cannot be created again.
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
        w.submit(1, raft(1));
        let r = w.written().await.unwrap();
        assert_eq!(r.seq, 1);
        assert!(r.result.is_err(), "the write fails and says so");
        // The directory back: the next write succeeds.
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        w.submit(2, raft(2));
        w.written().await.unwrap().result.unwrap();
        assert_eq!(load_saved(&p).unwrap().groups, raft(2));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}
