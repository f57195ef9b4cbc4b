//! `tracer-cli report --stacks|--json|--folded`: events grouped by cookie,
//! with their kernel stacks and the symbolized user stack.
//!
//! * `--stacks`: one text block per group: a header line (comm-pid,
//!   cookie, status, time span, counts), the kernel events with their kernel
//!   stacks, then the user stack.
//! * `--json`: one JSON document with every group and the per-CPU drops.
//! * `--folded`: collapsed stacks (`comm;user frames;kernel frames;event
//!   count`), outermost frame first, for flame graphs.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use ustack_stitch::symbols::Frame;
use ustack_stitch::trace::Index;
use ustack_stitch::view::{self, GroupDetail};
use ustack_stitch::{file, Status};
use ustack_tracedata::TraceFile;

/// Output shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Text blocks.
    Text,
    /// JSON.
    Json,
    /// Folded stacks.
    Folded,
}

/// How to print the stitched view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Output shape.
    pub mode: Mode,
    /// Nanosecond timestamps in the text.
    pub nsec: bool,
    /// Look the files of user stacks up under this directory.
    pub symfs: Option<PathBuf>,
}

impl View {
    /// Text blocks, microsecond timestamps, files looked up in `/`.
    pub fn text() -> View {
        View {
            mode: Mode::Text,
            nsec: false,
            symfs: None,
        }
    }
}

/// Prints the stitched view of a trace.dat file.
pub fn run(args: &super::report::Args) -> Result<()> {
    let mode = if args.json {
        Mode::Json
    } else if args.folded {
        Mode::Folded
    } else {
        Mode::Text
    };
    if !args.cpu.is_empty() || !args.filter.is_empty() {
        anyhow::bail!("--cpu and -F do not apply to --stacks, --json or --folded");
    }
    let f = TraceFile::open(&args.input)
        .with_context(|| format!("cannot open {}", args.input.display()))?;
    let view = View {
        mode,
        nsec: args.nsec,
        symfs: args.symfs.clone(),
    };
    print_file(&f, &view)
}

/// Writes the stitched view of `f` to stdout; a closed pipe (`| head`) is
/// not an error.
pub fn print_file(f: &TraceFile, view: &View) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match write_file(f, view, &mut out).and_then(|_| out.flush().map_err(Into::into)) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r.context("cannot write the report"),
    }
}

/// Writes the stitched view of the first buffer with data of `f`, one
/// group at a time (only the index and the folded counts are held).
pub fn write_file(f: &TraceFile, view: &View, out: &mut dyn Write) -> Result<()> {
    let (mode, nsec) = (view.mode, view.nsec);
    let buf = file::buffer(f, None)?;
    let idx = file::load(f, buf);
    let mut sym = file::symbolizer(f).with_root(view.symfs.clone());
    let mut texts = view::Texts::for_file(f);
    let details = idx.stitched.groups.iter().map(|g| {
        view::detail(
            &idx,
            g,
            |s| file::record(f, buf, &idx.events[s as usize]),
            &mut texts,
            &mut sym,
        )
    });
    match mode {
        Mode::Text => text(&idx, details, nsec, out)?,
        Mode::Json => json(&idx, details, out)?,
        Mode::Folded => folded(details, out)?,
    }
    if let Some(e) = &idx.error {
        // The data read before the error is still shown; say it is partial.
        eprintln!("tracer-cli: warning: trace data cut short: {e}");
        if mode == Mode::Text {
            writeln!(out, "# trace data cut short: {e}")?;
        }
    }
    Ok(())
}

fn drops_text(idx: &Index) -> String {
    let d = idx.drops_per_cpu();
    if d.is_empty() {
        return "none".to_string();
    }
    d.iter()
        .map(|&(cpu, n, unknown)| {
            if unknown {
                format!("cpu{cpu}={n}+")
            } else {
                format!("cpu{cpu}={n}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text blocks, preceded by a summary comment.
pub fn text(
    idx: &Index,
    details: impl Iterator<Item = GroupDetail>,
    nsec: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let ts: fn(u64) -> String = if nsec { view::fmt_ts_ns } else { view::fmt_ts };
    let mut counts = BTreeMap::new();
    for g in &idx.stitched.groups {
        *counts.entry(g.status).or_insert(0usize) += 1;
    }
    let c = |s| counts.get(&s).copied().unwrap_or(0);
    writeln!(
        out,
        "# {} events, {} groups: {} complete, {} pending, {} stack-lost, {} orphan-stack; drops: {}",
        idx.events.len(),
        idx.stitched.groups.len(),
        c(Status::Complete),
        c(Status::Pending),
        c(Status::StackLost),
        c(Status::OrphanStack),
        drops_text(idx)
    )?;
    for d in details {
        writeln!(out)?;
        for l in d.lines_with(ts) {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// Escapes a string for JSON.
fn js(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn frame_json(f: &Frame) -> String {
    let opt = |v: &Option<String>| v.as_deref().map(js).unwrap_or_else(|| "null".into());
    format!(
        "{{\"addr\":\"{:#x}\",\"symbol\":{},\"offset\":{},\"object\":{},\"location\":{}}}",
        f.addr,
        opt(&f.symbol),
        f.offset,
        opt(&f.object),
        opt(&f.location)
    )
}

fn frames_json(fr: &[Frame]) -> String {
    let v: Vec<String> = fr.iter().map(frame_json).collect();
    format!("[{}]", v.join(","))
}

/// One JSON document: `{"events":N,"drops":[..],"groups":[..]}`, one
/// group per line.
pub fn json(
    idx: &Index,
    details: impl Iterator<Item = GroupDetail>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let drops: Vec<String> = idx
        .drops_per_cpu()
        .iter()
        .map(|&(cpu, n, unknown)| {
            format!("{{\"cpu\":{cpu},\"count\":{n},\"unknown_count\":{unknown}}}")
        })
        .collect();
    writeln!(
        out,
        "{{\"events\":{},\"drops\":[{}],\"groups\":[",
        idx.events.len(),
        drops.join(",")
    )?;
    let mut first = true;
    for d in details {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        out.write_all(group_json(&d).as_bytes())?;
    }
    out.write_all(b"\n]}\n")
}

fn group_json(d: &GroupDetail) -> String {
    let events: Vec<String> = d
        .events
        .iter()
        .map(|e| {
            format!(
                "{{\"seq\":{},\"cpu\":{},\"ts\":{},\"name\":{},\"info\":{},\"kernel_stack\":{}}}",
                e.seq,
                e.cpu,
                e.ts,
                js(&e.name),
                js(&e.info),
                frames_json(&e.kernel)
            )
        })
        .collect();
    let user = match d.user {
        Some(u) => format!(
            "{{\"cpu\":{},\"ts\":{},\"frames\":{}}}",
            u.cpu,
            u.ts,
            frames_json(&d.user_frames)
        ),
        None => "null".into(),
    };
    format!(
        "{{\"pid\":{},\"comm\":{},\"kind\":\"{}\",\"cookie\":{},\"status\":\"{}\",\"first_ts\":{},\"last_ts\":{},\"loss_while_open\":{},\"cookie_events\":{},\"events\":[{}],\"user_stack\":{}}}",
        d.pid,
        js(&d.comm),
        match d.kind {
            ustack_stitch::GroupKind::Deferred => "deferred",
            ustack_stitch::GroupKind::Sync => "sync",
        },
        d.cookie
            .map(|c| format!("\"{c:#x}\""))
            .unwrap_or_else(|| "null".into()),
        d.status.name(),
        d.first_ts,
        d.last_ts,
        d.loss_while_open,
        d.cookie_events,
        events.join(","),
        user
    )
}

/// Folded stacks: `comm;user (outermost first);kernel (outermost
/// first);event count`, one line per distinct stack, sorted.
pub fn folded(
    details: impl Iterator<Item = GroupDetail>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut acc: BTreeMap<String, u64> = BTreeMap::new();
    for d in details {
        let user: Vec<String> = if d.user.is_some() {
            d.user_frames.iter().rev().map(Frame::function).collect()
        } else {
            vec![format!("[{}]", d.status.name())]
        };
        for e in &d.events {
            let mut parts = vec![d.comm.replace(';', "_")];
            parts.extend(user.iter().cloned());
            parts.extend(e.kernel.iter().rev().map(Frame::function));
            parts.push(e.name.clone());
            *acc.entry(parts.join(";")).or_default() += 1;
        }
    }
    for (k, v) in acc {
        writeln!(out, "{k} {v}")?;
    }
    Ok(())
}
