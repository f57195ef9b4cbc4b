//! Shared helpers of the TUI tests.

#![allow(dead_code)]

use std::path::PathBuf;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ustack_stitch::testdata;
use ustack_tui::app::{App, Msg, Prompt};
use ustack_tui::source::{FileSource, Source};

/// The fixture trace written into a fresh temporary directory.
pub struct Fixture {
    _dir: tempfile::TempDir,
    /// Path of the trace.
    pub path: PathBuf,
}

/// Writes `ustack_stitch::testdata::fixture()` (or the demo with `groups`).
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
