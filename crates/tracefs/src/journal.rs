//! A [`crate::Guard`]'s saved values on disk, so that a run killed with
//! SIGKILL (no destructor, no signal handler) can be undone by the next
//! one: every change the guard makes rewrites the file first, a complete
//! restore removes it, and [`replay`] restores from a file left behind.
//!
//! One line per entry, oldest first: `write<TAB>PATH<TAB>VALUE` (the value
//! with `\`, newline and tab escaped) or `rmdir<TAB>DIR` for an instance
//! the run created.

use crate::error::{Error, Op, Result};
use std::path::{Path, PathBuf};

/// One saved entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// Write `value` back to the file.
    Write(PathBuf, String),
    /// Remove the instance directory.
    Rmdir(PathBuf),
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut it = v.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// Writes `lines` to `path` atomically (a temp file renamed over it).
pub(crate) fn save(path: &Path, lines: &[Line]) -> Result<()> {
    let mut text = String::new();
    for l in lines {
        match l {
            Line::Write(p, v) => text.push_str(&format!("write\t{}\t{}\n", p.display(), escape(v))),
            Line::Rmdir(d) => text.push_str(&format!("rmdir\t{}\n", d.display())),
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let shown = path.display().to_string();
    std::fs::write(&tmp, text).map_err(|e| Error::io(Op::Write, shown.clone(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(Op::Write, shown, e))
}

/// Parses a journal; lines that do not parse are skipped.
pub(crate) fn parse(text: &str) -> Vec<Line> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            match (f.next(), f.next(), f.next()) {
                (Some("write"), Some(p), Some(v)) => Some(Line::Write(p.into(), unescape(v))),
                (Some("rmdir"), Some(d), None) => Some(Line::Rmdir(d.into())),
                _ => None,
            }
        })
        .collect()
}

/// Restores what the journal at `path` saved (newest entry first) and
/// removes it. Returns how many entries were restored; a missing file is
/// `Ok(0)`. Settings of instances that are gone are skipped. Only files
/// under `/sys/kernel` or a `tracing` directory are written.
pub fn replay(path: &Path) -> Result<usize> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(Op::Read, path.display().to_string(), e)),
    };
    let tracefs = |p: &Path| p.components().any(|c| c.as_os_str() == "tracing");
    let mut done = 0;
    let mut first_err = None;
    for l in parse(&text).into_iter().rev() {
        let r = match &l {
            Line::Write(p, _) | Line::Rmdir(p) if !tracefs(p) => continue,
            Line::Write(p, _) if !p.exists() => continue,
            Line::Write(p, v) => {
                crate::fsio::write(p, &p.display().to_string(), v.as_bytes(), true)
            }
            Line::Rmdir(d) => match std::fs::remove_dir(d) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(Error::io(Op::Remove, d.display().to_string(), e))
                }
                _ => Ok(()),
            },
        };
        match r {
            Ok(()) => done += 1,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    std::fs::remove_file(path).map_err(|e| Error::io(Op::Remove, path.display().to_string(), e))?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_the_round_trip_with_any_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let lines = vec![
            Line::Write("/sys/kernel/tracing/buffer_size_kb".into(), "1408".into()),
            Line::Write(
                "/sys/kernel/tracing/events/sched/sched_switch/filter".into(),
                "a\\b\tc\nd".into(),
            ),
            Line::Rmdir("/sys/kernel/tracing/instances/x".into()),
        ];
        save(&path, &lines).unwrap();
        assert_eq!(parse(&std::fs::read_to_string(&path).unwrap()), lines);
    }

    #[test]
    fn replay_restores_newest_first_only_inside_tracing_and_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("tracing");
        std::fs::create_dir_all(t.join("instances/gone")).unwrap();
        std::fs::write(t.join("a"), "changed").unwrap();
        std::fs::write(dir.path().join("outside"), "keep").unwrap();
        let path = dir.path().join("j");
        save(
            &path,
            &[
                Line::Write(t.join("a"), "first".into()),
                Line::Write(t.join("a"), "second".into()),
                Line::Write(dir.path().join("outside"), "no".into()),
                Line::Write(t.join("missing"), "x".into()),
                Line::Rmdir(t.join("instances/gone")),
            ],
        )
        .unwrap();
        assert_eq!(replay(&path).unwrap(), 3);
        // Newest first: the oldest value is what stays.
        assert_eq!(std::fs::read_to_string(t.join("a")).unwrap(), "first");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("outside")).unwrap(),
            "keep"
        );
        assert!(!t.join("instances/gone").exists());
        assert!(!t.join("missing").exists());
        assert!(!path.exists());
        assert_eq!(replay(&path).unwrap(), 0);
    }
}
