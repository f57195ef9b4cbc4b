//! The stack views: the call tree, frames of stack rows, tracing-internal
//! frames and search through frames.

mod common;

use common::*;
use ratatui::style::Modifier;
use ustack_tui::app::{Focus, Msg, Prompt, Tab};

/// The tree rows as text: indentation, marker and name.
fn tree_rows(app: &ustack_tui::app::App) -> Vec<String> {
    let t = app.tree.as_ref().unwrap();
    t.rows
        .iter()
        .map(|r| {
            let n = t.node(r.node);
            format!(
                "{}{} {} {}/{}",
                "  ".repeat(r.depth as usize),
                n.name,
                n.count,
                n.self_count,
                if n.kernel { "k" } else { "u" }
            )
        })
        .collect()
}

#[test]
fn call_tree_top_down_expand_collapse_and_screen() {
    let f = fixture(None);
    let (mut app, mut src) = open_named(&f, (100, 24));
    // Only the first group has a sys_exit: one stack.
    send(&mut app, &mut src, &type_in(Prompt::Event, "exit"));
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Tree)]);
    assert_eq!(tree_rows(&app), ["mid 1 0/u"]);
    // Right expands, Enter toggles, E expands everything below.
    send(&mut app, &mut src, &[Msg::FocusDetail]);
    assert_eq!(tree_rows(&app), ["mid 1 0/u", "  leaf 1 0/u"]);
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!(tree_rows(&app), ["mid 1 0/u"]);
    send(&mut app, &mut src, &[Msg::ExpandAll, Msg::Bottom]);
    let want = format!(
        "{}\
┌ Call tree, top-down | 1 stacks of 1 groups | filter: event~exit ─────────────────────────────────┐
│TOTAL    COUNT    SELF     FUNCTION                                                               │
│100.00%  1        0        - mid                                                                  │
│100.00%  1        0          - leaf                                                               │
│100.00%  1        0            - do_syscall_64                                                    │
│100.00%  1        1                __x64_sys_write                                                │
{}└──────────────────────────────────────────────────────────────────────────────────────────────────┘
filter event~exit: 1 groups, 1 events
",
        " fixture.dat | 10 events | 3 groups: 2 ok 0 pending 1 lost 0 orphan | drops 0:0 1:9\n",
        "│                                                                                                  │\n".repeat(15)
    );
    assert_eq!(screen_text(&app), want);
    assert_eq!(app.tree_at.sel, 3);
    // The selected row is in reversed colours.
    let (w, h) = app.size;
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|fr| {
        ustack_tui::ui::render(fr, &app);
    })
    .unwrap();
    assert!(term.backend().buffer()[(1, 6)]
        .modifier
        .contains(Modifier::REVERSED));
    assert!(!term.backend().buffer()[(1, 5)]
        .modifier
        .contains(Modifier::REVERSED));
    // Left on a leaf goes to its parent, Left again collapses it.
    send(&mut app, &mut src, &[Msg::FocusList]);
    assert_eq!(app.tree_at.sel, 2);
    send(&mut app, &mut src, &[Msg::FocusList]);
    assert_eq!(
        tree_rows(&app),
        ["mid 1 0/u", "  leaf 1 0/u", "    do_syscall_64 1 0/k"]
    );
}

#[test]
fn call_tree_bottom_up_counts_and_percentages() {
    let f = fixture(None);
    let (mut app, mut src) = open_named(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Tree)]);
    let t = app.tree.as_ref().unwrap();
    // Three groups, two with a stack (the lost one has none).
    assert_eq!((t.total, t.groups, t.bottom_up), (2, 3, false));
    let mut roots = tree_rows(&app);
    roots.sort();
    let mut want = vec!["mid 1 0/u".to_string(), format!("{} 1 1/u", write_label())];
    want.sort();
    assert_eq!(roots, want);
    assert!(screen_text(&app).contains("│ 50.00%  1        0        + mid "));
    // Bottom-up: the innermost functions are the roots.
    send(&mut app, &mut src, &[Msg::ToggleDirection]);
    assert_eq!(app.message, "call tree bottom-up");
    let mut roots = tree_rows(&app);
    roots.sort();
    let mut want = vec![
        "__x64_sys_write 1 0/k".to_string(),
        format!("{} 1 1/u", write_label()),
    ];
    want.sort();
    assert_eq!(roots, want);
    let row = app
        .tree
        .as_ref()
        .unwrap()
        .rows
        .iter()
        .position(|r| app.tree.as_ref().unwrap().node(r.node).name == "__x64_sys_write")
        .unwrap();
    app.tree_at.sel = row;
    send(&mut app, &mut src, &[Msg::ExpandAll]);
    let rows = tree_rows(&app);
    let at = rows.iter().position(|r| r.starts_with("__x64")).unwrap();
    assert_eq!(
        rows[at..at + 4],
        [
            "__x64_sys_write 1 0/k",
            "  do_syscall_64 1 0/k",
            "    leaf 1 0/u",
            "      mid 1 1/u"
        ]
    );
    // A filter rebuilds the tree from the groups left.
    send(&mut app, &mut src, &type_in(Prompt::Comm, "other"));
    assert_eq!(app.tree.as_ref().map(|t| (t.total, t.groups)), Some((0, 1)));
}

#[test]
fn tracing_internal_frames_hidden_until_asked() {
    let f = fixture(None);
    let (mut app, mut src) = open_named(&f, (100, 30));
    let s = screen_text(&app);
    assert!(
        s.contains("│    => __x64_sys_write+0x10 (ffffffff81200010)"),
        "{s}"
    );
    assert!(!s.contains("trace_event_raw_event"), "{s}");
    assert_eq!(app.detail_lines(), 8);
    send(&mut app, &mut src, &[Msg::ToggleInternal]);
    assert_eq!(app.message, "tracing-internal kernel frames shown");
    let s = screen_text(&app);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[17..21],
        [
            "│0.000001 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)                                                 │",
            "│    => trace_event_raw_event_sys_enter (ffffffff81300000)                                         │",
            "│    => ftrace_ops_list_func (ffffffff81300100)                                                    │",
            "│    => __x64_sys_write+0x10 (ffffffff81200010)                                                    │",
        ]
    );
    assert_eq!(app.detail_lines(), 10);
    // The call tree follows the setting.
    let has = |app: &ustack_tui::app::App, name: &str| {
        let t = app.tree.as_ref().unwrap();
        t.nodes.iter().filter(|n| n.name == name).count()
    };
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Tree)]);
    assert_eq!(has(&app, "ftrace_ops_list_func"), 1);
    assert_eq!(has(&app, "trace_event_raw_event_sys_enter"), 1);
    send(&mut app, &mut src, &[Msg::ToggleInternal]);
    assert_eq!(has(&app, "ftrace_ops_list_func"), 0);
    assert_eq!(has(&app, "trace_event_raw_event_sys_enter"), 0);
    assert_eq!(has(&app, "__x64_sys_write"), 1);
}

#[test]
fn enter_on_stack_rows_shows_their_frames() {
    let f = fixture(None);
    let (mut app, mut src) = open_named(&f, (100, 24));
    // Row 1 is the kernel_stack record of the first sys_enter.
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Down(1)],
    );
    assert!(app.selected_is_stack());
    assert!(screen_text(&app).contains("┌ Event (Enter: frames) ─"));
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!((app.tab, app.focus), (Tab::Events, Focus::Detail));
    let s = screen_text(&app);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[15..22],
        [
            "┌ Frames (Esc: back) ──────────────────────────────────────────────────────────────────────────────┐",
            "│#1 0.000001 [000] app-100 kernel_stack                                                            │",
            "│size=2 caller={0xffffffff81200010,0xffffffff81100020}                                             │",
            "│    => __x64_sys_write+0x10 (ffffffff81200010)                                                    │",
            "│    => do_syscall_64+0x20 (ffffffff81100020)                                                      │",
            "│                                                                                                  │",
            "│                                                                                                  │",
        ]
    );
    // On a smaller screen, with the internal frames, 6 lines in 4 rows:
    // j/k scroll the frames, Esc goes back to the list.
    send(
        &mut app,
        &mut src,
        &[Msg::Resize(100, 20), Msg::ToggleInternal],
    );
    assert!(screen_text(&app).contains("┌ Frames 1-4/6 (Esc: back) ─"));
    send(&mut app, &mut src, &[Msg::Down(1)]);
    assert_eq!((app.edscroll, app.events_at.sel), (1, 1));
    send(&mut app, &mut src, &[Msg::Back, Msg::Down(1)]);
    assert_eq!((app.focus, app.events_at.sel), (Focus::List, 2));
    // The sync user_stack record (row 9): its user frames.
    send(&mut app, &mut src, &[Msg::Bottom, Msg::Enter]);
    assert_eq!(app.focus, Focus::Detail);
    assert_eq!(app.edetail.as_ref().unwrap().user.len(), 1);
    // Enter again, or on another event, jumps to the group.
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!(
        (app.tab, app.focus, app.groups_at.sel),
        (Tab::Groups, Focus::List, 2)
    );
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Top, Msg::Enter],
    );
    assert_eq!((app.tab, app.groups_at.sel), (Tab::Groups, 0));
}

#[test]
fn search_finds_stacks_through_a_frame() {
    let f = fixture(None);
    let (mut app, mut src) = open_named(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::Down(1)]);
    // Only group 0's user stack goes through mid.
    send(&mut app, &mut src, &type_in(Prompt::Search, "mid"));
    assert_eq!(
        (app.groups_at.sel, app.message.as_str()),
        (0, "/mid: row 1 (wrapped)")
    );
    // Kernel frames too, but not hidden ones.
    send(&mut app, &mut src, &type_in(Prompt::Search, "do_sys"));
    assert_eq!(app.message, "/do_sys: row 1 (wrapped)");
    send(&mut app, &mut src, &type_in(Prompt::Search, "ftrace_ops"));
    assert_eq!(app.message, "not found: ftrace_ops");
    send(&mut app, &mut src, &[Msg::ToggleInternal]);
    send(&mut app, &mut src, &type_in(Prompt::Search, "ftrace_ops"));
    assert_eq!(app.message, "/ftrace_ops: row 1 (wrapped)");
    // In the events tab, the stack records through it.
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Events)]);
    send(&mut app, &mut src, &type_in(Prompt::Search, "leaf"));
    assert_eq!(app.event_at(app.events_at.sel), Some(7));
    // In the call tree, collapsed nodes are opened to show the match.
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Tree)]);
    send(&mut app, &mut src, &type_in(Prompt::Search, "do_sys"));
    let t = app.tree.as_ref().unwrap();
    assert_eq!(t.node(t.rows[app.tree_at.sel].node).name, "do_syscall_64");
    assert_eq!(t.rows[app.tree_at.sel].depth, 2);
}
