//! Heartbeats read in batches: a follower need not wake for every heartbeat of the
//! leader it follows.
//!
//! At heartbeat 10 ms a follower used to wake 100 times a second only to move its
//! failure detector's deadline; the wakeup, not the work, was most of its CPU
//! (docs/bench/idle/README.md). A heartbeat that only refreshes the detector does not
//! need to be read at once: it needs to be read before the detector's deadline, with
//! the time it arrived.
//!
//! # How
//! - The node's address is bound by two UDP sockets in one `SO_REUSEPORT` group
//!   ([`bind_udp_pair`]): the main socket (index 0), which the runtime waits on, and the
//!   heartbeat socket (index 1), which nobody waits on. A classic BPF program attached
//!   to the group (`SO_ATTACH_REUSEPORT_CBPF`, no privilege needed) picks the socket of
//!   every datagram the kernel delivers to the address.
//! - The program ([`program`]) sends a datagram to the heartbeat socket only when its
//!   first bytes are exactly those of a heartbeat the node expects ([`Pattern`]): the
//!   canonical envelope (docs/wire.md) of a heartbeat from the leader the node follows
//!   in a group, from that leader's current incarnation, at the group's term, carrying
//!   no acknowledgement, under the node's primary key id; only the authentication tag's
//!   bytes (and the counter and receiver fields after the body) are not compared.
//!   Everything else, and every datagram when no group qualifies, goes to the main
//!   socket. The runtime rebuilds the program whenever the set of followed leaders
//!   changes ([`crate::node::Node::quiet_heartbeats`]): an election, an adoption, a
//!   leader's restart.
//! - The heartbeat socket records the kernel's receive time of every datagram
//!   (`SO_TIMESTAMPNS`). The runtime drains it, oldest first, at the start of every
//!   turn (before a datagram of the main socket, a timer or a command is handled) and
//!   hands each heartbeat to the node as of the time it arrived, so the failure
//!   detector's deadline is the same as if it had been read at once. A follower then
//!   wakes about once per `failure_timeout` instead of once per heartbeat.
//! - A leader followed quietly in several groups sends their heartbeats together, as
//!   one BEATS datagram (docs/wire.md §12). Its body follows the counter, whose varint
//!   length varies, so the program holds one pattern of the whole datagram per counter
//!   length up to [`BEATS_COUNTER_LENGTHS`] bytes ([`crate::security::gate::Gate::beats_prefix`]),
//!   each selecting a BEATS that holds exactly the heartbeats of the groups the node
//!   follows that leader in quietly; any other BEATS (a priority advert, a group not
//!   followed quietly) goes to the main socket.
//! - A leader's followers' answers (Raft's, `[lease] require_quorum`'s) go there too
//!   ([`crate::node::Node::quiet_acks`]): one pattern per member, of its answer of the
//!   leadership's term alone in a datagram; the leader, which wakes every heartbeat
//!   anyway, reads them at its next turn instead of waking for each, as of their
//!   arrival. Patterns are added while the program stays within `MAX_PROGRAM`
//!   (`program.rs`).
//! - What waits in the heartbeat socket is a pure refresh by construction (the node
//!   excludes groups where a heartbeat draws an answer: `[lease] require_quorum`, Raft,
//!   a group electing or handing over; and answers of any other term). The gate still
//!   authenticates and checks every datagram read from it, exactly as from the main
//!   socket.
//!
//! # Safety of the shared port
//! `SO_REUSEPORT` would let a second process of the same user bind the address too.
//! [`bind_udp_pair`] first binds the address alone (no reuse), so a second `electd`
//! configured with the same address still fails with "address in use"; the program
//! returns index 0 or 1 only, so a socket that joins the group later receives no
//! unicast datagram. (Multicast goes to every socket on a port whatever the program;
//! the heartbeat socket opts out with `IP_MULTICAST_ALL = 0`, and `electd run` opens no
//! heartbeat socket when `transport.multicast` is set.)
//!
//! Any failure to set this up (an old kernel, a refused option) leaves the main socket
//! alone, which receives everything, as before; `transport.batch_heartbeats = false`
//! turns it off.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime};

mod program;

/// The counter lengths (varint bytes) of the BEATS patterns: up to 2³⁵ datagrams from
/// one leader's incarnation to one follower, a year at a thousand a second.
pub(crate) const BEATS_COUNTER_LENGTHS: u32 = 5;

pub(crate) use program::{extend_within_limit, program, Insn, Pattern};
#[cfg(test)]
use program::{program_len, MAX_PROGRAM};
#[cfg(test)]
use program::{BATCHED, MAIN};

/// The node's second socket (see the module documentation): nonblocking, never
/// waited on, timestamps on.
#[derive(Debug)]
pub struct HeartbeatSocket {
    socket: Socket,
}

/// Open the node's main socket on `addr` and, where the kernel allows, the heartbeat
/// socket beside it (see the module documentation). `batch = false`: the main socket
/// only, bound as [`crate::daemon::socket::bind_udp`] does. Must be called inside a
/// tokio runtime.
pub fn bind_udp_pair(
    addr: SocketAddr,
    batch: bool,
) -> io::Result<(tokio::net::UdpSocket, Option<HeartbeatSocket>)> {
    if !batch {
        return Ok((crate::daemon::socket::bind_udp(addr)?, None));
    }
    // Alone first: "address in use" if anything holds it, and the port to share when
    // `addr` asks for any.
    let addr = {
        let probe = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if addr.is_ipv6() && addr.ip().is_unspecified() {
            let _ = probe.set_only_v6(false);
        }
        probe.bind(&addr.into())?;
        probe
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("bound address is not an IP address"))?
    };
    let main = crate::daemon::socket::open_udp(addr, true)?;
    match heartbeat_socket(&main, addr) {
        Ok(hb) => Ok((tokio::net::UdpSocket::from_std(main.into())?, Some(hb))),
        Err(e) => {
            tracing::info!("heartbeats are read one by one (no second socket: {e})");
            // Alone in its group, the main socket receives everything.
            Ok((tokio::net::UdpSocket::from_std(main.into())?, None))
        }
    }
}

fn heartbeat_socket(main: &Socket, addr: SocketAddr) -> io::Result<HeartbeatSocket> {
    // Everything to the main socket before the second one joins.
    attach(main, &program(&[]).map_err(io::Error::other)?)?;
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        let _ = socket.set_only_v6(false);
    }
    socket.set_reuse_port(true)?;
    let _ = socket.set_recv_buffer_size(crate::daemon::socket::SOCKET_BUFFER);
    socket.set_nonblocking(true)?;
    set_int(&socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    // Multicast is delivered to every socket on the port, whatever the program says:
    // this one joins no group and takes none (the main socket, or the group's own
    // socket, receives them).
    if addr.is_ipv4() {
        set_int(&socket, libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, 0)?;
    } else {
        set_int(&socket, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_ALL, 0)?;
        if addr.ip().is_unspecified() {
            // Dual stack: IPv4 multicast reaches it too.
            let _ = set_int(&socket, libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, 0);
        }
    }
    socket.bind(&addr.into())?;
    Ok(HeartbeatSocket { socket })
}

fn set_int(s: &Socket, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    setsockopt(s, level, name, &v)
}

/// Attach `prog` to the reuseport group of `s` (replacing the one before).
fn attach(s: &impl AsRawFd, prog: &[Insn]) -> io::Result<()> {
    let filters: Vec<libc::sock_filter> = prog
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let fprog = libc::sock_fprog {
        len: filters.len() as u16,
        filter: filters.as_ptr() as *mut libc::sock_filter,
    };
    // `fprog` points at `filters`, alive for the call; the kernel copies the program.
    setsockopt(s, libc::SOL_SOCKET, libc::SO_ATTACH_REUSEPORT_CBPF, &fprog)
}

/// `setsockopt(2)` with the option value `v`, a plain C struct or integer.
fn setsockopt<T>(s: &impl AsRawFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: a valid descriptor, and a pointer to a live value of the size given.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (v as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One datagram read from the heartbeat socket.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batched {
    /// Its length in the buffer.
    pub len: usize,
    /// Its UDP source.
    pub from: SocketAddr,
    /// When the kernel received it (`None`: no timestamp came with it).
    pub(crate) at: Option<SystemTime>,
}

impl HeartbeatSocket {
    /// A duplicate of this socket to send from, bound to the node's own address like
    /// the main socket: the leader's beat thread sends on it ([`crate::daemon::beater`]).
    /// Nobody waits on this socket, so the kernel freeing a sent datagram's buffer
    /// wakes nobody; on the main socket it would wake the runtime, which waits on it
    /// for reads and writes alike, once per datagram sent.
    pub(crate) fn sender(&self) -> io::Result<std::net::UdpSocket> {
        self.socket.try_clone().map(Into::into)
    }

    /// Select the heartbeats of `patterns` into this socket from now on.
    pub(crate) fn select(&self, patterns: &[Pattern]) -> io::Result<()> {
        attach(&self.socket, &program(patterns).map_err(io::Error::other)?)
    }

    /// Read the oldest datagram waiting, without waiting: `None` when there is none.
    pub(crate) fn try_recv(&self, buf: &mut [u8]) -> Option<io::Result<Batched>> {
        // SAFETY: plain C structs, zero is a valid value of each.
        let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut control = [0u64; 8]; // 64 bytes, aligned: room for one timespec cmsg
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is a plain C struct; zero (null pointers, zero lengths) is a
        // valid value, and every pointer is set below before recvmsg reads it.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of_val(&control) as _;
        // SAFETY: every pointer in `msg` points at a live buffer of the length given.
        let n = unsafe { libc::recvmsg(self.socket.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => None,
                _ => Some(Err(e)),
            };
        }
        let Some(from) = socket_addr(&from) else {
            return Some(Err(io::Error::other("datagram from a non-IP address")));
        };
        let mut at = None;
        // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
        // `msg_controllen`.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    if let (Ok(s), Ok(ns)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                        at = SystemTime::UNIX_EPOCH.checked_add(Duration::new(s, ns));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Some(Ok(Batched {
            len: n as usize,
            from,
            at,
        }))
    }
}

fn socket_addr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(s.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in =
                unsafe { std::ptr::read((s as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 =
                unsafe { std::ptr::read((s as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Both clocks at the start of a drain of the heartbeat socket: the runtime's
/// (monotonic) time and the wall clock, in which the kernel stamps datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Drain {
    /// The runtime's time.
    pub now: Duration,
    /// The wall clock.
    pub(crate) wall: SystemTime,
}

/// How far the two clocks may drift apart between drains, and how long before the
/// previous drain a datagram read now may have been stamped (stamped just before it,
/// queued just after).
pub(crate) const SLACK: Duration = Duration::from_millis(2);

/// When a datagram stamped `at` and read in drain `cur` arrived, on the runtime's
/// clock; `prev` is the drain before (nothing read now arrived before it). Whenever the
/// stamp cannot be trusted it counts as `cur.now`, so a deadline computed from it may
/// come late by one drain, never early: no stamp, a stamp from the future or from
/// before `prev`, or a wall clock that did not advance with the runtime's since `prev`
/// (stepped or slewed by more than [`SLACK`]: every stamp of this drain is suspect).
pub(crate) fn arrival(at: Option<SystemTime>, cur: Drain, prev: Drain) -> Duration {
    let now = cur.now;
    let (Some(at), Ok(wall_since)) = (at, cur.wall.duration_since(prev.wall)) else {
        return now;
    };
    let mono_since = now.saturating_sub(prev.now);
    if wall_since > mono_since + SLACK || mono_since > wall_since + SLACK {
        return now;
    }
    match cur.wall.duration_since(at) {
        Ok(age) if age <= mono_since + SLACK => now.saturating_sub(age),
        _ => now,
    }
}

#[cfg(test)]
mod tests;
