//! Hand-built input sequences for the stitching algorithm.

use ustack_stitch::{EventRef, GroupKind, Input, Status, Stitched, Stitcher};

/// CPU of the filler events [`stitch`] pushes between inputs.
const FILLER_CPU: u32 = 999;

/// Stitches `inputs`, and checks that a streaming stitcher hands out the
/// same groups when it looks for closed groups after every input (filler
/// events of another task on a CPU of their own make it look).
fn stitch<'a>(inputs: impl IntoIterator<Item = Input<'a>>) -> Stitched {
    let inputs: Vec<Input<'a>> = inputs.into_iter().collect();
    let whole = ustack_stitch::stitcher::stitch(inputs.iter().copied());
    let mut st = Stitcher::streaming();
    let mut closed = Vec::new();
    for i in inputs {
        st.push(i);
        for n in 0..4096 {
            st.push(k(u64::MAX - n, FILLER_CPU, 0, 777_777));
        }
        closed.extend(st.take_closed());
    }
    let (rest, left, _) = st.finish_with_closed();
    assert!(rest.groups.is_empty() || closed.is_empty() && left.is_empty());
    closed.extend(left);
    let mut got: Vec<_> = closed
        .iter()
        .map(|c| {
            let g = &c.group;
            let seqs: Vec<_> = c.events.iter().map(|e| (e.seq, e.kernel_stack())).collect();
            (
                g.first_ts,
                g.pid,
                g.cookie,
                g.status,
                seqs,
                g.user_stack.map(|u| (u.seq, u.stack)),
                g.cookie_events,
            )
        })
        .collect();
    let mut want: Vec<_> = whole
        .groups
        .iter()
        .filter(|g| g.kind != GroupKind::Kernel)
        .map(|g| {
            let seqs: Vec<_> = whole
                .groups
                .events(&g)
                .iter()
                .map(|e| (e.seq, e.kernel_stack()))
                .collect();
            (
                g.first_ts,
                g.pid,
                g.cookie,
                g.status,
                seqs,
                g.user_stack.map(|u| (u.seq, u.stack)),
                g.cookie_events,
            )
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "streamed groups");
    whole
}

fn k(seq: u64, cpu: u32, ts: u64, pid: i32) -> Input<'static> {
    Input::Kernel { seq, cpu, ts, pid }
}
fn c(seq: u64, cpu: u32, ts: u64, pid: i32, cookie: u64) -> Input<'static> {
    Input::Cookie {
        seq,
        cpu,
        ts,
        pid,
        cookie,
    }
}
fn us(seq: u64, cpu: u32, ts: u64, pid: i32, cookie: u64, stack: &'static [u64]) -> Input<'static> {
    Input::UserStack {
        seq,
        cpu,
        ts,
        pid,
        cookie,
        prev: 0,
        links: false,
        stack,
    }
}
fn lost(cpu: u32, ts: u64, count: u64) -> Input<'static> {
    Input::Lost {
        cpu,
        ts,
        count: Some(count),
    }
}

/// (pid, cookie, status, event seqs, user stack addresses)
type Summary = (i32, Option<u64>, Status, Vec<u64>, Option<Vec<u64>>);

fn summary(s: &Stitched) -> Vec<Summary> {
    s.groups
        .iter()
        .map(|g| {
            (
                g.pid,
                g.cookie.map(|c| c.get()),
                g.status,
                s.groups.events(&g).iter().map(|e| e.seq).collect(),
                g.user_stack.map(|u| s.stacks.get(u.stack).to_vec()),
            )
        })
        .collect()
}

#[test]
fn one_entry_many_cookie_events_one_stack() {
    let s = stitch([
        k(0, 1, 100, 42),
        c(1, 1, 101, 42, 0x3_0000_0002),
        k(2, 1, 110, 42),
        c(3, 1, 111, 42, 0x3_0000_0002),
        k(4, 1, 120, 42),
        c(5, 1, 121, 42, 0x3_0000_0002),
        us(
            6,
            1,
            130,
            42,
            0x3_0000_0002,
            &[0x401000, 0x402000, 0x403000],
        ),
    ]);
    assert_eq!(
        summary(&s),
        vec![(
            42,
            Some(0x3_0000_0002),
            Status::Complete,
            vec![0, 2, 4],
            Some(vec![0x401000, 0x402000, 0x403000])
        )]
    );
    let g = s.groups.get(0);
    assert_eq!(g.kind, GroupKind::Deferred);
    assert_eq!(g.cookie_events, 3);
    assert_eq!((g.first_ts, g.last_ts), (100, 130));
    assert!(!g.loss_while_open);
    assert_eq!(g.user_stack.unwrap().seq, 6);
}

#[test]
fn stack_on_another_cpu_after_migration() {
    let s = stitch([
        k(0, 0, 100, 7),
        c(1, 0, 101, 7, 0xa1),
        k(2, 1, 105, 8), // another task on CPU 1
        us(3, 1, 140, 7, 0xa1, &[0x10, 0x20]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(
            7,
            Some(0xa1),
            Status::Complete,
            vec![0],
            Some(vec![0x10, 0x20])
        )]
    );
    assert_eq!(s.groups.get(0).user_stack.unwrap().seq, 3);
    assert_eq!(s.groups.events(&s.groups.get(0))[0].seq, 0);
}

#[test]
fn interleaved_tasks_are_kept_apart() {
    let s = stitch([
        k(0, 0, 100, 1),
        c(1, 0, 101, 1, 0x11),
        k(2, 1, 102, 2),
        c(3, 1, 103, 2, 0x21),
        k(4, 0, 104, 1),
        c(5, 0, 105, 1, 0x11),
        us(6, 1, 106, 2, 0x21, &[0xb]),
        us(7, 0, 107, 1, 0x11, &[0xa]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (1, Some(0x11), Status::Complete, vec![0, 4], Some(vec![0xa])),
            (2, Some(0x21), Status::Complete, vec![2], Some(vec![0xb])),
        ]
    );
}

#[test]
fn trace_ends_before_return_to_user_is_pending() {
    let s = stitch([k(0, 0, 100, 5), c(1, 0, 101, 5, 0x77)]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::Pending, vec![0], None)]
    );
}

#[test]
fn loss_while_waiting_makes_the_stack_lost() {
    // The stack was probably in the dropped events of CPU 3.
    let s = stitch([k(0, 0, 100, 5), c(1, 0, 101, 5, 0x77), lost(3, 150, 12)]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::StackLost, vec![0], None)]
    );
    assert!(s.groups.get(0).loss_while_open);
    assert_eq!(s.drops_per_cpu(), vec![(3, 12, false)]);
}

#[test]
fn loss_before_the_group_does_not_count() {
    let s = stitch([lost(0, 50, 3), k(0, 0, 100, 5), c(1, 0, 101, 5, 0x77)]);
    assert_eq!(s.groups.get(0).status, Status::Pending);
    assert!(!s.groups.get(0).loss_while_open);
}

#[test]
fn new_cookie_without_stack_means_stack_lost() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        k(2, 0, 200, 5),
        c(3, 0, 201, 5, 0x99),
        us(4, 0, 210, 5, 0x99, &[0x1]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (5, Some(0x77), Status::StackLost, vec![0], None),
            (5, Some(0x99), Status::Complete, vec![2], Some(vec![0x1])),
        ]
    );
}

#[test]
fn stack_with_other_cookie_after_loss_is_orphan_and_not_attached() {
    // The stack of 0x77 and the cookie events of 0x99 were dropped: the
    // stack of 0x99 must not be glued onto the events of 0x77.
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        lost(0, 300, 40),
        us(2, 0, 310, 5, 0x99, &[0x5, 0x6]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (5, Some(0x77), Status::StackLost, vec![0], None),
            (
                5,
                Some(0x99),
                Status::OrphanStack,
                vec![],
                Some(vec![0x5, 0x6])
            ),
        ]
    );
    assert!(s.groups.get(0).loss_while_open);
}

#[test]
fn matching_stack_after_loss_is_attached() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        lost(1, 120, 2),
        us(2, 1, 130, 5, 0x77, &[0x9]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::Complete, vec![0], Some(vec![0x9]))]
    );
    assert!(s.groups.get(0).loss_while_open);
}

#[test]
fn cookie_after_loss_on_its_cpu_has_no_event() {
    // The event that requested this cookie was dropped: the cookie must not
    // be attached to the event before the gap.
    let s = stitch([
        k(0, 2, 100, 5),
        lost(2, 150, 1),
        c(1, 2, 151, 5, 0x44),
        us(2, 2, 160, 5, 0x44, &[0x3]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x44), Status::Complete, vec![], Some(vec![0x3]))]
    );
    assert_eq!(s.groups.get(0).cookie_events, 1);
    assert_eq!(s.cookies_without_event, 1);
}

#[test]
fn cookie_of_other_pid_is_not_attached_to_event() {
    let s = stitch([k(0, 0, 100, 5), c(1, 0, 101, 6, 0x44)]);
    assert_eq!(
        summary(&s),
        vec![(6, Some(0x44), Status::Pending, vec![], None)]
    );
}

#[test]
fn late_stack_from_other_cpu_still_matches_by_cookie() {
    // Per-CPU clocks can put the stack just after the next entry's cookie.
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        k(2, 1, 200, 5),
        c(3, 1, 201, 5, 0x99),
        us(4, 0, 202, 5, 0x77, &[0x1]),
        us(5, 1, 210, 5, 0x99, &[0x2]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (5, Some(0x77), Status::Complete, vec![0], Some(vec![0x1])),
            (5, Some(0x99), Status::Complete, vec![2], Some(vec![0x2])),
        ]
    );
}

#[test]
fn empty_stack_at_exit_is_complete_with_no_frames() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        us(2, 0, 102, 5, 0x77, &[]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::Complete, vec![0], Some(vec![]))]
    );
}

#[test]
fn duplicate_stack_is_orphan() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        us(2, 0, 102, 5, 0x77, &[0x1]),
        us(3, 0, 103, 5, 0x77, &[0x1]),
    ]);
    let st: Vec<Status> = s.groups.iter().map(|g| g.status).collect();
    assert_eq!(st, vec![Status::Complete, Status::OrphanStack]);
}

#[test]
fn kernel_stacks_attach_to_preceding_event_on_same_cpu() {
    let s = stitch([
        k(0, 0, 100, 5),
        k(1, 1, 101, 6),
        Input::KernelStack {
            seq: 2,
            cpu: 0,
            ts: 102,
            pid: 5,
            stack: &[0xffff_ffff_8100_0000, 0xffff_ffff_8100_1000],
        },
        c(3, 0, 103, 5, 0x77),
        Input::KernelStack {
            seq: 4,
            cpu: 1,
            ts: 104,
            pid: 6,
            stack: &[0xffff_ffff_8200_0000],
        },
        us(5, 0, 110, 5, 0x77, &[0x1]),
    ]);
    assert_eq!(s.kernel_stacks.len(), 2);
    let g = s.groups.get(0);
    assert_eq!(
        s.groups.events(&g),
        &[EventRef::new(0, s.kernel_stack_of(0))]
    );
    assert_eq!(
        s.stacks.get(s.kernel_stack_of(0).unwrap()),
        &[0xffff_ffff_8100_0000, 0xffff_ffff_8100_1000]
    );
    assert_eq!(
        s.stacks.get(s.kernel_stack_of(1).unwrap()),
        &[0xffff_ffff_8200_0000]
    );
    assert_eq!(s.kernel_stack_of(3), None);
}

#[test]
fn kernel_stack_after_a_sync_stack_reaches_its_group() {
    // Only the CPU's recent event refers to the sync group when its
    // kernel stack comes: a streaming stitcher must wait for it.
    let s = stitch([
        k(0, 0, 100, 5),
        Input::SyncUserStack {
            seq: 1,
            cpu: 0,
            ts: 100,
            pid: 5,
            stack: &[0x401000],
        },
        Input::KernelStack {
            seq: 2,
            cpu: 0,
            ts: 100,
            pid: 5,
            stack: &[0xffff_ffff_8100_0000],
        },
    ]);
    let g = s.groups.get(0);
    assert_eq!(
        s.groups.events(&g),
        &[EventRef::new(0, s.kernel_stack_of(0))]
    );
    assert!(s.kernel_stack_of(0).is_some());
}

#[test]
fn kernel_stack_after_cookie_updates_grouped_event() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 101, 5, 0x77),
        Input::KernelStack {
            seq: 2,
            cpu: 0,
            ts: 102,
            pid: 5,
            stack: &[0xffff_ffff_8100_0000],
        },
    ]);
    let id = s.groups.events(&s.groups.get(0))[0]
        .kernel_stack()
        .expect("kernel stack");
    assert_eq!(s.stacks.get(id), &[0xffff_ffff_8100_0000]);
}

#[test]
fn kernel_stack_across_loss_is_not_attached() {
    let s = stitch([
        k(0, 0, 100, 5),
        lost(0, 110, 4),
        Input::KernelStack {
            seq: 1,
            cpu: 0,
            ts: 111,
            pid: 5,
            stack: &[0xffff_ffff_8100_0000],
        },
    ]);
    assert!(s.kernel_stacks.is_empty());
    assert_eq!(s.kernel_stacks_without_event, 1);
}

#[test]
fn sync_user_stacks_make_one_group_per_event() {
    let s = stitch([
        k(0, 0, 100, 5),
        Input::SyncUserStack {
            seq: 1,
            cpu: 0,
            ts: 100,
            pid: 5,
            stack: &[0x4000, 0x5000],
        },
        k(2, 0, 200, 5),
        lost(0, 201, 1),
        Input::SyncUserStack {
            seq: 3,
            cpu: 0,
            ts: 202,
            pid: 5,
            stack: &[0x6000],
        },
        k(4, 1, 300, 9),
        Input::SyncUserStack {
            seq: 5,
            cpu: 1,
            ts: 300,
            pid: 9,
            stack: &[0x7000],
        },
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                5,
                None,
                Status::Complete,
                vec![0],
                Some(vec![0x4000, 0x5000])
            ),
            (5, None, Status::OrphanStack, vec![], Some(vec![0x6000])),
            (9, None, Status::Complete, vec![4], Some(vec![0x7000])),
        ]
    );
    assert!(s.groups.iter().all(|g| g.kind == GroupKind::Sync));
}

#[test]
fn drops_per_cpu_sums_and_flags_unknown() {
    let s = stitch([
        lost(1, 10, 5),
        lost(0, 11, 2),
        lost(1, 12, 7),
        Input::Lost {
            cpu: 2,
            ts: 13,
            count: None,
        },
    ]);
    assert_eq!(
        s.drops_per_cpu(),
        vec![(0, 2, false), (1, 12, false), (2, 0, true)]
    );
}

#[test]
fn interrupt_between_event_and_its_cookie() {
    // E0 is interrupted before its kernel stack and cookie are written; the
    // interrupt's event E1 (same task, same kernel entry) gets its own
    // first. Both must end in the group with their own kernel stacks.
    let ks = |seq, ts, stack: &'static [u64]| Input::KernelStack {
        seq,
        cpu: 0,
        ts,
        pid: 5,
        stack,
    };
    let s = stitch([
        k(0, 0, 100, 5),
        k(1, 0, 101, 5),
        ks(2, 101, &[0xffff_ffff_8100_0001]),
        c(3, 0, 101, 5, 0x77),
        ks(4, 102, &[0xffff_ffff_8100_0000]),
        c(5, 0, 102, 5, 0x77),
        us(6, 0, 110, 5, 0x77, &[0x1]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::Complete, vec![0, 1], Some(vec![0x1]))]
    );
    let g = s.groups.get(0);
    assert_eq!(
        s.stacks.get(s.groups.events(&g)[0].kernel_stack().unwrap()),
        &[0xffff_ffff_8100_0000]
    );
    assert_eq!(
        s.stacks.get(s.groups.events(&g)[1].kernel_stack().unwrap()),
        &[0xffff_ffff_8100_0001]
    );
    assert_eq!(s.cookies_without_event, 0);
    assert_eq!(s.kernel_stacks_without_event, 0);
}

#[test]
fn only_a_few_recent_events_are_candidates() {
    // A cookie cannot reach back past the last 4 events of its CPU.
    let s = stitch([
        k(0, 0, 100, 5),
        k(1, 0, 101, 6),
        k(2, 0, 102, 6),
        k(3, 0, 103, 6),
        k(4, 0, 104, 6),
        c(5, 0, 105, 5, 0x77),
    ]);
    assert_eq!(
        summary(&s),
        vec![(5, Some(0x77), Status::Pending, vec![], None)]
    );
    assert_eq!(s.cookies_without_event, 1);
}

#[test]
fn cookie_after_its_stack_joins_the_completed_group() {
    // exec under ptrace: the unwind callback runs on the way back to user
    // space, then the task stops (sched_switch) before it gets there. The
    // request of that stop returns the same cookie and no new stack.
    let s = stitch([
        k(0, 0, 100, 42),
        c(1, 0, 101, 42, 0x3_0000_0001),
        us(2, 0, 120, 42, 0x3_0000_0001, &[0x401000, 0x401100]),
        k(3, 0, 130, 42),
        c(4, 0, 131, 42, 0x3_0000_0001),
        // The next kernel entry has a new cookie and its own stack.
        k(5, 1, 200, 42),
        c(6, 1, 201, 42, 0x5_0000_0002),
        us(7, 1, 210, 42, 0x5_0000_0002, &[0x401200]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(0x3_0000_0001),
                Status::Complete,
                vec![0, 3],
                Some(vec![0x401000, 0x401100])
            ),
            (
                42,
                Some(0x5_0000_0002),
                Status::Complete,
                vec![5],
                Some(vec![0x401200])
            ),
        ]
    );
    assert_eq!(s.groups.get(0).cookie_events, 2);
}

#[test]
fn a_completed_group_stays_open_to_its_cookie_until_the_next_entry() {
    // As above, with the events of another task on the CPU in between, so
    // that only the task's state still refers to the completed group: a
    // streaming stitcher must not hand it out before the late cookie.
    let s = stitch([
        k(0, 0, 100, 42),
        c(1, 0, 101, 42, 0x3_0000_0001),
        us(2, 0, 120, 42, 0x3_0000_0001, &[0x401000]),
        k(3, 0, 121, 7),
        k(4, 0, 122, 7),
        k(5, 0, 123, 7),
        k(6, 0, 124, 7),
        k(7, 0, 130, 42),
        c(8, 0, 131, 42, 0x3_0000_0001),
    ]);
    assert_eq!(
        summary(&s),
        vec![(
            42,
            Some(0x3_0000_0001),
            Status::Complete,
            vec![0, 7],
            Some(vec![0x401000])
        )]
    );
}

#[test]
fn cookie_after_stack_of_another_entry_opens_a_new_group() {
    // Same pid, different cookie after a completed group: a new entry.
    let s = stitch([
        k(0, 0, 100, 42),
        c(1, 0, 101, 42, 0x3_0000_0001),
        us(2, 0, 120, 42, 0x3_0000_0001, &[0x401000]),
        k(3, 0, 130, 42),
        c(4, 0, 131, 42, 0x7_0000_0001),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(0x3_0000_0001),
                Status::Complete,
                vec![0],
                Some(vec![0x401000])
            ),
            (42, Some(0x7_0000_0001), Status::Pending, vec![3], None),
        ]
    );
}

#[test]
fn kernel_stacks_alone_make_kernel_groups() {
    let mut s = stitch([
        k(0, 0, 100, 5),
        Input::KernelStack {
            seq: 1,
            cpu: 0,
            ts: 100,
            pid: 5,
            stack: &[0xffff_ffff_8100_0000],
        },
        k(2, 1, 110, 6),
    ]);
    assert!(s.groups.is_empty());
    s.kernel_only_groups(|seq| Some((5, 100 + seq)));
    assert_eq!(s.groups.len(), 1);
    let g = s.groups.get(0);
    assert_eq!(
        (g.pid, g.kind, g.cookie, g.status, g.first_ts, g.last_ts),
        (5, GroupKind::Kernel, None, Status::Complete, 100, 100)
    );
    assert_eq!(
        s.groups.events(&g),
        &[EventRef::new(0, s.kernel_stack_of(0))]
    );
    // With a group, nothing is added.
    let before = s.groups.clone();
    s.kernel_only_groups(|_| Some((9, 9)));
    assert_eq!(s.groups, before);
}

#[test]
fn zero_cookies_group_nothing() {
    let s = stitch([
        k(0, 0, 100, 5),
        c(1, 0, 100, 5, 0),
        us(2, 0, 120, 5, 0, &[0x1]),
    ]);
    assert!(s.groups.is_empty());
}

// Page cookies (`user_unwind_page_cookie`, kernel-patch tracing/0003): written before
// the events they cover, one per task, kernel entry and ring-buffer page.

fn pc(seq: u64, cpu: u32, ts: u64, pid: i32, cookie: u64) -> Input<'static> {
    Input::PageCookie {
        seq,
        cpu,
        ts,
        pid,
        cookie,
    }
}
fn page(cpu: u32, page: u64) -> Input<'static> {
    Input::Page { cpu, page }
}

const C1: u64 = 0x3_0000_0001;
const C2: u64 = 0x5_0000_0001;
const D1: u64 = 0x7_0000_0002;

#[test]
fn page_cookie_covers_the_following_events_of_its_task_only() {
    // Two tasks interleaved on one page: each takes its own page cookie.
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 0, 101, 42),
        pc(2, 0, 102, 43, D1),
        k(3, 0, 103, 43),
        k(4, 0, 104, 42),
        k(5, 0, 105, 43),
        k(6, 0, 106, 44), // a task with no page cookie: ungrouped
        us(7, 0, 110, 42, C1, &[0x401000]),
        us(8, 0, 111, 43, D1, &[0x501000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(C1),
                Status::Complete,
                vec![1, 4],
                Some(vec![0x401000])
            ),
            (
                43,
                Some(D1),
                Status::Complete,
                vec![3, 5],
                Some(vec![0x501000])
            ),
        ]
    );
}

#[test]
fn same_task_entering_again_in_the_same_page_takes_the_new_cookie() {
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 0, 101, 42),
        us(2, 0, 102, 42, C1, &[0x401000]),
        pc(3, 0, 110, 42, C2),
        k(4, 0, 111, 42),
        k(5, 0, 112, 42),
        us(6, 0, 113, 42, C2, &[0x402000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(C1),
                Status::Complete,
                vec![1],
                Some(vec![0x401000])
            ),
            (
                42,
                Some(C2),
                Status::Complete,
                vec![4, 5],
                Some(vec![0x402000])
            ),
        ]
    );
}

#[test]
fn page_cookie_does_not_reach_into_the_next_page() {
    // The event in the next page has no page cookie of its own there and
    // no cookie entry after it: it stays ungrouped.
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 0, 101, 42),
        page(0, 2),
        k(2, 0, 102, 42),
        us(3, 0, 110, 42, C1, &[0x401000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(
            42,
            Some(C1),
            Status::Complete,
            vec![1],
            Some(vec![0x401000])
        )]
    );
}

#[test]
fn cookie_entry_after_an_event_in_a_new_page_attaches_it() {
    // The page cookie filled page 1; its event went to page 2 and was
    // followed by a cookie entry.
    let s = stitch([
        page(0, 1),
        k(0, 0, 99, 42),
        pc(1, 0, 100, 42, C1),
        page(0, 2),
        k(2, 0, 101, 42),
        c(3, 0, 102, 42, C1),
        k(4, 0, 103, 42), // no page cookie in page 2, no cookie entry: none
        us(5, 0, 110, 42, C1, &[0x401000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![(
            42,
            Some(C1),
            Status::Complete,
            vec![2],
            Some(vec![0x401000])
        )]
    );
    // The page cookie closed event 0 for the cookie entry: it is not taken.
    assert_eq!(s.cookies_without_event, 0);
}

#[test]
fn a_lost_page_between_never_carries_a_page_cookie_over() {
    // Same page id on both sides of a loss (a reader cannot tell pages
    // apart by id alone): the loss ends the page cookies of the CPU.
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 0, 101, 42),
        lost(0, 200, 30),
        k(2, 0, 201, 42),
        pc(3, 0, 202, 42, C2),
        k(4, 0, 203, 42),
        us(5, 0, 210, 42, C2, &[0x402000]),
    ]);
    let sum = summary(&s);
    assert_eq!(sum.len(), 2);
    assert_eq!(sum[0].0, 42);
    assert_eq!(sum[0].1, Some(C1));
    assert_eq!(sum[0].2, Status::StackLost);
    assert_eq!(sum[0].3, vec![1]);
    assert_eq!(
        sum[1],
        (
            42,
            Some(C2),
            Status::Complete,
            vec![4],
            Some(vec![0x402000])
        )
    );
}

#[test]
fn zero_page_cookies_end_coverage() {
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        pc(1, 0, 100, 43, D1),
        k(2, 0, 101, 42),
        pc(3, 0, 102, 42, 0), // the task is exiting: no cookie from here
        k(4, 0, 103, 42),
        k(5, 0, 104, 43),
        pc(6, 0, 105, 0, 0), // the option went off: every task's ends
        k(7, 0, 106, 43),
        k(8, 0, 107, 42),
    ]);
    let sum = summary(&s);
    assert_eq!(sum.len(), 2);
    assert_eq!((sum[0].0, sum[0].1, &sum[0].3), (42, Some(C1), &vec![2]));
    assert_eq!((sum[1].0, sum[1].1, &sum[1].3), (43, Some(D1), &vec![5]));
}

#[test]
fn page_cookies_are_per_cpu() {
    let s = stitch([
        page(0, 1),
        page(1, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 1, 101, 42), // same page id, other CPU: not covered
        k(2, 0, 102, 42),
    ]);
    assert_eq!(
        summary(&s),
        vec![(42, Some(C1), Status::Pending, vec![2], None)]
    );
}

// `user_unwind_syscall` (the `user_unwind` tracer, kernel-patch tracing/0010): an
// event that carries the cookie of its own kernel entry.

fn ys(seq: u64, cpu: u32, ts: u64, pid: i32, cookie: u64) -> Input<'static> {
    Input::EventCookie {
        seq,
        cpu,
        ts,
        pid,
        cookie,
    }
}

#[test]
fn syscall_entries_group_with_the_stack_of_their_cookie() {
    // Two system calls of 42 (the second one with a sys_enter event and its
    // cookie entry, written by the trigger), one of 43 in between on the
    // other CPU; the stacks come on return to user space.
    let s = stitch([
        ys(0, 0, 100, 42, C1),
        ys(1, 1, 101, 43, D1),
        us(2, 0, 110, 42, C1, &[0x401000, 0x402000]),
        ys(3, 0, 120, 42, C2),
        k(4, 0, 121, 42),
        c(5, 0, 122, 42, C2),
        us(6, 1, 125, 43, D1, &[0x501000]),
        us(7, 1, 130, 42, C2, &[0x403000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(C1),
                Status::Complete,
                vec![0],
                Some(vec![0x401000, 0x402000])
            ),
            (
                43,
                Some(D1),
                Status::Complete,
                vec![1],
                Some(vec![0x501000])
            ),
            (
                42,
                Some(C2),
                Status::Complete,
                vec![3, 4],
                Some(vec![0x403000])
            ),
        ]
    );
    assert_eq!(
        s.groups.iter().map(|g| g.cookie_events).collect::<Vec<_>>(),
        [1, 1, 2]
    );
    assert_eq!(s.cookies_without_event, 0);
}

#[test]
fn syscall_entry_keeps_its_cookie_under_a_page_cookie() {
    // The option's page cookie of an earlier entry of 42 in the same page
    // does not cover the entry, and the cookie entry after the next event
    // takes that event, not the entry.
    let s = stitch([
        page(0, 1),
        pc(0, 0, 100, 42, C1),
        k(1, 0, 101, 42),
        us(2, 0, 102, 42, C1, &[0x401000]),
        ys(3, 0, 110, 42, C2),
        k(4, 0, 111, 43),
        c(5, 0, 112, 43, D1),
        us(6, 0, 120, 42, C2, &[0x402000]),
        us(7, 0, 121, 43, D1, &[0x501000]),
    ]);
    assert_eq!(
        summary(&s),
        vec![
            (
                42,
                Some(C1),
                Status::Complete,
                vec![1],
                Some(vec![0x401000])
            ),
            (
                42,
                Some(C2),
                Status::Complete,
                vec![3],
                Some(vec![0x402000])
            ),
            (
                43,
                Some(D1),
                Status::Complete,
                vec![4],
                Some(vec![0x501000])
            ),
        ]
    );
}

#[test]
fn syscall_entry_without_stack_is_pending_and_zero_cookie_ungrouped() {
    let s = stitch([ys(0, 0, 100, 42, 0), ys(1, 0, 110, 42, C1)]);
    assert_eq!(
        summary(&s),
        vec![(42, Some(C1), Status::Pending, vec![1], None)]
    );
}
