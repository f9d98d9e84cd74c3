//! The datagram socket seam of the runtime.
//!
//! [`Transport`] is the one thing the runtime needs from a socket: send a datagram to
//! an address, receive the next one. It is implemented here for
//! [`tokio::net::UdpSocket`]; the turmoil tests implement it for turmoil's simulated
//! socket, so the same runtime code runs over real UDP and over a simulated network
//! with loss, partitions and crashes (the chitchat/turmoil pattern: one seam, one
//! test suite).
//!
//! [`bind_udp`] opens the real socket with socket2: address reuse, large kernel
//! buffers (a burst of COORDINATOR messages to a big roster must not be dropped by
//! the receiving kernel), IPv4 or IPv6 (an unspecified IPv6 address is dual-stack).
//!
//! Multicast ([`join_multicast`]): the node's socket sends to the group through the
//! interface of its own address (`IP_MULTICAST_IF`, so no multicast route is needed),
//! hop limit [`MULTICAST_TTL`] (one LAN segment), loop on (several nodes may share a
//! host; the runtime drops its own datagrams). Receiving: a second socket bound to
//! `group:port` joins the group on that interface, unless the node's socket is bound
//! to the wildcard address on the group's port, in which case it joins the group
//! itself (a second socket would receive every group datagram twice).

use socket2::{Domain, Protocol, Socket, Type};
use std::future::Future;
use std::io;
use std::net::SocketAddr;

/// Kernel send and receive buffer size requested for the UDP socket.
pub(crate) const SOCKET_BUFFER: usize = 4 << 20;

/// A datagram socket (see the module documentation).
pub trait Transport: Send + Sync + 'static {
    /// Send one datagram; errors are reported, never fatal to the caller.
    fn send_to<'a>(
        &'a self,
        buf: &'a [u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a;

    /// Receive the next datagram (cancel safe: dropping the future loses nothing).
    fn recv_from<'a>(
        &'a self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send + 'a;

    /// The address the socket is bound to.
    fn local_addr(&self) -> io::Result<SocketAddr>;

    /// Receive a datagram already queued, without waiting: `None` when none is (or
    /// when the transport cannot tell; the runtime then takes one datagram per turn).
    fn try_recv_from(&self, _buf: &mut [u8]) -> Option<io::Result<(usize, SocketAddr)>> {
        None
    }

    /// Send `msgs` in order, with as few system calls as the transport can; one result
    /// per datagram. The default sends them one by one.
    fn send_many<'a>(
        &'a self,
        msgs: &'a [(&'a [u8], SocketAddr)],
    ) -> impl Future<Output = Vec<io::Result<usize>>> + Send + 'a {
        async move {
            let mut out = Vec::with_capacity(msgs.len());
            for &(buf, to) in msgs {
                out.push(self.send_to(buf, to).await);
            }
            out
        }
    }

    /// Whether the transport lives in the machine's own time, so the runtime may keep
    /// its deadline with a kernel timer ([`crate::daemon::timer`]). False (tokio's
    /// timers, which follow a paused or simulated clock) unless the transport says so.
    fn wall_clock(&self) -> bool {
        false
    }
}

impl Transport for tokio::net::UdpSocket {
    fn send_to<'a>(
        &'a self,
        buf: &'a [u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a {
        tokio::net::UdpSocket::send_to(self, buf, to)
    }

    fn recv_from<'a>(
        &'a self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send + 'a {
        tokio::net::UdpSocket::recv_from(self, buf)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        tokio::net::UdpSocket::local_addr(self)
    }

    fn try_recv_from(&self, buf: &mut [u8]) -> Option<io::Result<(usize, SocketAddr)>> {
        match tokio::net::UdpSocket::try_recv_from(self, buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            r => Some(r),
        }
    }

    /// `sendmmsg(2)`: a flush's datagrams leave in one system call per 256. Each datagram to a
    /// sleeping process on this host wakes it, and the woken process may take the core
    /// from the sender: sent one `sendto` at a time, a Raft candidate's fan-out to 63
    /// processes on two cores was interleaved with its receivers' runs (its next flush
    /// came 27 ms later); in one call the 63 left in 0.4 ms, 7 ms at worst in the
    /// traces of docs/bench/ANALYSIS.md, round 22.
    async fn send_many<'a>(&'a self, msgs: &'a [(&'a [u8], SocketAddr)]) -> Vec<io::Result<usize>> {
        let mut out = Vec::with_capacity(msgs.len());
        let mut rest = msgs;
        while let Some(&(first, to)) = rest.first() {
            let r = self.try_io(tokio::io::Interest::WRITABLE, || {
                mmsg::send(std::os::fd::AsRawFd::as_raw_fd(self), rest)
            });
            match r {
                Ok(k) if k > 0 => {
                    let k = k.min(rest.len());
                    out.extend(rest[..k].iter().map(|m| Ok(m.0.len())));
                    rest = &rest[k..];
                    continue;
                }
                // An error of the first datagram (the kernel reports a later one's at
                // the next call): counted, and the rest go on.
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => out.push(Err(e)),
                // The send buffer is full: this one the usual way (it waits until the
                // socket is writable), then the rest together again.
                _ => out.push(tokio::net::UdpSocket::send_to(self, first, to).await),
            }
            rest = &rest[1..];
        }
        out
    }

    fn wall_clock(&self) -> bool {
        true
    }
}

/// `sendmmsg(2)` of up to 256 of `msgs` on `fd`, without waiting; how many left.
pub(crate) fn send_mmsg(fd: std::os::fd::RawFd, msgs: &[(&[u8], SocketAddr)]) -> io::Result<usize> {
    mmsg::send(fd, msgs)
}

/// `sendmmsg(2)` on a raw socket.
mod mmsg {
    use std::io;
    use std::net::SocketAddr;

    /// Most datagrams per call (the kernel's own cap, `UIO_MAXIOV`, is 1024).
    const MOST: usize = 256;

    /// Send up to [`MOST`] of `msgs` on `fd` (non-blocking); how many left. An error
    /// is the first datagram's (the kernel reports a later one's at the next call).
    pub(super) fn send(fd: std::os::fd::RawFd, msgs: &[(&[u8], SocketAddr)]) -> io::Result<usize> {
        let msgs = &msgs[..msgs.len().min(MOST)];
        let addrs: Vec<socket2::SockAddr> = msgs
            .iter()
            .map(|(_, a)| socket2::SockAddr::from(*a))
            .collect();
        let mut iovs: Vec<libc::iovec> = msgs
            .iter()
            .map(|(b, _)| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        let mut hdrs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .zip(&addrs)
            .map(|(iov, a)| {
                // SAFETY: an all-zero msghdr is a valid empty one; every pointer set
                // below points into `addrs` and `iovs`, which outlive the call.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_name = a.as_ptr() as *mut libc::c_void;
                h.msg_hdr.msg_namelen = a.len();
                h.msg_hdr.msg_iov = iov as *mut libc::iovec;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        // SAFETY: `hdrs` holds `hdrs.len()` initialised headers whose buffers live
        // until the call returns; the kernel writes only their `msg_len`.
        let n = unsafe {
            libc::sendmmsg(
                fd,
                hdrs.as_mut_ptr(),
                hdrs.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Effective kernel buffer of one direction of a socket, against what was requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferSize {
    /// What electd asked for.
    pub(crate) requested: usize,
    /// As the kernel reports it (Linux doubles the value set, for its bookkeeping).
    pub(crate) effective: usize,
}

impl BufferSize {
    /// The kernel gave less than requested (Linux caps at `net.core.rmem_max` /
    /// `wmem_max`, then doubles: a full grant reports 2 × requested).
    pub(crate) fn capped(&self) -> bool {
        self.effective < self.requested
    }
}

/// The sysctl that caps a direction, and its current value when readable.
fn sysctl_cap(name: &str) -> String {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    match std::fs::read_to_string(path) {
        Ok(v) => format!("{name} = {}", v.trim()),
        Err(_) => name.to_string(),
    }
}

/// Log the effective buffer sizes; warn, naming the sysctl, when the kernel capped
/// them (datagrams beyond a full receive buffer are dropped by the kernel and counted
/// in `/proc/net/snmp` `Udp: RcvbufErrors`).
fn report_buffers(rcv: BufferSize, snd: BufferSize) {
    tracing::info!(
        receive = rcv.effective,
        send = snd.effective,
        requested = rcv.requested,
        "UDP socket buffers"
    );
    for (b, dir, sysctl) in [
        (rcv, "receive", "net.core.rmem_max"),
        (snd, "send", "net.core.wmem_max"),
    ] {
        if b.capped() {
            tracing::warn!(
                "the kernel capped the UDP {dir} buffer at {} bytes (requested {}; {}): \
                 bursts to a large roster may be dropped; raise it with `sysctl -w {sysctl}={}` \
                 (persist in /etc/sysctl.d/, see deploy/README.md)",
                b.effective,
                b.requested,
                sysctl_cap(sysctl),
                b.requested
            );
        }
    }
}

/// Open the node's UDP socket on `addr` (port 0 picks a free port). Must be called
/// inside a tokio runtime.
pub fn bind_udp(addr: SocketAddr) -> io::Result<tokio::net::UdpSocket> {
    tokio::net::UdpSocket::from_std(open_udp(addr, false)?.into())
}

/// [`bind_udp`] as a socket2 socket; `reuse_port`: in an `SO_REUSEPORT` group, for
/// [`crate::daemon::heartbeats::bind_udp_pair`], which checks that the address is free
/// first.
pub(crate) fn open_udp(addr: SocketAddr, reuse_port: bool) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // No SO_REUSEADDR: on UDP it does not help a restart (there is no TIME_WAIT), it
    // lets a second socket share the port, so that two nodes configured with one
    // address, or two sockets given port 0, would silently split the datagrams.
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        // Dual stack where the system allows it; an IPv6-only host keeps working.
        let _ = socket.set_only_v6(false);
    }
    // Best effort: the kernel may cap these (net.core.rmem_max); too small is not fatal.
    if let Err(e) = socket.set_recv_buffer_size(SOCKET_BUFFER) {
        tracing::warn!("cannot set the UDP receive buffer to {SOCKET_BUFFER} bytes: {e}");
    }
    if let Err(e) = socket.set_send_buffer_size(SOCKET_BUFFER) {
        tracing::warn!("cannot set the UDP send buffer to {SOCKET_BUFFER} bytes: {e}");
    }
    let size = |r: io::Result<usize>| BufferSize {
        requested: SOCKET_BUFFER,
        effective: r.unwrap_or(0),
    };
    report_buffers(
        size(socket.recv_buffer_size()),
        size(socket.send_buffer_size()),
    );
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket)
}

/// Hop limit of multicast datagrams: the group is one LAN segment.
pub(crate) const MULTICAST_TTL: u32 = 1;

/// Set up multicast for the node's socket `main` (bound to `bind`) and `group`.
/// Returns the extra receiving socket, or `None` when `main` joined the group itself.
/// Must be called inside a tokio runtime.
pub fn join_multicast(
    main: &tokio::net::UdpSocket,
    bind: SocketAddr,
    group: SocketAddr,
) -> io::Result<Option<tokio::net::UdpSocket>> {
    let sender = socket2::SockRef::from(main);
    let shared = bind.ip().is_unspecified() && bind.port() == group.port();
    match (group, bind) {
        (SocketAddr::V4(g), SocketAddr::V4(b)) => {
            let iface = *b.ip();
            if !iface.is_unspecified() {
                sender.set_multicast_if_v4(&iface)?;
            }
            sender.set_multicast_ttl_v4(MULTICAST_TTL)?;
            sender.set_multicast_loop_v4(true)?;
            if shared {
                sender.join_multicast_v4(g.ip(), &iface)?;
                return Ok(None);
            }
            let r = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
            r.set_reuse_address(true)?;
            r.set_reuse_port(true)?;
            let _ = r.set_recv_buffer_size(SOCKET_BUFFER);
            r.bind(&group.into())?;
            r.join_multicast_v4(g.ip(), &iface)?;
            r.set_nonblocking(true)?;
            tokio::net::UdpSocket::from_std(r.into()).map(Some)
        }
        (SocketAddr::V6(g), SocketAddr::V6(b)) => {
            // Interface 0: the system's choice (the default route's interface).
            let ifindex = b.scope_id();
            if ifindex != 0 {
                sender.set_multicast_if_v6(ifindex)?;
            }
            sender.set_multicast_hops_v6(MULTICAST_TTL)?;
            sender.set_multicast_loop_v6(true)?;
            if shared {
                sender.join_multicast_v6(g.ip(), ifindex)?;
                return Ok(None);
            }
            let r = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
            r.set_reuse_address(true)?;
            r.set_reuse_port(true)?;
            r.set_only_v6(true)?;
            let _ = r.set_recv_buffer_size(SOCKET_BUFFER);
            r.bind(&group.into())?;
            r.join_multicast_v6(g.ip(), ifindex)?;
            r.set_nonblocking(true)?;
            tokio::net::UdpSocket::from_std(r.into()).map(Some)
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("multicast group {group} and bind address {bind} are of different IP versions"),
        )),
    }
}

/// The `kind` label of `electd_send_errors_total` for a failed send.
pub(crate) fn send_error_kind(e: &io::Error) -> &'static str {
    use io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied => "permission_denied",
        K::NetworkUnreachable => "network_unreachable",
        K::HostUnreachable => "host_unreachable",
        K::AddrNotAvailable => "address_unavailable",
        K::ConnectionRefused => "connection_refused",
        K::WouldBlock => "buffer_full",
        K::InvalidInput => "invalid_address",
        _ => match e.raw_os_error() {
            Some(105) => "buffer_full", // ENOBUFS on Linux
            Some(90) => "message_too_long",
            _ => "other",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `send_many` over `sendmmsg`: every datagram arrives, in order, with its own
    /// bytes, past the per-call cap of 256; a datagram the kernel refuses (an IPv6
    /// address from an IPv4 socket) is reported at its place and the rest still go.
    #[tokio::test]
    async fn send_many_sends_every_datagram_and_reports_each_result() {
        let tx = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let rx: Vec<tokio::net::UdpSocket> = (0..3)
            .map(|_| bind_udp("127.0.0.1:0".parse().unwrap()).unwrap())
            .collect();
        let to: Vec<SocketAddr> = rx.iter().map(|r| r.local_addr().unwrap()).collect();
        let bodies: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let bad: SocketAddr = "[::1]:9".parse().unwrap();
        let mut msgs: Vec<(&[u8], SocketAddr)> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| (b.as_slice(), to[i % 3]))
            .collect();
        msgs.insert(100, (b"refused", bad));
        let results = Transport::send_many(&tx, &msgs).await;
        assert_eq!(results.len(), msgs.len());
        for (i, r) in results.iter().enumerate() {
            if i == 100 {
                assert!(r.is_err(), "{r:?}");
            } else {
                assert_eq!(r.as_ref().ok(), Some(&msgs[i].0.len()), "datagram {i}");
            }
        }
        let mut buf = [0u8; 64];
        for (k, r) in rx.iter().enumerate() {
            for i in (k..300).step_by(3) {
                let (n, from) =
                    tokio::time::timeout(std::time::Duration::from_secs(5), r.recv_from(&mut buf))
                        .await
                        .expect("datagram in time")
                        .unwrap();
                assert_eq!(from, tx.local_addr().unwrap());
                assert_eq!(&buf[..n], &(i as u32).to_be_bytes(), "receiver {k}");
            }
        }
    }

    #[tokio::test]
    async fn bind_send_and_receive_on_v4_and_v6_loopback() {
        for addr in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(a) = bind_udp(addr.parse().unwrap()) else {
                // A host without IPv6 loopback: nothing to test there.
                assert!(addr.starts_with('['), "IPv4 loopback must work");
                continue;
            };
            let b = bind_udp(addr.parse().unwrap()).unwrap();
            let to = Transport::local_addr(&b).unwrap();
            assert_ne!(to.port(), 0);
            Transport::send_to(&a, b"hi", to).await.unwrap();
            let mut buf = [0u8; 16];
            let (n, from) = Transport::recv_from(&b, &mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hi");
            assert_eq!(from, Transport::local_addr(&a).unwrap());
        }
    }

    #[test]
    fn a_capped_buffer_is_told_apart_from_a_full_grant() {
        let b = |effective| BufferSize {
            requested: SOCKET_BUFFER,
            effective,
        };
        // Linux reports twice what it granted: the default rmem_max (208 KiB) caps.
        assert!(b(2 * 212_992).capped());
        assert!(!b(2 * SOCKET_BUFFER).capped());
        assert!(!b(SOCKET_BUFFER).capped());
        assert!(b(0).capped(), "unknown counts as capped");
    }

    #[test]
    fn error_kinds() {
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(send_error_kind(&e), "permission_denied");
        assert_eq!(
            send_error_kind(&io::Error::from_raw_os_error(105)),
            "buffer_full"
        );
        assert_eq!(send_error_kind(&io::Error::other("x")), "other");
    }
}
