//! The two rtnetlink requests `[[vip]]` needs — add an IPv4 address to an interface
//! (`RTM_NEWADDR`, create or replace: `ip addr replace`) and delete it
//! (`RTM_DELADDR`) — and the packet socket that announces it (a gratuitous ARP,
//! RFC 5227's announcement: sender and target protocol address both the VIP).
//!
//! The messages are built and parsed here by hand (the layouts of `linux/netlink.h`,
//! `linux/if_addr.h` and `linux/rtnetlink.h`); parsing a reply never panics on what
//! the kernel sends.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const AF_INET: u8 = 2;
const ETH_P_ARP: u16 = 0x0806;

/// What to ask of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Add the address, or replace it if the interface has it (idempotent).
    Add,
    /// Add the address only if the interface lacks it (`NLM_F_EXCL`): `Ok(true)` when
    /// it was missing and is back, `Ok(false)` when it was there. A held address
    /// checked against the kernel.
    Ensure,
    /// Delete it.
    Delete,
}

/// The request `op` of `address/prefix` on interface `index`, sequence number `seq`.
pub(crate) fn address_message(
    op: Op,
    seq: u32,
    index: u32,
    address: Ipv4Addr,
    prefix: u8,
) -> Vec<u8> {
    let (kind, flags) = match op {
        Op::Add => (
            RTM_NEWADDR,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
        ),
        Op::Ensure => (
            RTM_NEWADDR,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        ),
        Op::Delete => (RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK),
    };
    let len = NLMSG_HDRLEN + 8 + 2 * 8;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    // The sender's port: 0, the kernel assigns it.
    m.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifaddrmsg: family, prefix, flags, scope (universe), index.
    m.extend_from_slice(&[AF_INET, prefix, 0, 0]);
    m.extend_from_slice(&index.to_ne_bytes());
    for attr in [IFA_LOCAL, IFA_ADDRESS] {
        m.extend_from_slice(&8u16.to_ne_bytes());
        m.extend_from_slice(&attr.to_ne_bytes());
        m.extend_from_slice(&address.octets());
    }
    m
}

/// In a datagram of replies, the error of the acknowledgement of request `seq`:
/// `Some(0)` for success, `Some(-errno)` for a refusal, `None` when the datagram holds
/// no acknowledgement of it (or is malformed).
pub(crate) fn ack_of(reply: &[u8], seq: u32) -> Option<i32> {
    let mut at = 0usize;
    while reply.len().saturating_sub(at) >= NLMSG_HDRLEN {
        let h = &reply[at..];
        let len = u32::from_ne_bytes(h[0..4].try_into().ok()?) as usize;
        if len < NLMSG_HDRLEN || len > h.len() {
            return None;
        }
        let kind = u16::from_ne_bytes(h[4..6].try_into().ok()?);
        let this = u32::from_ne_bytes(h[8..12].try_into().ok()?);
        if kind == NLMSG_ERROR && this == seq && len >= NLMSG_HDRLEN + 4 {
            return Some(i32::from_ne_bytes(h[16..20].try_into().ok()?));
        }
        // Messages are aligned to 4 bytes.
        at += (len + 3) & !3;
    }
    None
}

/// A route netlink socket that asks the kernel one request at a time.
pub(crate) struct Netlink {
    fd: OwnedFd,
    seq: u32,
}

impl Netlink {
    /// Open one (any user can; what it may change needs `CAP_NET_ADMIN`). Replies are
    /// awaited at most 1 s.
    pub(crate) fn open() -> io::Result<Netlink> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor this function owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: setsockopt reads a timeval of the size given.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Netlink { fd, seq: 0 })
    }

    /// Ask `op` for `address/prefix` on interface `index`. Ok(true): done; Ok(false):
    /// a delete found no such address, or an ensure found it there (nothing to do);
    /// Err: the kernel's refusal
    /// (`EPERM` without `CAP_NET_ADMIN`, `ENODEV` for a vanished interface, …).
    pub(crate) fn address(
        &mut self,
        op: Op,
        index: u32,
        address: Ipv4Addr,
        prefix: u8,
    ) -> io::Result<bool> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let msg = address_message(op, seq, index, address, prefix);
        // SAFETY: sockaddr_nl is plain data; zeroed is its "the kernel" value.
        let mut to: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        to.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: sendto reads msg and the sockaddr_nl of the sizes given.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&to as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = [0u8; 8192];
        // Replies to an earlier request that timed out may still be queued: skip
        // them (bounded: the socket holds at most what was asked).
        for _ in 0..64 {
            // SAFETY: recv writes at most buf.len() bytes into buf.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            match ack_of(&buf[..n as usize], seq) {
                None => continue,
                Some(0) => return Ok(true),
                Some(e) if op == Op::Delete && -e == libc::EADDRNOTAVAIL => return Ok(false),
                Some(e) if op == Op::Ensure && -e == libc::EEXIST => return Ok(false),
                Some(e) => return Err(io::Error::from_raw_os_error(-e)),
            }
        }
        Err(io::Error::other("no acknowledgement from the kernel"))
    }
}

/// The ARP announcement of `address` by `mac` (the payload after the Ethernet
/// header): a request whose sender and target protocol addresses are both `address`
/// and whose target hardware address is zero (RFC 5227, 2.3).
pub(crate) fn announcement(mac: [u8; 6], address: Ipv4Addr) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[0..2].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
    p[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
    p[4] = 6;
    p[5] = 4;
    p[6..8].copy_from_slice(&1u16.to_be_bytes()); // request
    p[8..14].copy_from_slice(&mac);
    p[14..18].copy_from_slice(&address.octets());
    // p[18..24]: target hardware address, zero.
    p[24..28].copy_from_slice(&address.octets());
    p
}

/// A packet socket for ARP frames (needs `CAP_NET_RAW`).
pub(crate) struct ArpSocket {
    fd: OwnedFd,
}

impl ArpSocket {
    pub(crate) fn open() -> io::Result<ArpSocket> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ARP.to_be()),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor this function owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // Never read: frames queued for it would only take memory.
        let zero: libc::c_int = 0;
        // SAFETY: setsockopt reads an int of the size given.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&zero as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        Ok(ArpSocket { fd })
    }

    /// The hardware address of `interface` (`SIOCGIFHWADDR`).
    pub(crate) fn mac(&self, interface: &str) -> io::Result<[u8; 6]> {
        // struct ifreq: the name (16 bytes), then a sockaddr whose data holds the MAC.
        let mut req = [0u8; 40];
        let name = interface.as_bytes();
        if name.len() > 15 {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        req[..name.len()].copy_from_slice(name);
        // SAFETY: the ioctl reads the name and writes a sockaddr within the 40 bytes of
        // struct ifreq.
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SIOCGIFHWADDR as _,
                req.as_mut_ptr(),
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&req[18..24]);
        Ok(mac)
    }

    /// Broadcast `announcement(mac, address)` on interface `index`.
    pub(crate) fn announce(&self, index: u32, mac: [u8; 6], address: Ipv4Addr) -> io::Result<()> {
        let payload = announcement(mac, address);
        // SAFETY: sockaddr_ll is plain data.
        let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        to.sll_family = libc::AF_PACKET as u16;
        to.sll_protocol = ETH_P_ARP.to_be();
        to.sll_ifindex = index as i32;
        to.sll_halen = 6;
        to.sll_addr[..6].copy_from_slice(&[0xff; 6]);
        // SAFETY: sendto reads the payload and the sockaddr_ll of the sizes given.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                payload.as_ptr().cast(),
                payload.len(),
                0,
                (&to as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_add_request_is_ip_addr_replace_and_a_delete_asks_only_for_an_ack() {
        let a = Ipv4Addr::new(10, 0, 0, 100);
        let m = address_message(Op::Add, 7, 3, a, 24);
        assert_eq!(m.len(), 40);
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()), 40);
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), RTM_NEWADDR);
        let flags = u16::from_ne_bytes(m[6..8].try_into().unwrap());
        assert_eq!(flags, 0x1 | 0x4 | 0x100 | 0x400);
        assert_eq!(u32::from_ne_bytes(m[8..12].try_into().unwrap()), 7);
        assert_eq!(&m[16..20], &[2, 24, 0, 0]);
        assert_eq!(u32::from_ne_bytes(m[20..24].try_into().unwrap()), 3);
        // Two attributes of 8 bytes: IFA_LOCAL then IFA_ADDRESS, the address in
        // network order.
        assert_eq!(u16::from_ne_bytes(m[24..26].try_into().unwrap()), 8);
        assert_eq!(u16::from_ne_bytes(m[26..28].try_into().unwrap()), IFA_LOCAL);
        assert_eq!(&m[28..32], &[10, 0, 0, 100]);
        assert_eq!(
            u16::from_ne_bytes(m[34..36].try_into().unwrap()),
            IFA_ADDRESS
        );
        assert_eq!(&m[36..40], &[10, 0, 0, 100]);
        let d = address_message(Op::Delete, 8, 3, a, 24);
        assert_eq!(u16::from_ne_bytes(d[4..6].try_into().unwrap()), RTM_DELADDR);
        assert_eq!(u16::from_ne_bytes(d[6..8].try_into().unwrap()), 0x1 | 0x4);
        // The check of a held address: create only if absent (`ip addr add`, which
        // answers EEXIST when the address is there), never replace.
        let e = address_message(Op::Ensure, 9, 3, a, 24);
        assert_eq!(u16::from_ne_bytes(e[4..6].try_into().unwrap()), RTM_NEWADDR);
        assert_eq!(
            u16::from_ne_bytes(e[6..8].try_into().unwrap()),
            0x1 | 0x4 | 0x200 | 0x400
        );
        assert_eq!(&e[16..], &m[16..], "the same address, prefix and interface");
    }

    /// An acknowledgement as the kernel writes it: header, error, the request's header.
    fn ack(seq: u32, error: i32) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&36u32.to_ne_bytes());
        m.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&1234u32.to_ne_bytes());
        m.extend_from_slice(&error.to_ne_bytes());
        m.extend_from_slice(&[0u8; 16]);
        m
    }

    #[test]
    fn acknowledgements_are_matched_by_sequence_and_garbage_is_no_answer() {
        assert_eq!(ack_of(&ack(5, 0), 5), Some(0));
        assert_eq!(ack_of(&ack(5, -libc::EPERM), 5), Some(-libc::EPERM));
        // A stale ack of an earlier request, then ours, in one datagram.
        let mut two = ack(4, -libc::EEXIST);
        two.extend(ack(5, 0));
        assert_eq!(ack_of(&two, 5), Some(0));
        assert_eq!(ack_of(&ack(4, 0), 5), None);
        // Truncated, a length beyond the datagram, a zero length: no answer, no panic.
        let good = ack(5, 0);
        for cut in 0..good.len() {
            assert_eq!(ack_of(&good[..cut], 5), None, "cut at {cut}");
        }
        let mut long = good.clone();
        long[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert_eq!(ack_of(&long, 5), None);
        let mut zero = good;
        zero[0..4].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(ack_of(&zero, 5), None);
    }

    #[test]
    fn the_announcement_names_the_address_as_sender_and_target() {
        let mac = [2, 0, 0, 0, 0, 5];
        let p = announcement(mac, Ipv4Addr::new(10, 9, 8, 7));
        assert_eq!(&p[0..8], &[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(&p[8..14], &mac);
        assert_eq!(&p[14..18], &[10, 9, 8, 7]);
        assert_eq!(&p[18..24], &[0; 6]);
        assert_eq!(&p[24..28], &[10, 9, 8, 7]);
    }
}
