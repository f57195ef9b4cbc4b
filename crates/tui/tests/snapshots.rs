//! TestBackend snapshots of each view on the synthetic fixture: the exact
//! screen text (trailing blanks trimmed; the machine's libc address of the
//! one libc frame replaced by a placeholder of the same width).

mod common;

use common::*;
use ratatui::style::{Color, Modifier};
use ustack_tui::app::{Msg, Prompt, Tab};

const HEADER: &str =
    " fixture.dat | 10 events | 3 groups: 2 ok 0 pending 1 lost 0 orphan | drops 0:0 1:9\n";
const EMPTY: &str =
    "│                                                                                                  │\n";
const BOTTOM: &str =
    "└──────────────────────────────────────────────────────────────────────────────────────────────────┘\n";

fn groups_top() -> String {
    format!(
        "{HEADER}\
┌ Groups 3/3 | sort: time^ ────────────────────────────────────────────────────────────────────────┐
│TIME            PID     COMM             COOKIE       EVENTS DEPTH STATUS                         │
│0.000001        100     app              300000001    2      2     complete                       │
│0.000001        200     other            500000002    1      0     stack-lost                     │
│0.000004        100     app              sync         1      1     complete                       │
{EMPTY}{EMPTY}{EMPTY}{EMPTY}{EMPTY}{BOTTOM}"
    )
}

const GROUPS_HINT: &str = "Tab events  j/k move  Enter detail  / search  n/N  p/c/e filter  x clear  s/S sort  ? help  q quit\n";

/// The groups view with the first group's detail, as the fixture opens at
/// 100x24.
fn groups_screen() -> String {
    format!(
        "{}\
┌ Detail ──────────────────────────────────────────────────────────────────────────────────────────┐
│app-100 cookie=300000001 complete 0.000001..0.000003 events=2 frames=2 (drops while open)         │
│0.000001 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)                                                 │
│    => __x64_sys_write+0x10 (ffffffff81200010)                                                    │
│    => do_syscall_64+0x20 (ffffffff81100020)                                                      │
│0.000002 [000] sys_exit: NR 1 = 5                                                                 │
│0.000003 [001] <user stack>                                                                       │
│    => 555500001234 /nonexistent/app                                                              │
│    => 555500005678 /nonexistent/app                                                              │
{EMPTY}{BOTTOM}{GROUPS_HINT}",
        groups_top()
    )
}
const EVENTS_HINT: &str =
    "Tab tree  j/k move  Enter group/frames  / search  n/N  p/c/e filter  x clear  ? help  q quit\n";

#[test]
fn groups_view_with_detail_of_first_group() {
    let f = fixture(None);
    let (app, _src) = open(&f, (100, 24));
    assert_eq!(screen_text(&app), groups_screen());
}

#[test]
fn groups_view_focused_detail_of_lost_group() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::Down(1), Msg::Enter]);
    let want = format!(
        "{}\
┌ Detail ──────────────────────────────────────────────────────────────────────────────────────────┐
│other-200 cookie=500000002 stack-lost 0.000001..0.000001 events=1 frames=0                        │
│0.000001 [001] sys_enter: NR 0 (0, 1, 2, 3, 4, 5)                                                 │
│<no user stack: stack lost: events were dropped before the stack arrived>                         │
{EMPTY}{EMPTY}{EMPTY}{EMPTY}{EMPTY}{EMPTY}{BOTTOM}{GROUPS_HINT}",
        groups_top()
    );
    assert_eq!(screen_text(&app), want);
    // Styles: the lost group is red, the selection keeps its reversed
    // colours (not bold) while the detail pane has the focus, and the
    // detail border is highlighted.
    let (w, h) = app.size;
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|fr| {
        ustack_tui::ui::render(fr, &app);
    })
    .unwrap();
    let buf = term.backend().buffer();
    assert_eq!(buf[(1, 4)].fg, Color::Red);
    assert_eq!(buf[(1, 4)].modifier, Modifier::REVERSED);
    assert_eq!(buf[(1, 3)].fg, Color::Reset);
    assert_eq!(buf[(1, 3)].modifier, Modifier::empty());
    assert_eq!(buf[(0, 12)].fg, Color::Cyan);
    assert_eq!(buf[(0, 1)].fg, Color::Reset);
}

fn events_body() -> String {
    "\
┌ Events 10/10 ────────────────────────────────────────────────────────────────────────────────────┐
│TIME            CPU PID     COMM             DROP  EVENT                INFO                      │
│0.000001        0   100     app                    sys_enter            NR 1 (0, 1, 2, 3, 4, 5)   │
│0.000001        0   100     app                    kernel_stack         size=2 caller={0xffffffff8│
│0.000001        0   100     app                    user_unwind_cookie   cookie=0x300000001        │
│0.000001        1   200     other                  sys_enter            NR 0 (0, 1, 2, 3, 4, 5)   │
│0.000001        1   200     other                  user_unwind_cookie   cookie=0x500000002        │
│0.000002        0   100     app                    sys_exit             NR 1 = 5                  │
│0.000002        0   100     app                    user_unwind_cookie   cookie=0x300000001        │
│0.000003        1   100     app              v9    user_unwind_stack    cookie=0x300000001 stack={│
│0.000004        0   100     app                    sys_enter            NR 3 (0, 1, 2, 3, 4, 5)   │
│0.000004        0   100     app                    user_stack           tgid=100 caller={0xADDR7__│
"
    .replace("ADDR7__", &libc_write_addr()[..7])
}

#[test]
fn events_view() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::ShowTab(Tab::Events)]);
    let want = format!(
        "{HEADER}{}{EMPTY}{BOTTOM}\
┌ Event ───────────────────────────────────────────────────────────────────────────────────────────┐
│#0 0.000001 [000] app-100 sys_enter                                                               │
│NR 1 (0, 1, 2, 3, 4, 5)                                                                           │
│group: cookie=300000001 complete (2 events) - Enter shows it                                      │
│    => __x64_sys_write+0x10 (ffffffff81200010)                                                    │
│    => do_syscall_64+0x20 (ffffffff81100020)                                                      │
{EMPTY}{BOTTOM}{EVENTS_HINT}",
        events_body()
    );
    assert_eq!(screen_text(&app), want);
}

#[test]
fn event_detail_of_a_user_stack_record_after_a_drop() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(
        &mut app,
        &mut src,
        &[Msg::ShowTab(Tab::Events), Msg::Down(7)],
    );
    let s = screen_text(&app);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[15..22].join("\n"),
        "\
┌ Event (Enter: frames) ───────────────────────────────────────────────────────────────────────────┐
│#7 0.000003 [001] app-100 user_unwind_stack                                                       │
│9 events dropped on CPU 1 just before it                                                          │
│cookie=0x300000001 stack={0x555500001234,0x555500005678}                                          │
│group: cookie=300000001 complete (2 events) - Enter shows it                                      │
│    => 555500001234 /nonexistent/app                                                              │
│    => 555500005678 /nonexistent/app                                                              │"
    );
    // Enter on the stack record focuses its frames, Enter again shows its
    // group.
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!(app.tab, Tab::Events);
    send(&mut app, &mut src, &[Msg::Enter]);
    assert_eq!(app.tab, Tab::Groups);
    assert_eq!(app.selected_group(), Some(0));
}

#[test]
fn help_overlay() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::ToggleHelp]);
    let want = format!(
        "{HEADER}\
┌ Groups 3/3 | sort: time^ ────────────────────────────────────────────────────────────────────────┐
│TIME            P┌ Help (any key closes) ───────────────────────────────────────┐                 │
│0.000001        1│j / k, Down / Up     move (detail pane: scroll)               │                 │
│0.000001        2│Ctrl-d / Ctrl-u      half page down / up                      │                 │
│0.000004        1│PgDn / PgUp, Space   page down / up                           │                 │
│                 │g / G, Home / End    first / last                             │                 │
│                 │Tab, 1 / 2 / 3       groups / events / call tree              │                 │
│                 │Enter                groups: detail; events: frames or group  │                 │
│                 │l / h, Right / Left  focus detail / list; tree: open / close  │                 │
│                 │b  E                 tree: bottom-up / top-down; expand all   │                 │
└─────────────────│i                    show / hide tracing-internal frames      │─────────────────┘
┌ Detail ─────────│/  n  N              search, next, previous match             │─────────────────┐
│app-100 cookie=30│p  c  e              filter pid, comm (~x: contains), event   │le open)         │
│0.000001 [000] sy│x                    clear filters                            │                 │
│    => __x64_sys_│s / S                sort by next column / reverse            │                 │
│    => do_syscall│mouse                wheel scrolls, click selects             │                 │
│0.000002 [000] sy│Esc                  back;  q, Ctrl-c: quit                   │                 │
│0.000003 [001] <u│                                                              │                 │
│    => 5555000012│Colours: pending yellow, stack lost red, orphan stack magenta │                 │
│    => 5555000056└──────────────────────────────────────────────────────────────┘                 │
{EMPTY}{BOTTOM}{GROUPS_HINT}"
    );
    assert_eq!(screen_text(&app), want);
    // Any key closes it; the key does nothing else.
    send(&mut app, &mut src, &[Msg::Down(1)]);
    assert!(!app.show_help);
    assert_eq!(app.groups_at.sel, 0);
    assert_eq!(screen_text(&app), groups_screen());
}

#[test]
fn filter_prompt_and_filtered_events() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(
        &mut app,
        &mut src,
        &[
            Msg::ShowTab(Tab::Events),
            Msg::StartPrompt(Prompt::Pid),
            Msg::Char('2'),
            Msg::Char('0'),
        ],
    );
    let s = screen_text(&app);
    assert_eq!(s.lines().last(), Some("filter pid: 20_"));
    send(&mut app, &mut src, &[Msg::Char('0'), Msg::Submit]);
    let want = format!(
        "{HEADER}\
┌ Events 2/10 | filter: pid=200 ───────────────────────────────────────────────────────────────────┐
│TIME            CPU PID     COMM             DROP  EVENT                INFO                      │
│0.000001        1   200     other                  sys_enter            NR 0 (0, 1, 2, 3, 4, 5)   │
│0.000001        1   200     other                  user_unwind_cookie   cookie=0x500000002        │
{}{BOTTOM}\
┌ Event ───────────────────────────────────────────────────────────────────────────────────────────┐
│#3 0.000001 [001] other-200 sys_enter                                                             │
│NR 0 (0, 1, 2, 3, 4, 5)                                                                           │
│group: cookie=500000002 stack-lost (1 events) - Enter shows it                                    │
{EMPTY}{EMPTY}{EMPTY}{BOTTOM}filter pid=200: 1 groups, 2 events\n",
        EMPTY.repeat(9)
    );
    assert_eq!(screen_text(&app), want);
}

#[test]
fn small_terminal_after_resize() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    send(&mut app, &mut src, &[Msg::Down(1), Msg::Resize(60, 12)]);
    let want = " fixture.dat | 10 events | 3 groups: 2 ok 0 pending 1 lost 0\n\
┌ Groups 3/3 | sort: time^ ────────────────────────────────┐
│TIME    PID     COMM     COOKIE  EVENTS DEPTH STATUS      │
│0.00000 100     app      3000000 2      2     complete    │
│0.00000 200     other    5000000 1      0     stack-lost  │
│0.00000 100     app      sync    1      1     complete    │
└──────────────────────────────────────────────────────────┘
┌ Detail 1-2/3 ────────────────────────────────────────────┐
│other-200 cookie=500000002 stack-lost 0.000001..0.000001 e│
│0.000001 [001] sys_enter: NR 0 (0, 1, 2, 3, 4, 5)         │
└──────────────────────────────────────────────────────────┘
Tab events  j/k move  Enter detail  / search  n/N  p/c/e fil
";
    assert_eq!(screen_text(&app), want);
}

#[test]
fn tiny_terminals_render_without_panic() {
    let f = fixture(None);
    let (mut app, mut src) = open(&f, (100, 24));
    for (w, h) in [(0, 0), (1, 1), (5, 3), (20, 4), (30, 7), (200, 2)] {
        for tab in [Tab::Groups, Tab::Events] {
            send(
                &mut app,
                &mut src,
                &[
                    Msg::ShowTab(tab),
                    Msg::Resize(w, h),
                    Msg::Down(2),
                    Msg::PageDown,
                ],
            );
            let s = screen(&app);
            assert_eq!(s.len(), h as usize);
            send(&mut app, &mut src, &[Msg::ToggleHelp]);
            let _ = screen(&app);
            send(&mut app, &mut src, &[Msg::Back]);
        }
    }
}
