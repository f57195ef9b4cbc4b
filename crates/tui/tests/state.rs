//! State and update: navigation, sorting, filters, search, jumps, laziness.

mod common;

use common::*;
use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MouseEvent, MouseEventKind,
};
use ustack_stitch::trace::Index;
use ustack_stitch::view::GroupDetail;
use ustack_stitch::Status;
use ustack_tui::app::{
    App, Focus, Msg, Prompt, PromptState, SortKey, StatusCounts, Tab, TextMatch,
};
use ustack_tui::keys::map_event;
use ustack_tui::source::{FileSource, Source};

/// Wraps the file source and counts what it is asked for.
struct Counting {
    inner: FileSource,
    texts: Vec<u64>,
    details: Vec<usize>,
}

impl Source for Counting {
    fn event_text(&mut self, idx: &Index, seq: u64) -> (String, String) {
        self.texts.push(seq);
        self.inner.event_text(idx, seq)
    }
    fn group_detail(&mut self, idx: &Index, g: usize) -> GroupDetail {
        self.details.push(g);
        self.inner.group_detail(idx, g)
    }
}

fn counting(f: &Fixture, size: (u16, u16)) -> (App, Counting) {
    let (app, src) = ustack_tui::open(&f.path, None, size).unwrap();
    (
        app,
        Counting {
            inner: src,
            texts: Vec::new(),
            details: Vec::new(),
        },
    )
}

fn selected(app: &App) -> (i32, Status) {
    let g = &app.idx.stitched.groups.get(app.selected_group().unwrap());
    (g.pid, g.status)
}

#[test]
fn movement_clamps_and_pages() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    assert_eq!(
        (app.tab, app.groups_at.sel, app.groups.len()),
        (Tab::Groups, 0, 3)
    );
    send(&mut app, &mut src, &[Msg::Up(1)]);
    assert_eq!(app.groups_at.sel, 0);
    send(
        &mut app,
        &mut src,
        &[Msg::Down(1), Msg::Down(1), Msg::Down(1)],
    );
    assert_eq!(app.groups_at.sel, 2);
    send(&mut app, &mut src, &[Msg::Top]);
    assert_eq!(app.groups_at.sel, 0);
    send(&mut app, &mut src, &[Msg::Bottom]);
    assert_eq!(app.groups_at.sel, 2);
    send(&mut app, &mut src, &[Msg::NextTab, Msg::PageDown]);
    assert_eq!((app.tab, app.events_at.sel), (Tab::Events, 9));
    send(&mut app, &mut src, &[Msg::HalfUp]);
    // 11 list rows on a 24-line screen: half a page is 5.
    assert_eq!(app.events_at.sel, 4);
    send(&mut app, &mut src, &[Msg::HalfDown]);
    assert_eq!(app.events_at.sel, 9);
    send(&mut app, &mut src, &[Msg::Top, Msg::HalfDown]);
    assert_eq!(app.events_at.sel, 5);
}

#[test]
fn detail_pane_focus_and_scroll() {
    let f = fixture(None);
    // A short screen: the detail pane shows 2 of the first group's 8 lines.
    let (mut app, mut src) = open(&f, (80, 12));
    assert_eq!(app.detail_lines(), 8);
    send(
        &mut app,
        &mut src,
        &[Msg::FocusDetail, Msg::Down(1), Msg::Down(1)],
    );
    assert_eq!(
        (app.focus, app.dscroll, app.groups_at.sel),
        (Focus::Detail, 2, 0)
    );
    send(&mut app, &mut src, &[Msg::Bottom]);
    assert_eq!(app.dscroll, 6);
    send(&mut app, &mut src, &[Msg::Back, Msg::Down(1)]);
    assert_eq!(
        (app.focus, app.groups_at.sel, app.dscroll),
        (Focus::List, 1, 0)
    );
}

#[test]
fn sort_by_columns_and_reverse() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    let pids = |a: &App| -> Vec<i32> {
        a.groups
            .iter()
            .map(|&g| a.idx.stitched.groups.get(g as usize).pid)
            .collect()
    };
    assert_eq!(pids(&app), [100, 200, 100]);
    send(&mut app, &mut src, &[Msg::Down(1), Msg::NextSort]);
    assert_eq!(app.sort, SortKey::Pid);
    assert_eq!(pids(&app), [100, 100, 200]);
    // The selection follows the group.
    assert_eq!(selected(&app), (200, Status::StackLost));
    assert_eq!(app.message, "sorted by pid");
    send(&mut app, &mut src, &[Msg::ReverseSort]);
    assert_eq!(pids(&app), [200, 100, 100]);
    assert_eq!(app.message, "sorted by pid (descending)");
    // Status order: complete first; reversed: stack-lost first.
    send(
        &mut app,
        &mut src,
        &[
            Msg::NextSort,
            Msg::NextSort,
            Msg::NextSort,
            Msg::NextSort,
            Msg::NextSort,
        ],
    );
    assert_eq!(app.sort, SortKey::Status);
    assert_eq!(selected(&app), (200, Status::StackLost));
    assert_eq!(app.groups_at.sel, 0);
}

#[test]
fn filters_by_pid_comm_event_and_clear() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    // A comm is matched exactly: "ot" is no task's name...
    send(&mut app, &mut src, &type_in(Prompt::Comm, "ot"));
    assert_eq!(app.filter.comm, Some(TextMatch::Exact("ot".into())));
    assert_eq!((app.groups.len(), app.event_count()), (0, 0));
    assert_eq!(app.message, "filter comm=ot: 0 groups, 0 events");
    // ... "~ot" is any name containing it, and "app" only app, not "other".
    send(&mut app, &mut src, &[Msg::ClearFilters]);
    send(&mut app, &mut src, &type_in(Prompt::Comm, "~ot"));
    assert_eq!(app.filter.comm, Some(TextMatch::Contains("ot".into())));
    assert_eq!(app.groups.len(), 1);
    assert_eq!(app.event_count(), 2);
    assert_eq!(app.message, "filter comm~ot: 1 groups, 2 events");
    send(&mut app, &mut src, &[Msg::StartPrompt(Prompt::Comm)]);
    assert_eq!(app.prompt.as_ref().map(|p| p.text.as_str()), Some("~ot"));
    send(&mut app, &mut src, &[Msg::Cancel]);
    send(&mut app, &mut src, &[Msg::ClearFilters]);
    assert_eq!((app.groups.len(), app.event_count()), (3, 10));
    assert_eq!(app.events, None);
    send(&mut app, &mut src, &type_in(Prompt::Event, "exi"));
    // Only pid 100's first group has a sys_exit.
    assert_eq!(app.groups.len(), 1);
    assert_eq!(app.event_count(), 1);
    assert_eq!(app.event_at(0), Some(5));
    // A bad pid is refused and leaves the filters alone.
    send(&mut app, &mut src, &type_in(Prompt::Pid, "z"));
    assert_eq!(app.message, "not a pid: z");
    assert_eq!(app.filter.pid, None);
    // The prompt starts from the current value; emptying it clears.
    send(&mut app, &mut src, &[Msg::StartPrompt(Prompt::Event)]);
    assert_eq!(
        app.prompt,
        Some(PromptState {
            kind: Prompt::Event,
            text: "exi".to_string()
        })
    );
    send(
        &mut app,
        &mut src,
        &[Msg::Backspace, Msg::Backspace, Msg::Backspace, Msg::Submit],
    );
    assert_eq!(app.filter.event, None);
    assert_eq!(app.message, "filters cleared");
    // Esc cancels a prompt without applying it.
    send(
        &mut app,
        &mut src,
        &[Msg::StartPrompt(Prompt::Pid), Msg::Char('1'), Msg::Cancel],
    );
    assert_eq!((app.prompt.clone(), app.filter.pid), (None, None));
}

#[test]
fn search_next_previous_and_wrap() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::SearchNext]);
    assert_eq!(app.message, "no search: press / first");
    send(&mut app, &mut src, &type_in(Prompt::Search, "app"));
    // From group 0, the next "app" group is row 2.
    assert_eq!(app.groups_at.sel, 2);
    assert_eq!(app.message, "/app: row 3");
    send(&mut app, &mut src, &[Msg::SearchNext]);
    assert_eq!(app.groups_at.sel, 0);
    assert_eq!(app.message, "/app: row 1 (wrapped)");
    send(&mut app, &mut src, &[Msg::SearchPrev]);
    assert_eq!(app.groups_at.sel, 2);
    assert_eq!(app.message, "/app: row 3 (wrapped)");
    // In the events tab the field text is searched too.
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Events)]);
    send(&mut app, &mut src, &type_in(Prompt::Search, "= 5"));
    assert_eq!(app.event_at(app.events_at.sel), Some(5));
    send(&mut app, &mut src, &type_in(Prompt::Search, "nope"));
    assert_eq!(app.message, "not found: nope");
    assert_eq!(app.event_at(app.events_at.sel), Some(5));
}

#[test]
fn enter_on_event_jumps_to_its_group() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Down(3), Msg::Enter],
    );
    // Event 3 is pid 200's sys_enter.
    assert_eq!(app.tab, Tab::Groups);
    assert_eq!(selected(&app), (200, Status::StackLost));
    // The cookie event itself is not a group member.
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Down(1), Msg::Enter],
    );
    assert_eq!(app.tab, Tab::Events);
    assert_eq!(app.message, "this event is in no group");
    // Enter in the groups tab toggles the detail focus.
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Groups), Msg::Enter]);
    assert_eq!(app.focus, Focus::Detail);
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!(app.focus, Focus::List);
}

#[test]
fn only_visible_rows_are_decoded_and_details_are_cached() {
    let f = fixture(Some(2000));
    let (mut app, mut src) = counting(&f, (120, 30));
    assert!(app.idx.events.len() > 15_000, "{}", app.idx.events.len());
    app.refresh(&mut src);
    assert_eq!(src.details, [app.selected_group().unwrap()]);
    assert!(src.texts.is_empty());
    // Moving within the list resolves each newly selected group once.
    let (a, b) = (app.groups[1] as usize, app.groups[2] as usize);
    send(
        &mut app,
        &mut src,
        &[Msg::Down(1), Msg::Down(1), Msg::Down(1), Msg::Up(1)],
    );
    assert_eq!(&src.details[1..], [a, b, app.groups[3] as usize, b]);
    // The events tab decodes the selected event for its detail pane, then
    // exactly the 15 rows on screen, then only what changes.
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Events)]);
    let mut want: Vec<u64> = vec![0];
    want.extend(0..15);
    assert_eq!(src.texts, want);
    send(&mut app, &mut src, &[Msg::Down(14)]);
    assert_eq!(src.texts.len(), 17);
    assert_eq!(src.texts[16], 14);
    send(&mut app, &mut src, &[Msg::Down(1)]);
    assert_eq!(&src.texts[17..], [15, 15]);
    src.texts.clear();
    send(&mut app, &mut src, &[Msg::Bottom]);
    let n = app.idx.events.len() as u64;
    let mut want = vec![n - 1];
    want.extend(n - 15..n);
    assert_eq!(src.texts, want);
    assert_eq!(app.event_text.len(), 15);
    assert_eq!(app.edetail.as_ref().map(|d| d.seq), Some(n - 1));
}

#[test]
fn demo_file_statuses_and_drop_header() {
    let f = fixture(Some(300));
    let (app, _src) = open(&f, (120, 30));
    // Every 97th entry loses its stack (3 of 300), the last one is pending.
    assert_eq!(
        app.counts,
        StatusCounts {
            complete: 296,
            pending: 1,
            lost: 3,
            orphan: 0
        }
    );
    let drops: u64 = app.drops.iter().map(|d| d.count).sum();
    assert_eq!(app.idx.losses.len(), 3);
    assert_eq!(
        drops,
        app.idx.losses.iter().map(|l| l.count.unwrap()).sum::<u64>()
    );
    assert_eq!(app.drops.len(), 4);
}

fn key(code: KeyCode, mods: KeyModifiers) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: mods,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

#[test]
fn keys_map_to_messages() {
    let none = KeyModifiers::NONE;
    let ctrl = KeyModifiers::CONTROL;
    let cases = [
        (key(KeyCode::Char('j'), none), false, Some(Msg::Down(1))),
        (key(KeyCode::Down, none), false, Some(Msg::Down(1))),
        (key(KeyCode::Char('k'), none), false, Some(Msg::Up(1))),
        (key(KeyCode::Up, none), false, Some(Msg::Up(1))),
        (key(KeyCode::Char('d'), ctrl), false, Some(Msg::HalfDown)),
        (key(KeyCode::Char('u'), ctrl), false, Some(Msg::HalfUp)),
        (
            key(KeyCode::Char('G'), KeyModifiers::SHIFT),
            false,
            Some(Msg::Bottom),
        ),
        (key(KeyCode::Home, none), false, Some(Msg::Top)),
        (
            key(KeyCode::Char('/'), none),
            false,
            Some(Msg::StartPrompt(Prompt::Search)),
        ),
        (key(KeyCode::Char('n'), none), false, Some(Msg::SearchNext)),
        (key(KeyCode::Char('N'), none), false, Some(Msg::SearchPrev)),
        (key(KeyCode::Char('?'), none), false, Some(Msg::ToggleHelp)),
        (key(KeyCode::Tab, none), false, Some(Msg::NextTab)),
        (
            key(KeyCode::Char('3'), none),
            false,
            Some(Msg::ShowTab(Tab::Tree)),
        ),
        (
            key(KeyCode::Char('i'), none),
            false,
            Some(Msg::ToggleInternal),
        ),
        (
            key(KeyCode::Char('b'), none),
            false,
            Some(Msg::ToggleDirection),
        ),
        (
            key(KeyCode::Char('E'), KeyModifiers::SHIFT),
            false,
            Some(Msg::ExpandAll),
        ),
        (key(KeyCode::Char('q'), none), false, Some(Msg::Quit)),
        (key(KeyCode::Char('c'), ctrl), false, Some(Msg::Quit)),
        (key(KeyCode::Char('z'), none), false, None),
        // In a prompt, keys are text.
        (key(KeyCode::Char('q'), none), true, Some(Msg::Char('q'))),
        (key(KeyCode::Char('j'), none), true, Some(Msg::Char('j'))),
        (key(KeyCode::Enter, none), true, Some(Msg::Submit)),
        (key(KeyCode::Esc, none), true, Some(Msg::Cancel)),
        (key(KeyCode::Backspace, none), true, Some(Msg::Backspace)),
        (key(KeyCode::Char('c'), ctrl), true, Some(Msg::Quit)),
        (Event::Resize(90, 20), false, Some(Msg::Resize(90, 20))),
        (
            Event::Mouse(MouseEvent {
                kind: MouseEventKind::ScrollDown,
                column: 0,
                row: 0,
                modifiers: none,
            }),
            false,
            Some(Msg::Down(3)),
        ),
        (
            Event::Mouse(MouseEvent {
                kind: MouseEventKind::ScrollUp,
                column: 0,
                row: 0,
                modifiers: none,
            }),
            false,
            Some(Msg::Up(3)),
        ),
    ];
    for (ev, prompt, want) in cases {
        assert_eq!(map_event(&ev, prompt), want, "{ev:?} prompt={prompt}");
    }
    let release = Event::Key(KeyEvent {
        code: KeyCode::Char('j'),
        modifiers: none,
        kind: KeyEventKind::Release,
        state: KeyEventState::NONE,
    });
    assert_eq!(map_event(&release, false), None);
}

#[test]
fn quit_and_resize() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::Resize(50, 10)]);
    assert_eq!(app.size, (50, 10));
    assert!(!app.quit);
    send(&mut app, &mut src, &[Msg::Quit]);
    assert!(app.quit);
}

#[test]
fn mouse_click_selects_rows_and_focuses_panes() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    // Rows: header line 0, list border 1, column header 2, data from 3.
    send(&mut app, &mut src, &[Msg::Click(10, 5)]);
    assert_eq!((app.groups_at.sel, app.focus), (2, Focus::List));
    // Below the last group: nothing changes.
    send(&mut app, &mut src, &[Msg::Click(10, 7)]);
    assert_eq!(app.groups_at.sel, 2);
    // The detail pane takes the focus.
    send(&mut app, &mut src, &[Msg::Click(10, 15)]);
    assert_eq!(app.focus, Focus::Detail);
    send(&mut app, &mut src, &[Msg::Click(10, 4)]);
    assert_eq!((app.groups_at.sel, app.focus), (1, Focus::List));
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Click(0, 9)],
    );
    assert_eq!(app.events_at.sel, 6);
    let down = Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: 3,
        row: 4,
        modifiers: KeyModifiers::NONE,
    });
    assert_eq!(map_event(&down, false), Some(Msg::Click(3, 4)));
    assert_eq!(map_event(&down, true), None);
}
