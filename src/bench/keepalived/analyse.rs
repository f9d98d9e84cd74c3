//! A round's figures from the recorded events: takeover, outage, dual holders.

use super::*;

/// Longest stretch in [from, to] without a reply.
pub(super) fn outage(evs: &[Ev], from: Instant, to: Instant) -> f64 {
    let mut last = from;
    let mut worst = Duration::ZERO;
    for e in evs {
        if let Ev::Reply { t, .. } = *e {
            if t > from && t <= to {
                worst = worst.max(t - last);
                last = t;
            }
        }
    }
    crate::bench::ms(worst.max(to.saturating_duration_since(last)))
}

/// Time in [from, to] with the VIP on two or more hosts, starting from `held`.
pub(super) fn dual(held: [bool; HOSTS + 1], evs: &[Ev], from: Instant, to: Instant) -> f64 {
    let mut held = held;
    let mut total = Duration::ZERO;
    let mut at = from;
    let count = |h: &[bool; HOSTS + 1]| h.iter().filter(|x| **x).count();
    for e in evs {
        if let Ev::Addr { t, host, on } = *e {
            if t > to {
                break;
            }
            if t > at {
                if count(&held) >= 2 {
                    total += t - at;
                }
                at = t;
            }
            held[host] = on;
        }
    }
    if count(&held) >= 2 && to > at {
        total += to - at;
    }
    crate::bench::ms(total)
}

/// The holders at `at`, from `held` at the start of `evs`.
pub(super) fn held_at(held: [bool; HOSTS + 1], evs: &[Ev], at: Instant) -> [bool; HOSTS + 1] {
    let mut h = held;
    for e in evs {
        if let Ev::Addr { t, host, on } = *e {
            if t > at {
                break;
            }
            h[host] = on;
        }
    }
    h
}

pub(super) fn analyse(
    held: [bool; HOSTS + 1],
    evs: &[Ev],
    holder_mac: [u8; 6],
    t0: Instant,
    t1: Instant,
    t2: Instant,
    settled: bool,
) -> Round {
    let takeover = evs.iter().find_map(|e| match *e {
        Ev::Reply { t, mac } if t > t0 && t <= t1 && mac != holder_mac => {
            Some(crate::bench::ms(t - t0))
        }
        _ => None,
    });
    // When another host added the VIP, and when the first gratuitous ARP came: the
    // takeover split into the election (and, for electd, the hook's processes) and
    // the announcement.
    let added = evs.iter().find_map(|e| match *e {
        Ev::Addr { t, host, on: true } if t > t0 && t <= t1 && !held[host] => {
            Some(crate::bench::ms(t - t0))
        }
        _ => None,
    });
    let garp = evs.iter().find_map(|e| match *e {
        Ev::Garp { t } if t > t0 && t <= t1 => Some(crate::bench::ms(t - t0)),
        _ => None,
    });
    Round {
        takeover_ms: takeover,
        added_ms: added,
        garp_ms: garp,
        outage_ms: outage(evs, t0, t1),
        dual_ms: dual(held, evs, t0, t1),
        return_dual_ms: dual(held_at(held, evs, t1), evs, t1, t2),
        return_outage_ms: outage(evs, t1, t2),
        return_garps: evs
            .iter()
            .filter(|e| matches!(e, Ev::Garp { t } if *t > t1 && *t <= t2))
            .count(),
        settled,
    }
}

// ---------------------------------------------------------------- the namespaces
