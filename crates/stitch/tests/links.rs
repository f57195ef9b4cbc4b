//! Linking stacks (kernel-patch tracing/0013): a `user_unwind_stack` with `links`
//! set stands for the page cookie of its task's next kernel entry, which is
//! named by the `prev` of that entry's stack.

use ustack_stitch::stitcher::stitch;
use ustack_stitch::{Input, Status, Stitched};

const P: i32 = 42;

fn k(seq: u64, cpu: u32, ts: u64) -> Input<'static> {
    Input::Kernel {
        seq,
        cpu,
        ts,
        pid: P,
    }
}
fn pc(seq: u64, cpu: u32, ts: u64, cookie: u64) -> Input<'static> {
    Input::PageCookie {
        seq,
        cpu,
        ts,
        pid: P,
        cookie,
    }
}
fn c(seq: u64, cpu: u32, ts: u64, cookie: u64) -> Input<'static> {
    Input::Cookie {
        seq,
        cpu,
        ts,
        pid: P,
        cookie,
    }
}
/// A stack from the unwind callback: `prev` and `links` as the kernel
/// writes them with the option on.
fn st(seq: u64, cpu: u32, ts: u64, cookie: u64, prev: u64, links: bool) -> Input<'static> {
    Input::UserStack {
        seq,
        cpu,
        ts,
        pid: P,
        cookie,
        prev,
        links,
        stack: &[0x401000, 0x402000],
    }
}
fn page(cpu: u32, page: u64) -> Input<'static> {
    Input::Page { cpu, page }
}
fn lost(cpu: u32, ts: u64) -> Input<'static> {
    Input::Lost {
        cpu,
        ts,
        count: Some(10),
    }
}

/// Stitches `rest` after the first kernel entry of P on CPU 0 (page 1): a
/// page cookie 0xc1, event 1, and its linking stack (seq 2).
fn after_first_entry<const N: usize>(rest: [Input<'static>; N]) -> Stitched {
    let first = [
        page(0, 1),
        pc(0, 0, 10, 0xc1),
        k(1, 0, 11),
        st(2, 0, 12, 0xc1, 0, true),
    ];
    stitch(first.into_iter().chain(rest))
}

/// (cookie, status, event seqs, has a stack) per group, in time order.
fn groups(s: &Stitched) -> Vec<(Option<u64>, Status, Vec<u64>, bool)> {
    s.groups
        .iter()
        .map(|g| {
            (
                g.cookie.map(|c| c.get()),
                g.status,
                s.groups.events(&g).iter().map(|e| e.seq).collect(),
                g.user_stack.is_some(),
            )
        })
        .collect()
}

#[test]
fn a_loop_of_kernel_entries_needs_one_page_cookie() {
    let s = stitch([
        page(0, 1),
        pc(0, 0, 10, 0xc1),
        k(1, 0, 11),
        k(2, 0, 12),
        st(3, 0, 13, 0xc1, 0, true),
        k(4, 0, 20),
        k(5, 0, 21),
        st(6, 0, 22, 0xc2, 0xc1, true),
        k(7, 0, 30),
        st(8, 0, 31, 0xc3, 0xc2, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1, 2], true),
            (Some(0xc2), Status::Complete, vec![4, 5], true),
            (Some(0xc3), Status::Complete, vec![7], true),
        ]
    );
    assert_eq!(s.groups.get(1).first_ts, 20);
    assert!(s.groups.iter().all(|g| !g.loss_while_open));
}

#[test]
fn the_stack_of_a_linked_entry_may_come_from_another_cpu() {
    let s = stitch([
        page(0, 1),
        page(1, 9),
        pc(0, 0, 10, 0xc1),
        k(1, 0, 11),
        st(2, 0, 12, 0xc1, 0, true),
        k(3, 0, 20),
        // migrated during the kernel entry
        st(4, 1, 25, 0xc2, 0xc1, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (Some(0xc2), Status::Complete, vec![3], true),
        ]
    );
}

#[test]
fn a_lost_stack_leaves_the_linked_events_without_one() {
    // The stack of the linked entry (prev 0xc1) is lost with CPU 1's
    // pages; the next stack names 0xc2 as its previous one, so the events
    // after the link are not its events.
    let s = after_first_entry([
        k(3, 0, 20),
        lost(1, 30),
        page(0, 2),
        pc(4, 0, 40, 0xc3),
        k(5, 0, 41),
        st(6, 0, 42, 0xc3, 0xc2, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (None, Status::StackLost, vec![3], false),
            (Some(0xc3), Status::Complete, vec![5], true),
        ]
    );
}

#[test]
fn events_before_a_loss_find_their_stack_after_it() {
    // A loss between the linked events and their stack (on this CPU) does
    // not matter: prev names the kernel entry.
    let s = after_first_entry([
        k(3, 0, 20),
        k(4, 0, 21),
        lost(0, 30),
        page(0, 5),
        st(5, 0, 40, 0xc2, 0xc1, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (Some(0xc2), Status::Complete, vec![3, 4], true),
        ]
    );
    assert!(s.groups.get(1).loss_while_open);
}

#[test]
fn an_event_that_spills_into_the_next_page_joins_by_its_cookie() {
    // The first events follow the link; the last one landed in the next
    // page, so a cookie entry follows it, then a page cookie covers the
    // rest of the entry there.
    let s = after_first_entry([
        k(3, 0, 20),
        page(0, 2),
        k(4, 0, 21),
        c(5, 0, 22, 0xc2),
        pc(6, 0, 23, 0xc2),
        k(7, 0, 24),
        st(8, 0, 30, 0xc2, 0xc1, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (Some(0xc2), Status::Complete, vec![3, 4, 7], true),
        ]
    );
}

#[test]
fn a_link_covers_nothing_past_its_page_or_another_page_cookie() {
    let s = after_first_entry([
        // the kernel entry went on after the callback: a page cookie again
        pc(3, 0, 13, 0xc1),
        k(4, 0, 14),
        page(0, 2),
        // no cover in the new page
        k(5, 0, 20),
    ]);
    assert_eq!(
        groups(&s),
        vec![(Some(0xc1), Status::Complete, vec![1, 4], true)]
    );
}

#[test]
fn a_stack_without_links_leaves_the_cover_as_it_was() {
    // A late stack, a kernel before links, or the option off: the page
    // cookie before it still covers the task's events (the kernel writes
    // another page cookie first if they are of another kernel entry).
    let s = stitch([
        page(0, 1),
        pc(0, 0, 10, 0xc1),
        k(1, 0, 11),
        st(2, 0, 12, 0xc1, 0, false),
        k(3, 0, 20),
        st(4, 0, 22, 0xc2, 0xc1, false),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1, 3], true),
            (Some(0xc2), Status::OrphanStack, vec![], true),
        ]
    );
}

#[test]
fn a_linked_entry_whose_stack_never_comes_is_pending() {
    let s = after_first_entry([k(3, 0, 20)]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (None, Status::Pending, vec![3], false),
        ]
    );
}

#[test]
fn an_ftrace_record_of_the_task_is_never_covered() {
    // A trace_marker write after the linking stack is a kernel entry that
    // asked for no stack: neither the link nor a page cookie names it.
    let s = after_first_entry([
        Input::Unrequested {
            seq: 3,
            cpu: 0,
            ts: 15,
            pid: P,
        },
        k(4, 0, 20),
        pc(5, 0, 21, 0xc2),
        Input::Unrequested {
            seq: 6,
            cpu: 0,
            ts: 22,
            pid: P,
        },
        st(7, 0, 30, 0xc2, 0xc1, true),
    ]);
    assert_eq!(
        groups(&s),
        vec![
            (Some(0xc1), Status::Complete, vec![1], true),
            (Some(0xc2), Status::Complete, vec![4], true),
        ]
    );
}
