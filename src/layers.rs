//! The layer order of `src/lib.rs`, kept true by reading the sources: every module of
//! the library names only itself and the modules listed before it in lib.rs's doc
//! list, test-only code aside; docs/architecture.md draws the same order.
//!
//! The sources are read at test time, so the check sees what the compiler builds:
//! the module tree is followed from `src/lib.rs` through its `mod` declarations (a
//! `#[cfg(test)]` module, file or inline, is skipped with every other
//! `#[cfg(test)]` item), and comments and string literals are dropped (a doc link to a
//! layer above is not a dependency). A layer is named by `crate::x` (also in a
//! `crate::{x, …}` group and as `$crate::x` in a macro) or by `super::` climbing to
//! the crate root; a glob of the crate root would hide which layers are used, so it
//! is refused in every layer. Not seen: a `macro_rules!` macro of a later layer used
//! by its bare name (none is exported at the crate root today).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Items of the crate root that are not layers, and which layers may name them
/// (`None`: every layer).
const ROOT_ITEMS: [(&str, Option<&[&str]>); 2] = [
    ("NodeId", None),
    // Generated protobuf types: only the codec speaks them.
    ("proto", Some(&["security"])),
];

/// Crates a layer must not name: the sans-IO layers have no runtime and no files.
const FORBIDDEN_CRATES: [(&str, &[&str]); 3] = [
    ("contract", &["toml", "tokio", "electd"]),
    ("algorithms", &["toml", "tokio", "electd"]),
    ("node", &["toml", "tokio", "electd"]),
];

/// Methods a layer must not call: defined by an `impl` of a later layer on a type of an
/// earlier one, they are a dependency no path shows (`AlgorithmKind::info` is the
/// algorithms registry's; `Timing::validate_for` in contract called it).
const FORBIDDEN_METHODS: [(&str, &[&str]); 1] = [("contract", &["info"])];

/// A token and its line.
type Toks = Vec<(Tok, usize)>;

/// One source file of the library: where it is, its module path, its tokens.
type File = (PathBuf, Vec<String>, Toks);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// A string literal's contents (for `#[path = "…"]`).
    Str(String),
    /// `::`
    Path,
    Punct(char),
}

/// Rust source as tokens with their line numbers: comments dropped, literals kept as
/// one token, lifetimes dropped.
fn lex(src: &str) -> Toks {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let count_lines = |from: usize, to: usize| c[from..to].iter().filter(|&&ch| ch == '\n').count();
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count_lines(start, i);
        } else if let Some(len) = raw_string_start(&c[i..]) {
            // r"…", r#"…"#, br#"…"#: ends at a quote followed by as many #.
            let hashes = len - 1 - usize::from(ch == 'b') - 1;
            let start = i;
            i += len;
            let body = i;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    out.push((Tok::Str(c[body..i].iter().collect()), line));
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            line += count_lines(start, i.min(c.len()));
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            let start = i;
            i += if ch == 'b' { 2 } else { 1 };
            let body = i;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push((Tok::Str(c[body..i.min(c.len())].iter().collect()), line));
            i += 1;
            line += count_lines(start, i.min(c.len()));
        } else if ch == '\'' || (ch == 'b' && next == Some('\'')) {
            // A char literal ('x', '\n', '\u{…}', b'x') or a lifetime ('a).
            let q = if ch == 'b' { i + 1 } else { i };
            if c.get(q + 1) == Some(&'\\') {
                i = q + 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(q + 2) == Some(&'\'') {
                i = q + 3;
            } else {
                i = q + 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && next == Some(':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The length of a raw string's opening (`r"`, `r#"`, `br##"`, …) at the start of `c`.
fn raw_string_start(c: &[char]) -> Option<usize> {
    let mut i = 0;
    if c.first() == Some(&'b') {
        i += 1;
    }
    if c.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    while c.get(i) == Some(&'#') {
        i += 1;
    }
    (c.get(i) == Some(&'"')).then_some(i + 1)
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// Whether the tokens at `i` are the attribute `#[cfg(test)]`.
fn is_cfg_test(t: &[(Tok, usize)], i: usize) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    t.len() >= i + want.len() && t[i..i + want.len()].iter().map(|(t, _)| t).eq(want.iter())
}

/// The index after the bracketed group opening at `i` (`(`, `[` or `{`).
fn skip_group(t: &[(Tok, usize)], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j < t.len() {
        match t[j].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// The tokens without test-only code: every item (or statement) under `#[cfg(test)]`,
/// with its other attributes, up to its `;` or the end of its first `{…}` block. A
/// file under `#![cfg(test)]` is test-only as a whole.
fn without_test_code(t: Toks) -> Toks {
    if t.len() > 2 && t[0].0 == Tok::Punct('#') && t[1].0 == Tok::Punct('!') {
        let mut inner = vec![t[0].clone()];
        inner.extend(t[2..].iter().cloned());
        if is_cfg_test(&inner, 0) {
            return Vec::new();
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if !is_cfg_test(&t, i) {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        // The item's other attributes.
        while i + 1 < t.len() && t[i].0 == Tok::Punct('#') && t[i + 1].0 == Tok::Punct('[') {
            i = skip_group(&t, i + 1);
        }
        // The item itself.
        while i < t.len() {
            match t[i].0 {
                Tok::Punct(';') => {
                    i += 1;
                    break;
                }
                Tok::Punct('{') => {
                    i = skip_group(&t, i);
                    break;
                }
                Tok::Punct('(' | '[') => i = skip_group(&t, i),
                _ => i += 1,
            }
        }
    }
    out
}

/// One use of a module of the crate root: `crate::x`, or `*` for a glob of the root.
#[derive(Debug)]
struct RootUse {
    name: String,
    line: usize,
}

/// The file modules declared in `t` (`mod x;`, with its `#[path]` if any), and every
/// use of an item of the crate root, for a file whose module path is `module`.
fn scan(t: &[(Tok, usize)], module: &[String]) -> (Vec<(String, Option<String>)>, Vec<RootUse>) {
    let mut mods = Vec::new();
    let mut uses = Vec::new();
    // Inline modules open at a brace depth: `super` climbs out of them first.
    let mut inline: Vec<i32> = Vec::new();
    let mut depth = 0i32;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < t.len() {
        match &t[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Punct('#') if ident(t.get(i + 2)) == Some("path") => {
                if let Some((Tok::Str(p), _)) = t.get(i + 4) {
                    path_attr = Some(p.clone());
                }
            }
            Tok::Ident(m) if m == "mod" => {
                if let Some(name) = ident(t.get(i + 1)) {
                    match t.get(i + 2).map(|(t, _)| t) {
                        Some(Tok::Punct(';')) => mods.push((name.to_string(), path_attr.take())),
                        Some(Tok::Punct('{')) => inline.push(depth),
                        _ => {}
                    }
                }
            }
            Tok::Ident(head)
                if (head == "crate" || head == "super")
                    && t.get(i + 1).map(|(t, _)| t) == Some(&Tok::Path) =>
            {
                let preceded_by_path = i > 0 && t[i - 1].0 == Tok::Path;
                if !preceded_by_path {
                    // Where the path lands: at the crate root, or inside this layer.
                    let mut j = i;
                    let at_root = if head == "crate" {
                        j += 2;
                        true
                    } else {
                        let mut ups = 0;
                        while ident(t.get(j)) == Some("super")
                            && t.get(j + 1).map(|(t, _)| t) == Some(&Tok::Path)
                        {
                            ups += 1;
                            j += 2;
                        }
                        ups >= module.len() + inline.len()
                    };
                    if at_root {
                        root_names(t, j, &mut uses);
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (mods, uses)
}

/// The names a path at the crate root continues with at `j`: `x`, `{x, y::z, …}`, `*`.
fn root_names(t: &[(Tok, usize)], j: usize, uses: &mut Vec<RootUse>) {
    let line = t.get(j).map_or(0, |(_, l)| *l);
    match t.get(j).map(|(t, _)| t) {
        Some(Tok::Ident(name)) => uses.push(RootUse {
            name: name.clone(),
            line,
        }),
        Some(Tok::Punct('*')) => uses.push(RootUse {
            name: "*".into(),
            line,
        }),
        Some(Tok::Punct('{')) => {
            let end = skip_group(t, j);
            let mut depth = 0;
            let mut k = j;
            while k < end {
                match &t[k].0 {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct('*') if depth == 1 => uses.push(RootUse {
                        name: "*".into(),
                        line: t[k].1,
                    }),
                    Tok::Ident(name)
                        if depth == 1 && matches!(t[k - 1].0, Tok::Punct('{' | ',')) =>
                    {
                        uses.push(RootUse {
                            name: name.clone(),
                            line: t[k].1,
                        })
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        _ => {}
    }
}

/// The crates named in `t`: every path head `x::` not after `::`, and `use x`.
fn crates_named(t: &[(Tok, usize)]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (k, (tok, line)) in t.iter().enumerate() {
        let Tok::Ident(name) = tok else { continue };
        let after_path = k > 0 && t[k - 1].0 == Tok::Path;
        let before_path = t.get(k + 1).map(|(t, _)| t) == Some(&Tok::Path);
        let after_use = k > 0 && ident(t.get(k - 1)).is_some_and(|p| p == "use" || p == "crate");
        if (before_path && !after_path) || after_use {
            out.push((name.clone(), *line));
        }
    }
    out
}

/// Every source file of the library, with its module path, from `lib.rs`; without its
/// test code unless `with_tests`.
fn library_files(src: &Path, with_tests: bool) -> Vec<File> {
    let mut out = Vec::new();
    let mut stack = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((file, module)) = stack.pop() {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let toks = if with_tests {
            lex(&text)
        } else {
            without_test_code(lex(&text))
        };
        let (mods, _) = scan(&toks, &module);
        // `mod x;` in lib.rs or a mod.rs lives beside it; in a.rs, in a/.
        let dir = file.parent().expect("a file has a directory").to_path_buf();
        let own = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name");
        let base = if own == "lib" || own == "mod" {
            dir.clone()
        } else {
            dir.join(own)
        };
        for (name, path) in mods {
            let child = match path {
                Some(p) => dir.join(p),
                None if base.join(format!("{name}.rs")).exists() => base.join(format!("{name}.rs")),
                None => base.join(&name).join("mod.rs"),
            };
            if with_tests && !child.exists() {
                // A test module's file under an inline `mod tests`: not followed.
                continue;
            }
            let mut m = module.clone();
            m.push(name);
            stack.push((child, m));
        }
        out.push((file, module, toks));
    }
    out
}

/// The layer order as lib.rs's doc list gives it: its lines ``//! - [`x`]:`` and
/// ``//! - `x` (hidden):``.
fn doc_order(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .filter_map(|l| l.strip_prefix("//! - "))
        .filter_map(|l| {
            let l = l.strip_prefix('[').unwrap_or(l).strip_prefix('`')?;
            Some(l[..l.find('`')?].to_string())
        })
        .collect()
}

/// Every use of a layer, a root item or a crate that breaks the order, as
/// `file:line: what`.
fn violations(src: &Path, order: &[String], with_tests: bool) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut bad = Vec::new();
    for (file, module, toks) in library_files(src, with_tests) {
        let Some(layer) = module.first() else {
            continue;
        };
        let shown = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        let Some(&mine) = rank.get(layer.as_str()) else {
            bad.push(format!(
                "src/{shown}: module `{layer}` is not in lib.rs's layer list"
            ));
            continue;
        };
        let (_, uses) = scan(&toks, &module);
        for u in uses {
            let ok = match (
                rank.get(u.name.as_str()),
                ROOT_ITEMS.iter().find(|(n, _)| *n == u.name),
            ) {
                (Some(&r), _) => r <= mine,
                (None, Some((_, None))) => true,
                (None, Some((_, Some(who)))) => who.contains(&layer.as_str()),
                (None, None) => false,
            };
            if !ok {
                let what = if u.name == "*" {
                    "a glob of the crate root".to_string()
                } else {
                    format!("crate::{}", u.name)
                };
                bad.push(format!("src/{shown}:{}: {layer} names {what}", u.line));
            }
        }
        if let Some((_, methods)) = FORBIDDEN_METHODS.iter().find(|(l, _)| l == layer) {
            for w in toks.windows(3) {
                if let [(Tok::Punct('.'), line), (Tok::Ident(m), _), (Tok::Punct('('), _)] = w {
                    if methods.contains(&m.as_str()) {
                        bad.push(format!(
                            "src/{shown}:{line}: {layer} calls .{m}(), a later layer's method"
                        ));
                    }
                }
            }
        }
        if let Some((_, crates)) = FORBIDDEN_CRATES.iter().find(|(l, _)| l == layer) {
            for (name, line) in crates_named(&toks) {
                if crates.contains(&name.as_str()) {
                    bad.push(format!(
                        "src/{shown}:{line}: {layer} names the crate {name}"
                    ));
                }
            }
        }
    }
    bad.sort();
    bad
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every module uses only the modules listed before it in lib.rs, test code aside.
#[test]
fn every_layer_uses_only_the_layers_before_it() {
    let src = root().join("src");
    let lib_rs = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let order = doc_order(&lib_rs);
    assert!(order.len() >= 10, "lib.rs's doc list gave only {order:?}");
    // The list names every module lib.rs declares, once.
    let declared: Vec<String> = library_files(&src, false)
        .into_iter()
        .filter(|(_, m, _)| m.len() == 1)
        .map(|(_, m, _)| m[0].clone())
        .collect();
    let mut listed = order.clone();
    listed.sort();
    listed.dedup();
    let mut declared_sorted = declared.clone();
    declared_sorted.sort();
    assert_eq!(
        listed.len(),
        order.len(),
        "lib.rs lists a module twice: {order:?}"
    );
    assert_eq!(
        listed, declared_sorted,
        "lib.rs's doc list and its `mod`s differ"
    );
    let files = library_files(&src, false).len();
    assert!(files > 80, "followed only {files} files from src/lib.rs");
    let bad = violations(&src, &order, false);
    assert!(
        bad.is_empty(),
        "a layer uses one listed after it ({order:?}): {bad:#?}"
    );
}

/// docs/architecture.md states the same order: its line `Layer order: a → b → …`,
/// and the library's rows of its table of layers (each row's first `src/x/`).
#[test]
fn architecture_md_draws_the_order_of_lib_rs() {
    let lib_rs = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let order = doc_order(&lib_rs);
    let md = std::fs::read_to_string(root().join("docs/architecture.md")).expect("architecture.md");
    let line = md
        .lines()
        .find_map(|l| l.strip_prefix("Layer order: "))
        .expect("architecture.md has a line `Layer order: …`");
    let stated: Vec<String> = line
        .trim_end_matches('.')
        .split('→')
        .map(|s| s.trim().trim_matches('`').to_string())
        .collect();
    assert_eq!(
        stated, order,
        "architecture.md's layer order is not lib.rs's"
    );
    let section = md
        .split("## The layers")
        .nth(1)
        .expect("a section `## The layers`");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows: Vec<String> = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| **")) {
        let first = row
            .split("`src/")
            .nth(1)
            .and_then(|r| r.split(['/', '.', '`']).next())
            .map(str::to_string);
        if let Some(m) = first.filter(|m| order.contains(m)) {
            if rows.last() != Some(&m) {
                rows.push(m);
            }
        }
    }
    assert_eq!(
        rows, order,
        "architecture.md's table of layers is not in lib.rs's order"
    );
}

/// The checker sees each way of naming a layer, and ignores test code and comments.
#[test]
fn the_checker_sees_each_way_of_naming_a_layer() {
    let uses = |src: &str, module: &[&str]| -> Vec<String> {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        scan(&without_test_code(lex(src)), &module)
            .1
            .into_iter()
            .map(|u| u.name)
            .collect()
    };
    let node = ["node", "link"];
    assert_eq!(uses("use crate::sim::Sim;", &node), ["sim"]);
    assert_eq!(uses("let x = crate::daemon::run();", &node), ["daemon"]);
    assert_eq!(
        uses("use crate::{contract::rng, config::{A, B}};", &node),
        ["contract", "config"]
    );
    assert_eq!(
        uses("use super::super::security::Gate;", &node),
        ["security"]
    );
    assert_eq!(uses("use super::super::*;", &node), ["*"]);
    assert_eq!(
        uses("macro_rules! m { () => { $crate::http::x() } }", &node),
        ["http"]
    );
    // Inside an inline module `super` climbs one more.
    assert_eq!(
        uses("mod inner { use super::super::super::trace::X; }", &node),
        ["trace"]
    );
    assert!(uses("mod inner { use super::super::X; }", &node).is_empty());
    // Within the layer, comments, strings, test code: nothing.
    for fine in [
        "use super::Link;",
        "/// see [`crate::daemon::heartbeats`]\nfn f() {}",
        "/* crate::sim /* nested */ crate::sim */",
        "let s = \"crate::sim::Sim\"; let r = r#\"crate::config\"#;",
        "let c = '\"'; let l: &'static str = \"\"; fn f<'a>(x: &'a u8) {}",
        "#[cfg(test)]\nmod tests { use crate::sim::Sim; }",
        "#[cfg(test)]\n#[path = \"tests/x.rs\"]\nmod tests;",
        "#[cfg(test)]\nuse crate::sim::Sim;",
        "#[cfg(test)]\nfn helper(x: [u8; 2]) -> crate::sim::Sim { crate::sim::Sim::new() }",
    ] {
        assert!(
            uses(fine, &node).is_empty(),
            "{fine}: {:?}",
            uses(fine, &node)
        );
    }
    // Code after a test item is still read.
    assert_eq!(
        uses("#[cfg(test)]\nmod tests { }\nuse crate::http::X;", &node),
        ["http"]
    );
    assert_eq!(uses("let c = '{'; use crate::http::X;", &node), ["http"]);
    // Crates: a path head or a `use`.
    let crates = |src: &str| -> Vec<String> {
        crates_named(&lex(src))
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert!(crates("use tokio::net::UdpSocket;").contains(&"tokio".to_string()));
    assert!(crates("let v: toml::Value = x;").contains(&"toml".to_string()));
    assert!(!crates("use std::time::Duration; let x = a::tokio::b;").contains(&"tokio".to_string()));
}

/// Test code is what the check leaves out, and it does use layers listed later (the
/// node's tests run the simulator): read with it, the tree fails the check.
#[test]
fn the_tests_left_out_do_use_later_layers() {
    let src = root().join("src");
    let order = doc_order(&std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs"));
    let with = library_files(&src, true).len();
    let without = library_files(&src, false).len();
    assert!(with > without, "{with} files with tests, {without} without");
    let bad = violations(&src, &order, true);
    assert!(
        bad.iter()
            .any(|v| v.starts_with("src/node/") && v.ends_with("node names crate::sim")),
        "{bad:#?}"
    );
}

/// The whole check fails on a planted back-edge: a copy of the sources where the node
/// names the daemon.
#[test]
fn a_planted_back_edge_fails_the_check() {
    let copy = std::env::temp_dir().join(format!("electd-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    copy_dir(&root().join("src"), &copy);
    let order = doc_order(&std::fs::read_to_string(copy.join("lib.rs")).expect("lib.rs"));
    assert!(
        violations(&copy, &order, false).is_empty(),
        "the copy is already broken"
    );
    let status = copy.join("node/status.rs");
    let text = std::fs::read_to_string(&status).expect("node/status.rs");
    std::fs::write(
        &status,
        format!("{text}\nfn planted() {{ let _ = crate::daemon::metrics::Metrics::new; }}\n"),
    )
    .expect("write");
    let bad = violations(&copy, &order, false);
    std::fs::remove_dir_all(&copy).expect("remove the copy");
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(
        bad[0].contains("node/status.rs") && bad[0].contains("node names crate::daemon"),
        "{bad:#?}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}
