//! Small file helpers that turn every failure into an [`Error`] naming the file.

use crate::error::{Error, Op, Result};
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// Reads a whole file.
pub(crate) fn read_bytes(abs: &Path, shown: &str) -> Result<Vec<u8>> {
    let mut f = fs::File::open(abs).map_err(|e| Error::io(Op::Read, shown, e))?;
    // Big reads: some tracefs files (events/header_event) return only what
    // the first read(2) asked for, so never start with a small probe read.
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(Op::Read, shown, e)),
        }
    }
    Ok(buf)
}

/// Reads a whole file as text (lossy: tracefs files are ASCII).
pub(crate) fn read_string(abs: &Path, shown: &str) -> Result<String> {
    let bytes = read_bytes(abs, shown)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes `value` to a tracefs control file with a single write(2), as the
/// kernel parses each write on its own. `truncate` opens with O_TRUNC (which
/// clears e.g. `trace` or `set_event_pid`), otherwise O_APPEND is used.
pub(crate) fn write(abs: &Path, shown: &str, value: &[u8], truncate: bool) -> Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    if truncate {
        opts.truncate(true);
    } else {
        opts.append(true);
    }
    let mut f = opts.open(abs).map_err(|e| Error::io(Op::Write, shown, e))?;
    if value.is_empty() {
        return Ok(());
    }
    let n = f.write(value).map_err(|e| Error::io(Op::Write, shown, e))?;
    if n != value.len() {
        return Err(Error::Invalid(format!(
            "short write to {shown}: {n} of {} bytes",
            value.len()
        )));
    }
    Ok(())
}

/// Names of the entries of a directory, sorted.
pub(crate) fn list_dir(abs: &Path, shown: &str, dirs_only: bool) -> Result<Vec<String>> {
    let rd = fs::read_dir(abs).map_err(|e| Error::io(Op::List, shown, e))?;
    let mut names = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|e| Error::io(Op::List, shown, e))?;
        if dirs_only && !ent.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        if let Some(name) = ent.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Matches `name` against a shell-style glob with `*` and `?`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn rec(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| rec(rest, &n[i..])),
            Some((b'?', rest)) => !n.is_empty() && rec(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && rec(rest, &n[1..]),
        }
    }
    rec(pattern.as_bytes(), name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("sched_*", "sched_switch"));
        assert!(glob_match("*", ""));
        assert!(glob_match("sys_?nter_*", "sys_enter_read"));
        assert!(!glob_match("sys_enter", "sys_enter_read"));
        assert!(!glob_match("sched_*", "irq_handler_entry"));
    }
}
