//! The crate graph drawn in Documentation/design.md ("Crates and who uses
//! whom") is the one `cargo metadata` reports: every workspace crate is
//! drawn, each with exactly its normal dependencies on workspace crates
//! (dev- and build-dependencies are not drawn), and the graph has no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Graph = BTreeMap<String, BTreeSet<String>>;

const ARROW: &str = "──►";
const NO_CRATES: &str = "system libraries only";

/// The name a crate has in the drawing: its package name without `ustack-`.
fn short(package: &str) -> String {
    package
        .strip_prefix("ustack-")
        .unwrap_or(package)
        .to_string()
}

/// The graph drawn in the first code block after the heading.
fn drawn(design: &str) -> Graph {
    let at = design
        .find("### Crates and who uses whom")
        .expect("design.md has the heading \"Crates and who uses whom\"");
    let block = design[at..]
        .split("```")
        .nth(1)
        .expect("a code block after the heading");
    let mut g = Graph::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let (from, to) = line
            .split_once(ARROW)
            .unwrap_or_else(|| panic!("a line without {ARROW}: {line:?}"));
        let to: BTreeSet<String> = match to.trim() {
            NO_CRATES => BTreeSet::new(),
            t => t.split(',').map(|n| n.trim().to_string()).collect(),
        };
        for name in from.split(',').map(str::trim) {
            let old = g.insert(name.to_string(), to.clone());
            assert!(old.is_none(), "{name} is drawn twice");
        }
    }
    g
}

/// The workspace's normal dependencies on its own crates, from
/// `cargo metadata`.
fn actual(workspace: &Path) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("package name"))
        .collect();
    let mut g = Graph::new();
    for p in packages {
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().expect("dependency name"))
            .filter(|n| members.contains(n))
            .map(short)
            .collect();
        g.insert(short(p["name"].as_str().unwrap()), deps);
    }
    g
}

/// A cycle of `g`, if it has one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        n: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            return Some(path[i..].to_vec());
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, d, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn design_md_draws_the_crate_graph_of_cargo_metadata() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let design = std::fs::read_to_string(workspace.join("Documentation/design.md")).unwrap();
    let drawn = drawn(&design);
    let actual = actual(workspace);
    let mut wrong = Vec::new();
    for (name, deps) in &actual {
        match drawn.get(name) {
            None => wrong.push(format!("{name} is not drawn (it uses {deps:?})")),
            Some(d) if d != deps => {
                wrong.push(format!("{name}: drawn {d:?}, cargo metadata says {deps:?}"))
            }
            Some(_) => {}
        }
    }
    for name in drawn.keys().filter(|n| !actual.contains_key(*n)) {
        wrong.push(format!("{name} is drawn but is no crate of the workspace"));
    }
    assert!(
        wrong.is_empty(),
        "Documentation/design.md's crate graph is out of date:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        cycle(&actual),
        None,
        "the crates depend on each other in a cycle"
    );
}

#[test]
fn a_drawing_is_read_line_by_line() {
    let g = drawn(
        "x\n### Crates and who uses whom\n\n```\n a ──► b, c\n b, c ──► system libraries only\n```\n",
    );
    assert_eq!(g["a"], BTreeSet::from(["b".to_string(), "c".to_string()]));
    assert!(g["b"].is_empty() && g["c"].is_empty());
    let mut cyclic = g.clone();
    cyclic.get_mut("c").unwrap().insert("a".into());
    assert_eq!(cycle(&cyclic), Some(vec!["a".to_string(), "c".to_string()]));
    assert_eq!(cycle(&g), None);
}
