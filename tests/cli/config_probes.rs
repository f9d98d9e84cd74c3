//! The config probe suite: broken configurations and `ELECTD_*` overrides fed to both
//! `electd config check` and `electd run`. Each is either refused at once (exit 1, the
//! message naming the key or the variable) or accepted with a warning on stderr (the
//! `run` process is stopped by its PID as soon as the warning shows) — never a silent
//! start. Refused `run` cases bind nothing; every process has a deadline.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a refused `run` may take to exit, and a warning to show.
const DEADLINE: Duration = Duration::from_secs(20);

fn free_udp() -> SocketAddr {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    s.local_addr().unwrap()
}

fn free_tcp() -> SocketAddr {
    let s = std::net::TcpListener::bind("127.0.0.1:0").expect("bind tcp");
    s.local_addr().unwrap()
}

struct Fixture {
    dir: PathBuf,
    /// A valid three-node roster (node 1 is the one started).
    roster: String,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = crate::common::scratch(&format!("probes-{tag}"));
        electd::security::keyring::write_key_file(&dir.join("cluster.key")).unwrap();
        std::fs::write(dir.join("token"), "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::write(
            dir.join("two-lines.token"),
            "0123456789abcdef\nfedcba9876543210\n",
        )
        .unwrap();
        std::fs::write(dir.join("short.key"), "abcdef\n").unwrap();
        std::fs::create_dir_all(dir.join("state-dir.state")).unwrap();
        set_mode(&dir.join("cluster.key"), 0o600);
        set_mode(&dir.join("token"), 0o600);
        let mut roster = String::new();
        for id in 1..=3 {
            roster.push_str(&format!(
                "\n[[peer]]\nid = {id}\naddr = \"{}\"\nhttp = \"{}\"\n",
                free_udp(),
                free_tcp()
            ));
        }
        Fixture { dir, roster }
    }

    /// A valid file (bully only, keyed, timings consistent) with `edit` applied.
    fn config(&self, name: &str, edit: &dyn Fn(String) -> String) -> PathBuf {
        let text = format!(
            "cluster = \"probes\"\nalgorithms = [\"bully\"]\n\n[timing]\nheartbeat = \"20ms\"\n\
             failure_timeout = \"300ms\"\nanswer_timeout = \"30ms\"\ncoordinator_timeout = \"100ms\"\n\n\
             [transport]\nretransmit = \"10ms\"\nmax_attempts = 4\n\n[security]\n\
             key_file = \"cluster.key\"\n{}",
            self.roster
        );
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, edit(text)).unwrap();
        path
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

/// What must happen to a case.
enum Expect {
    /// Exit 1 at once; stderr names this (the key or the variable) and says this too.
    Refused(&'static str, &'static str),
    /// Starts; stderr warns with this.
    Warned(&'static str),
}

struct Case {
    name: &'static str,
    edit: Box<dyn Fn(String) -> String>,
    env: Vec<(&'static str, String)>,
    node: &'static str,
    expect: Expect,
    /// Text that must not appear on stderr.
    never: Option<&'static str>,
}

fn case(name: &'static str, edit: impl Fn(String) -> String + 'static, expect: Expect) -> Case {
    Case {
        name,
        edit: Box::new(edit),
        env: Vec::new(),
        node: "1",
        expect,
        never: None,
    }
}

fn env_case(name: &'static str, var: &'static str, value: String, expect: Expect) -> Case {
    Case {
        env: vec![(var, value)],
        ..case(name, |t| t, expect)
    }
}

fn cases(f: &Fixture) -> Vec<Case> {
    use Expect::{Refused, Warned};
    let roster_line = |t: &str, from: &str, to: &str| t.replacen(from, to, 1);
    let first_addr = f.roster.split('"').nth(1).unwrap().to_string();
    let first_http = f.roster.split('"').nth(3).unwrap().to_string();
    let second_addr = f.roster.split('"').nth(5).unwrap().to_string();
    let (a1, h1, a2) = (first_addr.clone(), first_http.clone(), second_addr.clone());
    let (a1b, a2b) = (first_addr.clone(), second_addr.clone());
    let token = f.path("token");
    let token2 = f.path("two-lines.token");
    let state_dir = f.path("state-dir.state");
    let short_key = f.path("short.key");
    vec![
        // Issue 20, item 1: a state file that cannot be written.
        env_case(
            "state file in a missing directory",
            "ELECTD_RAFT_STATE_FILE",
            // One that cannot be created (/dev/null is no directory, and the error
            // says so): a missing one that can be is created by `run` (issue 28, §3
            // item 13).
            "/dev/null/dir/raft.state".into(),
            Refused(
                "ELECTD_RAFT_STATE_FILE",
                "/dev/null is a file, not a directory",
            ),
        ),
        // Item 10: a state file that is a directory (said once).
        case(
            "state file is a directory",
            move |t| format!("{t}\n[raft]\nstate_file = \"{state_dir}\"\n"),
            Refused("raft.state_file", "is a directory"),
        ),
        // Item 3: IPv4 and IPv6 in one roster.
        case(
            "mixed address families",
            move |t| roster_line(&t, &a2, "[::1]:17999"),
            Refused("peer[1].addr", "address family"),
        ),
        // Item 5: port 0.
        case(
            "port 0 for addr",
            move |t| roster_line(&t, &a1, "127.0.0.1:0"),
            Refused("peer[0].addr", "port 0"),
        ),
        case(
            "port 0 for http",
            move |t| roster_line(&t, &h1, "127.0.0.1:0"),
            Refused("peer[0].http", "port 0"),
        ),
        // Item 8: a token that could never match.
        case(
            "two-line token file",
            move |t| format!("{t}\n[admin]\ntoken_file = \"{token2}\"\n"),
            Refused("admin.token_file", "one line"),
        ),
        // Item 9: overrides blame the variable; strict booleans; empty is not unset.
        env_case(
            "non-numeric node id",
            "ELECTD_NODE_ID",
            "abc".into(),
            Refused("ELECTD_NODE_ID", "not an integer"),
        ),
        env_case(
            "boolean that is not one",
            "ELECTD_SECURITY_CHECK_SOURCE",
            "maybe".into(),
            Refused("ELECTD_SECURITY_CHECK_SOURCE", "not a boolean"),
        ),
        env_case(
            "empty key file variable",
            "ELECTD_SECURITY_KEY_FILE",
            String::new(),
            Refused("ELECTD_SECURITY_KEY_FILE", "empty"),
        ),
        env_case(
            "misspelt variable",
            "ELECTD_TIMING_HEARTBEET",
            "10ms".into(),
            Refused("ELECTD_TIMING_HEARTBEET", "unknown"),
        ),
        env_case(
            "variable breaking a timing relation",
            "ELECTD_TIMING_HEARTBEAT",
            "1s".into(),
            Refused("ELECTD_TIMING_HEARTBEAT", "failure_timeout"),
        ),
        env_case(
            "key file variable naming a bad key",
            "ELECTD_SECURITY_KEY_FILE",
            short_key,
            Refused("ELECTD_SECURITY_KEY_FILE", "64 hex digits"),
        ),
        // Issue 16: TOML syntax errors with line and column.
        case(
            "TOML syntax error",
            |t| t.replacen("algorithms = [\"bully\"]", "algorithms = = [\"bully\"]", 1),
            Refused("probes-toml-syntax", "2:14"),
        ),
        // The rules the configuration reference documents.
        case(
            "heartbeat not below failure_timeout",
            |t| t.replace("heartbeat = \"20ms\"", "heartbeat = \"300ms\""),
            Refused("timing.heartbeat", "not below"),
        ),
        case(
            "answer_timeout not above retransmit",
            |t| t.replace("answer_timeout = \"30ms\"", "answer_timeout = \"10ms\""),
            Refused("timing.answer_timeout", "retransmit"),
        ),
        case(
            "coordinator_timeout too short",
            |t| {
                t.replace(
                    "coordinator_timeout = \"100ms\"",
                    "coordinator_timeout = \"50ms\"",
                )
            },
            Refused("timing.coordinator_timeout", "answer_timeout"),
        ),
        case(
            "link gives up after the failure timeout",
            |t| t.replace("max_attempts = 4", "max_attempts = 9"),
            Refused("transport.max_attempts", "gives up"),
        ),
        case(
            "empty election timeout range",
            |t| {
                t.replace(
                    "[transport]",
                    "election_timeout = \"200ms..200ms\"\n\n[transport]",
                )
            },
            Refused("timing.election_timeout", "empty range"),
        ),
        case(
            "zero hook timeout",
            |t| format!("{t}\n[hooks]\nhook_timeout = \"0s\"\n"),
            Refused("hooks.hook_timeout", "above zero"),
        ),
        case(
            "unknown key",
            |t| {
                t.replace(
                    "heartbeat = \"20ms\"",
                    "heartbeat = \"20ms\"\nheartbeet = \"20ms\"",
                )
            },
            Refused("timing", "heartbeet"),
        ),
        case(
            "no key and no explicit insecure",
            |t| t.replace("key_file = \"cluster.key\"", ""),
            Refused("security", "keygen"),
        ),
        case(
            "unknown algorithm",
            |t| t.replace("[\"bully\"]", "[\"paxos\"]"),
            Refused("algorithms", "paxos"),
        ),
        case(
            "peer id listed twice",
            |t| t.replacen("id = 2", "id = 1", 1),
            Refused("peer[1].id", "twice"),
        ),
        case(
            "multicast group that is not one",
            |t| {
                t.replace(
                    "max_attempts = 4",
                    "max_attempts = 4\nmulticast = \"10.0.0.1:7946\"",
                )
            },
            Refused("transport.multicast", "not a multicast"),
        ),
        Case {
            node: "9",
            ..case(
                "node not in the roster",
                |t| t,
                Refused("node_id", "not in the roster"),
            )
        },
        // Item 10: this node's own name that does not resolve fails once, no
        // "will be retried" first.
        Case {
            never: Some("will be retried"),
            ..case(
                "own host name does not resolve",
                move |t| roster_line(&t, &a1b, "electd-probe-own.invalid:17001"),
                Refused("peer[0].addr", "does not resolve"),
            )
        },
        // Accepted, with a warning.
        case(
            "group-readable key file",
            |t| t.replace("cluster.key", "open.key"),
            Warned("chmod 600"),
        ),
        case(
            "group-readable admin token",
            move |t| {
                format!(
                    "{t}\n[admin]\ntoken_file = \"{}\"\n",
                    token.replace("token", "open.token")
                )
            },
            Warned("admin token file"),
        ),
        // Raft without durable state may vote twice after a restart: refused, unless
        // the operator says so (and is warned).
        case(
            "raft without a state file",
            |t| t.replace("[\"bully\"]", "[\"bully\", \"raft\"]"),
            Refused("state.file", "vote twice"),
        ),
        case(
            "raft knowingly without a state file",
            |t| {
                format!(
                    "{}\n[state]\nephemeral = true\n",
                    t.replace("[\"bully\"]", "[\"bully\", \"raft\"]")
                )
            },
            Warned("ephemeral"),
        ),
        case(
            "insecure",
            |t| t.replace("key_file = \"cluster.key\"", "insecure = true"),
            Warned("insecure"),
        ),
        case(
            "another peer's name does not resolve yet",
            move |t| roster_line(&t, &a2b, "electd-probe-peer.invalid:17002"),
            Warned("does not resolve yet"),
        ),
    ]
}

fn electd(args: &[&str], env: &[(&'static str, String)]) -> Command {
    let mut c = crate::common::electd_command(args);
    c.env("ELECTD_LOG", "warn")
        .env_remove("ELECTD_NODE_ID")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Run `electd run`: for a refused case, its exit code and stderr once it exits (it
/// must, within the deadline); for a warned case, the stderr up to the warning, then
/// the process is killed by its PID (`None` as the code).
fn run_daemon(
    args: &[&str],
    env: &[(&'static str, String)],
    warning: Option<&str>,
) -> (Option<i32>, String) {
    let mut child = electd(args, env).spawn().expect("spawn electd run");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + DEADLINE;
    let mut text = String::new();
    let mut code = None;
    let mut exited = false;
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                text.push_str(&line);
                text.push('\n');
                if warning.is_some_and(|w| line.contains(w)) {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stderr closed: the process is exiting.
                exited = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().expect("wait");
    if exited {
        code = status.code();
    }
    let _ = reader.join();
    for line in rx.try_iter() {
        text.push_str(&line);
        text.push('\n');
    }
    (code, text)
}

#[test]
fn broken_configs_are_refused_naming_the_key_or_warned_never_silent() {
    let f = Fixture::new("table");
    // Files the warned cases need (group-readable on purpose).
    std::fs::copy(f.dir.join("cluster.key"), f.dir.join("open.key")).unwrap();
    set_mode(&f.dir.join("open.key"), 0o644);
    std::fs::copy(f.dir.join("token"), f.dir.join("open.token")).unwrap();
    set_mode(&f.dir.join("open.token"), 0o644);
    let mut failures = Vec::new();
    for c in cases(&f) {
        let name = if c.name == "TOML syntax error" {
            "probes-toml-syntax".to_string()
        } else {
            c.name.replace(' ', "-")
        };
        let config = f.config(&name, &c.edit);
        let config = config.display().to_string();
        let check = electd(
            &["config", "check", "--config", &config, "--node-id", c.node],
            &c.env,
        )
        .output()
        .expect("run config check");
        let check_err = String::from_utf8_lossy(&check.stderr).to_string();
        let (code, run_err) = run_daemon(
            &["run", "--config", &config, "--node-id", c.node],
            &c.env,
            match c.expect {
                Expect::Warned(w) => Some(w),
                Expect::Refused(..) => None,
            },
        );
        let mut fail = |what: String| failures.push(format!("{}: {what}", c.name));
        for (who, text) in [("config check", &check_err), ("run", &run_err)] {
            if text.contains("panicked") {
                fail(format!("{who} panicked: {text}"));
            }
            if let Some(never) = c.never {
                if text.contains(never) {
                    fail(format!("{who} said {never:?}: {text}"));
                }
            }
        }
        match c.expect {
            Expect::Refused(key, what) => {
                if check.status.code() != Some(1) {
                    fail(format!(
                        "config check exited {:?}, not 1: {check_err}",
                        check.status
                    ));
                }
                if code != Some(1) {
                    fail(format!(
                        "run did not exit 1 at once (code {code:?}): {run_err}"
                    ));
                }
                for (who, text) in [("config check", &check_err), ("run", &run_err)] {
                    if !text.contains(key) || !text.contains(what) {
                        fail(format!(
                            "{who} should name {key:?} and say {what:?}: {text}"
                        ));
                    }
                    // Said once: no cause repeated in the chain.
                    let error = text
                        .lines()
                        .find(|l| l.starts_with("electd: error:"))
                        .unwrap_or("");
                    let body = error.trim_start_matches("electd: error:");
                    if let Some(dup) = body
                        .split(": ")
                        .filter(|p| p.len() > 12)
                        .find(|p| body.matches(*p).count() > 1)
                    {
                        fail(format!("{who} repeats {dup:?}: {text}"));
                    }
                }
            }
            Expect::Warned(w) => {
                if !check.status.success() {
                    fail(format!(
                        "config check refused an acceptable config: {check_err}"
                    ));
                }
                if !check_err.contains(w) {
                    fail(format!("config check did not warn {w:?}: {check_err}"));
                }
                if code.is_some() {
                    fail(format!(
                        "run exited ({code:?}) instead of starting: {run_err}"
                    ));
                }
                if !run_err.contains(w) {
                    fail(format!("run did not warn {w:?}: {run_err}"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&f.dir);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn config_check_passes_a_good_file_for_every_node_and_exit_codes_follow_the_convention() {
    let f = Fixture::new("good");
    let good = f.config("good", &|t| t);
    let good = good.display().to_string();
    let out = electd(&["config", "check", "--config", &good], &[])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok for every node (3 of them)"), "{stdout}");
    // Checked from one machine, a node's own name that resolves only where it runs is a
    // warning for the whole-roster check, an error for that node's own check.
    let first = f.roster.split('"').nth(1).unwrap().to_string();
    let named = f.config("named", &|t| {
        t.replacen(&first, "electd-probe-elsewhere.invalid:17001", 1)
    });
    let named = named.display().to_string();
    let all = electd(&["config", "check", "--config", &named], &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&all.stderr);
    assert!(all.status.success(), "{err}");
    assert!(
        err.contains("warning") && err.contains("peer[0].addr"),
        "{err}"
    );
    let one = electd(
        &["config", "check", "--config", &named, "--node-id", "1"],
        &[],
    )
    .output()
    .unwrap();
    assert_eq!(one.status.code(), Some(1));
    // A usage error is clap's exit 2; a runtime error (file missing) is 1.
    let usage = electd(&["config", "check"], &[]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let missing = f.dir.join("missing.toml").display().to_string();
    let runtime = electd(&["config", "check", "--config", &missing], &[])
        .output()
        .unwrap();
    assert_eq!(runtime.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&runtime.stderr).contains("missing.toml: cannot read"));
    let _ = std::fs::remove_dir_all(&f.dir);
}
