//! Process memory maps: the text of `/proc/PID/maps` and trace-cmd's
//! PROCMAPS option, parsed and written by one type ([`ProcMap`]) with one
//! rule for paths.
//!
//! A PROCMAPS option holds one process, all numbers in hex:
//!
//! ```text
//! <pid> <count> <comm>
//! <start> <end> <path>          (count lines)
//! tasks: <tid> <tid> ...        (optional, ours)
//! replaced: <start> <end> <path> (optional, ours, one per line)
//! at: <ts> <kind> [<parent>]    (optional, ours: see below)
//! ```
//!
//! `start` is where the file's lowest mapping begins, which maps file
//! offset 0: the load base of an ELF file. trace-cmd reads each line with
//! `sscanf("%x %x %s")`, so a path is one word: whitespace and `\` in paths
//! are written as `\ooo` octal escapes (as `/proc/mounts` does) and read
//! back. trace-cmd ignores what follows the mapping lines; there we list the
//! threads of the process, so that a reader knows which process every task
//! of a trace belongs to instead of guessing, and the mappings that a later
//! image of the process (after an exec) replaced, so that a reader knows
//! which addresses belonged to two images.
//!
//! The `at:` line makes the entry one observation of the process at trace
//! time `ts` (nanoseconds of the trace clock, hex), so that each stack can
//! be resolved with the maps valid at its own time ([`MapsAt`]); `kind` is
//! `snap` (the whole map at `ts`), `add` (mappings that came into being at
//! `ts`), `exec` (a new image starts at `ts`: nothing earlier is valid
//! after it; its maps, if any, are the new image's) or `fork <parent>` (the
//! process was created at `ts` by `parent`, whose maps it has until it
//! execs). Several timed entries of one pid make up its history. An entry
//! without `at:` (trace-cmd's, older files) is valid over the whole trace.
//!
//! Nothing here reads `/proc`: the recorder does, and hands the text to
//! [`ProcMap::from_proc_maps`].

/// One mapping of a process: a file (or `[heap]`, `[stack]`, `[vdso]`, ...)
/// and the address range it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibMap {
    /// First address of the mapping: the load base of the file.
    pub start: u64,
    /// End address (exclusive) of the mapping.
    pub end: u64,
    /// The mapped file as the process named it (unescaped).
    pub path: String,
}

/// The memory map of one process (thread group), stored as one PROCMAPS
/// option so that user-space addresses of its stacks can be symbolized
/// later.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcMap {
    /// The process id (tgid).
    pub pid: u32,
    /// The command name (whitespace is replaced by `_` when written).
    pub comm: String,
    /// The file-backed and special mappings, sorted by address.
    pub maps: Vec<LibMap>,
    /// The other tasks (threads) of the process known to the recorder, in
    /// ascending order; `pid` itself is implied.
    pub threads: Vec<u32>,
    /// Mappings of an earlier image of the process (before an exec, or a
    /// library unloaded) that `maps` overlap with another file or base: an
    /// address in both belongs to an image the maps cannot tell.
    pub replaced: Vec<LibMap>,
    /// When this entry was observed and what it is; `None`: valid over
    /// the whole trace.
    pub at: Option<MapsAt>,
}

/// When a timed PROCMAPS entry was observed, and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapsAt {
    /// Trace time (ns of the trace clock).
    pub ts: u64,
    /// What the entry's maps are.
    pub kind: MapsKind,
}

/// What a timed PROCMAPS entry's maps are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapsKind {
    /// The whole map of the process at that time.
    Snapshot,
    /// Mappings that came into being at that time (the rest is unchanged).
    Add,
    /// A new image starts (exec); the maps, if any, are the new image's.
    Exec,
    /// The process was forked from `parent` and has its maps until it
    /// execs.
    Fork {
        /// The parent process (tgid).
        parent: u32,
    },
}

/// The prefix of our time line.
const AT: &str = "at:";

/// The prefix of our thread list line.
const TASKS: &str = "tasks:";
/// The prefix of a replaced mapping's line.
const REPLACED: &str = "replaced:";

impl ProcMap {
    /// Builds a map from the text of `/proc/<pid>/maps`.
    ///
    /// Keeps the mappings that have a path, and merges consecutive mappings
    /// of the same path into one range, as trace-cmd does. Lines that do not
    /// parse are skipped; the ` (deleted)` mark of a replaced file is
    /// dropped.
    ///
    /// A file that none of its mappings maps executable (`ld.so.cache`, a
    /// locale archive, a library that `dlopen` has mapped but not yet laid
    /// out) is left out: no return address points into it, and ld.so loads
    /// libraries where it just unmapped its cache, so a read taken during a
    /// `dlopen` would otherwise give the library's addresses to the cache.
    /// Special mappings (`[heap]`, `[stack]`, `[vdso]`...) are kept: they
    /// tell why an address has no file.
    pub fn from_proc_maps(pid: u32, comm: &str, maps: &str) -> ProcMap {
        // (mapping, whether a part of it is executable)
        let mut out: Vec<(LibMap, bool)> = Vec::new();
        for line in maps.lines() {
            let Some(m) = parse_proc_maps_line(line) else {
                continue;
            };
            match out.last_mut() {
                Some((last, exec)) if last.path == m.path => {
                    last.start = last.start.min(m.start);
                    last.end = last.end.max(m.end);
                    *exec |= m.exec;
                }
                _ => out.push((
                    LibMap {
                        start: m.start,
                        end: m.end,
                        path: m.path.to_string(),
                    },
                    m.exec,
                )),
            }
        }
        let mut out: Vec<LibMap> = out
            .into_iter()
            .filter(|(m, exec)| *exec || m.path.starts_with('['))
            .map(|(m, _)| m)
            .collect();
        out.sort_by_key(|m| m.start);
        ProcMap {
            pid,
            comm: comm.trim().to_string(),
            maps: out,
            ..ProcMap::default()
        }
    }

    /// The option text (without the trailing NUL).
    pub fn to_text(&self) -> String {
        let comm: String = if self.comm.is_empty() {
            "<...>".to_string()
        } else {
            self.comm
                .chars()
                .map(|c| if c.is_whitespace() { '_' } else { c })
                .collect()
        };
        let mut s = format!("{:x} {:x} {}\n", self.pid, self.maps.len(), comm);
        for m in &self.maps {
            s.push_str(&format!("{:x} {:x} {}\n", m.start, m.end, escape(&m.path)));
        }
        let threads: Vec<String> = self
            .threads
            .iter()
            .filter(|&&t| t != self.pid)
            .map(|t| format!("{t:x}"))
            .collect();
        if !threads.is_empty() {
            s.push_str(TASKS);
            for t in threads {
                s.push(' ');
                s.push_str(&t);
            }
            s.push('\n');
        }
        for m in &self.replaced {
            s.push_str(&format!(
                "{REPLACED} {:x} {:x} {}\n",
                m.start,
                m.end,
                escape(&m.path)
            ));
        }
        if let Some(at) = self.at {
            let kind = match at.kind {
                MapsKind::Snapshot => "snap".to_string(),
                MapsKind::Add => "add".to_string(),
                MapsKind::Exec => "exec".to_string(),
                MapsKind::Fork { parent } => format!("fork {parent:x}"),
            };
            s.push_str(&format!("{AT} {:x} {kind}\n", at.ts));
        }
        s
    }

    /// Parses PROCMAPS text: one or more options' texts, joined. A line of
    /// the `/proc/PID/maps` shape is accepted in place of a mapping line.
    /// Malformed lines are skipped (a header line whose count is larger
    /// than the lines that follow takes what there is). Several entries of
    /// one pid are kept in the order given.
    pub fn parse_all(text: &str) -> Vec<ProcMap> {
        let mut out: Vec<ProcMap> = Vec::new();
        let mut left = 0usize;
        for line in text.lines() {
            let line = line.trim_end_matches('\0');
            if let Some(cur) = out.last_mut() {
                if left > 0 {
                    left -= 1;
                    if let Some(m) = parse_lib_line(line) {
                        cur.maps.push(m);
                    }
                    continue;
                }
                if let Some(rest) = line.strip_prefix(REPLACED) {
                    cur.replaced.extend(parse_lib_line(rest.trim_start()));
                    continue;
                }
                if let Some(rest) = line.strip_prefix(AT) {
                    cur.at = parse_at(rest).or(cur.at);
                    continue;
                }
                if let Some(rest) = line.strip_prefix(TASKS) {
                    cur.threads.extend(
                        rest.split_ascii_whitespace()
                            .filter_map(|t| u32::from_str_radix(t, 16).ok()),
                    );
                    continue;
                }
            }
            let mut toks = line.split_ascii_whitespace();
            let (Some(Ok(pid)), Some(Ok(nr))) = (
                toks.next().map(|t| u32::from_str_radix(t, 16)),
                toks.next().map(|t| usize::from_str_radix(t, 16)),
            ) else {
                continue;
            };
            out.push(ProcMap {
                pid,
                comm: toks.next().unwrap_or("").to_string(),
                ..ProcMap::default()
            });
            left = nr;
        }
        for p in &mut out {
            p.maps.sort_by_key(|m| m.start);
            p.threads.sort_unstable();
            p.threads.dedup();
        }
        out
    }
}

/// `ts kind [parent]` of an `at:` line.
fn parse_at(rest: &str) -> Option<MapsAt> {
    let mut w = rest.split_ascii_whitespace();
    let ts = u64::from_str_radix(w.next()?, 16).ok()?;
    let kind = match w.next()? {
        "snap" => MapsKind::Snapshot,
        "add" => MapsKind::Add,
        "exec" => MapsKind::Exec,
        "fork" => MapsKind::Fork {
            parent: u32::from_str_radix(w.next()?, 16).ok()?,
        },
        _ => return None,
    };
    Some(MapsAt { ts, kind })
}

/// `start end path` (trace-cmd) or a `/proc/PID/maps` line.
fn parse_lib_line(line: &str) -> Option<LibMap> {
    if let Some(m) = parse_proc_maps_line(line) {
        return Some(LibMap {
            start: m.start,
            end: m.end,
            path: m.path.to_string(),
        });
    }
    let mut it = line.split_ascii_whitespace();
    let start = u64::from_str_radix(it.next()?, 16).ok()?;
    let end = u64::from_str_radix(it.next()?, 16).ok()?;
    let path = unescape(it.next()?);
    (end > start).then_some(LibMap { start, end, path })
}

/// One line of `/proc/PID/maps` that has a path.
struct ProcMapsLine<'a> {
    start: u64,
    end: u64,
    /// The `x` of its permissions.
    exec: bool,
    path: &'a str,
}

/// `start-end perms offset dev inode path` with a path; the path is the
/// rest of the line, spaces included.
fn parse_proc_maps_line(line: &str) -> Option<ProcMapsLine<'_>> {
    let (range, rest) = line.split_once(' ')?;
    let (perms, mut rest) = rest.trim_start_matches(' ').split_once(' ')?;
    // offset, dev, inode: single words.
    for _ in 0..3 {
        rest = rest.trim_start_matches(' ').split_once(' ')?.1;
    }
    let path = rest.trim_start_matches(' ');
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    (!path.is_empty() && end > start && perms.len() == 4).then_some(ProcMapsLine {
        start,
        end,
        exec: perms.as_bytes()[2] == b'x',
        path,
    })
}

/// Whitespace and `\` as `\ooo`, so that a path is one word.
fn escape(path: &str) -> String {
    let mut s = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '\\' || c.is_ascii_whitespace() {
            s.push_str(&format!("\\{:03o}", c as u32));
        } else {
            s.push(c);
        }
    }
    s
}

/// Undoes [`escape`]; a `\` not followed by three octal digits stays.
fn unescape(word: &str) -> String {
    let b = word.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| (d[0] - b'0') as u32 * 64 + (d[1] - b'0') as u32 * 8 + (d[2] - b'0') as u32);
        match oct {
            Some(v) if v <= 0xff => {
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lm(start: u64, end: u64, path: &str) -> LibMap {
        LibMap {
            start,
            end,
            path: path.into(),
        }
    }

    #[test]
    fn proc_maps_text_merges_same_file_and_keeps_spaces() {
        let text = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123                        /usr/bin/prog
55d0c0001000-55d0c0005000 r-xp 00001000 08:01 123 /usr/bin/prog
55d0c0100000-55d0c0200000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
7f0000001000-7f0000002000 r-xp 00000000 08:01 9 /lib/with  space.so
7f0000003000-7f0000004000 r-xp 00000000 08:01 9 /tmp/gone (deleted)
garbage line
";
        let p = ProcMap::from_proc_maps(42, "prog\n", text);
        assert_eq!(p.comm, "prog");
        assert_eq!(
            p.maps,
            vec![
                lm(0x55d0c0000000, 0x55d0c0005000, "/usr/bin/prog"),
                lm(0x55d0c0100000, 0x55d0c0200000, "[heap]"),
                lm(0x7f0000001000, 0x7f0000002000, "/lib/with  space.so"),
                lm(0x7f0000003000, 0x7f0000004000, "/tmp/gone"),
            ]
        );
    }

    /// ld.so maps its cache, unmaps it and loads the library there: a
    /// read during a `dlopen` must not give the library's addresses to
    /// the cache (CI once lost all frames of a dlopen'd library so).
    #[test]
    fn files_never_mapped_executable_are_left_out() {
        let text = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/prog
55d0c0001000-55d0c0002000 r-xp 00001000 08:01 123 /usr/bin/prog
7f0000000000-7f0000009000 r--p 00000000 08:01 7 /etc/ld.so.cache
7f000000a000-7f000000b000 r--p 00000000 08:01 8 /usr/lib/locale/C.utf8/LC_CTYPE
7f0000010000-7f0000011000 r--p 00000000 08:01 9 /tmp/half-loaded.so
7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0 [stack]
7ffd00002000-7ffd00003000 r-xp 00000000 00:00 0 [vdso]
";
        let p = ProcMap::from_proc_maps(42, "prog", text);
        assert_eq!(
            p.maps,
            vec![
                lm(0x55d0c0000000, 0x55d0c0002000, "/usr/bin/prog"),
                lm(0x7ffd00000000, 0x7ffd00001000, "[stack]"),
                lm(0x7ffd00002000, 0x7ffd00003000, "[vdso]"),
            ]
        );
    }

    #[test]
    fn written_text_is_read_back_the_same() {
        let p = ProcMap {
            pid: 0x1234,
            comm: "my prog".into(),
            maps: vec![
                lm(0x5000, 0x6000, "/bin/x"),
                lm(0x7000, 0x8000, "/lib/a b\\c\td.so"),
            ],
            threads: vec![0x1235, 0x1240],
            replaced: vec![lm(0x5000, 0x5800, "/bin/sh")],
            at: Some(MapsAt {
                ts: 0x1f,
                kind: MapsKind::Fork { parent: 0x99 },
            }),
        };
        let text = p.to_text();
        assert_eq!(
            text,
            "1234 2 my_prog\n5000 6000 /bin/x\n7000 8000 /lib/a\\040b\\134c\\011d.so\n\
             tasks: 1235 1240\nreplaced: 5000 5800 /bin/sh\nat: 1f fork 99\n"
        );
        for (line, want) in [
            ("at: 5 snap", Some((5, MapsKind::Snapshot))),
            ("at: 6 add", Some((6, MapsKind::Add))),
            ("at: 7 exec", Some((7, MapsKind::Exec))),
            ("at: 8 fork", None),
            ("at: x snap", None),
            ("at: 9 what", None),
        ] {
            let q = ProcMap::parse_all(&format!("1 0 a\n{line}\n"));
            let want = want.map(|(ts, kind)| MapsAt { ts, kind });
            assert_eq!(q[0].at, want, "{line}");
        }
        let q = ProcMap::parse_all(&(text.clone() + "\0" + &text));
        assert_eq!(q.len(), 2);
        assert_eq!(
            q[0],
            ProcMap {
                comm: "my_prog".into(),
                ..p
            }
        );
    }

    #[test]
    fn trace_cmd_text_and_malformed_lines() {
        let text = "\
1f4 3 prog
400000 401000 /usr/bin/prog
zz yy /bad
7f0000000000 7f0000010000 /lib/libc.so.6
1f5 1 other
7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /lib/x.so
1f6 ffffffffffffffff big
";
        let all = ProcMap::parse_all(text);
        assert_eq!(all.len(), 3);
        assert_eq!(
            all[0].maps,
            vec![
                lm(0x400000, 0x401000, "/usr/bin/prog"),
                lm(0x7f0000000000, 0x7f0000010000, "/lib/libc.so.6")
            ]
        );
        assert_eq!(
            all[1].maps,
            vec![lm(0x7f0000000000, 0x7f0000001000, "/lib/x.so")]
        );
        assert!(all[2].maps.is_empty());
        // A backslash that is no escape stays.
        assert_eq!(unescape("a\\9b\\04"), "a\\9b\\04");
    }
}
