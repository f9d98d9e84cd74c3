//! The health checks the runtime itself runs (`roster`, `term`; `send` and `persist`
//! where they fail) and its rate-limited error log.

use super::*;

impl Driver {
    /// Log an error line of `class` at a bounded rate ([`crate::security::droplog`]'s buckets):
    /// a failure that repeats every batch writes a few lines a minute, with the count
    /// of the lines left out.
    pub(super) fn log_error(&mut self, class: &'static str, line: &str) {
        match self.errlog.record(class, self.now()) {
            Verdict::Quiet => {}
            Verdict::Log => tracing::error!(node = self.cfg.id, class, "{line}"),
            Verdict::Summary(n) => tracing::error!(
                node = self.cfg.id,
                class,
                "{line} ({n} more like it since the last report)"
            ),
        }
    }

    /// The `roster` health check: every peer's current address is of a family the
    /// bound socket can send to (a name may resolve to one it cannot).
    pub(super) fn check_roster(&mut self) {
        let Some(bound) = self.bound else { return };
        let mut bad: Vec<String> = self
            .peers
            .iter()
            .filter(|(id, a)| **id != self.cfg.id && !crate::config::reachable_from(bound, **a))
            .map(|(id, a)| format!("peer {id} at {a}"))
            .collect();
        bad.sort();
        let why = (!bad.is_empty()).then(|| {
            format!(
                "this node's socket {bound} cannot send to {} (another address family)",
                bad.join(", ")
            )
        });
        if let Some(w) = &why {
            self.log_error("roster", w);
        }
        self.shared.set_problem("roster", why);
    }

    /// The `term` health check: every group's term within its peers' reach (see
    /// [`Node::terms_out_of_reach`]).
    pub(super) fn check_terms(&mut self) {
        let far = self.node.terms_out_of_reach();
        if far.is_empty() {
            if std::mem::take(&mut self.term_unhealthy) {
                tracing::info!(
                    node = self.cfg.id,
                    "every group's term is within its peers' reach again"
                );
                self.shared.set_problem("term", None);
            }
            return;
        }
        let what: Vec<String> = far
            .iter()
            .map(|(kind, mine, peer, theirs)| {
                format!("{kind} term {mine} is more than 2^31 above node {peer}'s ({theirs})")
            })
            .collect();
        let why = format!(
            "{}: the peers drop this node's datagrams (future_epoch), so it takes part in \
             no election; its state file was damaged or edited: stop it, set the term to \
             the cluster's or move the file away",
            what.join("; ")
        );
        self.log_error("term", &why);
        self.shared.set_problem("term", Some(why));
        self.term_unhealthy = true;
    }
}
