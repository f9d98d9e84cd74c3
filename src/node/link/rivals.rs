//! The bookkeeping of *rival* incarnations that the link ([`super::incarnation`]) and
//! the replay window (`crate::security::replay`) share: the rule of docs/security.md,
//! "One datagram" (a higher incarnation is heard at once, the one it displaces kept
//! while pending, taken back after two datagrams in a row, forgotten after two of the
//! current one).

/// Datagrams in a row that take a rival back, or confirm the current incarnation
/// against it.
pub(crate) const IN_A_ROW: u8 = 2;

/// Rivals kept per peer: a restart not yet confirmed and one forged datagram after it
/// need two (the lowest incarnation is dropped for a third).
pub(crate) const RIVALS: usize = 2;

/// A rival as both layers keep it: its incarnation and its two run counters.
pub(crate) trait Rival {
    /// The rival's incarnation.
    fn incarnation(&self) -> u64;
    /// (its datagrams since the current incarnation's last one, the current one's
    /// datagrams since the rival's last one).
    fn runs(&mut self) -> (&mut u8, &mut u8);
}

/// A datagram of the current incarnation: every rival's run is broken, and a rival the
/// current one was heard [`IN_A_ROW`] times against is forgotten.
pub(crate) fn heard_current<R: Rival>(rivals: &mut Vec<R>) {
    for r in rivals.iter_mut() {
        let (run, current_run) = r.runs();
        *run = 0;
        *current_run = current_run.saturating_add(1);
    }
    rivals.retain_mut(|r| *r.runs().1 < IN_A_ROW);
}

/// Keep `r` among `rivals`, in place of one of its incarnation, at most [`RIVALS`]: the
/// lowest incarnation goes first (a later life of the peer ends every earlier one).
pub(crate) fn keep<R: Rival>(rivals: &mut Vec<R>, r: R) {
    let incarnation = r.incarnation();
    rivals.retain(|x| x.incarnation() != incarnation);
    rivals.push(r);
    if rivals.len() > RIVALS {
        let lowest = (0..rivals.len())
            .min_by_key(|&k| rivals[k].incarnation())
            .unwrap_or(0);
        rivals.swap_remove(lowest);
    }
}

/// A higher incarnation displaced the current one, kept as `r` (see [`keep`]): every
/// rival's runs start over.
pub(crate) fn displaced<R: Rival>(rivals: &mut Vec<R>, r: R) {
    for x in rivals.iter_mut() {
        let (run, current_run) = x.runs();
        *run = 0;
        *current_run = 0;
    }
    keep(rivals, r);
}
