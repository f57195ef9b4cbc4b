//! `report --stacks --stream` and `--json --stream`: the same groups as
//! the whole views, each written once it is complete, the summary last.

mod common;

use std::path::PathBuf;

use ustack_testdata::{self as testdata, TraceBuilder};

fn write(name: &str, t: TraceBuilder) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracer-cli-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    t.write(&p).unwrap();
    p
}

/// The summary comment lines and the group blocks (sorted) of a text view.
fn parts(text: &str) -> (Vec<String>, Vec<String>) {
    let mut summary = Vec::new();
    let mut blocks = Vec::new();
    for block in text.split("\n\n") {
        let (comments, rest): (Vec<&str>, Vec<&str>) =
            block.lines().partition(|l| l.starts_with("# "));
        summary.extend(comments.iter().map(|l| l.to_string()));
        if !rest.is_empty() {
            blocks.push(rest.join("\n"));
        }
    }
    blocks.sort();
    (summary, blocks)
}

#[test]
fn streamed_text_has_the_groups_and_summary_of_the_whole_view() {
    let f = write("demo.dat", testdata::demo(20_000, 4));
    for sel in [&[][..], &["--pid", "2300"], &["--cpu", "1"]] {
        let whole = common::report_ok(&[&["--stacks"], sel].concat(), &f);
        let streamed = common::report_ok(&[&["--stacks", "--stream"], sel].concat(), &f);
        let (ws, wb) = parts(&whole);
        let (ss, sb) = parts(&streamed);
        assert!(wb.len() > 1000, "{sel:?}: {} groups", wb.len());
        assert_eq!(ss, ws, "{sel:?}");
        assert!(sb == wb, "{sel:?}: the groups differ");
        // The summary comes first in the whole view, last when streamed.
        assert!(
            whole.starts_with(&ws[0]) && streamed.ends_with(&format!("{}\n", ss[ss.len() - 1]))
        );
        assert!(!streamed.starts_with('#'));
    }
}

#[test]
fn streamed_json_has_the_groups_and_totals_of_the_whole_view() {
    let f = write("demo-json.dat", testdata::demo(5_000, 4));
    let parse = |s: String| -> serde_json::Value { serde_json::from_str(&s).unwrap() };
    let whole = parse(common::report_ok(&["--json"], &f));
    let streamed_text = common::report_ok(&["--json", "--stream"], &f);
    assert!(streamed_text.starts_with("{\"groups\":[\n"));
    let streamed = parse(streamed_text);
    for key in ["events", "drops", "unresolved"] {
        assert_eq!(streamed[key], whole[key], "{key}");
    }
    let sorted = |v: &serde_json::Value| {
        let mut g: Vec<String> = v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.to_string())
            .collect();
        g.sort();
        g
    };
    assert_eq!(sorted(&streamed).len(), 5_000);
    assert!(sorted(&streamed) == sorted(&whole));
}

#[test]
fn a_kernel_only_trace_streams_its_groups_at_the_end() {
    let f = write("kernel-only.dat", testdata::fixture_kernel_only());
    let (ws, wb) = parts(&common::report_ok(&["--stacks"], &f));
    let (ss, sb) = parts(&common::report_ok(&["--stacks", "--stream"], &f));
    assert_eq!((ss, sb.len()), (ws, 2));
    assert_eq!(sb, wb);
}

#[test]
fn stream_goes_with_the_text_and_json_views_only() {
    let f = write("fixture.dat", testdata::fixture());
    for args in [&["--stream"][..], &["--folded", "--stream"]] {
        let (out, err, ok) = common::report(args, &f);
        assert!(!ok && out.is_empty(), "{args:?}");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains("--stream"), "{args:?}: {err}");
    }
}

/// `--memory-budget` changes where the index lives, never what is
/// printed: 160,000 events, whose event index spills by default and stays
/// in memory with 512 MiB.
#[test]
fn the_memory_budget_changes_no_output() {
    let f = write("budget.dat", testdata::demo(20_000, 4));
    for view in [&["--stacks"][..], &["--json"]] {
        let default = common::report_ok(view, &f);
        let budget = common::report_ok(&[view, &["--memory-budget", "512"]].concat(), &f);
        assert!(budget == default, "{view:?}");
    }
    let (_, err, ok) = common::report(&["--memory-budget", "100"], &f);
    assert!(!ok);
    assert_eq!(
        err,
        "tracer-cli: --memory-budget goes with --stacks, --json, --folded or --pprof\n"
    );
    let (_, err, ok) = common::report(&["--stacks", "--memory-budget", "63"], &f);
    assert!(!ok);
    assert!(err.starts_with("error: invalid value '63' for '--memory-budget <MIB>': the index needs at least 64 MiB\n"), "{err}");
}
