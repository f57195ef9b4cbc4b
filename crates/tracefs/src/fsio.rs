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

/// Names of the entries of a directory in readdir order; with
/// `dirs_only`, only directories (following symlinks, as stat(2) does).
pub(crate) fn list_dir_unsorted(abs: &Path, shown: &str, dirs_only: bool) -> Result<Vec<String>> {
    let rd = fs::read_dir(abs).map_err(|e| Error::io(Op::List, shown, e))?;
    let mut names = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|e| Error::io(Op::List, shown, e))?;
        if dirs_only && !ent.path().is_dir() {
            continue;
        }
        if let Some(name) = ent.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// Matches `name` against a shell-style glob with `*` (any run of bytes)
/// and `?` (any one byte); every other byte stands for itself, so `[`, `{`
/// and `\` are literal, as event and system names never hold them.
///
/// Takes at most (pattern length + 1) × (name length + 1) steps: a `*`
/// never needs to be tried again once a later `*` matched, so only the last
/// one is ever moved on (patterns like `*a*a*a*b` used to take exponential
/// time).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    glob_match_counted(pattern.as_bytes(), name.as_bytes(), || {})
}

/// [`glob_match`], calling `step` once per comparison (for the tests).
fn glob_match_counted(p: &[u8], n: &[u8], mut step: impl FnMut()) -> bool {
    let (mut pi, mut ni) = (0, 0);
    // After the last `*` seen: where the pattern goes on, and the first
    // name byte that `*` has not taken yet.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        step();
        match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                star = Some((pi, ni));
            }
            Some(&c) if c == b'?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            // A mismatch: let the last `*` take one more byte.
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::{glob_match, glob_match_counted};

    #[test]
    fn globs() {
        assert!(glob_match("sched_*", "sched_switch"));
        assert!(glob_match("*", ""));
        assert!(glob_match("sys_?nter_*", "sys_enter_read"));
        assert!(!glob_match("sys_enter", "sys_enter_read"));
        assert!(!glob_match("sched_*", "irq_handler_entry"));
    }

    #[test]
    fn only_star_and_question_mark_are_special() {
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
        assert!(!glob_match("?", ""));
        assert!(glob_match("**", "abc"));
        assert!(glob_match("a*b*c", "abc"));
        assert!(glob_match("*c", "abcabc"));
        assert!(!glob_match("*c?", "abcabc"));
        assert!(glob_match("[ab]", "[ab]"));
        assert!(!glob_match("[ab]", "a"));
        assert!(glob_match("{a,b}*", "{a,b}c"));
        assert!(!glob_match("{a,b}", "a"));
        assert!(glob_match("a\\*", "a\\bc"));
        assert!(!glob_match("a\\*", "a*"));
    }

    /// The matcher this one replaced: a `*` tries every split point,
    /// recursively. Exponential on `*a*a*a*b`, so only for short inputs.
    fn reference(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| reference(rest, &n[i..])),
            Some((b'?', rest)) => !n.is_empty() && reference(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && reference(rest, &n[1..]),
        }
    }

    /// Every string over `alphabet` of length up to `max`.
    fn all_strings(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..max {
            let next: Vec<Vec<u8>> = last
                .iter()
                .flat_map(|s: &Vec<u8>| {
                    alphabet.iter().map(move |&c| {
                        let mut t = s.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            out.extend(next.iter().cloned());
            last = next;
        }
        out
    }

    #[test]
    fn agrees_with_the_old_matcher_on_every_short_input() {
        let patterns = all_strings(b"ab*?", 5);
        let names = all_strings(b"ab", 6);
        for p in &patterns {
            for n in &names {
                assert_eq!(
                    glob_match_counted(p, n, || {}),
                    reference(p, n),
                    "pattern {:?} name {:?}",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(n)
                );
            }
        }
    }

    #[test]
    fn a_pathological_pattern_takes_polynomially_many_steps() {
        // The old matcher tried every way to share the name out among the
        // 20 stars, more than 10^50 of them: it never finished.
        let pattern = format!("{}b", "*a".repeat(20));
        let name = "a".repeat(4000);
        let mut steps = 0u64;
        let matched = glob_match_counted(pattern.as_bytes(), name.as_bytes(), || steps += 1);
        assert!(!matched);
        let bound = (pattern.len() as u64 + 1) * (name.len() as u64 + 1);
        assert!(steps <= bound, "{steps} steps, bound {bound}");
        // And the public function gives the same answer.
        assert!(!glob_match(&pattern, &name));
        assert!(glob_match(&pattern, &(name + "b")));
    }
}
