//! The contract every election algorithm is written against, and the vocabulary in
//! which each algorithm describes itself.
//!
//! Nothing here does I/O, reads a clock or draws an unseeded random number: an
//! algorithm sees only [`algorithm::Algorithm`]'s inputs and answers with effects as
//! data, speaking the domain [`message`]s. [`info`] is what an algorithm declares about
//! itself (its file's `INFO`: names, constructor, whom it elects, recovery model,
//! message types, the literature's count [`formulas`]); [`policy`] the ranking and
//! preemption switches every algorithm consults; [`rng`] the seeded generator that
//! keeps every driver of the same code deterministic.
//!
//! This is the bottom layer: it uses nothing of the crate above it (the registry that
//! maps a kind to its algorithm's `INFO` is `crate::algorithms::registry`), and
//! `tests::contract_uses_no_layer_above_it` keeps it so.

pub mod algorithm;
pub mod formulas;
pub mod info;
pub mod message;
pub mod policy;
pub mod rng;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Modules of the crate above the contract, and crates it must not use.
    const ABOVE: [&str; 10] = [
        "algorithms",
        "node",
        "trace",
        "sim",
        "security",
        "config",
        "daemon",
        "http",
        "testkit",
        "bench",
    ];
    const CRATES: [&str; 3] = ["toml", "tokio", "electd"];

    /// Every path a source text names, as `a::b` prefixes: `crate::x`, `super::x`,
    /// a `use x::…`, and each name of a `crate::{x, …}` group. Comments are dropped
    /// (a doc link to a layer above is not a dependency).
    fn paths(src: &str) -> Vec<String> {
        let code: String = src
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = Vec::new();
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        for (i, _) in code.match_indices("::") {
            let before: String = code[..i]
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let after = &code[i + 2..];
            if before == "crate" || before == "super" {
                if let Some(group) = after.strip_prefix('{') {
                    let end = group.find('}').unwrap_or(group.len());
                    for name in group[..end].split(',') {
                        out.push(format!("{before}::{}", ident(name.trim())));
                    }
                } else {
                    out.push(format!("{before}::{}", ident(after)));
                }
            } else {
                out.push(before);
            }
        }
        for l in code.lines() {
            if let Some(rest) = l.trim().strip_prefix("use ") {
                out.push(ident(rest));
            }
            if let Some(rest) = l.trim().strip_prefix("extern crate ") {
                out.push(ident(rest));
            }
        }
        out
    }

    fn violations(src: &str) -> Vec<String> {
        paths(src)
            .into_iter()
            .filter(|p| {
                let module = p
                    .strip_prefix("crate::")
                    .or(p.strip_prefix("super::super::"));
                module.is_some_and(|m| ABOVE.contains(&m)) || CRATES.contains(&p.as_str())
            })
            .collect()
    }

    #[test]
    fn the_checker_sees_each_way_of_naming_a_layer_above() {
        let above = [
            "use crate::algorithms::registry;",
            "let x = crate::sim::Sim::new();",
            "use crate::{contract::rng, config};",
            "let t: toml::Value = v;",
            "use tokio::net::UdpSocket;",
        ];
        for src in above {
            assert!(!violations(src).is_empty(), "missed: {src}");
        }
        let fine = [
            "use crate::contract::rng::Rng; // not crate::sim",
            "/// see [`crate::daemon::heartbeats`]",
            "use crate::NodeId;",
            "use std::time::Duration;",
        ];
        for src in fine {
            assert!(violations(src).is_empty(), "{src}: {:?}", violations(src));
        }
    }

    /// The bottom layer stays the bottom: no file of `src/contract/` names a module
    /// of the crate above it, `toml` or `tokio`.
    #[test]
    fn contract_uses_no_layer_above_it() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/contract");
        let mut files = 0;
        let mut bad = Vec::new();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("src/contract") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files += 1;
                    let src = std::fs::read_to_string(&path).expect("read");
                    // This file's own tests name the layers on purpose.
                    let src = if path.ends_with("contract/mod.rs") {
                        src.split("#[cfg(test)]").next().unwrap_or("").to_string()
                    } else {
                        src
                    };
                    for v in violations(&src) {
                        bad.push(format!("{}: {v}", path.display()));
                    }
                }
            }
        }
        assert!(files >= 6, "found only {files} files in src/contract");
        assert!(bad.is_empty(), "contract/ uses a layer above it: {bad:#?}");
    }
}
