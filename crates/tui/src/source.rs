//! Where the TUI gets what the index does not hold: event field text and
//! symbolized group details.

use std::sync::Arc;

use ustack_stitch::file;
use ustack_stitch::stitcher::UserStackRef;
use ustack_stitch::trace::Index;
use ustack_stitch::view::{self, EventText, GroupDetail};
use ustack_symbolize::{Frame, Symbolizer};
use ustack_tracedata::TraceFile;

/// Lazy access to record payloads and symbols.
pub trait Source {
    /// Name and field text of event `seq`.
    fn event_text(&mut self, idx: &Index, seq: u64) -> (String, String);
    /// Group `g` of `idx.stitched.groups`, resolved and symbolized.
    fn group_detail(&mut self, idx: &Index, g: usize) -> GroupDetail;
    /// Symbolized kernel addresses.
    fn kernel_frames(&mut self, addrs: &[u64]) -> Vec<Frame> {
        addrs.iter().map(|&a| Frame::unknown(a)).collect()
    }
    /// User stack `u` of `pid` (innermost first), of its group that
    /// ended at `ts` (the process's maps then), symbolized: unwound from
    /// its snapshot when it has one.
    fn user_frames(&mut self, idx: &Index, pid: i32, ts: u64, u: UserStackRef) -> Vec<Frame> {
        let _ = (pid, ts);
        idx.stitched
            .stacks
            .get(u.stack)
            .iter()
            .map(|&a| Frame::unknown(a))
            .collect()
    }
}

/// A [`Source`] over an open trace file.
pub struct FileSource {
    file: Arc<TraceFile>,
    buffer: usize,
    sym: Symbolizer,
    texts: ustack_printer::text::Texts,
}

impl FileSource {
    /// Opens the source on buffer number `buffer` of `file`, with a
    /// symbolizer over its saved kallsyms and process maps. The file may
    /// be shared with a thread that indexes it.
    pub fn new(file: Arc<TraceFile>, buffer: usize) -> Self {
        // libtraceevent's handle first: it reads kallsyms into memory for
        // a moment, which is better not beside the symbolizer's copy.
        let texts = ustack_printer::text::Texts::for_file(&file);
        let sym = file::symbolizer(&file);
        FileSource {
            file,
            buffer,
            sym,
            texts,
        }
    }

    /// This source over `file`, a later snapshot of the same recording
    /// (`tui --live`): the symbolizer is built again, for the process maps
    /// gathered since, but libtraceevent's handle is kept. Building that
    /// again takes tens of milliseconds (it loads kallsyms), on the
    /// screen's time at every refresh, and what it is built from (the
    /// event formats, kallsyms and printk formats) is the same in every
    /// snapshot of a recording; its command names stay the first
    /// snapshot's, which the info text does not print. Set
    /// [`FileSource::with_symfs`] and
    /// [`FileSource::with_live_maps`] again after it.
    pub fn refile(self, file: Arc<TraceFile>, buffer: usize) -> Self {
        let sym = file::symbolizer(&file);
        FileSource {
            file,
            buffer,
            sym,
            texts: self.texts,
        }
    }

    /// The file.
    pub fn file(&self) -> &Arc<TraceFile> {
        &self.file
    }

    /// Looks the files that user stacks map up under `root`.
    pub fn with_symfs(mut self, root: Option<std::path::PathBuf>) -> Self {
        self.sym = std::mem::take(&mut self.sym).with_root(root);
        self
    }

    /// Reads `/proc/PID/maps` for processes the file has no maps for.
    pub fn with_live_maps(mut self) -> Self {
        self.sym = std::mem::take(&mut self.sym).with_live_maps(true);
        self
    }
}

impl Source for FileSource {
    fn event_text(&mut self, idx: &Index, seq: u64) -> (String, String) {
        let Some(b) = self.file.buffers().get(self.buffer) else {
            return (String::new(), String::new());
        };
        let rec = idx
            .events
            .get(seq as usize)
            .and_then(|e| file::record(&self.file, b, e));
        self.texts.event_text(idx, seq, rec.as_ref())
    }

    fn kernel_frames(&mut self, addrs: &[u64]) -> Vec<Frame> {
        addrs.iter().map(|&a| self.sym.kernel(a)).collect()
    }

    fn user_frames(&mut self, idx: &Index, pid: i32, ts: u64, u: UserStackRef) -> Vec<Frame> {
        let b = self.file.buffers().get(self.buffer);
        let f = &self.file;
        let rec = |s: u64| file::record(f, b?, idx.events.get(s as usize)?);
        view::user_stack(idx, pid, Some(ts), u, rec, &mut self.sym).0
    }

    fn group_detail(&mut self, idx: &Index, g: usize) -> GroupDetail {
        let b = self.file.buffers().get(self.buffer);
        let f = &self.file;
        let group = idx.stitched.groups.get(g);
        view::detail(
            idx,
            &group,
            |s| {
                let b = b?;
                file::record(f, b, idx.events.get(s as usize)?)
            },
            &mut self.texts,
            &mut self.sym,
        )
    }
}
