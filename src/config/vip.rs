//! `[[vip]]`: a virtual IPv4 address held by this node while it leads a group,
//! keepalived's `virtual_ipaddress`, managed inside the daemon (`daemon::vip`): the
//! address is added to the interface with netlink and announced with gratuitous ARP
//! when the node becomes the group's leader, and deleted when it stops leading.
//!
//! ```toml
//! [[vip]]
//! address = "10.0.0.100/24"   # IPv4, with its prefix (/32 when left out)
//! interface = "eth0"
//! algorithm = "bully"         # default: the only algorithm, when there is one
//! garp_count = 3              # gratuitous ARPs sent on taking the address (0..=100)
//! garp_interval = "1s"        # between them (1ms..=1h)
//! ```
//!
//! The address is the daemon's: a node that does not lead the group deletes it, at
//! start too (a killed daemon leaves it behind). The interface must exist where the
//! node runs (`run` and `config check` refuse a name this machine does not have).

use super::raw::RawVip;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::algorithm::AlgorithmKind;
use std::net::Ipv4Addr;
use std::time::Duration;

/// One validated `[[vip]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vip {
    /// The address.
    pub address: Ipv4Addr,
    /// Its prefix length (0..=32).
    pub prefix: u8,
    /// The interface it goes on.
    pub interface: String,
    /// The group whose leader holds it.
    pub algorithm: AlgorithmKind,
    /// Gratuitous ARPs sent each time the address is taken.
    pub garp_count: u32,
    /// Time between two of them.
    pub garp_interval: Duration,
}

impl Vip {
    /// `address/prefix`, the `address` label of the metrics and the logs' name.
    pub fn label(&self) -> String {
        format!("{}/{}", self.address, self.prefix)
    }
}

/// The index of interface `name` in this network namespace, `None` if there is none.
pub fn interface_index(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: if_nametoindex reads the NUL-terminated name.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// Longest interface name Linux accepts (IFNAMSIZ − 1).
const IFNAME_MAX: usize = 15;

impl Validator<'_> {
    /// Every `[[vip]]`, in file order.
    pub(super) fn vips(
        &self,
        raw: &[RawVip],
        algorithms: &[AlgorithmKind],
        peers: &[super::Peer],
    ) -> Result<Vec<Vip>, ConfigError> {
        let mut out: Vec<Vip> = Vec::new();
        for (i, v) in raw.iter().enumerate() {
            let key = |k: &str| format!("vip[{i}].{k}");
            let written = v
                .address
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| self.err(key("address"), "missing, e.g. \"10.0.0.100/24\""))?;
            let (address, prefix) = parse_address(written)
                .map_err(|why| self.err(key("address"), format!("{written:?}: {why}")))?;
            let interface = v
                .interface
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| self.err(key("interface"), "missing, e.g. \"eth0\""))?
                .to_string();
            if interface.len() > IFNAME_MAX
                || interface == "."
                || interface == ".."
                || interface
                    .chars()
                    .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
            {
                return Err(self.err(
                    key("interface"),
                    format!(
                        "{interface:?} is not an interface name (1 to {IFNAME_MAX} characters, \
                         no '/', ':' or spaces)"
                    ),
                ));
            }
            if interface_index(&interface).is_none() {
                self.host_local(self.err(
                    key("interface"),
                    format!("{interface:?}: no such interface on this machine"),
                ))?;
            }
            let algorithm =
                match v.algorithm.as_deref() {
                    Some(name) => {
                        let k: AlgorithmKind = name
                            .parse()
                            .map_err(|e| self.err(key("algorithm"), format!("{e}")))?;
                        if !algorithms.contains(&k) {
                            return Err(
                                self.err(key("algorithm"), format!("{k} is not in `algorithms`"))
                            );
                        }
                        k
                    }
                    None if algorithms.len() == 1 => algorithms[0],
                    None => return Err(self.err(
                        key("algorithm"),
                        "missing: name the group whose leader holds the address (more than one \
                         algorithm runs)",
                    )),
                };
            // A member's own address: the start's delete took it off that host (its
            // HTTP listener then failed), and whoever led would add a copy of it.
            let own = |a: std::net::SocketAddr| a.ip() == std::net::IpAddr::V4(address);
            if let Some(p) = peers.iter().find(|p| {
                own(p.addr)
                    || own(p.http)
                    || p.listen.is_some_and(own)
                    || p.sources.iter().any(|&s| own(s))
            }) {
                return Err(self.err(
                    key("address"),
                    format!(
                        "{address} is node {}'s own address (in [[peer]]): a virtual IP must be \
                         one no member has",
                        p.id
                    ),
                ));
            }
            if let Some(j) = out.iter().position(|o| o.address == address) {
                return Err(self.err(
                    key("address"),
                    format!("{address} is vip[{j}]'s already: one address, one owner"),
                ));
            }
            let garp_count = match v.garp_count {
                None => 3,
                Some(n) if (0..=100).contains(&n) => n as u32,
                Some(n) => {
                    return Err(self.err(key("garp_count"), format!("{n}: must be 0 to 100")))
                }
            };
            let garp_interval = self.duration(
                &key("garp_interval"),
                &v.garp_interval,
                Duration::from_secs(1),
            )?;
            if garp_interval < Duration::from_millis(1) || garp_interval > Duration::from_secs(3600)
            {
                return Err(self.err(key("garp_interval"), "must be 1ms to 1h"));
            }
            out.push(Vip {
                address,
                prefix,
                interface,
                algorithm,
                garp_count,
                garp_interval,
            });
        }
        Ok(out)
    }
}

/// `a.b.c.d` or `a.b.c.d/len`: the address and its prefix (32 when absent). Refuses
/// IPv6 (no neighbour advertisement yet), and addresses no host may hold.
fn parse_address(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let bare = s.split_once('/').map_or(s, |(a, _)| a);
    if bare.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err("IPv6 is not supported by [[vip]] (use the leader-change hook)".into());
    }
    let (addr, prefix) = match s.split_once('/') {
        Some((a, p)) => {
            let n: u8 = p
                .parse()
                .ok()
                .filter(|n| *n <= 32)
                .ok_or_else(|| format!("prefix {p:?} is not 0 to 32"))?;
            (a, n)
        }
        None => (s, 32),
    };
    let ip: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not an IPv4 address like 10.0.0.100"))?;
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || ip.is_loopback() {
        return Err(format!(
            "{ip} cannot be a virtual address (unspecified, broadcast, multicast or loopback)"
        ));
    }
    Ok((ip, prefix))
}

#[cfg(test)]
mod tests {
    use super::parse_address;
    use std::net::Ipv4Addr;

    #[test]
    fn addresses_parse_with_their_prefix_and_bad_ones_say_why() {
        assert_eq!(
            parse_address("10.0.0.100/24"),
            Ok((Ipv4Addr::new(10, 0, 0, 100), 24))
        );
        assert_eq!(
            parse_address("192.168.1.7"),
            Ok((Ipv4Addr::new(192, 168, 1, 7), 32))
        );
        for (bad, needle) in [
            ("10.0.0.100/33", "prefix"),
            ("10.0.0.100/", "prefix"),
            ("10.0.0.100/x", "prefix"),
            ("fe80::1/64", "IPv6"),
            ("10.0.0", "not an IPv4 address"),
            ("", "not an IPv4 address"),
            ("0.0.0.0/24", "cannot be"),
            ("127.0.0.5", "cannot be"),
            ("224.0.0.18", "cannot be"),
            ("255.255.255.255", "cannot be"),
        ] {
            let e = parse_address(bad).expect_err(bad);
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
