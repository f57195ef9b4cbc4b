//! The text of one stitched group ([`GroupDetail`]): its header line and
//! its block (events with kernel stacks, then the user stack), shared by
//! `report --stacks` and the TUI.

use crate::frame::{format_frame, FrameStyle};
use ustack_stitch::view::GroupDetail;
use ustack_stitch::{cookie_label, GroupKind, Status};
use ustack_symbolize::unwind::End;
use ustack_symbolize::Frame;

/// `seconds.microseconds`, as `trace-cmd report` prints timestamps.
pub fn fmt_ts(ts: u64) -> String {
    format!("{}.{:06}", ts / 1_000_000_000, (ts % 1_000_000_000) / 1_000)
}

/// `seconds.nanoseconds` (`trace-cmd report -t`).
pub fn fmt_ts_ns(ts: u64) -> String {
    format!("{}.{:09}", ts / 1_000_000_000, ts % 1_000_000_000)
}

/// What a stack-less group is waiting for, in words.
pub fn status_note(status: Status, loss_while_open: bool) -> &'static str {
    match status {
        Status::Complete => "",
        Status::Pending => "pending: the trace ended before the task returned to user space",
        Status::StackLost if loss_while_open => {
            "stack lost: events were dropped before the stack arrived"
        }
        Status::StackLost => "stack lost: the task entered the kernel again without it",
        Status::OrphanStack => "orphan stack: the events that requested it were lost",
    }
}

/// The line that marks where an unwound user stack stops being exact, put
/// before frame `at` of `frames` frames: the frames after it come from the
/// kernel's frame-pointer walk, or there are none because the unwinding
/// stopped.
pub fn cut_note(at: usize, frames: usize, end: End) -> String {
    let why = end.reason().unwrap_or("complete");
    if at < frames {
        format!("-- not exact below: {why} --")
    } else {
        format!("-- stack cut: {why} --")
    }
}

/// The user frames of `d`, each with the cut line (see [`cut_note`]) before
/// it where one belongs, and the cut line at the end when it cuts there.
pub fn user_frames_marked(d: &GroupDetail) -> impl Iterator<Item = Result<&Frame, String>> {
    let n = d.user_frames.len();
    let note = move |i: usize| {
        d.user_cut
            .filter(|&(at, _)| at == i)
            .map(|(at, end)| Err(cut_note(at, n, end)))
    };
    d.user_frames
        .iter()
        .enumerate()
        .flat_map(move |(i, f)| note(i).into_iter().chain(std::iter::once(Ok(f))))
        .chain(note(n))
}

/// The header line: comm-pid, cookie, status, time span, counts.
pub fn header(d: &GroupDetail, fmt_ts: fn(u64) -> String) -> String {
    let cookie = cookie_label(d.cookie, d.kind);
    let mut h = format!(
        "{}-{} {} {} {}..{} events={} frames={}",
        d.comm,
        d.pid,
        cookie,
        d.status.name(),
        fmt_ts(d.first_ts),
        fmt_ts(d.last_ts),
        d.events.len(),
        d.user_frames.len()
    );
    if d.loss_while_open && d.status == Status::Complete {
        // Some of its events may be missing.
        h.push_str(" (drops while open)");
    }
    h
}

/// The text block: header, events with kernel stacks, user stack.
pub fn lines(d: &GroupDetail, fmt_ts: fn(u64) -> String) -> Vec<String> {
    let mut out = vec![header(d, fmt_ts)];
    for e in &d.events {
        out.push(format!(
            "  {} [{:03}] {}: {}",
            fmt_ts(e.ts),
            e.cpu,
            e.name,
            e.info
        ));
        for f in &e.kernel {
            out.push(format!("      => {}", format_frame(f, FrameStyle::Kernel)));
        }
    }
    match d.user {
        Some(u) => {
            out.push(format!(
                "  {} [{:03}] <user stack>{}",
                fmt_ts(u.ts),
                u.cpu,
                if d.status == Status::OrphanStack {
                    " (orphan: the events that requested it were lost)"
                } else {
                    ""
                }
            ));
            if d.user_frames.is_empty() {
                out.push("      (empty)".to_string());
            }
            for f in user_frames_marked(d) {
                out.push(match f {
                    Ok(f) => format!("      => {}", format_frame(f, FrameStyle::User)),
                    Err(note) => format!("      {note}"),
                });
            }
        }
        // A trace without user stacks: nothing was waited for.
        None if d.kind == GroupKind::Kernel => {}
        None => out.push(format!(
            "  <no user stack: {}>",
            status_note(d.status, d.loss_while_open)
        )),
    }
    out
}
