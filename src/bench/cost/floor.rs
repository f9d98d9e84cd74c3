//! The floor of the cost section: what the machine charges, right now, for the
//! datagrams an idle node must move, measured in the same run as electd.
//!
//! An absolute share of a core moves with the VM and its neighbours, so each electd
//! node is also reported as a multiple of its floor: a minimal process that sends the
//! same datagrams per second, of the same size, in one burst per heartbeat period (as
//! electd's leaders beat on one schedule), and reads everything it is sent, nothing
//! else. Here that process is one OS thread per node (std::net, a blocking receive
//! whose timeout is the next burst, docs/bench/idle's `thread` floor), whose CPU is its
//! own schedstat line (`/proc/self/task/<tid>/schedstat`). A node that leads a group
//! sends to every other node; a follower to the nodes that lead (Raft's heartbeat acks
//! go to Raft's leader). Addresses are 127.0.0.1, ports the kernel's.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// What one floor node does: datagrams it sends per second, their size, and the
/// indices (in the plan) of the nodes it sends to.
#[derive(Clone, Debug, PartialEq)]
pub struct FloorNode {
    /// Datagrams per second it sends (electd's node's `datagrams_per_sec`).
    pub rate: f64,
    /// Bytes per datagram.
    pub size: usize,
    /// Whom it sends to, round robin (indices into the plan).
    pub to: Vec<usize>,
}

/// Datagrams to send in burst `k` (from 0) at `rate` per second, one burst per
/// `period`: the bursts add up to `rate` per second, without drift.
pub fn burst(rate: f64, period: Duration, k: u64) -> u64 {
    let per = rate * period.as_secs_f64();
    let upto = |k: u64| (per * k as f64).round() as u64;
    upto(k + 1) - upto(k)
}

/// The CPU time of thread `tid` of this process so far, in nanoseconds (schedstat;
/// `None` without it).
fn thread_cpu_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Run `plan` for `windows` consecutive windows of `window` after a warm-up of one
/// second; each node's CPU share (% of a core) in each window, in plan order. `None`
/// when a socket could not be opened or the kernel has no schedstat.
pub fn measure(
    plan: &[FloorNode],
    period: Duration,
    window: Duration,
    windows: usize,
) -> Option<Vec<Vec<f64>>> {
    let sockets: Vec<UdpSocket> = (0..plan.len())
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .ok()?;
    let addrs: Vec<SocketAddr> = sockets
        .iter()
        .map(|s| s.local_addr())
        .collect::<Result<_, _>>()
        .ok()?;
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now() + Duration::from_millis(50);
    let (tx, rx) = mpsc::channel::<(usize, i32)>();
    let mut threads = Vec::new();
    for (i, (socket, node)) in sockets.into_iter().zip(plan).enumerate() {
        let to: Vec<SocketAddr> = node
            .to
            .iter()
            .filter_map(|&j| addrs.get(j).copied())
            .collect();
        let node = node.clone();
        let stop = stop.clone();
        let tx = tx.clone();
        threads.push(std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let _ = tx.send((i, unsafe { libc::gettid() }));
            drop(tx);
            let payload = vec![0x5au8; node.size.max(1)];
            let mut buf = [0u8; 2048];
            let mut next = start;
            let mut k = 0u64;
            let mut rr = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= next {
                    for _ in 0..burst(node.rate, period, k) {
                        if let Some(a) = to.get(rr % to.len().max(1)) {
                            let _ = socket.send_to(&payload, a);
                        }
                        rr = rr.wrapping_add(1);
                    }
                    k += 1;
                    next += period;
                    continue;
                }
                let _ = socket.set_read_timeout(Some(next - now));
                let _ = socket.recv_from(&mut buf);
            }
        }));
    }
    drop(tx);
    let mut tids = vec![0i32; plan.len()];
    for (i, tid) in rx.iter() {
        tids[i] = tid;
    }
    let sample = || -> Option<(Instant, Vec<u64>)> {
        let at = Instant::now();
        let cpu = tids
            .iter()
            .map(|&t| thread_cpu_ns(t))
            .collect::<Option<_>>()?;
        Some((at, cpu))
    };
    std::thread::sleep((start + Duration::from_secs(1)).saturating_duration_since(Instant::now()));
    let mut samples = Vec::new();
    for w in 0..=windows {
        if w > 0 {
            std::thread::sleep(window);
        }
        match sample() {
            Some(s) => samples.push(s),
            None => break,
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    if samples.len() != windows + 1 {
        return None;
    }
    let out = (0..plan.len())
        .map(|i| {
            samples
                .windows(2)
                .map(|w| {
                    let span = w[1].0.duration_since(w[0].0).as_secs_f64();
                    w[1].1[i].saturating_sub(w[0].1[i]) as f64 / 1e9 / span * 100.0
                })
                .collect()
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_add_up_to_the_rate_without_drift() {
        let p = Duration::from_millis(10);
        for rate in [0.0, 100.0, 400.0, 2_400.0, 133.3] {
            let per_second: u64 = (0..100).map(|k| burst(rate, p, k)).sum();
            assert_eq!(per_second, rate.round() as u64, "{rate}");
        }
        // 400/s at 10 ms: 4 a burst, every burst.
        assert!((0..50).all(|k| burst(400.0, p, k) == 4));
    }

    #[test]
    fn a_floor_node_costs_something_and_is_measured_per_window() {
        let plan = vec![
            FloorNode {
                rate: 200.0,
                size: 80,
                to: vec![1],
            },
            FloorNode {
                rate: 0.0,
                size: 80,
                to: vec![0],
            },
        ];
        let Some(m) = measure(
            &plan,
            Duration::from_millis(10),
            Duration::from_millis(300),
            2,
        ) else {
            return; // no schedstat on this kernel: nothing to measure
        };
        assert_eq!(m.len(), 2);
        for shares in &m {
            assert_eq!(shares.len(), 2);
            assert!(shares.iter().all(|s| s.is_finite() && *s >= 0.0), "{m:?}");
        }
        // The sender woke 100 times a second and sent 200 datagrams: it ran.
        assert!(m[0].iter().sum::<f64>() > 0.0, "{m:?}");
    }
}
