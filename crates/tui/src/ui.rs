//! Rendering: a pure function of the [`App`] state.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table};
use ratatui::Frame;
use ustack_printer::group::fmt_ts;
use ustack_stitch::Status;

use crate::app::{App, Focus, Tab, Viewport};
use crate::lines::{self, DetailLine};

/// Where things go on a `w` x `h` terminal: the header and status lines,
/// and the panes of both tabs.
pub fn layout(w: u16, h: u16) -> (Rect, Rect, Viewport) {
    let header = Rect::new(0, 0, w, h.min(1));
    let status = Rect::new(0, h.saturating_sub(1), w, h.min(1));
    let main_h = h.saturating_sub(2);
    let top = h.min(1);
    let list_h = (main_h / 2).max(6).min(main_h);
    let groups = Rect::new(0, top, w, list_h);
    let detail = Rect::new(0, top + list_h, w, main_h - list_h);
    let elist_h = (main_h * 2 / 3).max(6).min(main_h);
    let events = Rect::new(0, top, w, elist_h);
    let event_detail = Rect::new(0, top + elist_h, w, main_h - elist_h);
    let tree = Rect::new(0, top, w, main_h);
    let vp = Viewport {
        groups,
        group_rows: list_h.saturating_sub(3) as usize,
        detail,
        detail_rows: detail.height.saturating_sub(2) as usize,
        events,
        event_rows: elist_h.saturating_sub(3) as usize,
        event_detail,
        event_detail_rows: event_detail.height.saturating_sub(2) as usize,
        tree,
        tree_rows: main_h.saturating_sub(3) as usize,
    };
    (header, status, vp)
}

/// The style of a selected row: reversed colours, bold while its list
/// has the focus.
fn selected(style: Style, focused: bool) -> Style {
    let s = style.add_modifier(Modifier::REVERSED);
    if focused {
        s.add_modifier(Modifier::BOLD)
    } else {
        s
    }
}

/// Colour of a status.
pub fn status_style(s: Status) -> Style {
    match s {
        Status::Complete => Style::default(),
        Status::Pending => Style::default().fg(Color::Yellow),
        Status::StackLost => Style::default().fg(Color::Red),
        Status::OrphanStack => Style::default().fg(Color::Magenta),
    }
}

/// Draws the whole screen; returns what it showed, for [`App::drawn`].
pub fn render(f: &mut Frame<'_>, app: &App) -> Viewport {
    let area = f.area();
    let (header, status, l) = layout(area.width, area.height);
    render_header(f, app, header);
    match app.tab {
        Tab::Groups => {
            render_groups(f, app, l.groups, l.group_rows);
            render_detail(f, app, l.detail, l.detail_rows);
        }
        Tab::Events => {
            render_events(f, app, l.events, l.event_rows);
            render_event_detail(f, app, l.event_detail, l.event_detail_rows);
        }
        Tab::Tree => render_tree(f, app, l.tree, l.tree_rows),
    }
    render_status(f, app, status);
    if app.show_help {
        render_help(f, area);
    }
    l
}

fn render_header(f: &mut Frame<'_>, app: &App, area: Rect) {
    let c = app.counts;
    let mut spans = vec![
        Span::styled(
            format!(" {} ", app.title),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            "| {} events | {} groups: {} ok ",
            app.idx.events.len(),
            app.idx.stitched.groups.len(),
            c.complete
        )),
        Span::styled(
            format!("{} pending ", c.pending),
            status_style(Status::Pending),
        ),
        Span::styled(format!("{} lost ", c.lost), status_style(Status::StackLost)),
        Span::styled(
            format!("{} orphan ", c.orphan),
            status_style(Status::OrphanStack),
        ),
        Span::raw("| drops"),
    ];
    for d in &app.drops {
        let text = format!(" {}:{}{}", d.cpu, d.count, if d.unknown { "+" } else { "" });
        let style = if d.count > 0 || d.unknown {
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        spans.push(Span::styled(text, style));
    }
    f.render_widget(
        Paragraph::new(Line::from(spans)).style(Style::default().add_modifier(Modifier::REVERSED)),
        area,
    );
}

fn block(title: String, focused: bool) -> Block<'static> {
    let b = Block::default().borders(Borders::ALL).title(title);
    if focused {
        b.border_style(Style::default().fg(Color::Cyan))
    } else {
        b
    }
}

fn render_groups(f: &mut Frame<'_>, app: &App, area: Rect, rows: usize) {
    let arrow = if app.sort_rev { "v" } else { "^" };
    let title = format!(
        " Groups {}/{} | sort: {}{} {}",
        app.groups.len(),
        app.idx.stitched.groups.len(),
        app.sort.name(),
        arrow,
        if app.filter.is_empty() {
            String::new()
        } else {
            format!("| filter: {} ", app.filter.describe())
        }
    );
    let focused = app.focus == Focus::List;
    let header = Row::new(["TIME", "PID", "COMM", "COOKIE", "EVENTS", "DEPTH", "STATUS"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let data: Vec<Row> = app
        .groups
        .iter()
        .enumerate()
        .skip(app.groups_at.off)
        .take(rows)
        .map(|(row, &g)| {
            let grp = app.idx.stitched.groups.get(g as usize);
            let cookie = grp
                .cookie
                .map(|c| format!("{c:x}"))
                .unwrap_or_else(|| "sync".into());
            let mut style = status_style(grp.status);
            if row == app.groups_at.sel {
                style = selected(style, focused);
            }
            Row::new(vec![
                Cell::from(fmt_ts(grp.first_ts)),
                Cell::from(grp.pid.to_string()),
                Cell::from(app.idx.comms.get(grp.pid).to_string()),
                Cell::from(cookie),
                Cell::from(grp.events.len().to_string()),
                Cell::from(app.depth[g as usize].to_string()),
                Cell::from(grp.status.name()),
            ])
            .style(style)
        })
        .collect();
    let widths = [
        Constraint::Length(15),
        Constraint::Length(7),
        Constraint::Length(16),
        Constraint::Length(12),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Min(12),
    ];
    let t = Table::new(data, widths)
        .header(header)
        .block(block(title, focused));
    f.render_widget(t, area);
}

/// Styles one detail line.
pub fn styled(l: DetailLine) -> Line<'static> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    match l {
        DetailLine::Heading { text, status } => {
            Line::styled(text, status_style(status).add_modifier(Modifier::BOLD))
        }
        DetailLine::Note { text, status } => Line::styled(text, status_style(status)),
        DetailLine::Event { at, name, rest } => {
            let mut spans = vec![Span::raw(at), Span::styled(name, bold)];
            if !rest.is_empty() {
                spans.push(Span::raw(rest));
            }
            Line::from(spans)
        }
        DetailLine::Kernel(t) => Line::styled(t, Style::default().fg(Color::Cyan)),
        DetailLine::User(t) => Line::styled(t, Style::default().fg(Color::Green)),
        DetailLine::Warning(t) => Line::styled(t, Style::default().fg(Color::Red)),
        DetailLine::Plain(t) => Line::raw(t),
    }
}

fn render_detail(f: &mut Frame<'_>, app: &App, area: Rect, rows: usize) {
    let focused = app.focus == Focus::Detail;
    let lines: Vec<Line> = match &app.detail {
        Some(d) => lines::group(&d.detail, app.show_internal)
            .into_iter()
            .skip(app.dscroll)
            .take(rows)
            .map(styled)
            .collect(),
        None => vec![Line::raw("no group selected")],
    };
    let total = app.detail_lines();
    let title = if total > rows {
        format!(
            " Detail {}-{}/{} ",
            app.dscroll + 1,
            (app.dscroll + rows).min(total),
            total
        )
    } else {
        " Detail ".to_string()
    };
    f.render_widget(Paragraph::new(lines).block(block(title, focused)), area);
}

fn render_events(f: &mut Frame<'_>, app: &App, area: Rect, rows: usize) {
    let title = format!(
        " Events {}/{} {}",
        app.event_count(),
        app.idx.events.len(),
        if app.filter.is_empty() {
            String::new()
        } else {
            format!("| filter: {} ", app.filter.describe())
        }
    );
    let header = Row::new(["TIME", "CPU", "PID", "COMM", "DROP", "EVENT", "INFO"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let data: Vec<Row> = (app.events_at.off..app.events_at.off + rows)
        .filter_map(|row| Some((row, app.event_at(row)?)))
        .map(|(row, seq)| {
            let e = app.idx.events[seq as usize];
            let (name, info) = app
                .event_text
                .get(&seq)
                .cloned()
                .unwrap_or_else(|| (app.idx.event_name(seq), String::new()));
            let drop = app
                .idx
                .loss_before(seq)
                .map(|l| match l.count {
                    Some(n) => format!("v{n}"),
                    None => "v?".to_string(),
                })
                .unwrap_or_default();
            let mut style = Style::default();
            if let Some(g) = app.group_of(seq) {
                style = status_style(app.idx.stitched.groups.get(g).status);
            }
            if row == app.events_at.sel {
                style = selected(style, app.focus == Focus::List);
            }
            Row::new(vec![
                Cell::from(fmt_ts(e.ts)),
                Cell::from(e.cpu.to_string()),
                Cell::from(e.pid.to_string()),
                Cell::from(app.idx.comms.get(e.pid).to_string()),
                Cell::from(drop).style(Style::default().fg(Color::Red)),
                Cell::from(name),
                Cell::from(info),
            ])
            .style(style)
        })
        .collect();
    let widths = [
        Constraint::Length(15),
        Constraint::Length(3),
        Constraint::Length(7),
        Constraint::Length(16),
        Constraint::Length(5),
        Constraint::Length(20),
        Constraint::Min(10),
    ];
    let t = Table::new(data, widths)
        .header(header)
        .block(block(title, app.focus == Focus::List));
    f.render_widget(t, area);
}

fn render_event_detail(f: &mut Frame<'_>, app: &App, area: Rect, rows: usize) {
    let focused = app.focus == Focus::Detail;
    let lines: Vec<Line> = match &app.edetail {
        Some(d) => lines::event(&app.idx, d, app.show_internal)
            .into_iter()
            .skip(app.edscroll)
            .take(rows)
            .map(styled)
            .collect(),
        None => vec![Line::raw("no event selected")],
    };
    let total = app.event_detail_lines();
    let title = match (focused, total > rows) {
        (true, true) => format!(
            " Frames {}-{}/{} (Esc: back) ",
            app.edscroll + 1,
            (app.edscroll + rows).min(total),
            total
        ),
        (true, false) => " Frames (Esc: back) ".to_string(),
        (false, _) if app.selected_is_stack() => " Event (Enter: frames) ".to_string(),
        (false, _) => " Event ".to_string(),
    };
    f.render_widget(Paragraph::new(lines).block(block(title, focused)), area);
}

fn render_tree(f: &mut Frame<'_>, app: &App, area: Rect, rows: usize) {
    let Some(t) = &app.tree else {
        f.render_widget(
            Paragraph::new("no stacks").block(block(String::new(), true)),
            area,
        );
        return;
    };
    let title = format!(
        " Call tree, {} | {} stacks of {} groups {}",
        if t.bottom_up { "bottom-up" } else { "top-down" },
        t.total,
        t.groups,
        if app.filter.is_empty() {
            String::new()
        } else {
            format!("| filter: {} ", app.filter.describe())
        }
    );
    let header = Row::new(["TOTAL", "COUNT", "SELF", "FUNCTION"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let data: Vec<Row> = t
        .rows
        .iter()
        .enumerate()
        .skip(app.tree_at.off)
        .take(rows)
        .map(|(row, r)| {
            let n = t.node(r.node);
            let mark = match (n.children.is_empty(), n.expanded) {
                (true, _) => "  ",
                (false, true) => "- ",
                (false, false) => "+ ",
            };
            let indent = "  ".repeat(r.depth as usize);
            let colour = if n.kernel { Color::Cyan } else { Color::Green };
            let mut style = Style::default();
            if row == app.tree_at.sel {
                style = selected(style, true);
            }
            Row::new(vec![
                Cell::from(format!("{:6.2}%", t.percent(n.count))),
                Cell::from(n.count.to_string()),
                Cell::from(n.self_count.to_string()),
                Cell::from(Line::from(vec![
                    Span::raw(format!("{indent}{mark}")),
                    Span::styled(n.name.clone(), Style::default().fg(colour)),
                ])),
            ])
            .style(style)
        })
        .collect();
    let widths = [
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Min(10),
    ];
    let table = Table::new(data, widths)
        .header(header)
        .block(block(title, true));
    f.render_widget(table, area);
}

fn render_status(f: &mut Frame<'_>, app: &App, area: Rect) {
    let line = if let Some(p) = &app.prompt {
        Line::from(vec![
            Span::styled(
                p.kind.label(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::raw(p.text.clone()),
            Span::styled("_", Style::default().add_modifier(Modifier::SLOW_BLINK)),
        ])
    } else if let Some(l) = &app.loading {
        let mut line = vec![Span::styled(
            l.clone(),
            Style::default().add_modifier(Modifier::REVERSED),
        )];
        if !app.message.is_empty() {
            line.push(Span::raw(format!(" | {}", app.message)));
        }
        Line::from(line)
    } else if !app.message.is_empty() {
        Line::raw(app.message.clone())
    } else {
        Line::raw(match app.tab {
            Tab::Groups => {
                "Tab events  j/k move  Enter detail  / search  n/N  p/c/e filter  x clear  s/S sort  ? help  q quit"
            }
            Tab::Events => {
                "Tab tree  j/k move  Enter group/frames  / search  n/N  p/c/e filter  x clear  ? help  q quit"
            }
            Tab::Tree => {
                "Tab groups  j/k move  Enter/l/h expand/collapse  E all  b bottom-up  / search  i internal  q quit"
            }
        })
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The help text.
pub const HELP: &[&str] = &[
    "j / k, Down / Up     move (detail pane: scroll)",
    "Ctrl-d / Ctrl-u      half page down / up",
    "PgDn / PgUp, Space   page down / up",
    "g / G, Home / End    first / last",
    "Tab, 1 / 2 / 3       groups / events / call tree",
    "Enter                groups: detail; events: frames or group",
    "l / h, Right / Left  focus detail / list; tree: open / close",
    "b  E                 tree: bottom-up / top-down; expand all",
    "i                    show / hide tracing-internal frames",
    "/  n  N              search, next, previous match",
    "p  c  e              filter pid, comm (~x: contains), event",
    "x                    clear filters",
    "s / S                sort by next column / reverse",
    "mouse                wheel scrolls, click selects",
    "Esc                  back;  q, Ctrl-c: quit",
    "",
    "Colours: pending yellow, stack lost red, orphan stack magenta",
];

fn render_help(f: &mut Frame<'_>, area: Rect) {
    let w = 64.min(area.width);
    let h = (HELP.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let lines: Vec<Line> = HELP.iter().map(|s| Line::raw(*s)).collect();
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Help (any key closes) "),
        ),
        r,
    );
}
