//! Time to first screen of the TUI on a big trace:
//! `cargo bench -p tui --bench open [-- GROUPS]` (default 125 000 groups,
//! about a million events).

use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ustack_tui::app::{Msg, Tab};

fn main() {
    let groups: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(125_000);
    let dir = std::env::temp_dir().join(format!("tui-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.dat");
    ustack_testdata::demo(groups, 4).write(&path).unwrap();
    for round in 0..3 {
        let t = Instant::now();
        let (mut app, mut src) = ustack_tui::open(&path, None, (160, 50)).unwrap();
        app.refresh(&mut src);
        let mut term = Terminal::new(TestBackend::new(160, 50)).unwrap();
        ustack_tui::draw(&mut term, &mut app, &mut src).unwrap();
        let first = t.elapsed();
        let t = Instant::now();
        app.update(Msg::ShowTab(Tab::Events), &mut src);
        app.update(Msg::Bottom, &mut src);
        ustack_tui::draw(&mut term, &mut app, &mut src).unwrap();
        let jump = t.elapsed();
        let t = Instant::now();
        for _ in 0..100 {
            app.update(Msg::Up(1), &mut src);
            ustack_tui::draw(&mut term, &mut app, &mut src).unwrap();
        }
        let step = t.elapsed() / 100;
        let t = Instant::now();
        app.update(Msg::StartPrompt(ustack_tui::app::Prompt::Comm), &mut src);
        for c in "cc1".chars() {
            app.update(Msg::Char(c), &mut src);
        }
        app.update(Msg::Submit, &mut src);
        let filter = t.elapsed();
        println!(
            "round {round}: {} events: first screen {first:?}, events tab + End {jump:?}, one key + redraw {step:?}, comm filter {filter:?} ({} events left)",
            app.idx.events.len(),
            app.event_count()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
