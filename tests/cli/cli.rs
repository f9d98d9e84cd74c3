//! The `electd` command line: the JSON contract of `simulate`, `compare` with a plot,
//! and clear errors (never a panic) on bad input.

use crate::common::{electd, electd_command, scratch};

fn assert_clean_error(args: &[&str], needle: &str) {
    let out = electd(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(
        stderr.to_lowercase().contains(&needle.to_lowercase()),
        "{args:?}: expected {needle:?} in: {stderr}"
    );
}

/// `args` is refused by the argument parser: exit 2, no panic, `needle` said.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = electd(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
}

#[test]
fn bad_simulate_input_is_a_clear_error() {
    assert_clean_error(
        &["simulate", "-a", "bully", "--nodes", "0"],
        "at least 1 node",
    );
    // Enum-like options are clap value enums: the error lists the values, a near miss
    // gets a suggestion, and usage errors exit 2.
    assert_clean_error(&["simulate", "-a", "paxos"], "invalid value 'paxos'");
    assert_clean_error(&["simulate", "-a", "paxos"], "possible values: bully");
    assert_clean_error(
        &["simulate", "-a", "bullly"],
        "a similar value exists: 'bully'",
    );
    assert_eq!(electd(&["simulate", "-a", "paxos"]).status.code(), Some(2));
    assert_clean_error(
        &["simulate", "-a", "bully", "-n", "5", "--initiator", "9"],
        "not in the roster",
    );
    assert_clean_error(
        &["simulate", "-a", "bully", "--initiator", "middle"],
        "invalid initiator",
    );
    assert_clean_error(
        &["simulate", "-a", "bully", "--loss", "1.5"],
        "loss must be in",
    );
    assert_clean_error(
        &["simulate", "-a", "bully", "--scenario", "meteor"],
        "possible values: startup, leader-crash, chaos",
    );
    assert_clean_error(
        &["simulate", "-a", "bully", "--ids", "1,2,2"],
        "listed twice",
    );
    assert_clean_error(&["simulate", "-a", "bully", "--ids", "0,1"], "reserved");
    assert_clean_error(&["compare", "--nodes", "9..3"], "empty range");
    assert_clean_error(
        &["compare", "--algorithms", "bully,nope"],
        "invalid value 'nope'",
    );
}

#[test]
fn simulate_json_has_the_contract_fields() {
    let out = electd(&[
        "simulate",
        "-a",
        "bully",
        "-n",
        "6",
        "--scenario",
        "leader-crash",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for key in [
        "algorithm",
        "nodes",
        "scenario",
        "leader",
        "agreed",
        "messages",
        "virtual_ms",
        "elections",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["algorithm"], "bully");
    assert_eq!(v["nodes"], 6);
    assert_eq!(v["scenario"], "leader-crash");
    assert_eq!(v["leader"], 5, "node 6 crashed, 5 leads");
    assert_eq!(v["agreed"], true);
    let elections = v["elections"].as_array().expect("elections");
    assert_eq!(elections.len(), 2);
    let sum: u64 = elections
        .iter()
        .map(|e| e["messages"]["total"].as_u64().expect("total"))
        .sum();
    assert_eq!(v["messages"]["total"].as_u64(), Some(sum));
    let by_type = v["messages"]["by_type"].as_object().expect("by_type");
    let typed: u64 = by_type.values().map(|x| x.as_u64().expect("n")).sum();
    assert_eq!(typed, sum);
    for e in elections {
        assert!(e["leader"].is_u64() && e["virtual_ms"].is_f64(), "{e}");
    }
}

#[test]
fn simulate_csv_and_table() {
    let csv = electd(&[
        "simulate",
        "-a",
        "improved-bully",
        "-n",
        "4",
        "--format",
        "csv",
    ]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text
        .starts_with("algorithm,nodes,scenario,election,leader,agreed,type,messages,virtual_ms"));
    // Improved Bully: 3N − 2 messages (Soundarabai et al. 2014, Table 1), N = 4.
    let n = 4;
    let row = format!(
        "improved-bully,{n},startup,startup,{n},true,total,{},",
        3 * n - 2
    );
    assert!(text.contains(&row), "{row} not in\n{text}");
    // Bully: N² − 1 (seed report, Eq. 1).
    let table = electd(&["simulate", "-a", "bully", "-n", &n.to_string()]);
    let line = format!("{} election messages", n * n - 1);
    assert!(String::from_utf8_lossy(&table.stdout).contains(&line));
}

#[test]
fn compare_prints_formulas_and_writes_an_svg_plot() {
    let dir = scratch("cli");
    let svg = dir.join("compare.svg");
    let out = electd(&[
        "compare",
        "--nodes",
        "2..12",
        "--format",
        "csv",
        "--plot",
        svg.to_str().expect("path"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    let mut rows = 0;
    for line in csv.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        if cols[4].is_empty() {
            continue; // no closed form for this case
        }
        rows += 1;
        let (measured, formula): (f64, f64) =
            (cols[3].parse().expect("m"), cols[4].parse().expect("f"));
        let exact = matches!(cols[1], "bully" | "improved-bully");
        if exact {
            assert_eq!(measured, formula, "{line}");
        }
    }
    assert!(rows >= 22, "{csv}");
    let plot = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        plot.starts_with("<svg") && plot.contains("bully"),
        "not an SVG plot"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `electd simulate … | head`: the reader goes away early; electd ends quietly (as a
/// Unix filter does) instead of panicking on the broken pipe.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = electd_command(&["compare", "--nodes", "2..64", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("some output");
    // The pipe's read end is closed here (dropped with the handle above).
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(first[0], b'{', "JSON output");
    // More output than a pipe buffer (64 KiB) was due, so the write did fail.
}

#[test]
fn completions_and_man_page_come_from_the_command_definition() {
    let out = electd(&["completions", "bash"]);
    assert!(out.status.success());
    let bash = String::from_utf8_lossy(&out.stdout);
    assert!(bash.contains("_electd()"), "{bash}");
    // Subcommands and enum values are completed.
    for word in [
        "simulate",
        "status",
        "watch",
        "improved-bully",
        "leader-crash",
    ] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    let out = electd(&["completions", "zsh"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("#compdef electd"));
    assert_eq!(electd(&["completions", "tcsh"]).status.code(), Some(2));

    let out = electd(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH electd 1"), "{page}");
    for word in ["electd\\-status", "electd\\-run", "\\-\\-log\\-format"] {
        assert!(page.contains(word), "man page lacks {word}");
    }
    let dir = scratch("man");
    let out = electd(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let run = std::fs::read_to_string(dir.join("electd-run.1")).unwrap();
    assert!(run.contains("\\-\\-node\\-id"), "{run}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn algorithm_aliases_are_accepted() {
    let out = electd(&[
        "simulate",
        "-a",
        "chang-roberts",
        "-n",
        "3",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["algorithm"], "lcr");
}

/// Sizes and counts a machine cannot honour are refused up front, never an abort.
#[test]
fn chaos_and_simulate_refuse_what_cannot_run() {
    // --threads: 1 ..= 1024 (usage errors); never a failed thread spawn.
    for threads in ["0", "100000"] {
        let out = electd(&["chaos", "--seeds", "1", "--threads", threads]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--threads {threads}: {err}");
        assert!(
            err.contains("--threads") && !err.contains("panicked"),
            "{err}"
        );
    }
    // A start whose range would wrap: a usage error, as the flags' own ranges are.
    let out = electd(&["chaos", "--seeds", "2", "--start", "18446744073709551615"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("beyond the last seed"), "{err}");
    // Bully on 10 000 nodes sends about N² = 10⁸ messages: refused with an estimate
    // (tens of GB, a quarter of an hour) before anything runs.
    let out = electd(&["simulate", "-a", "bully", "--nodes", "10000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("bully on 10000 nodes: about")
            && err.contains("GB")
            && err.contains("--force"),
        "{err}"
    );
    // A plot that cannot be written is refused before the simulations, not after.
    let out = electd(&[
        "compare",
        "--nodes",
        "3",
        "--plot",
        "/nonexistent-dir/x.svg",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not a directory"), "{err}");
    assert!(out.stdout.is_empty(), "no table before the refusal");
    // The same bound holds for a comparison, which runs every N one after the other.
    let out = electd(&["compare", "--algorithms", "bully", "--nodes", "2..5000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("simulations: about"), "{err}");
    // Raft on as many nodes sends 4(N − 1): not refused (not run here either: a
    // smaller N shows the ordinary path stays quiet).
    let out = electd(&["simulate", "-a", "raft", "--nodes", "50"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

/// The detect section's options are checked before anything runs: out of range, or
/// without `--only detect`, is a clear error, and so is a class this user may not use.
#[test]
fn bench_detect_options_are_checked_before_anything_runs() {
    let dir = scratch("bench-detect-options");
    let out = dir.join("out");
    let out = out.to_str().expect("a UTF-8 path");
    assert_clean_error(
        &[
            "bench",
            "--only",
            "detect",
            "--detect-realtime",
            "0",
            "--out",
            out,
        ],
        "not in 1..=99",
    );
    assert_clean_error(
        &[
            "bench",
            "--only",
            "detect",
            "--detect-realtime",
            "100",
            "--out",
            out,
        ],
        "not in 1..=99",
    );
    assert_clean_error(
        &["bench", "--detect-realtime", "10", "--out", out],
        "add --only detect",
    );
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: sched_setscheduler(2) on a thread of the test that ends here.
    let allowed = std::thread::spawn(move || unsafe {
        libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0
    })
    .join()
    .expect("the probe thread");
    if !allowed {
        assert_clean_error(
            &[
                "bench",
                "--only",
                "detect",
                "--detect-realtime",
                "10",
                "--out",
                out,
            ],
            "RLIMIT_RTPRIO",
        );
    }
    assert!(
        !dir.join("out").exists(),
        "nothing ran, nothing was written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Values the argument parsers took and the commands then panicked on (exit 101: a
/// deadline past the clock's end, infinite seconds) or misread (a zero timeout
/// reported every healthy node as dead) are usage errors, exit 2, before anything runs.
#[test]
fn huge_or_zero_durations_are_usage_errors() {
    let dir = scratch("cli-durations");
    let c = dir.join("c.toml");
    std::fs::write(
        &c,
        "cluster = \"c\"\nalgorithms = [\"bully\"]\n[security]\ninsecure = true\n\
         [[peer]]\nid = 1\naddr = \"127.0.0.1:1\"\nhttp = \"127.0.0.1:1\"\n",
    )
    .unwrap();
    let c = c.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["watch", "--config", c, "--duration", "9223372036854775807s"],
            "at most a year",
        ),
        (
            vec!["status", "--config", c, "--timeout", "0s"],
            "above zero",
        ),
        (
            vec![
                "status",
                "--config",
                c,
                "--timeout",
                "18446744073709551615s",
            ],
            "--timeout",
        ),
        (
            vec![
                "drain",
                "--url",
                "127.0.0.1:1",
                "--timeout",
                "18446744073709551615s",
            ],
            "--timeout",
        ),
        (
            vec![
                "exec",
                "-a",
                "bully",
                "--url",
                "127.0.0.1:1",
                "--poll",
                "9223372036854775807s",
                "--",
                "true",
            ],
            "at most a year",
        ),
        (
            vec![
                "exec",
                "-a",
                "bully",
                "--url",
                "127.0.0.1:1",
                "--timeout",
                "0s",
                "--",
                "true",
            ],
            "above zero",
        ),
        (vec!["demo", "--down-for", "inf"], "between 0.001"),
        (vec!["demo", "--chaos-every", "1e-300"], "between 0.001"),
        (
            vec!["demo", "--duration", "18446744073709551615"],
            "--duration",
        ),
    ] {
        assert_usage_error(&args, needle);
    }
    // A group the cluster file does not run: an error at once, not every node
    // "unreachable" until the end.
    let out = electd(&[
        "watch",
        "--config",
        c,
        "--algorithm",
        "hs",
        "--duration",
        "5s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("runs bully, not hs"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `config check` of a file `run` refuses (an empty one) fails as `run` does, instead
/// of "ok for every node (0 of them)"; a typo in ELECTD_LOG stops `run` instead of
/// silencing its every log line.
#[test]
fn config_check_of_an_empty_file_and_a_log_filter_typo_fail() {
    let dir = scratch("cli-empty-config");
    let c = dir.join("empty.toml");
    std::fs::write(&c, "").unwrap();
    let c = c.to_str().unwrap();
    let out = electd(&["config", "check", "--config", c]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cluster"), "{err}");
    let out = electd_command(&["run", "--config", c, "--node-id", "1"])
        .env("ELECTD_LOG", "inof")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ELECTD_LOG=\"inof\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad values of these options are the argument parser's (exit 2, before anything
/// runs), as their sibling options' are: they were exit 1 from the command, or (bench
/// --nodes 0) a 30 s run ending in "0 missed".
#[test]
fn out_of_range_counts_are_usage_errors() {
    for (args, needle) in [
        (vec!["chaos", "--seeds", "0"], "--seeds"),
        (
            vec!["config", "init", "--nodes", "0", "--insecure"],
            "--nodes",
        ),
        (
            vec!["config", "init", "--nodes", "1001", "--insecure"],
            "--nodes",
        ),
        (vec!["view", "--simulate", "--loss", "1"], "[0, 1)"),
        (
            vec!["bench", "--only", "scale-cold", "--nodes", "0"],
            "2 to 1024",
        ),
        (
            vec!["bench", "--only", "scale-cold", "--nodes", "8,1"],
            "2 to 1024",
        ),
    ] {
        assert_usage_error(&args, needle);
    }
}

/// A flag that the chosen mode does not read is a usage error naming it: `simulate
/// --faults full` ran the startup scenario without a fault, and `view`'s simulation
/// flags without `--simulate` were dropped (round 31's audit); so are values that
/// contradict each other (docs/architecture.md: exit 2 for usage errors).
#[test]
fn flags_of_another_mode_are_usage_errors() {
    for (args, needle) in [
        (
            vec!["simulate", "-a", "bully", "--faults", "full"],
            "--scenario chaos",
        ),
        (
            vec![
                "simulate",
                "-a",
                "raft",
                "--scenario",
                "leader-crash",
                "--faults",
                "basic",
            ],
            "leader-crash",
        ),
        (vec!["view", "--nodes", "4", "t.jsonl"], "--simulate"),
        (vec!["view", "--seed", "4", "t.jsonl"], "--simulate"),
        (vec!["view", "--faults", "full", "t.jsonl"], "--simulate"),
        (
            vec!["view", "--simulate", "--faults", "full"],
            "--scenario chaos",
        ),
        // Values that contradict each other (the audit: these were exit 1, as if
        // something had run and failed).
        (vec!["view", "--no-open"], "give trace files"),
        (
            vec!["simulate", "-a", "bully", "--initiator", "99"],
            "not in the roster",
        ),
        (
            vec!["simulate", "-a", "bully", "--initiator", "0"],
            "not in the roster",
        ),
        (
            vec!["simulate", "-a", "ring", "--ids", "3,1", "--initiator", "2"],
            "not in the roster",
        ),
        (
            vec!["simulate", "-a", "ring", "--ids", "3,1,3"],
            "listed twice",
        ),
        (vec!["simulate", "-a", "ring", "--ids", "0,1"], "reserved"),
        (vec!["compare", "--nodes", "1"], "N ≥ 2"),
        (vec!["compare", "--nodes", "1..4"], "N ≥ 2"),
    ] {
        assert_usage_error(&args, needle);
    }
    // The mode that reads it takes it.
    let out = electd(&[
        "simulate",
        "-a",
        "bully",
        "--scenario",
        "chaos",
        "--faults",
        "full",
        "--nodes",
        "4",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
