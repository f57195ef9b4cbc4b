//! Shared helpers of the TUI tests.

#![allow(dead_code)]

use std::path::PathBuf;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ustack_stitch::stitcher::UserStackRef;
use ustack_stitch::trace::Index;
use ustack_stitch::view::GroupDetail;
use ustack_symbolize::Frame;
use ustack_testdata as testdata;
use ustack_tui::app::{App, Msg, Prompt};
use ustack_tui::source::{FileSource, Source};

/// The fixture trace written into a fresh temporary directory.
pub struct Fixture {
    _dir: tempfile::TempDir,
    /// Path of the trace.
    pub path: PathBuf,
}

/// Writes `ustack_testdata::fixture()` (or the demo with `groups`).
pub fn fixture(demo_groups: Option<usize>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.dat");
    match demo_groups {
        Some(n) => testdata::demo(n, 4).write(&path).unwrap(),
        None => testdata::fixture().write(&path).unwrap(),
    }
    Fixture { _dir: dir, path }
}

/// Opens the fixture as the TUI does, and draws it once.
pub fn open(f: &Fixture, size: (u16, u16)) -> (App, FileSource) {
    let (mut app, mut src) = ustack_tui::open(&f.path, None, size).unwrap();
    app.refresh(&mut src);
    draw(&mut app, &mut src);
    (app, src)
}

/// Draws as the TUI's loop does: render, record the viewport, draw again
/// when it changed.
pub fn draw(app: &mut App, src: &mut dyn Source) {
    let (w, h) = app.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    ustack_tui::draw(&mut term, app, src).unwrap();
}

/// Applies messages, drawing after each as the TUI does.
pub fn send(app: &mut App, src: &mut dyn Source, msgs: &[Msg]) {
    for m in msgs {
        app.update(m.clone(), src);
        draw(app, src);
    }
}

/// The messages of typing `text` into the `kind` prompt and pressing Enter.
pub fn type_in(kind: Prompt, text: &str) -> Vec<Msg> {
    let mut msgs = vec![Msg::StartPrompt(kind)];
    msgs.extend(text.chars().map(Msg::Char));
    msgs.push(Msg::Submit);
    msgs
}

/// Renders into a TestBackend of the app's size and returns the screen as
/// lines of text (trailing spaces kept: the exact buffer).
pub fn screen(app: &App) -> Vec<String> {
    let (w, h) = app.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        ustack_tui::ui::render(f, app);
    })
    .unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = Vec::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push(line);
    }
    out
}

/// The machine-dependent address of the fixture's libc frame, and a
/// placeholder of the same width.
pub fn libc_write_addr() -> String {
    match testdata::libc_functions().iter().find(|f| f.0 == "write") {
        Some(w) => format!("{:x}", testdata::DEMO_LIBC_BASE + w.1 + 4),
        None => "555500000042".to_string(),
    }
}

/// `screen` with the libc address replaced by `WRITEADDR___` (same width),
/// right-trimmed, as one string.
pub fn screen_text(app: &App) -> String {
    let a = libc_write_addr();
    let mut s = String::new();
    for l in screen(app) {
        s.push_str(l.replace(&a, "WRITEADDR___").trim_end());
        s.push('\n');
    }
    s
}

/// The fixture's source with names for its user addresses (`leaf`, `mid`)
/// and the tracing-internal frames a real kernel stack starts with.
pub struct Named(pub FileSource);

/// Innermost frames the kernel adds to the fixture's kernel stack.
pub const INTERNAL: [&str; 2] = ["trace_event_raw_event_sys_enter", "ftrace_ops_list_func"];

fn name_user(f: &mut Frame) {
    let name = match f.addr {
        0x5555_0000_1234 => "leaf",
        0x5555_0000_5678 => "mid",
        _ => return,
    };
    f.symbol = Some(name.to_string());
    f.offset = 0;
}

fn with_internal(frames: Vec<Frame>) -> Vec<Frame> {
    if frames.is_empty() {
        return frames;
    }
    let mut out: Vec<Frame> = INTERNAL
        .iter()
        .enumerate()
        .map(|(i, n)| Frame {
            symbol: Some(n.to_string()),
            ..Frame::unknown(0xffffffff81300000 + i as u64 * 0x100)
        })
        .collect();
    out.extend(frames);
    out
}

impl Source for Named {
    fn event_text(&mut self, idx: &Index, seq: u64) -> (String, String) {
        self.0.event_text(idx, seq)
    }
    fn group_detail(&mut self, idx: &Index, g: usize) -> GroupDetail {
        let mut d = self.0.group_detail(idx, g);
        for e in &mut d.events {
            e.kernel = with_internal(std::mem::take(&mut e.kernel));
        }
        d.user_frames.iter_mut().for_each(name_user);
        d
    }
    fn kernel_frames(&mut self, addrs: &[u64]) -> Vec<Frame> {
        with_internal(self.0.kernel_frames(addrs))
    }
    fn user_frames(&mut self, idx: &Index, pid: i32, ts: u64, u: UserStackRef) -> Vec<Frame> {
        let mut v = self.0.user_frames(idx, pid, ts, u);
        v.iter_mut().for_each(name_user);
        v
    }
}

/// Opens the fixture with the [`Named`] source, drawn once.
pub fn open_named(f: &Fixture, size: (u16, u16)) -> (App, Named) {
    let (mut app, src) = ustack_tui::open(&f.path, None, size).unwrap();
    let mut src = Named(src);
    app.refresh(&mut src);
    draw(&mut app, &mut src);
    (app, src)
}

/// The label the call tree gives the fixture's sync-stack frame: `write`
/// when libc is readable, else its address in the app.
pub fn write_label() -> String {
    if testdata::libc_functions().iter().any(|f| f.0 == "write") {
        "write".to_string()
    } else {
        "0x555500000042 [app]".to_string()
    }
}
