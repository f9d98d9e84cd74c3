//! `[[vip]]`: the virtual addresses this node holds while it leads their groups,
//! changed inside the daemon (keepalived's `virtual_ipaddress`), with no process
//! started: the address change is one rtnetlink request, the announcement a
//! gratuitous ARP from a packet socket ([`netlink`]).
//!
//! Contract (docs/keepalived.md, "A virtual IP inside the daemon"):
//! - at start, before the node takes part in any election, each address is deleted
//!   from its interface if it is there, with any prefix (a killed daemon leaves it
//!   behind; the address is the daemon's), and `run` refuses to start when it cannot: no such interface,
//!   no `CAP_NET_ADMIN`, or (with gratuitous ARPs) no `CAP_NET_RAW`;
//! - when the node becomes its group's leader, or leads it in a new term (a healed
//!   split brain), the address is added (`ip addr replace`: harmless when it is
//!   there) and `garp_count` gratuitous ARPs follow, the first at once, then one per
//!   `garp_interval` while the node still leads;
//! - when it stops leading (follower, no leader known, FAULT, drained), the address
//!   is deleted, and at a stop (SIGTERM, after the resignation) too;
//! - a request the kernel refuses is logged (at a bounded rate), counted, and tried
//!   again every [`RETRY`] while the wanted state differs from the held one;
//! - a held address is checked against the kernel every [`CHECK`] and put back and
//!   announced when it is gone (deleted by hand, its interface recreated);
//! - the task subscribes to the leader events itself, like the hooks: an election
//!   never waits for it; it falls behind only by the broadcast buffer, and then acts
//!   on the present state.
//!
//! Metrics: `electd_vip_held{address}` (1 while this node holds it) and
//! `electd_vip_operations_total{address,operation,result}` (`add`, `delete`,
//! `announce`; `ok`, `error`).

pub(crate) mod netlink;

use crate::config::vip::{interface_index, Vip};
use crate::daemon::shared::{LeaderEvent, Shared};
use netlink::{ArpSocket, Netlink, Op};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How soon a refused request is asked again.
pub const RETRY: Duration = Duration::from_millis(100);

/// How often a held address is checked against the kernel (removed by hand, its
/// interface deleted and created again): put back and announced when it is gone.
pub const CHECK: Duration = Duration::from_secs(1);

/// The sockets and the checked configuration, from [`prepare`].
pub struct Prepared {
    vips: Vec<Vip>,
    netlink: Netlink,
    arp: Option<ArpSocket>,
    /// The addresses deleted at start, counted once the metrics exist.
    deleted: Vec<String>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("vips", &self.vips)
            .finish()
    }
}

/// What an error of the kernel means to an operator (`need`: the capability that
/// would allow it).
fn explain(e: &std::io::Error, what: &str, need: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!("{what}: {e}: the daemon needs {need} (docs/keepalived.md)")
        }
        _ => format!("{what}: {e}"),
    }
}

const NEED_ADMIN: &str = "CAP_NET_ADMIN to add and delete addresses";
const NEED_RAW: &str = "CAP_NET_RAW to send gratuitous ARPs (or set garp_count = 0)";

/// Open the sockets, check every interface and delete every address left behind
/// (see the module documentation). Err says what is wrong, for `run` to refuse.
pub fn prepare(vips: &[Vip]) -> Result<Prepared, String> {
    let mut netlink =
        Netlink::open().map_err(|e| explain(&e, "[[vip]]: netlink socket", NEED_ADMIN))?;
    let arp = if vips.iter().any(|v| v.garp_count > 0) {
        Some(
            ArpSocket::open()
                .map_err(|e| explain(&e, "[[vip]]: packet socket for ARP", NEED_RAW))?,
        )
    } else {
        None
    };
    let mut deleted = Vec::new();
    for v in vips {
        let index = interface_index(&v.interface).ok_or_else(|| {
            format!(
                "[[vip]] {}: no interface {:?} on this machine",
                v.label(),
                v.interface
            )
        })?;
        if let Some(arp) = &arp {
            arp.mac(&v.interface).map_err(|e| {
                explain(
                    &e,
                    &format!("[[vip]] {}: hardware address of {}", v.label(), v.interface),
                    NEED_RAW,
                )
            })?;
        }
        // The address with any prefix (a delete matches the prefix too: one left at
        // /32 by keepalived or by hand survived a delete of the configured /24).
        let prefixes = std::iter::once(v.prefix).chain((0..=32).filter(|&p| p != v.prefix));
        for prefix in prefixes {
            match netlink.address(Op::Delete, index, v.address, prefix) {
                Ok(true) => {
                    tracing::info!(
                        address = %v.label(),
                        left = %format!("{}/{prefix}", v.address),
                        interface = %v.interface,
                        "[[vip]]: deleted an address left behind (this node does not lead yet)"
                    );
                    deleted.push(v.label());
                }
                Ok(false) => {}
                Err(e) => {
                    return Err(explain(
                        &e,
                        &format!("[[vip]] {}: cannot manage it on {}", v.label(), v.interface),
                        NEED_ADMIN,
                    ))
                }
            }
        }
    }
    Ok(Prepared {
        vips: vips.to_vec(),
        netlink,
        arp,
        deleted,
    })
}

/// One address's state in the task.
struct Entry {
    vip: Vip,
    /// This node should hold it (it leads the group).
    want: bool,
    /// It holds it (the last add succeeded, no delete since).
    held: bool,
    /// Add it again and announce it though it is held (led in a new term).
    renew: bool,
    /// Gratuitous ARPs still to send, and when the next is due.
    announce_left: u32,
    next_announce: Option<Instant>,
    /// When to ask the kernel again after a refusal.
    retry_at: Option<Instant>,
    /// When to check next that the kernel still has the held address.
    check_at: Option<Instant>,
}

/// Start the task; it subscribes to `shared`'s leader events before returning. When
/// `stop` completes it deletes every address it holds and ends: await the handle.
pub fn spawn_until(
    shared: Arc<Shared>,
    prepared: Prepared,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    let mut rx = shared.subscribe();
    let labels: Vec<String> = prepared.vips.iter().map(Vip::label).collect();
    shared.metrics.vip_known(&labels);
    for label in &prepared.deleted {
        shared.metrics.vip_operation(label, "delete", "ok");
    }
    tokio::spawn(async move {
        tokio::pin!(stop);
        let Prepared {
            vips,
            mut netlink,
            arp,
            deleted: _,
        } = prepared;
        let mut entries: Vec<Entry> = vips
            .into_iter()
            .map(|vip| Entry {
                vip,
                want: false,
                held: false,
                renew: false,
                announce_left: 0,
                next_announce: None,
                retry_at: None,
                check_at: None,
            })
            .collect();
        let mut worker = Worker {
            shared: &shared,
            netlink: &mut netlink,
            arp: arp.as_ref(),
            log: crate::security::droplog::DropLog::new(),
            start: std::time::Instant::now(),
        };
        loop {
            let due = entries
                .iter()
                .flat_map(|e| [e.next_announce, e.retry_at, e.check_at])
                .flatten()
                .min();
            let sleep = async {
                match due {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(event) => {
                        for e in entries.iter_mut().filter(|e| e.vip.algorithm == event.algorithm) {
                            worker.follow(e, &event);
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        // Act on the present: resubscribe and snapshot atomically.
                        let (fresh, groups) = shared.watch();
                        rx = fresh;
                        for g in groups {
                            let event = LeaderEvent::new(shared.node, g.algorithm, g.leader, g.term);
                            for e in entries.iter_mut().filter(|e| e.vip.algorithm == g.algorithm) {
                                worker.follow(e, &event);
                            }
                        }
                    }
                    Err(RecvError::Closed) => break,
                },
                () = sleep => {
                    let now = Instant::now();
                    for e in &mut entries {
                        if e.retry_at.is_some_and(|t| t <= now) {
                            e.retry_at = None;
                            worker.apply(e);
                        }
                        if e.next_announce.is_some_and(|t| t <= now) {
                            worker.announce(e);
                        }
                        if e.check_at.is_some_and(|t| t <= now) {
                            worker.check(e);
                        }
                    }
                }
                () = &mut stop => break,
            }
        }
        for e in &mut entries {
            e.want = false;
            e.renew = false;
            e.announce_left = 0;
            e.next_announce = None;
            if e.held {
                worker.apply(e);
            }
        }
    })
}

struct Worker<'a> {
    shared: &'a Shared,
    netlink: &'a mut Netlink,
    arp: Option<&'a ArpSocket>,
    log: crate::security::droplog::DropLog,
    start: std::time::Instant,
}

impl Worker<'_> {
    /// A leader event of the entry's group.
    fn follow(&mut self, e: &mut Entry, event: &LeaderEvent) {
        e.want = event.state() == "leader";
        // Taken, or led in a new term: (re-)add and announce again.
        e.renew = e.want;
        e.retry_at = None;
        self.apply(e);
    }

    /// Bring the kernel to what the entry wants; a refusal is retried later.
    fn apply(&mut self, e: &mut Entry) {
        if e.want == e.held && !e.renew {
            return;
        }
        let label = e.vip.label();
        let Some(index) = interface_index(&e.vip.interface) else {
            self.failed(
                e,
                if e.want { "add" } else { "delete" },
                &format!("no interface {:?}", e.vip.interface),
            );
            return;
        };
        let op = if e.want { Op::Add } else { Op::Delete };
        match self.netlink.address(op, index, e.vip.address, e.vip.prefix) {
            Ok(_) => {
                e.held = e.want;
                e.renew = false;
                e.check_at = e.held.then(|| Instant::now() + CHECK);
                let name = if e.want { "add" } else { "delete" };
                self.shared.metrics.vip_operation(&label, name, "ok");
                self.shared.metrics.vip_held(&label, e.held);
                tracing::info!(address = %label, interface = %e.vip.interface, held = e.held, "[[vip]]");
                if e.held && e.vip.garp_count > 0 {
                    e.announce_left = e.vip.garp_count;
                    self.announce(e);
                } else {
                    e.announce_left = 0;
                    e.next_announce = None;
                }
            }
            Err(err) => self.failed(e, if e.want { "add" } else { "delete" }, &err.to_string()),
        }
    }

    /// A held address checked against the kernel: put back (and announced) if it is
    /// gone; if its interface is gone, no longer held, and added again (retried) once
    /// the interface is back.
    fn check(&mut self, e: &mut Entry) {
        e.check_at = None;
        if !(e.want && e.held) {
            return;
        }
        let label = e.vip.label();
        let back = interface_index(&e.vip.interface)
            .ok_or_else(|| format!("no interface {:?}", e.vip.interface))
            .and_then(|index| {
                self.netlink
                    .address(Op::Ensure, index, e.vip.address, e.vip.prefix)
                    .map_err(|err| err.to_string())
            });
        match back {
            Ok(false) => e.check_at = Some(Instant::now() + CHECK),
            Ok(true) => {
                self.shared.metrics.vip_operation(&label, "add", "ok");
                if self.log.record("gone", self.start.elapsed())
                    != crate::security::droplog::Verdict::Quiet
                {
                    tracing::warn!(
                        address = %label,
                        interface = %e.vip.interface,
                        "[[vip]]: the address was gone from the interface (deleted by hand, or \
                         the interface was recreated): added again and announced"
                    );
                }
                e.check_at = Some(Instant::now() + CHECK);
                if e.vip.garp_count > 0 {
                    e.announce_left = e.vip.garp_count;
                    self.announce(e);
                }
            }
            Err(why) => {
                // Not held any more: the metric says so, and the add is retried.
                e.held = false;
                self.shared.metrics.vip_held(&label, false);
                self.failed(e, "add", &why);
            }
        }
    }

    /// Send the next gratuitous ARP if the entry still holds its address.
    fn announce(&mut self, e: &mut Entry) {
        e.next_announce = None;
        if !(e.want && e.held) || e.announce_left == 0 {
            e.announce_left = 0;
            return;
        }
        e.announce_left -= 1;
        if e.announce_left > 0 {
            e.next_announce = Some(Instant::now() + e.vip.garp_interval);
        }
        let label = e.vip.label();
        let sent = match (self.arp, interface_index(&e.vip.interface)) {
            (Some(arp), Some(index)) => arp
                .mac(&e.vip.interface)
                .and_then(|mac| arp.announce(index, mac, e.vip.address))
                .map_err(|err| err.to_string()),
            (None, _) => Err("no packet socket".to_string()),
            (_, None) => Err(format!("no interface {:?}", e.vip.interface)),
        };
        match sent {
            Ok(()) => self.shared.metrics.vip_operation(&label, "announce", "ok"),
            Err(why) => {
                self.shared
                    .metrics
                    .vip_operation(&label, "announce", "error");
                self.warn("announce", &label, &why, "");
            }
        }
    }

    fn failed(&mut self, e: &mut Entry, operation: &'static str, why: &str) {
        let label = e.vip.label();
        self.shared
            .metrics
            .vip_operation(&label, operation, "error");
        self.warn(operation, &label, why, "; trying again");
        e.retry_at = Some(Instant::now() + RETRY);
    }

    fn warn(&mut self, operation: &'static str, label: &str, why: &str, then: &str) {
        let verdict = self.log.record(operation, self.start.elapsed());
        if verdict != crate::security::droplog::Verdict::Quiet {
            let unlogged = match verdict {
                crate::security::droplog::Verdict::Summary(n) => n,
                _ => 0,
            };
            tracing::warn!(
                address = %label,
                operation,
                error = %why,
                unlogged,
                "[[vip]]: the kernel refused{then}"
            );
        }
    }
}
