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
//! - What waits in the heartbeat socket is a pure refresh by construction (the node
//!   excludes groups where a heartbeat draws an answer: `[lease] require_quorum`, Raft,
//!   a group electing or handing over). The gate still authenticates and checks every
//!   datagram read from it, exactly as from the main socket.
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

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Operation.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Operand.
    pub k: u32,
}

const LD_LEN: u16 = 0x80; // BPF_LD | BPF_W | BPF_LEN
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const LD_H_ABS: u16 = 0x28; // BPF_LD | BPF_H | BPF_ABS
const LD_B_ABS: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// Index of the main socket in the reuseport group.
pub const MAIN: u32 = 0;
/// Index of the heartbeat socket in the reuseport group.
pub const BATCHED: u32 = 1;

/// Bytes a datagram must start with to go to the heartbeat socket: `(offset, width,
/// value)` loads (width 4, 2 or 1; big endian, as BPF loads), and the least length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The datagram is at least this long (the whole prefix).
    pub min_len: u32,
    /// Compared loads.
    pub loads: Vec<(u32, u8, u32)>,
}

impl Pattern {
    /// The pattern of `prefix`, comparing the bytes where `compare` is true.
    pub fn new(prefix: &[u8], compare: &[bool]) -> Pattern {
        let mut loads = Vec::new();
        let mut i = 0;
        while i < prefix.len() {
            if !compare.get(i).copied().unwrap_or(false) {
                i += 1;
                continue;
            }
            let run = (i..prefix.len())
                .take_while(|&j| compare.get(j).copied().unwrap_or(false))
                .count();
            let width = match run {
                4.. => 4,
                2..=3 => 2,
                _ => 1,
            };
            let value = prefix[i..i + width]
                .iter()
                .fold(0u32, |v, &b| (v << 8) | u32::from(b));
            loads.push((i as u32, width as u8, value));
            i += width;
        }
        Pattern {
            min_len: prefix.len() as u32,
            loads,
        }
    }

    /// Instructions of this pattern's block (see [`program`]).
    fn len(&self) -> usize {
        3 + 2 * self.loads.len()
    }
}

/// Why no program could be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// A pattern's block is longer than a classic BPF jump reaches (255).
    #[error("a heartbeat pattern of {0} instructions is longer than a BPF jump reaches")]
    TooLong(usize),
}

/// The selection program: [`BATCHED`] for a datagram matching any of `patterns`,
/// [`MAIN`] otherwise (also for none).
pub fn program(patterns: &[Pattern]) -> Result<Vec<Insn>, ProgramError> {
    let mut p = Vec::new();
    for pat in patterns {
        let block = pat.len();
        if block > 255 {
            return Err(ProgramError::TooLong(block));
        }
        // Each jump on a mismatch lands just past this block (the next pattern's
        // first instruction, or the final `ret MAIN`).
        let start = p.len();
        let miss = |at: usize| (start + block - at - 1) as u8;
        p.push(Insn {
            code: LD_LEN,
            jt: 0,
            jf: 0,
            k: 0,
        });
        let at = p.len();
        p.push(Insn {
            code: JGE_K,
            jt: 0,
            jf: miss(at),
            k: pat.min_len,
        });
        for &(off, width, value) in &pat.loads {
            let code = match width {
                4 => LD_W_ABS,
                2 => LD_H_ABS,
                _ => LD_B_ABS,
            };
            p.push(Insn {
                code,
                jt: 0,
                jf: 0,
                k: off,
            });
            let at = p.len();
            p.push(Insn {
                code: JEQ_K,
                jt: 0,
                jf: miss(at),
                k: value,
            });
        }
        p.push(Insn {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: BATCHED,
        });
    }
    p.push(Insn {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: MAIN,
    });
    Ok(p)
}

/// Run `prog` over `pkt` as the kernel does (the subset [`program`] emits), for the
/// tests. A load past the end returns 0.
#[cfg(test)]
fn run(prog: &[Insn], pkt: &[u8]) -> u32 {
    let mut a: u32 = 0;
    let mut pc = 0usize;
    // Jumps only go forward: at most one pass.
    while let Some(i) = prog.get(pc) {
        pc += 1;
        match i.code {
            LD_LEN => a = pkt.len() as u32,
            LD_W_ABS | LD_H_ABS | LD_B_ABS => {
                let width = match i.code {
                    LD_W_ABS => 4,
                    LD_H_ABS => 2,
                    _ => 1,
                };
                let off = i.k as usize;
                let Some(bytes) = pkt.get(off..off + width) else {
                    return 0;
                };
                a = bytes.iter().fold(0u32, |v, &b| (v << 8) | u32::from(b));
            }
            JEQ_K | JGE_K => {
                let hit = if i.code == JEQ_K { a == i.k } else { a >= i.k };
                pc += usize::from(if hit { i.jt } else { i.jf });
            }
            RET_K => return i.k,
            _ => return 0,
        }
    }
    0
}

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
pub struct Batched {
    /// Its length in the buffer.
    pub len: usize,
    /// Its UDP source.
    pub from: SocketAddr,
    /// When the kernel received it (`None`: no timestamp came with it).
    pub at: Option<SystemTime>,
}

impl HeartbeatSocket {
    /// Select the heartbeats of `patterns` into this socket from now on.
    pub fn select(&self, patterns: &[Pattern]) -> io::Result<()> {
        attach(&self.socket, &program(patterns).map_err(io::Error::other)?)
    }

    /// Read the oldest datagram waiting, without waiting: `None` when there is none.
    pub fn try_recv(&self, buf: &mut [u8]) -> Option<io::Result<Batched>> {
        // SAFETY: plain C structs, zero is a valid value of each.
        let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut control = [0u64; 8]; // 64 bytes, aligned: room for one timespec cmsg
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
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
pub struct Drain {
    /// The runtime's time.
    pub now: Duration,
    /// The wall clock.
    pub wall: SystemTime,
}

/// How far the two clocks may drift apart between drains, and how long before the
/// previous drain a datagram read now may have been stamped (stamped just before it,
/// queued just after).
pub const SLACK: Duration = Duration::from_millis(2);

/// When a datagram stamped `at` and read in drain `cur` arrived, on the runtime's
/// clock; `prev` is the drain before (nothing read now arrived before it). Whenever the
/// stamp cannot be trusted it counts as `cur.now`, so a deadline computed from it may
/// come late by one drain, never early: no stamp, a stamp from the future or from
/// before `prev`, or a wall clock that did not advance with the runtime's since `prev`
/// (stepped or slewed by more than [`SLACK`]: every stamp of this drain is suspect).
pub fn arrival(at: Option<SystemTime>, cur: Drain, prev: Drain) -> Duration {
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
mod tests {
    use super::*;

    #[test]
    fn the_program_selects_exactly_the_matching_prefixes() {
        let a = Pattern::new(b"\x08\x01heartbeat-a", &[true; 13]);
        // Bytes 4..7 ("-XY") are not compared.
        let mut mask = [true; 10];
        mask[4..7].fill(false);
        let b = Pattern::new(b"\x08\x01hb-XYZ-b", &mask);
        let prog = program(&[a, b]).unwrap();
        assert_eq!(run(&prog, b"\x08\x01heartbeat-a"), BATCHED);
        assert_eq!(run(&prog, b"\x08\x01heartbeat-a and more"), BATCHED);
        assert_eq!(run(&prog, b"\x08\x01heartbeat-b"), MAIN);
        assert_eq!(run(&prog, b"\x08\x01heartbeat-"), MAIN, "too short");
        assert_eq!(run(&prog, b"\x08\x01hb-XYZ-b"), BATCHED);
        assert_eq!(run(&prog, b"\x08\x01hb\xff\xfe\xfdZ-b!"), BATCHED);
        assert_eq!(run(&prog, b"\x08\x01hb\xff\xfe\xfd\xfc-b"), MAIN);
        assert_eq!(run(&prog, b"\x08\x01hb-XYZ-c"), MAIN);
        assert_eq!(run(&prog, b""), MAIN);
        assert_eq!(run(&program(&[]).unwrap(), b"\x08\x01heartbeat-a"), MAIN);
    }

    #[test]
    fn every_single_byte_change_of_a_compared_byte_is_a_mismatch() {
        let prefix: Vec<u8> = (0..61u8).map(|i| i.wrapping_mul(37)).collect();
        let mut mask = vec![true; prefix.len()];
        mask[20..52].fill(false);
        let prog = program(&[Pattern::new(&prefix, &mask)]).unwrap();
        assert_eq!(run(&prog, &prefix), BATCHED);
        for i in 0..prefix.len() {
            for flip in [1u8, 0x80, 0xff] {
                let mut p = prefix.clone();
                p[i] ^= flip;
                let want = if mask[i] { MAIN } else { BATCHED };
                assert_eq!(run(&prog, &p), want, "byte {i} ^ {flip:#x}");
            }
        }
    }

    #[test]
    fn a_pattern_beyond_a_jump_is_refused() {
        let long = vec![1u8; 600];
        let odd: Vec<bool> = (0..600).map(|i| i % 2 == 0).collect();
        assert!(matches!(
            program(&[Pattern::new(&long, &odd)]),
            Err(ProgramError::TooLong(_))
        ));
    }

    #[test]
    fn arrival_takes_the_kernel_time_and_never_an_early_one() {
        let ms = Duration::from_millis;
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let cur = Drain {
            now: Duration::from_secs(500),
            wall,
        };
        let prev = Drain {
            now: cur.now - ms(90),
            wall: wall - ms(90),
        };
        let now = cur.now;
        // Arrived 40 ms ago: 40 ms before now.
        assert_eq!(arrival(Some(wall - ms(40)), cur, prev), now - ms(40));
        // Just before the previous drain (queued just after it).
        assert_eq!(arrival(Some(wall - ms(91)), cur, prev), now - ms(91));
        // Long before the previous drain: the wall clock moved; now.
        assert_eq!(arrival(Some(wall - ms(500)), cur, prev), now);
        // From the future, or none: now.
        assert_eq!(arrival(Some(wall + ms(5)), cur, prev), now);
        assert_eq!(arrival(None, cur, prev), now);
        // The wall clock jumped 50 ms ahead since the previous drain (an NTP step, a
        // VM resumed): a heartbeat of 10 ms ago looks 60 ms old; now, not 60 ms ago.
        let stepped = Drain {
            now: cur.now,
            wall: wall + ms(50),
        };
        assert_eq!(arrival(Some(wall - ms(10)), stepped, prev), now);
        // ... or back: now again.
        let back = Drain {
            now: cur.now,
            wall: wall - ms(50),
        };
        assert_eq!(arrival(Some(wall - ms(60)), back, prev), now);
        // Within the slack the stamps are used.
        let slewed = Drain {
            now: cur.now,
            wall: wall + ms(1),
        };
        assert_eq!(arrival(Some(wall - ms(9)), slewed, prev), now - ms(10));
    }

    mod wire {
        use super::super::*;
        use crate::contract::algorithm::AlgorithmKind;
        use crate::contract::message::{ElectionTag, Message};
        use crate::contract::rng::Rng;
        use crate::node::Datagram;
        use crate::security::keyring::{Key, Keyring, KEY_LEN};
        use crate::security::wire::{Codec, Header};

        const L: u32 = 5;
        const INC: u64 = 1_764_000_000_123_456;
        const T: u64 = 7;
        const KIND: AlgorithmKind = AlgorithmKind::Bully;

        fn codecs() -> Vec<Codec> {
            let keys = Keyring::new(Key::new([9; KEY_LEN]));
            vec![
                Codec::new("prod-east", &[1, 2, 3, 4, 5], Some(keys)),
                Codec::new("prod-east", &[1, 2, 3, 4, 5], None),
            ]
        }

        fn datagram(from: u32, inc: u64, kind: AlgorithmKind, msg: Message) -> Datagram {
            Datagram {
                from,
                incarnation: inc,
                seq: 0,
                ack: 0,
                group: Some(kind),
                body: Some(msg),
            }
        }

        fn beat(term: u64) -> Message {
            Message::Heartbeat { term, leader: L }
        }

        fn prog(c: &Codec) -> Vec<Insn> {
            let (prefix, compare) = c.heartbeat_prefix(L, INC, KIND, T);
            program(&[Pattern::new(&prefix, &compare)]).unwrap()
        }

        #[test]
        fn every_heartbeat_of_the_followed_leader_is_selected() {
            for c in codecs() {
                let p = prog(&c);
                for counter in [1, 127, 128, 300_000, u64::MAX / 3] {
                    for to in [1, 2, 4, 200] {
                        let h = Header { to, counter };
                        let d = c.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
                        assert_eq!(run(&p, &d), BATCHED, "counter {counter} to {to}");
                    }
                }
            }
        }

        #[test]
        fn nothing_else_is_selected() {
            let h = Header { to: 1, counter: 42 };
            let tag = ElectionTag {
                initiator: L,
                seq: 3,
            };
            for c in codecs() {
                let p = prog(&c);
                let mut others = vec![
                    datagram(L, INC, KIND, beat(T + 1)),
                    datagram(L, INC, KIND, beat(T - 1)),
                    datagram(L, INC, KIND, beat(0)),
                    datagram(L, INC, KIND, Message::Heartbeat { term: T, leader: 4 }),
                    datagram(4, INC, KIND, Message::Heartbeat { term: T, leader: L }),
                    datagram(L, INC + 1, KIND, beat(T)),
                    datagram(L, INC - 1, KIND, beat(T)),
                    datagram(L, INC, AlgorithmKind::Raft, beat(T)),
                    datagram(L, INC, AlgorithmKind::ImprovedBully, beat(T)),
                    datagram(L, INC, KIND, Message::HeartbeatAck { term: T, leader: L }),
                    datagram(L, INC, KIND, Message::Resign { epoch: T }),
                    datagram(
                        L,
                        INC,
                        KIND,
                        Message::Priority {
                            term: T,
                            priority: 1,
                        },
                    ),
                    datagram(
                        L,
                        INC,
                        KIND,
                        Message::Coordinator {
                            leader: L,
                            epoch: T,
                            tag,
                        },
                    ),
                    datagram(L, INC, KIND, Message::Election { tag, epoch: T }),
                ];
                let mut acked = datagram(L, INC, KIND, beat(T));
                acked.ack = 9;
                others.push(acked);
                let mut reliable = datagram(L, INC, KIND, beat(T));
                reliable.seq = 9;
                others.push(reliable);
                others.push(Datagram {
                    from: L,
                    incarnation: INC,
                    seq: 0,
                    ack: 9,
                    group: None,
                    body: None,
                });
                for d in &others {
                    let bytes = c.encode(d, h).unwrap();
                    assert_eq!(run(&p, &bytes), MAIN, "{d:?}");
                }
                // Another cluster, another key.
                let other = Codec::new("prod-west", &[1, 2, 3, 4, 5], None);
                let b = other.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
                assert_eq!(run(&p, &b), MAIN);
                let rotated = Codec::new(
                    "prod-east",
                    &[1, 2, 3, 4, 5],
                    Some(Keyring::new(Key::new([8; KEY_LEN]))),
                );
                let b = rotated.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
                if c.is_authenticated() {
                    assert_eq!(run(&p, &b), MAIN, "another key id");
                }
            }
        }

        /// Whatever the program selects and the codec accepts is that heartbeat: random
        /// corruptions of a real one, and random datagrams.
        #[test]
        fn a_selected_datagram_that_decodes_is_the_followed_heartbeat() {
            let mut rng = Rng::new(17);
            for c in codecs() {
                let p = prog(&c);
                let good = c
                    .encode(
                        &datagram(L, INC, KIND, beat(T)),
                        Header { to: 1, counter: 5 },
                    )
                    .unwrap();
                let (mut selected, mut decoded) = (0, 0);
                for _ in 0..20_000 {
                    let mut b = good.clone();
                    match rng.below(3) {
                        0 => {
                            for _ in 0..=rng.below(3) {
                                let i = rng.below(b.len() as u64) as usize;
                                b[i] = rng.next_u64() as u8;
                            }
                        }
                        1 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
                        _ => {
                            let extra = rng.below(8) as usize;
                            b.extend((0..extra).map(|_| rng.next_u64() as u8));
                        }
                    }
                    if run(&p, &b) != BATCHED {
                        continue;
                    }
                    selected += 1;
                    if let Ok((d, _)) = c.decode(&b) {
                        decoded += 1;
                        assert_eq!(
                            (d.from, d.incarnation, d.seq, d.ack, d.group, d.body),
                            (L, INC, 0, 0, Some(KIND), Some(beat(T)))
                        );
                    }
                }
                // Corruptions of the tag or of the trailing fields stay selected.
                assert!(selected > 100, "{selected}");
                assert!(
                    decoded > 0,
                    "the untouched and the retagged-alike ones decode"
                );
            }
        }
    }

    /// The next datagram of the heartbeat socket, waiting for it up to 5 s.
    async fn batched(hb: &HeartbeatSocket, buf: &mut [u8]) -> Batched {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(r) = hb.try_recv(buf) {
                return r.unwrap();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no datagram on the heartbeat socket within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn the_kernel_sends_matching_datagrams_to_the_heartbeat_socket() {
        let (main, hb) = bind_udp_pair("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let Some(hb) = hb else {
            panic!("this kernel refused SO_ATTACH_REUSEPORT_CBPF or SO_TIMESTAMPNS");
        };
        let to = main.local_addr().unwrap();
        // A second electd on the same address is refused, as without the pair.
        let again = bind_udp_pair(to, true).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AddrInUse);
        hb.select(&[Pattern::new(b"beat", &[true; 4])]).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = SystemTime::now();
        for d in [&b"beat 1"[..], b"other", b"beat 2", b"bea"] {
            tx.send_to(d, to).unwrap();
        }
        // The main socket gets the two others, in order.
        let mut buf = [0u8; 64];
        for want in [&b"other"[..], b"bea"] {
            let (n, from) = tokio::time::timeout(Duration::from_secs(5), main.recv_from(&mut buf))
                .await
                .expect("a datagram on the main socket within 5 s")
                .unwrap();
            assert_eq!(&buf[..n], want);
            assert_eq!(from, tx.local_addr().unwrap());
        }
        for want in [&b"beat 1"[..], b"beat 2"] {
            let got = batched(&hb, &mut buf).await;
            assert_eq!(&buf[..got.len], want);
            assert_eq!(got.from, tx.local_addr().unwrap());
            let at = got.at.expect("a kernel timestamp");
            assert!(
                at >= before - Duration::from_millis(1),
                "stamped after the send"
            );
            assert!(at <= SystemTime::now());
        }
        assert!(hb.try_recv(&mut buf).is_none());
        // Nothing selected: everything to the main socket again.
        hb.select(&[]).unwrap();
        tx.send_to(b"beat 3", to).unwrap();
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), main.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf[..n], b"beat 3");
        assert!(hb.try_recv(&mut buf).is_none());
    }
}
