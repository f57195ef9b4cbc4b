//! Every event format of the host kernel passes the screen of
//! [`Tep::parse_event`] (printable ASCII, fields within a page, no division
//! by a non-constant, no deep nesting, huge counts or widths): the refusals
//! are meant for corrupt files, never for what a real kernel writes. Needs
//! root to read tracefs: `#[ignore]`d, run with `--include-ignored`.

use std::path::{Path, PathBuf};

use ustack_traceevent::{screen, Tep};

const EVENTS: &str = "/sys/kernel/tracing/events";

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|u| u.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Fails the test: it was asked to run but cannot.
fn skip(why: &str) {
    panic!("this host test cannot run: {why}");
}

/// `(system, format file)` of every event under `events/`.
fn formats(events: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut systems: Vec<_> = std::fs::read_dir(events)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    systems.sort();
    for sys in systems {
        let name = sys.file_name().unwrap().to_string_lossy().into_owned();
        let mut evs: Vec<_> = std::fs::read_dir(&sys)
            .unwrap()
            .map(|e| e.unwrap().path().join("format"))
            .filter(|p| p.is_file())
            .collect();
        evs.sort();
        out.extend(evs.into_iter().map(|p| (name.clone(), p)));
    }
    out
}

#[test]
#[ignore = "needs root and tracefs"]
fn no_event_format_of_the_host_is_refused() {
    if !is_root() {
        return skip("needs root");
    }
    if !Path::new(EVENTS).join("sched").is_dir() {
        return skip("no tracefs at /sys/kernel/tracing");
    }
    let all = formats(Path::new(EVENTS));
    let ftrace = all.iter().filter(|(s, _)| s == "ftrace").count();
    assert!(all.len() > 500, "only {} formats", all.len());
    assert!(ftrace > 10, "only {ftrace} ftrace formats");
    let mut tep = Tep::new(8, 4096).unwrap();
    let (mut refused, mut lib_failed, mut divisions) = (Vec::new(), Vec::new(), 0);
    for (sys, path) in &all {
        let text = std::fs::read(path).unwrap();
        if let Err(why) = screen::check(&text) {
            refused.push(format!("{}: {why:?}", path.display()));
        }
        let print = String::from_utf8_lossy(&text);
        if print.contains(" / ") || print.contains(" % ") {
            divisions += 1;
        }
        if let Err(e) = tep.parse_event(&text, sys) {
            if e.0.contains("refused") || e.0.contains("printable") {
                refused.push(format!("{}: {e}", path.display()));
            } else {
                lib_failed.push(format!("{}: {e}", path.display()));
            }
        }
    }
    eprintln!(
        "{} formats ({ftrace} of ftrace), {divisions} with ' / ' or ' % ', \
         {} libtraceevent cannot parse",
        all.len(),
        lib_failed.len()
    );
    for l in &lib_failed {
        eprintln!("  libtraceevent: {l}");
    }
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
    // The scan did see divisions (by constants and sizeof) and let them be.
    assert!(divisions > 0);
}
