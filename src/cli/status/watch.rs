//! `electd watch`: every node's `/watch` stream followed at once, each leader change
//! printed as it arrives, and a `cluster` line when the connected nodes agree (paused
//! ones aside, as `electd status` leaves them out).

use super::*;

/// A `/watch` stream silent for this long is taken as broken: the server sends a
/// keep-alive comment after every [`KEEP_ALIVE`] of silence, so three periods without a
/// byte mean a stopped, hung or cut-off node (or a server too loaded to write for
/// that long), not a quiet one.
pub(super) const IDLE: Duration = Duration::from_secs(3 * KEEP_ALIVE.as_secs());

/// Why a node's `/watch` stream ended, for a person.
pub(super) fn stream_error(e: &std::io::Error, addr: SocketAddr) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => format!(
            "{addr} silent for {}s, not even the keep-alive it sends every {}s: the node is \
             stopped, hung or cut off",
            IDLE.as_secs(),
            KEEP_ALIVE.as_secs()
        ),
        ErrorKind::ConnectionRefused => {
            format!("connection refused by {addr} (is electd running there?)")
        }
        _ => format!("{addr}: {e}"),
    }
}

/// What a node's stream thread reports to the printer.
pub(super) enum Report {
    Connected(NodeId),
    Gone(NodeId, String),
    Event(NodeId, Value),
}

pub(super) fn rfc3339_ms(at_ms: u64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms);
    humantime::format_rfc3339_millis(t).to_string()
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn watch(args: WatchArgs) -> ExitCode {
    let roster = match load_roster(&args.config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("electd: error: {e:#}");
            return ExitCode::from(1);
        }
    };
    // A group the cluster does not run: every node would answer 404, which the
    // reconnecting readers below reported as "unreachable" until the end.
    if let (Some(a), Some(runs)) = (&args.algorithm, &roster.algorithms) {
        if !runs.iter().any(|r| r == a.0.as_str()) {
            eprintln!(
                "electd: error: {} runs {}, not {}",
                args.config.display(),
                runs.join(", "),
                a.0
            );
            return ExitCode::from(1);
        }
    }
    let path = match args.algorithm {
        Some(a) => format!("/watch?algorithm={}", a.0),
        None => "/watch".to_string(),
    };
    let (tx, rx) = std::sync::mpsc::channel::<Report>();
    for (id, http) in roster.peers.clone() {
        let tx = tx.clone();
        let path = path.clone();
        // Detached: the process ends when the printer returns.
        std::thread::spawn(move || loop {
            let mut announced = false;
            let outcome = resolve(&http).and_then(|addr| {
                // Idle limit above the server's keep-alive: a frozen node is reported.
                read_events(addr, &path, Duration::from_secs(1), Some(IDLE), |text| {
                    let Some(data) = text.lines().find_map(|l| l.strip_prefix("data:")) else {
                        return true; // keep-alive comment
                    };
                    let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
                        return true;
                    };
                    if !announced {
                        announced = true;
                        if tx.send(Report::Connected(id)).is_err() {
                            return false;
                        }
                    }
                    tx.send(Report::Event(id, v)).is_ok()
                })
                .map_err(|e| stream_error(&e, addr))
            });
            let why = match outcome {
                Ok(()) => "stream ended".to_string(),
                Err(e) => e,
            };
            if tx.send(Report::Gone(id, why)).is_err() {
                return;
            }
            // Reconnect pace: a restarting node is picked up within half a second.
            std::thread::sleep(Duration::from_millis(500));
        });
    }
    drop(tx);
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut p = Printer::new(args.format == WatchFormat::Json, roster.peers.len());
    loop {
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(w) => w,
                None => return ExitCode::SUCCESS,
            },
            None => Duration::from_secs(3600),
        };
        match rx.recv_timeout(wait) {
            Ok(r) => p.report(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return ExitCode::from(1),
        }
    }
}

pub(super) struct Printer {
    json: bool,
    /// Number of roster nodes: agreement is announced only once each has been heard
    /// of (connected or found unreachable).
    roster: usize,
    /// algorithm → node → (leader, term), for the connected nodes.
    views: BTreeMap<String, BTreeMap<NodeId, (Option<NodeId>, u64)>>,
    /// node → connected (false once reported unreachable).
    connected: BTreeMap<NodeId, bool>,
    /// algorithm → the leader (and term) last announced as agreed.
    agreed: BTreeMap<String, (NodeId, u64)>,
    /// The connected nodes whose last event said they are paused (`/admin/pause`:
    /// they simulate a crash and name no leader). Left out of the agreement, as
    /// `electd status` leaves them out.
    paused: std::collections::BTreeSet<NodeId>,
    /// Tests: the JSON lines, kept instead of printed.
    kept: Option<Vec<Value>>,
}

impl Printer {
    pub(super) fn new(json: bool, roster: usize) -> Printer {
        Printer {
            json,
            roster,
            views: BTreeMap::new(),
            connected: BTreeMap::new(),
            agreed: BTreeMap::new(),
            paused: Default::default(),
            kept: None,
        }
    }

    /// A printer that keeps its JSON lines (see [`Printer::kept`]) instead of printing.
    #[cfg(test)]
    pub(super) fn keeping(roster: usize) -> Printer {
        Printer {
            kept: Some(Vec::new()),
            ..Printer::new(true, roster)
        }
    }

    /// What a [`Printer::keeping`] printer would have printed.
    #[cfg(test)]
    pub(super) fn kept(&self) -> &[Value] {
        self.kept.as_deref().unwrap_or_default()
    }

    pub(super) fn out(&mut self, json: Value, text: String) {
        if let Some(k) = self.kept.as_mut() {
            k.push(json);
        } else if self.json {
            println!("{json}");
        } else {
            println!("{text}");
        }
    }

    pub(super) fn report(&mut self, r: Report) {
        match r {
            Report::Connected(id) => {
                self.connected.insert(id, true);
                self.out(
                    serde_json::json!({"type": "connected", "node": id, "at_ms": now_ms()}),
                    format!("{} node {id}: connected", rfc3339_ms(now_ms())),
                );
            }
            Report::Gone(id, why) => {
                let was = self.connected.insert(id, false);
                self.paused.remove(&id);
                for v in self.views.values_mut() {
                    v.remove(&id);
                }
                if was != Some(false) {
                    self.out(
                        serde_json::json!({"type": "unreachable", "node": id, "error": why, "at_ms": now_ms()}),
                        format!("{} node {id}: unreachable ({why})", rfc3339_ms(now_ms())),
                    );
                }
                let algorithms: Vec<String> = self.views.keys().cloned().collect();
                for a in algorithms {
                    self.check_agreement(&a);
                }
            }
            Report::Event(id, v) => {
                let Some(algorithm) = v["algorithm"].as_str().map(str::to_string) else {
                    return; // `lagged`: a fresh snapshot follows
                };
                let leader = v["leader"].as_u64().map(|l| l as NodeId);
                let term = v["term"].as_u64().unwrap_or(0);
                let at = v["at_ms"].as_u64().unwrap_or_else(now_ms);
                let initial = v["initial"].as_bool().unwrap_or(false);
                let paused = v["paused"].as_bool().unwrap_or(false);
                let was_paused = if paused {
                    !self.paused.insert(id)
                } else {
                    self.paused.remove(&id)
                };
                self.views
                    .entry(algorithm.clone())
                    .or_default()
                    .insert(id, (leader, term));
                let mut j = v.clone();
                j["type"] = "leader".into();
                let who = leader.map_or("no leader".to_string(), |l| format!("leader {l}"));
                let verb = if initial { "follows" } else { "now follows" };
                let text = if paused {
                    format!(
                        "{} {algorithm:<14} node {id} is paused (it simulates a crash: \
                         POST /admin/resume)",
                        rfc3339_ms(at)
                    )
                } else {
                    format!(
                        "{} {algorithm:<14} node {id} {verb} {who} (term {term})",
                        rfc3339_ms(at)
                    )
                };
                self.out(j, text);
                if paused != was_paused {
                    // Every group's agreement changes with the node's standing.
                    let algorithms: Vec<String> = self.views.keys().cloned().collect();
                    for a in algorithms {
                        self.check_agreement(&a);
                    }
                } else {
                    self.check_agreement(&algorithm);
                }
            }
        }
    }

    /// Announce when every connected node (paused ones aside) follows one leader of
    /// `algorithm` that was
    /// not the last one announced.
    pub(super) fn check_agreement(&mut self, algorithm: &str) {
        let Some(views) = self.views.get(algorithm) else {
            return;
        };
        if self.connected.len() < self.roster {
            return; // some node has not been heard of yet
        }
        let connected: Vec<NodeId> = self
            .connected
            .iter()
            .filter(|(id, &c)| c && !self.paused.contains(id))
            .map(|(&id, _)| id)
            .collect();
        if connected.is_empty() || connected.iter().any(|id| !views.contains_key(id)) {
            return;
        }
        let first = views[&connected[0]];
        let Some(leader) = first.0 else {
            return;
        };
        if connected.iter().any(|id| views[id].0 != Some(leader)) {
            return;
        }
        let term = connected.iter().map(|id| views[id].1).max().unwrap_or(0);
        if self.agreed.get(algorithm).map(|a| a.0) == Some(leader) {
            return;
        }
        self.agreed.insert(algorithm.to_string(), (leader, term));
        self.out(
            serde_json::json!({
                "type": "cluster", "algorithm": algorithm, "leader": leader, "term": term,
                "nodes": connected, "at_ms": now_ms(),
            }),
            format!(
                "{} {algorithm:<14} cluster: leader {leader} (term {term}), agreed by nodes {connected:?}",
                rfc3339_ms(now_ms())
            ),
        );
    }
}
