//! The runtime's one timer: the node's next deadline ([`crate::node::Node::poll_timeout`]).
//!
//! tokio's timers have millisecond ticks: a deadline is rounded up to the next tick and
//! the driver then parks for whole milliseconds, so a timer fires about 1.1 ms late on
//! average (up to 2 ms; `examples/timer_lateness.rs` measures it). Every one of those
//! milliseconds is time without a leader: a failover waits for the failure detector's
//! deadline, then (Bully family) for an answer timeout. On Linux the deadline is
//! therefore a `timerfd` (an hrtimer, microsecond precision) read through tokio's
//! reactor; where one cannot be created (another OS, or no file descriptor left) it
//! falls back to tokio's `Sleep`.
//!
//! A deadline that moves later with every heartbeat (a follower's detector) costs one
//! `timerfd_settime` per change and no wakeup; the tokio fallback gets a new `Sleep`
//! instead of a `reset` for the same reason (tokio extends a timer lazily: the old slot
//! still wakes the thread, only to file the timer again).

use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// The node's next deadline; see the module documentation.
pub struct Deadline {
    at: Instant,
    /// The deadline `at` has fired since it was set: setting it again re-arms.
    fired: bool,
    imp: Imp,
}

enum Imp {
    #[cfg(target_os = "linux")]
    Fd(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>),
    Tokio(Pin<Box<Sleep>>),
}

impl Deadline {
    /// A timer due at `at`: a kernel timer when `wall_clock` (tokio's clock is the
    /// machine's, not paused or simulated) and one can be created, else tokio's.
    pub fn new(at: Instant, wall_clock: bool) -> Deadline {
        // Only then: a timerfd is registered with tokio's reactor, which a runtime
        // without I/O (turmoil's) does not have.
        #[cfg(target_os = "linux")]
        if let Some(fd) = wall_clock.then(linux::create).flatten() {
            let mut d = Deadline {
                at,
                fired: false,
                imp: Imp::Fd(fd),
            };
            d.arm(at);
            return d;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = wall_clock;
        Deadline {
            at,
            fired: false,
            imp: Imp::Tokio(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// Whether the kernel's timer is in use (false: tokio's millisecond timer).
    pub fn is_precise(&self) -> bool {
        !matches!(self.imp, Imp::Tokio(_))
    }

    /// Move the deadline to `at` (nothing to do when it is where it was).
    pub fn set(&mut self, at: Instant) {
        if at == self.at && !self.fired {
            return;
        }
        let later = at > self.at;
        self.at = at;
        self.fired = false;
        match &mut self.imp {
            #[cfg(target_os = "linux")]
            Imp::Fd(_) => self.arm(at),
            Imp::Tokio(sleep) if later => *sleep = Box::pin(tokio::time::sleep_until(at)),
            Imp::Tokio(sleep) => sleep.as_mut().reset(at),
        }
    }

    #[cfg(target_os = "linux")]
    fn arm(&mut self, at: Instant) {
        if let Imp::Fd(fd) = &self.imp {
            if !linux::set(fd, at.saturating_duration_since(Instant::now())) {
                // The kernel refused the setting (it cannot for a valid descriptor and
                // a relative time): keep time with tokio from here on.
                self.imp = Imp::Tokio(Box::pin(tokio::time::sleep_until(at)));
            }
        }
    }

    /// Resolves once the deadline has passed. Cancel-safe: dropping the future loses
    /// nothing, the timer stays armed.
    pub async fn wait(&mut self) {
        self.expired().await;
        self.fired = true;
    }

    async fn expired(&mut self) {
        match &mut self.imp {
            #[cfg(target_os = "linux")]
            Imp::Fd(fd) => {
                // At most a few spurious readiness reports (one per re-arm): each read
                // that finds no expiry clears the readiness and waits again. A read that
                // fails otherwise (it cannot on a valid timerfd) counts as a fire: the
                // node then fires nothing that is not due, and no error repeats in a
                // busy loop.
                loop {
                    match fd.readable().await {
                        Ok(mut guard) => {
                            if guard.try_io(|inner| linux::read(inner.get_ref())).is_ok() {
                                // The expiry is consumed: the next wait goes straight to
                                // the reactor instead of first reading nothing.
                                guard.clear_ready();
                                return;
                            }
                        }
                        // The reactor is gone (shutting down): never resolve.
                        Err(_) => std::future::pending::<()>().await,
                    }
                }
            }
            Imp::Tokio(sleep) => sleep.as_mut().await,
        }
    }
}

/// The least relative time a timerfd is given: zero would disarm it.
const SOONEST: Duration = Duration::from_nanos(1);

#[cfg(target_os = "linux")]
mod linux {
    use super::SOONEST;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;
    use tokio::io::unix::AsyncFd;

    pub(super) fn create() -> Option<AsyncFd<OwnedFd>> {
        // SAFETY: plain system call; the descriptor it returns is owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return None;
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the `OwnedFd` moves into the `AsyncFd` and stays open, the same
        // descriptor, until the `AsyncFd` drops it.
        unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
    }

    /// Arm `fd` to expire once, `after` from now (a new setting also clears an
    /// expiry not yet read).
    pub(super) fn set(fd: &AsyncFd<OwnedFd>, after: Duration) -> bool {
        let after = after.max(SOONEST);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a valid descriptor and a fully initialised setting; the old setting
        // is not asked for.
        unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) == 0 }
    }

    /// Consume an expiry: `WouldBlock` when there was none.
    pub(super) fn read(fd: &OwnedFd) -> io::Result<()> {
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
        if n == 8 {
            Ok(())
        } else if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn fires_after_its_deadline_and_follows_moves() {
        let start = Instant::now();
        let mut d = Deadline::new(start + Duration::from_secs(3600), true);
        // Moved earlier, then later, then earlier again: only the last setting counts.
        d.set(start + Duration::from_millis(2));
        d.set(start + Duration::from_millis(30));
        d.set(start + Duration::from_millis(5));
        tokio::time::timeout(Duration::from_secs(10), d.wait())
            .await
            .expect("the timer fired");
        assert!(Instant::now() >= start + Duration::from_millis(5));
        // Re-armed after firing: it fires again, not at once from the old expiry.
        let again = Instant::now() + Duration::from_millis(3);
        d.set(again);
        tokio::time::timeout(Duration::from_secs(10), d.wait())
            .await
            .expect("the re-armed timer fired");
        assert!(Instant::now() >= again);
        #[cfg(target_os = "linux")]
        assert!(d.is_precise(), "a timerfd is available on Linux");
    }

    #[test]
    fn a_simulated_clock_gets_tokio_timers_and_needs_no_reactor() {
        // turmoil's runtimes have a clock and no I/O driver: registering a timerfd
        // would panic there.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let start = Instant::now();
            let mut d = Deadline::new(start + Duration::from_secs(60), false);
            assert!(!d.is_precise());
            d.set(start + Duration::from_secs(5));
            // The paused clock jumps to the deadline: the timer follows tokio's clock.
            d.wait().await;
            assert_eq!(Instant::now(), start + Duration::from_secs(5));
        });
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_deadline_in_the_past_fires_at_once() {
        let past = Instant::now();
        let mut d = Deadline::new(past + Duration::from_secs(3600), true);
        d.set(past);
        tokio::time::timeout(Duration::from_secs(10), d.wait())
            .await
            .expect("a passed deadline fires");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_later_deadline_does_not_fire_early() {
        let start = Instant::now();
        let mut d = Deadline::new(start + Duration::from_millis(1), true);
        d.set(start + Duration::from_millis(20));
        tokio::time::timeout(Duration::from_secs(10), d.wait())
            .await
            .expect("the timer fired");
        assert!(
            Instant::now() >= start + Duration::from_millis(20),
            "the expiry of the first setting was cleared by the second"
        );
    }
}
