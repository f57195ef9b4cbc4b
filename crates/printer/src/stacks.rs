//! The stitched views of `report --stacks|--json|--folded`: events grouped
//! by cookie, with their kernel stacks and the symbolized user stack.
//!
//! * text: one block per group ([`crate::group::lines`]) after a summary
//!   comment;
//! * JSON: one document with every group (one per line) and the per-CPU
//!   drops;
//! * folded: collapsed stacks (`comm;user frames;kernel frames;event
//!   count`), outermost frame first, for flame graphs;
//! * pprof: the folded stacks as a gzip profile.proto ([`crate::pprof`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use ustack_stitch::trace::Index;
use ustack_stitch::view::{self, GroupDetail};
use ustack_stitch::{file, internal, GroupKind};
use ustack_symbolize::{Frame, Unresolved};
use ustack_tracedata::TraceFile;

use crate::frame::{format_frame, FrameStyle};
use crate::group::{self, fmt_ts, fmt_ts_ns};
use crate::select::{self, Selection};

/// Output shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Text blocks.
    Text,
    /// JSON.
    Json,
    /// Folded stacks.
    Folded,
    /// A gzip-compressed pprof profile.
    Pprof,
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
    /// Show tracing-internal kernel frames
    /// ([`ustack_stitch::internal`]), hidden by default.
    pub internal: bool,
    /// The groups and events to show.
    pub select: Selection,
    /// Text and JSON: write each group as soon as it is complete, the
    /// summary last ([`crate::stream`]).
    pub stream: bool,
}

impl View {
    /// Text blocks, microsecond timestamps, files looked up in `/`.
    pub fn text() -> View {
        View {
            mode: Mode::Text,
            nsec: false,
            symfs: None,
            internal: false,
            select: Selection::default(),
            stream: false,
        }
    }
}

/// What [`write_file`] could not show.
#[derive(Debug, Default)]
pub struct Written {
    /// The trace data ended early with this error; the groups read before
    /// it were written (the text says so in a final comment line).
    pub cut_short: Option<String>,
    /// User frames written.
    pub user_frames: usize,
    /// User frames without a symbol, by reason (the text says so in a
    /// final comment line).
    pub unresolved: BTreeMap<Unresolved, usize>,
}

impl Written {
    /// The text view's closing comment lines: unresolved frames, and a
    /// trace cut short.
    pub(crate) fn write_comments(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some(line) = self.unresolved_line() {
            writeln!(out, "# {line}")?;
        }
        if let Some(e) = &self.cut_short {
            writeln!(out, "# trace data cut short: {e}")?;
        }
        Ok(())
    }

    /// Readies group `d` for output (tracing-internal kernel frames left
    /// out unless `internal`) and counts its user frames.
    pub(crate) fn shown(&mut self, d: &mut GroupDetail, internal: bool) {
        if !internal {
            for e in &mut d.events {
                e.kernel.retain(|fr| !internal::is_internal(fr));
            }
        }
        self.user_frames += d.user_frames.len();
        for why in d.user_frames.iter().filter_map(|f| f.unresolved) {
            *self.unresolved.entry(why).or_default() += 1;
        }
    }

    /// `N frames of M unresolved: n1 reason1, n2 reason2`, or `None` when
    /// every user frame has a symbol.
    pub fn unresolved_line(&self) -> Option<String> {
        let n: usize = self.unresolved.values().sum();
        let why: Vec<String> = self
            .unresolved
            .iter()
            .map(|(r, k)| format!("{k} {}", r.reason()))
            .collect();
        (n > 0).then(|| {
            format!(
                "{n} user frames of {} unresolved: {}",
                self.user_frames,
                why.join(", ")
            )
        })
    }
}

/// Groups written between two releases of the trace's mapped pages.
pub(crate) const RELEASE_EVERY: usize = 4096;

/// Writes the stitched view of the first buffer with data of `f`, one
/// group at a time (only the index and the folded counts are held).
pub fn write_file(f: &TraceFile, view: &View, out: &mut dyn Write) -> Result<Written> {
    let (mode, nsec) = (view.mode, view.nsec);
    let buf = file::buffer(f, None)?;
    let idx = file::load(f, buf);
    // libtraceevent's handle first: it reads kallsyms into memory for a
    // moment, which is better not beside the symbolizer's copy.
    let mut texts = crate::text::Texts::for_file(f);
    let mut sym = file::symbolizer_for(f, &idx, view.symfs.clone());
    texts
        .set_filters(&view.select.filters, &view.select.neg_filters)
        .map_err(anyhow::Error::msg)?;
    let rec = |s: u64| file::record(f, buf, idx.events.get(s as usize)?);
    let chosen = select::choose(&view.select, &idx, rec, &mut texts, |pid| {
        view::comm(&idx, &sym, pid)
    });
    file::release(f, buf);
    idx.release();
    let summary = Summary::new(&idx, &chosen, !view.select.is_all());
    let mut written = Written::default();
    let counts = &mut written;
    let details = chosen.groups.iter().enumerate().map(|(i, &g)| {
        // Records and index entries are read again at random: give their
        // pages back now and then instead of keeping them all resident.
        if i % RELEASE_EVERY == RELEASE_EVERY - 1 {
            file::release(f, buf);
            idx.release();
            chosen.groups.release_range(0..i);
        }
        let mut d = view::detail(
            &idx,
            &idx.stitched.groups.get(g as usize),
            rec,
            &mut texts,
            &mut sym,
        );
        d.events.retain(|e| chosen.has_event(e.seq));
        counts.shown(&mut d, view.internal);
        d
    });
    match mode {
        Mode::Text => text(&summary, details, nsec, out)?,
        Mode::Json => json(&idx, details, out)?,
        Mode::Folded => folded(details, out)?,
        Mode::Pprof => crate::pprof::write(details, out)?,
    }
    written.cut_short = idx.error.as_ref().map(|e| e.to_string());
    if mode == Mode::Json {
        json_end(&written, out)?;
    }
    if mode == Mode::Text {
        written.write_comments(out)?;
    }
    Ok(written)
}

/// The comment lines at the top of the text view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Records in the trace.
    pub events: usize,
    /// Groups of each status: complete, pending, stack-lost, orphan-stack.
    pub statuses: [usize; 4],
    /// `drops: ...` text.
    pub drops: String,
    /// With a selection: the groups and events shown.
    pub shown: Option<(usize, usize)>,
    /// The groups are kernel-only (the trace has no user stacks).
    pub kernel_only: bool,
    /// The trace holds no stack at all.
    pub no_stacks: bool,
}

impl Summary {
    /// The summary of `idx`; `shown` with a selection (`chosen`).
    pub fn new(idx: &Index, chosen: &select::Chosen, shown: bool) -> Summary {
        let mut statuses = [0; 4];
        for g in idx.stitched.groups.iter() {
            statuses[g.status as usize] += 1;
        }
        let shown = shown.then_some((chosen.groups.len(), chosen.event_count));
        Summary::with_statuses(idx, statuses, shown)
    }

    /// The summary of `idx` whose groups per status are `statuses` (a
    /// streamed view counts those it handed out, which the index does not
    /// keep); `shown` with a selection.
    pub(crate) fn with_statuses(
        idx: &Index,
        statuses: [usize; 4],
        shown: Option<(usize, usize)>,
    ) -> Summary {
        let groups = &idx.stitched.groups;
        Summary {
            events: idx.events.len(),
            statuses,
            drops: drops_text(idx),
            shown,
            kernel_only: !groups.is_empty() && groups.get(0).kind == GroupKind::Kernel,
            no_stacks: statuses.iter().sum::<usize>() == 0 && idx.stitched.stacks.is_empty(),
        }
    }

    pub(crate) fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let [complete, pending, lost, orphan] = self.statuses;
        writeln!(
            out,
            "# {} events, {} groups: {complete} complete, {pending} pending, {lost} stack-lost, {orphan} orphan-stack; drops: {}",
            self.events,
            self.statuses.iter().sum::<usize>(),
            self.drops
        )?;
        if self.kernel_only {
            writeln!(
                out,
                "# kernel stacks only (no user stack was recorded): one group per event with a kernel stack"
            )?;
        }
        if self.no_stacks {
            writeln!(
                out,
                "# no stacks in this trace: record with --user-stacks (and -T for kernel stacks)"
            )?;
        }
        if let Some((g, e)) = self.shown {
            writeln!(out, "# shown: {g} groups, {e} events")?;
        }
        Ok(())
    }
}

pub(crate) fn drops_text(idx: &Index) -> String {
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
    summary: &Summary,
    details: impl Iterator<Item = GroupDetail>,
    nsec: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let ts: fn(u64) -> String = if nsec { fmt_ts_ns } else { fmt_ts };
    summary.write(out)?;
    for d in details {
        writeln!(out)?;
        for l in group::lines(&d, ts) {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// A frame in the JSON output.
#[derive(Serialize)]
struct JsonFrame<'a> {
    addr: String,
    symbol: &'a Option<String>,
    offset: u64,
    object: &'a Option<String>,
    /// Offset in the object's file, for frames without a symbol.
    #[serde(skip_serializing_if = "Option::is_none")]
    file_offset: Option<String>,
    location: &'a Option<String>,
    /// Why a user frame has no symbol.
    #[serde(skip_serializing_if = "Option::is_none")]
    unresolved: Option<&'static str>,
    /// How a user frame unwound from a snapshot was found: `ip`, `cfi`
    /// (the binary's unwind tables) or `fp` (the kernel's frame-pointer
    /// walk).
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<&'static str>,
}

fn json_frames(fr: &[Frame]) -> Vec<JsonFrame<'_>> {
    fr.iter()
        .map(|f| JsonFrame {
            addr: format!("{:#x}", f.addr),
            symbol: &f.symbol,
            offset: f.offset,
            object: &f.object,
            file_offset: f
                .file_offset
                .filter(|_| f.symbol.is_none())
                .map(|o| format!("{o:#x}")),
            location: &f.location,
            unresolved: f.unresolved.map(Unresolved::reason),
            via: f.via.map(|v| v.name()),
        })
        .collect()
}

/// The drops of one CPU in the JSON output.
#[derive(Serialize)]
pub(crate) struct JsonDrop {
    cpu: u32,
    count: u64,
    unknown_count: bool,
}

/// A kernel event in the JSON output.
#[derive(Serialize)]
struct JsonEvent<'a> {
    seq: u64,
    cpu: u32,
    ts: u64,
    name: &'a str,
    info: &'a str,
    kernel_stack: Vec<JsonFrame<'a>>,
}

/// A user stack in the JSON output.
#[derive(Serialize)]
struct JsonUserStack<'a> {
    cpu: u32,
    ts: u64,
    frames: Vec<JsonFrame<'a>>,
    /// For a stack unwound from a snapshot that is not complete: the
    /// index of the first frame that is not exact and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    cut: Option<JsonCut>,
}

/// Where an unwound user stack stops being exact.
#[derive(Serialize)]
struct JsonCut {
    at: usize,
    reason: &'static str,
}

/// A group in the JSON output.
#[derive(Serialize)]
pub(crate) struct JsonGroup<'a> {
    pid: i32,
    comm: &'a str,
    kind: &'static str,
    cookie: Option<String>,
    status: &'static str,
    first_ts: u64,
    last_ts: u64,
    loss_while_open: bool,
    cookie_events: u32,
    events: Vec<JsonEvent<'a>>,
    user_stack: Option<JsonUserStack<'a>>,
}

impl<'a> JsonGroup<'a> {
    pub(crate) fn of(d: &'a GroupDetail) -> JsonGroup<'a> {
        JsonGroup {
            pid: d.pid,
            comm: &d.comm,
            kind: match d.kind {
                GroupKind::Deferred => "deferred",
                GroupKind::Sync => "sync",
                GroupKind::Kernel => "kernel",
            },
            cookie: d.cookie.map(|c| format!("{c:#x}")),
            status: d.status.name(),
            first_ts: d.first_ts,
            last_ts: d.last_ts,
            loss_while_open: d.loss_while_open,
            cookie_events: d.cookie_events,
            events: d
                .events
                .iter()
                .map(|e| JsonEvent {
                    seq: e.seq,
                    cpu: e.cpu,
                    ts: e.ts,
                    name: &e.name,
                    info: &e.info,
                    kernel_stack: json_frames(&e.kernel),
                })
                .collect(),
            user_stack: d.user.map(|u| JsonUserStack {
                cpu: u.cpu,
                ts: u.ts,
                frames: json_frames(&d.user_frames),
                cut: d.user_cut.map(|(at, end)| JsonCut {
                    at,
                    reason: end.reason().unwrap_or("complete"),
                }),
            }),
        }
    }
}

/// One JSON document without its end: `{"events":N,"drops":[..],
/// "groups":[..]`, one group per line; [`write_file`] ends it with what
/// stayed unresolved (`,"unresolved":{..}}`).
pub fn json(
    idx: &Index,
    details: impl Iterator<Item = GroupDetail>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    write!(out, "{{\"events\":{},\"drops\":", idx.events.len())?;
    serde_json::to_writer(&mut *out, &json_drops(idx))?;
    out.write_all(b",\"groups\":[\n")?;
    let mut first = true;
    for d in details {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        serde_json::to_writer(&mut *out, &JsonGroup::of(&d))?;
    }
    out.write_all(b"\n]")
}

/// The drops of the JSON output.
pub(crate) fn json_drops(idx: &Index) -> Vec<JsonDrop> {
    idx.drops_per_cpu()
        .iter()
        .map(|&(cpu, count, unknown_count)| JsonDrop {
            cpu,
            count,
            unknown_count,
        })
        .collect()
}

/// The end of the JSON output: how many user frames were written and why
/// those without a symbol have none, e.g.
/// `"unresolved":{"user_frames":840,"count":12,"reasons":{"process gone
/// before its maps were read":12}}`.
pub(crate) fn json_end(w: &Written, out: &mut dyn Write) -> std::io::Result<()> {
    let reasons: BTreeMap<&str, usize> =
        w.unresolved.iter().map(|(r, &n)| (r.reason(), n)).collect();
    let end = serde_json::json!({
        "user_frames": w.user_frames,
        "count": w.unresolved.values().sum::<usize>(),
        "reasons": reasons,
    });
    out.write_all(b",\"unresolved\":")?;
    serde_json::to_writer(&mut *out, &end)?;
    out.write_all(b"}\n")
}

/// Folded stacks: `comm;user (outermost first);kernel (outermost
/// first);event count`, one line per distinct stack, sorted.
pub fn folded(
    details: impl Iterator<Item = GroupDetail>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let fold = |f: &Frame| format_frame(f, FrameStyle::Folded);
    let mut acc: BTreeMap<String, u64> = BTreeMap::new();
    for d in details {
        let user: Vec<String> = if d.user.is_some() {
            d.user_frames.iter().rev().map(fold).collect()
        } else if d.kind == GroupKind::Kernel {
            Vec::new()
        } else {
            vec![format!("[{}]", d.status.name())]
        };
        for e in &d.events {
            let mut parts = vec![d.comm.replace(';', "_")];
            parts.extend(user.iter().cloned());
            parts.extend(e.kernel.iter().rev().map(fold));
            parts.push(e.name.clone());
            *acc.entry(parts.join(";")).or_default() += 1;
        }
    }
    for (k, v) in acc {
        writeln!(out, "{k} {v}")?;
    }
    Ok(())
}
