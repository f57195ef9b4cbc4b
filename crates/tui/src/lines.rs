//! The text of the detail panes, as data.
//!
//! Built from a resolved group or event by pure functions: the state counts
//! the lines to scroll, the renderer styles them by kind. Neither needs the
//! other.

use ustack_printer::frame::{format_frame, FrameStyle};
use ustack_printer::group::{fmt_ts, header, status_note, user_frames_marked};
use ustack_stitch::internal::shown;
use ustack_stitch::trace::Index;
use ustack_stitch::view::GroupDetail;
use ustack_stitch::{cookie_label, Status};

use crate::app::{DroppedBefore, EventDetail};

/// One line of a detail pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetailLine {
    /// A heading in the colour of a group status (bold).
    Heading {
        /// The text.
        text: String,
        /// The status that colours it.
        status: Status,
    },
    /// A line about a group in the colour of its status.
    Note {
        /// The text.
        text: String,
        /// The status that colours it.
        status: Status,
    },
    /// An event: `at` (time, CPU, task), its `name` (bold), then `rest`.
    Event {
        /// What comes before the name.
        at: String,
        /// The event name.
        name: String,
        /// What comes after the name.
        rest: String,
    },
    /// A symbolized kernel frame.
    Kernel(String),
    /// A symbolized user frame.
    User(String),
    /// A warning (events dropped).
    Warning(String),
    /// Plain text.
    Plain(String),
}

/// The lines of a group's detail pane; `internal` shows tracing-internal
/// kernel frames.
pub fn group(d: &GroupDetail, internal: bool) -> Vec<DetailLine> {
    let mut out = vec![DetailLine::Heading {
        text: header(d, fmt_ts),
        status: d.status,
    }];
    for e in &d.events {
        out.push(DetailLine::Event {
            at: format!("{} [{:03}] ", fmt_ts(e.ts), e.cpu),
            name: e.name.clone(),
            rest: format!(": {}", e.info),
        });
        out.extend(shown(&e.kernel, internal).map(|f| {
            DetailLine::Kernel(format!("    => {}", format_frame(f, FrameStyle::Kernel)))
        }));
    }
    match d.user {
        Some(u) => {
            out.push(DetailLine::Event {
                at: format!("{} [{:03}] ", fmt_ts(u.ts), u.cpu),
                name: "<user stack>".to_string(),
                rest: String::new(),
            });
            if d.user_frames.is_empty() {
                out.push(DetailLine::Plain("    (empty)".to_string()));
            }
            out.extend(user_frames_marked(d).map(|f| match f {
                Ok(f) => DetailLine::User(format!("    => {}", format_frame(f, FrameStyle::User))),
                Err(note) => DetailLine::Plain(format!("    {note}")),
            }));
        }
        None => out.push(DetailLine::Note {
            text: format!(
                "<no user stack: {}>",
                status_note(d.status, d.loss_while_open)
            ),
            status: d.status,
        }),
    }
    out
}

/// The lines of the selected event's detail pane (events tab).
pub fn event(idx: &Index, d: &EventDetail, internal: bool) -> Vec<DetailLine> {
    let Some(e) = idx.events.get(d.seq as usize) else {
        return Vec::new();
    };
    let mut out = vec![DetailLine::Event {
        at: format!(
            "#{} {} [{:03}] {}-{} ",
            d.seq,
            fmt_ts(e.ts),
            e.cpu,
            idx.comms.get(e.pid),
            e.pid
        ),
        name: d.name.clone(),
        rest: String::new(),
    }];
    match d.dropped_before {
        DroppedBefore::Nothing => {}
        DroppedBefore::Count(n) => out.push(DetailLine::Warning(format!(
            "{n} events dropped on CPU {} just before it",
            e.cpu
        ))),
        DroppedBefore::Unknown => out.push(DetailLine::Warning(format!(
            "events dropped on CPU {} just before it",
            e.cpu
        ))),
    }
    out.push(DetailLine::Plain(d.info.clone()));
    if let Some(g) = d.group {
        let grp = idx.stitched.groups.get(g);
        let cookie = cookie_label(grp.cookie.map(|c| c.get()), grp.kind);
        out.push(DetailLine::Note {
            text: format!(
                "group: {cookie} {} ({} events) - Enter shows it",
                grp.status.name(),
                grp.events.len()
            ),
            status: grp.status,
        });
    }
    out.extend(
        shown(&d.kernel, internal)
            .map(|f| DetailLine::Kernel(format!("    => {}", format_frame(f, FrameStyle::Kernel)))),
    );
    out.extend(
        d.user
            .iter()
            .map(|f| DetailLine::User(format!("    => {}", format_frame(f, FrameStyle::User)))),
    );
    out
}
