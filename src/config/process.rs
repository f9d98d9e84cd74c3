//! `[process]`: how this machine runs the daemon. `realtime_priority` (1..=99) puts
//! the daemon's threads in the kernel's real-time class, `SCHED_RR` at that priority
//! (applied by `daemon::sched`); 0 or absent leaves them in the normal class. Whether
//! the kernel allows it is a fact of this machine, asked of the kernel here, on a
//! thread of its own, so that `run` and `config check` refuse a setting that cannot
//! be kept.

use super::raw::RawConfig;
use super::validate::Validator;
use super::ConfigError;

impl Validator<'_> {
    /// `process.realtime_priority`: the priority, `None` for the normal class.
    pub(super) fn process(&self, raw: &RawConfig) -> Result<Option<u8>, ConfigError> {
        const KEY: &str = "process.realtime_priority";
        let p = match raw.process.realtime_priority {
            None | Some(0) => return Ok(None),
            Some(p) => u8::try_from(p).ok().filter(|p| *p <= 99).ok_or_else(|| {
                self.err(
                    KEY,
                    format!(
                        "{p} is not a real-time priority: 1..99 puts the daemon's threads in \
                         SCHED_RR at that priority, 0 (the default) leaves them in the \
                         normal class"
                    ),
                )
            })?,
        };
        if let Err(why) = probe(p) {
            self.host_local(self.err(KEY, why))?;
        }
        Ok(Some(p))
    }
}

/// Put the calling thread in `SCHED_RR` at `priority`, with `SCHED_RESET_ON_FORK`: a
/// thread or process it creates starts in the normal class.
#[cfg(target_os = "linux")]
pub(crate) fn set_thread_realtime(priority: u8) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: sched_setscheduler(2) on the calling thread (0) with a valid param.
    let r =
        unsafe { libc::sched_setscheduler(0, libc::SCHED_RR | libc::SCHED_RESET_ON_FORK, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn set_thread_realtime(_priority: u8) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "electd sets the real-time class on Linux only",
    ))
}

/// What the kernel refused (`e`, from [`set_thread_realtime`] at `priority`) and how
/// to allow it.
pub(crate) fn refusal(e: &std::io::Error, priority: u8) -> String {
    let how = match e.raw_os_error() {
        Some(libc::EPERM) => format!(
            ": the process needs CAP_SYS_NICE (root has it) or an RLIMIT_RTPRIO of at least \
             {priority} (`ulimit -r`; systemd: LimitRTPRIO={priority} and \
             RestrictRealtime=no, see deploy/systemd/README.md), or remove the setting"
        ),
        Some(libc::EINVAL) => format!(": this kernel has no SCHED_RR at {priority}"),
        _ => String::new(),
    };
    format!("the kernel refuses the real-time class (SCHED_RR at {priority}) to this process ({e}){how}")
}

/// Whether the kernel lets this process use `SCHED_RR` at `priority`, asked on a
/// thread that ends at once (the caller's class is left as it is).
pub(crate) fn probe(priority: u8) -> Result<(), String> {
    match std::thread::Builder::new()
        .name("electd-probe".into())
        .spawn(move || set_thread_realtime(priority))
        .map(std::thread::JoinHandle::join)
    {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(refusal(&e, priority)),
        Ok(Err(_)) => Err("the probe of the real-time class failed".into()),
        Err(e) => Err(format!(
            "cannot start a thread to probe the real-time class ({e})"
        )),
    }
}
