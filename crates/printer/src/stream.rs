//! `report --stacks --stream` and `--json --stream`: each group is written
//! as soon as nothing in the trace can change it any more
//! ([`ustack_stitch::file::load_streaming`]), so the first groups come
//! long before a large file has been read, in bounded memory.
//!
//! What differs from the whole views ([`crate::stacks`]): groups come in
//! the order they close (each batch by time), not all by time; the
//! summary, which needs the whole trace, comes last (text: the same
//! comment lines at the end; JSON: `"groups"` first, then `"events"` and
//! `"drops"`). The user stacks are symbolized with the process maps saved
//! in the file and the kernel's mapping records read so far (they come
//! before the stacks they describe).

use std::io::Write;

use anyhow::Result;
use ustack_stitch::trace::Index;
use ustack_stitch::view::{self, GroupDetail};
use ustack_stitch::{file, EventRef, Group, Stacks};
use ustack_symbolize::Symbolizer;
use ustack_tracedata::TraceFile;

use crate::group::{self, fmt_ts, fmt_ts_ns};
use crate::select;
use crate::stacks::{self, Mode, Summary, View, Written, RELEASE_EVERY};

/// Writes the stitched text or JSON view of the first buffer with data of
/// `f` as groups close (see the module documentation).
pub fn write_file(f: &TraceFile, view: &View, out: &mut dyn Write) -> Result<Written> {
    if !matches!(view.mode, Mode::Text | Mode::Json) {
        anyhow::bail!("only the text and JSON stitched views can stream");
    }
    let buf = file::buffer(f, None)?;
    let mut w = Streamer {
        f,
        buf,
        view,
        out,
        texts: crate::text::Texts::for_file(f),
        sym: None,
        written: Written::default(),
        statuses: [0; 4],
        shown: (0, 0),
        groups: 0,
        error: None,
    };
    w.texts
        .set_filters(&view.select.filters, &view.select.neg_filters)
        .map_err(anyhow::Error::msg)?;
    if view.mode == Mode::Json {
        w.out.write_all(b"{\"groups\":[\n")?;
    }
    let idx = file::load_streaming(f, buf, |idx, st, c| w.group(idx, st, &c.group, &c.events));
    if let Some(e) = w.error.take() {
        return Err(e.into());
    }
    // A trace without user stacks has its kernel-only groups at the end.
    let st = &idx.stitched;
    for g in st.groups.iter() {
        if !w.group(&idx, &st.stacks, &g, st.groups.events(&g)) {
            break;
        }
    }
    if let Some(e) = w.error.take() {
        return Err(e.into());
    }
    w.end(&idx)?;
    Ok(w.written)
}

/// The state of a streaming write.
struct Streamer<'a> {
    f: &'a TraceFile,
    buf: &'a ustack_tracedata::reader::Buffer,
    view: &'a View,
    out: &'a mut dyn Write,
    texts: crate::text::Texts,
    /// The symbolizer, and the number of mapping records it knows.
    sym: Option<(usize, Symbolizer)>,
    written: Written,
    /// Groups handed out per status (complete, pending, stack-lost,
    /// orphan-stack).
    statuses: [usize; 4],
    /// Groups and events shown.
    shown: (usize, usize),
    /// Groups written.
    groups: usize,
    /// The first write error: it stops the load.
    error: Option<std::io::Error>,
}

impl Streamer<'_> {
    /// Writes group `g` (events `events`, stacks in `stacks`) if the
    /// selection shows it;
    /// false when writing failed.
    fn group(&mut self, idx: &Index, stacks: &Stacks, g: &Group, events: &[EventRef]) -> bool {
        self.statuses[g.status as usize] += 1;
        let (f, buf) = (self.f, self.buf);
        let rec = |s: u64| file::record(f, buf, idx.events.get(s as usize)?);
        // New mapping records: the maps of their processes changed.
        let known = self.sym.as_ref().map(|(n, _)| *n);
        if known != Some(idx.mappings.len()) {
            let sym = file::symbolizer_for(f, idx, self.view.symfs.clone());
            self.sym = Some((idx.mappings.len(), sym));
        }
        let Some((_, sym)) = self.sym.as_mut() else {
            return false;
        };
        let comm = |pid| view::comm(idx, sym, pid);
        let sel = &self.view.select;
        let Some(kept) = select::choose_in_group(sel, idx, g, events, rec, &mut self.texts, comm)
        else {
            return true;
        };
        let mut d = view::detail_with(idx, stacks, g, events, rec, &mut self.texts, sym);
        d.events.retain(|e| kept.contains(&e.seq));
        self.written.shown(&mut d, self.view.internal);
        self.shown.0 += 1;
        self.shown.1 += kept.len();
        if self.groups % RELEASE_EVERY == RELEASE_EVERY - 1 {
            file::release(f, buf);
            idx.release();
        }
        match self.write(&d) {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn write(&mut self, d: &GroupDetail) -> std::io::Result<()> {
        let first = self.groups == 0;
        self.groups += 1;
        if self.view.mode == Mode::Json {
            if !first {
                self.out.write_all(b",\n")?;
            }
            return serde_json::to_writer(&mut *self.out, &stacks::JsonGroup::of(d))
                .map_err(std::io::Error::from);
        }
        let ts: fn(u64) -> String = if self.view.nsec { fmt_ts_ns } else { fmt_ts };
        if !first {
            writeln!(self.out)?;
        }
        for l in group::lines(d, ts) {
            writeln!(self.out, "{l}")?;
        }
        Ok(())
    }

    /// The summary, once the whole trace is read.
    fn end(&mut self, idx: &Index) -> std::io::Result<()> {
        self.written.cut_short = idx.error.as_ref().map(|e| e.to_string());
        if self.view.mode == Mode::Json {
            write!(self.out, "\n],\"events\":{},\"drops\":", idx.events.len())?;
            serde_json::to_writer(&mut *self.out, &stacks::json_drops(idx))?;
            return stacks::json_end(&self.written, self.out);
        }
        let shown = (!self.view.select.is_all()).then_some(self.shown);
        let summary = Summary::with_statuses(idx, self.statuses, shown);
        if self.groups > 0 {
            writeln!(self.out)?;
        }
        summary.write(self.out)?;
        self.written.write_comments(self.out)?;
        Ok(())
    }
}
