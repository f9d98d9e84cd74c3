//! What the client and the hosts see, recorded from this process: the VIP held per
//! host (polled in each namespace), every echo reply with its sender's MAC, every
//! gratuitous ARP.

use super::*;

#[derive(Clone, Copy, Debug)]
pub(super) enum Ev {
    Reply { t: Instant, mac: [u8; 6] },
    Garp { t: Instant },
    Addr { t: Instant, host: usize, on: bool },
}

impl Ev {
    pub(super) fn t(&self) -> Instant {
        match *self {
            Ev::Reply { t, .. } | Ev::Garp { t } | Ev::Addr { t, .. } => t,
        }
    }
}

#[derive(Default)]
pub(super) struct Inner {
    pub(super) evs: Vec<Ev>,
    pub(super) held: [bool; HOSTS + 1],
    /// The current run of replies from one MAC: (mac, first, last).
    pub(super) streak: Option<([u8; 6], Instant, Instant)>,
}

#[derive(Default)]
pub(super) struct Recorder {
    pub(super) inner: Mutex<Inner>,
    pub(super) stop: AtomicBool,
    /// Packets the packet socket could not parse as Ethernet (counted, not fatal).
    pub(super) dropped: std::sync::atomic::AtomicU64,
}

impl Recorder {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub(super) fn push(&self, ev: Ev) {
        let mut g = self.lock();
        match ev {
            Ev::Addr { host, on, .. } => g.held[host] = on,
            Ev::Reply { t, mac } => {
                g.streak = match g.streak {
                    Some((m, first, last))
                        if m == mac && t.duration_since(last) < Duration::from_millis(20) =>
                    {
                        Some((m, first, t))
                    }
                    _ => Some((mac, t, t)),
                };
            }
            Ev::Garp { .. } => {}
        }
        g.evs.push(ev);
    }
    /// The holders now and the events from now on.
    pub(super) fn start(&self) -> [bool; HOSTS + 1] {
        let mut g = self.lock();
        g.evs.clear();
        g.held
    }
    /// Only `host` holds the VIP and the client has had its replies for `streak`.
    pub(super) fn settled_on(&self, host: usize, mac: [u8; 6], streak: Duration) -> bool {
        let g = self.lock();
        let only = (1..=HOSTS).all(|h| g.held[h] == (h == host));
        only && matches!(g.streak, Some((m, first, last)) if m == mac
            && last.duration_since(first) >= streak && last.elapsed() < Duration::from_millis(20))
    }
    pub(super) fn events(&self) -> Vec<Ev> {
        let mut v = self.lock().evs.clone();
        v.sort_by_key(|e| e.t());
        v
    }
}

pub(super) fn enter_netns(name: &str) -> std::io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{name}"))?;
    // SAFETY: setns on a valid descriptor; it changes only this thread's namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this thread's namespace has `vip` (network order) on an interface.
pub(super) fn holds(vip: u32) -> bool {
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return false;
        }
        let mut p = ifap;
        let mut found = false;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                let sin = a as *const libc::sockaddr_in;
                found |= (*sin).sin_addr.s_addr == vip;
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(ifap);
        found
    }
}

pub(super) fn poller(rec: Arc<Recorder>, ns: String, host: usize, vip: u32) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let mut was = None;
    while !rec.stop.load(Ordering::Relaxed) {
        let on = holds(vip);
        if was != Some(on) {
            rec.push(Ev::Addr {
                t: Instant::now(),
                host,
                on,
            });
            was = Some(on);
        }
        // Sampling period of the address poll (not a synchronisation).
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

pub(super) fn checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub(super) fn socket(domain: i32, ty: i32, proto: i32) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: a plain socket(2); the descriptor is owned from here on.
    let fd = unsafe { libc::socket(domain, ty, proto) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Echo requests to the VIP every millisecond from the client's namespace.
pub(super) fn pinger(rec: Arc<Recorder>, ns: String, vip: u32, id: u16) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let s = socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP)?;
    // SAFETY: sockaddr_in is a plain C struct; all-zero bytes are a valid value of it.
    let mut to: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    to.sin_family = libc::AF_INET as libc::sa_family_t;
    to.sin_addr.s_addr = vip;
    let mut next = Instant::now();
    let mut seq: u16 = 0;
    while !rec.stop.load(Ordering::Relaxed) {
        let mut pkt = [0u8; 16];
        pkt[0] = 8;
        pkt[4..6].copy_from_slice(&id.to_be_bytes());
        pkt[6..8].copy_from_slice(&seq.to_be_bytes());
        let c = checksum(&pkt);
        pkt[2..4].copy_from_slice(&c.to_be_bytes());
        // SAFETY: sendto with a valid buffer and address; an error (no route, no ARP
        // answer yet) is what a client sees too: the reply simply does not come.
        unsafe {
            libc::sendto(
                s.as_raw_fd(),
                pkt.as_ptr().cast(),
                pkt.len(),
                libc::MSG_DONTWAIT,
                (&to as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as u32,
            );
        }
        seq = seq.wrapping_add(1);
        next += Duration::from_millis(1);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    Ok(())
}

/// Every echo reply from the VIP (with its source MAC) and every gratuitous ARP for it.
pub(super) fn sniffer(rec: Arc<Recorder>, ns: String, vip: u32, id: u16) -> std::io::Result<()> {
    enter_netns(&ns)?;
    let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
    let s = socket(libc::AF_PACKET, libc::SOCK_RAW, proto)?;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 50_000,
    };
    // SAFETY: setsockopt with a timeval of the right size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            size_of::<libc::timeval>() as u32,
        );
    }
    let vip_b = vip.to_ne_bytes();
    let mut buf = [0u8; 2048];
    while !rec.stop.load(Ordering::Relaxed) {
        // SAFETY: sockaddr_ll is a plain C struct; all-zero bytes are a valid value of it.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: recvfrom into our buffer and address.
        let n = unsafe {
            libc::recvfrom(
                s.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                (&mut from as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        let t = Instant::now();
        if n < 14 || from.sll_pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let f = &buf[..n as usize];
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&f[6..12]);
        match u16::from_be_bytes([f[12], f[13]]) {
            0x0800 if f.len() >= 14 + 20 => {
                let ip = &f[14..];
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                if ip[9] != 1 || ip[12..16] != vip_b || ip.len() < ihl + 8 {
                    continue;
                }
                let icmp = &ip[ihl..];
                if icmp[0] == 0 && icmp[4..6] == id.to_be_bytes() {
                    rec.push(Ev::Reply { t, mac });
                }
            }
            // ARP: sender IP at 14+14, target IP at 14+24; gratuitous: both the VIP.
            0x0806 if f.len() >= 14 + 28 => {
                if f[28..32] != vip_b || f[38..42] != vip_b {
                    continue;
                }
                rec.push(Ev::Garp { t });
            }
            0x0800 | 0x0806 => {
                rec.dropped.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- analysis
