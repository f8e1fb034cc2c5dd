//! The code's shape, checked: the top-level modules of `core/src` and of `server/src` import
//! each other in no circle, no file of `server/src` is over 800 lines outside its tests, and
//! the page's parts take callbacks, not the reducer's dispatcher.
//!
//! A module's imports are the `crate::<top>` and `super::…` paths in its files (comments
//! aside), resolved to the top-level module they name; `lib.rs` and `main.rs` only declare
//! and re-export, so they are not modules of the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a file of `server/src` may be, its `#[cfg(test)]` items aside.
const MAX_LINES: usize = 800;

fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The file's module path below the crate root: `a/b.rs` and `a/b/mod.rs` are `[a, b]`.
fn module_path(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text without `//` comments (doc comments included: a link is not an import).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string ("http://…") cuts the line short: that only hides text.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Which top-level module imports which, for the crate rooted at `root`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = rust_files(root);
    for f in &files {
        let path = module_path(root, f);
        if path.is_empty() || path == ["lib"] || path == ["main"] {
            continue;
        }
        g.entry(path[0].clone()).or_default();
    }
    for f in &files {
        let path = module_path(root, f);
        let Some(top) = path.first().filter(|t| g.contains_key(*t)) else {
            continue;
        };
        let text = code(&std::fs::read_to_string(f).unwrap());
        let mut deps = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            deps.insert(ident_at(&text[i + 7..]).to_string());
        }
        for (i, _) in text.match_indices("super::") {
            // Only the start of a chain: `super::super::x` counts once.
            if text[..i].ends_with("super::") {
                continue;
            }
            let mut rest = &text[i..];
            let mut up = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                up += 1;
                rest = r;
            }
            let base = &path[..path.len().saturating_sub(up)];
            let target = base
                .first()
                .cloned()
                .unwrap_or_else(|| ident_at(rest).to_string());
            deps.insert(target);
        }
        let known: BTreeSet<String> = deps
            .into_iter()
            .filter(|d| d != top && g.contains_key(d))
            .collect();
        g.get_mut(top).unwrap().extend(known);
    }
    g
}

/// A circle of imports, if there is one.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        v: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == v) {
            let mut c = stack[i..].to_vec();
            c.push(v.to_string());
            return Some(c);
        }
        if done.contains(v) {
            return None;
        }
        stack.push(v.to_string());
        for w in &g[v] {
            if let Some(c) = visit(g, w, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(v.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for v in g.keys() {
        if let Some(c) = visit(g, v, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

/// Lines of `text` outside `#[cfg(test)]` items (a test module, a test-only helper).
fn lines_outside_tests(text: &str) -> usize {
    let mut n = 0;
    let mut skipping = false;
    let mut depth = 0i64;
    let mut opened = false;
    for line in text.lines() {
        let t = line.trim();
        if skipping {
            let open = line.matches('{').count() as i64;
            depth += open - line.matches('}').count() as i64;
            opened |= open > 0;
            if (opened && depth <= 0) || (!opened && t.ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if t == "#[cfg(test)]" {
            (skipping, depth, opened) = (true, 0, false);
            continue;
        }
        n += 1;
    }
    n
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn the_top_level_modules_of_core_and_server_import_each_other_in_no_circle() {
    for krate in ["core/src", "server/src"] {
        let g = graph(&workspace().join(krate));
        assert!(g.len() > 5, "{krate}: only {g:?}");
        assert_eq!(
            find_cycle(&g),
            None,
            "{krate}: modules import each other in a circle; the graph: {g:#?}"
        );
    }
    // The layering the server relies on, named: nothing below imports what is above.
    let g = graph(&workspace().join("server/src"));
    for low in ["cli", "common", "http"] {
        for high in ["client", "nsqd", "nsqlookupd", "tools"] {
            assert!(!g[low].contains(high), "{low} imports {high}");
        }
    }
}

#[test]
fn no_server_file_is_over_800_lines_outside_its_tests() {
    let root = workspace().join("server/src");
    let mut long = Vec::new();
    for f in rust_files(&root) {
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let n = lines_outside_tests(&std::fs::read_to_string(&f).unwrap());
        if n > MAX_LINES {
            long.push(format!("{} ({n} lines)", f.display()));
        }
    }
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

/// The page's parts are given the callbacks they need, never the reducer's dispatcher: only
/// the two apps that own a reducer (`app/sim.rs`, `app/live.rs`) and `app/mod.rs`, which names
/// its type, may mention it.
#[test]
fn the_pages_parts_take_callbacks_not_the_dispatcher() {
    let root = workspace().join("web/src");
    let owners = ["app/mod.rs", "app/sim.rs", "app/live.rs"].map(|f| root.join(f));
    let files = rust_files(&root);
    assert!(files.len() > 20, "only {} files in web/src", files.len());
    let holders: Vec<String> = files
        .iter()
        .filter(|f| !owners.contains(f))
        .filter(|f| {
            let text = code(&std::fs::read_to_string(f).unwrap());
            text.contains("Dispatch") || text.contains("UseReducerDispatcher")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        holders.is_empty(),
        "parts that hold the dispatcher: {holders:?}"
    );
}

/// The checks themselves: a tree with a circle (through `super::super` and `crate::`) is
/// caught, comments do not count, and test items are not lines.
#[test]
fn the_checks_catch_a_circle_and_count_only_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/inner")).unwrap();
    std::fs::write(root.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    std::fs::write(root.join("a/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(
        root.join("a/inner/deep.rs"),
        "use super::super::super::b::X;\n",
    )
    .unwrap();
    std::fs::write(root.join("b.rs"), "use crate::c::Y;\n").unwrap();
    std::fs::write(root.join("c.rs"), "// crate::a in a comment only\n").unwrap();
    let g = graph(root);
    assert!(g["a"].contains("b"), "{g:?}");
    assert!(g["c"].is_empty(), "a comment is not an import: {g:?}");
    assert_eq!(find_cycle(&g), None);
    std::fs::write(root.join("c.rs"), "pub fn f() { crate::a::g(); }\n").unwrap();
    let g = graph(root);
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let text = "fn a() {}\n#[cfg(test)]\nfn helper() {\n    let x = 1;\n}\n#[cfg(test)]\nmod tests;\nfn b() {\n}\n#[cfg(test)]\nmod t {\n    #[test]\n    fn x() {}\n}\n";
    assert_eq!(lines_outside_tests(text), 3);
}

/// Users get a stripped release binary (it was 90 MB with debug information); symbols for
/// profiling come from a profile of their own.
#[test]
fn the_release_binary_is_stripped_and_profiling_keeps_symbols() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let section = |name: &str| -> Vec<String> {
        let head = format!("[profile.{name}]");
        let at = toml
            .find(&head)
            .unwrap_or_else(|| panic!("no {head} in Cargo.toml"));
        toml[at + head.len()..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with('['))
            .map(|l| l.replace(' ', ""))
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    };
    let release = section("release");
    assert!(release.contains(&"strip=true".to_string()), "{release:?}");
    assert!(release.contains(&"debug=false".to_string()), "{release:?}");
    let profiling = section("profiling");
    assert!(
        profiling.contains(&"inherits=\"release\"".to_string())
            && profiling.contains(&"debug=1".to_string())
            && profiling.contains(&"strip=false".to_string()),
        "{profiling:?}"
    );
}
