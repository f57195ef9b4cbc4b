//! End to end: a synthetic trace.dat through the reader, the index and the
//! stitcher.

use ustack_stitch::file;
use ustack_stitch::Status;
use ustack_testdata::ID_SYS_ENTER;
use ustack_tracedata::reader::TraceFile;

use ustack_testdata::{FIXTURE_COOKIE_A as COOKIE_A, FIXTURE_COOKIE_B as COOKIE_B};

fn build(path: &std::path::Path) {
    ustack_testdata::fixture().write(path).unwrap();
}

#[test]
fn synthetic_file_is_indexed_and_stitched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    build(&path);
    let f = TraceFile::open(&path).unwrap();
    let buf = file::buffer(&f, None).unwrap();
    let idx = file::load(&f, buf);
    assert_eq!(idx.error, None);
    // Every record, in time order (CPU 1 record at 1500 between CPU 0 ones).
    let names: Vec<String> = (0..idx.events.len() as u64)
        .map(|s| idx.event_name(s))
        .collect();
    assert_eq!(
        names,
        [
            "sys_enter",
            "kernel_stack",
            "user_unwind_cookie",
            "sys_enter",
            "user_unwind_cookie",
            "sys_exit",
            "user_unwind_cookie",
            "user_unwind_stack",
            "sys_enter",
            "user_stack"
        ]
    );
    assert_eq!(idx.losses.len(), 1);
    assert_eq!(
        (
            idx.losses[0].cpu,
            idx.losses[0].count,
            idx.losses[0].before_seq
        ),
        (1, Some(9), 7)
    );
    let st = &idx.stitched;
    let g: Vec<_> = st
        .groups
        .iter()
        .map(|g| {
            (
                g.pid,
                g.cookie.map(|c| c.get()),
                g.status,
                st.groups
                    .events(&g)
                    .iter()
                    .map(|e| e.seq)
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        g,
        [
            (100, Some(COOKIE_A), Status::Complete, vec![0, 5]),
            (200, Some(COOKIE_B), Status::StackLost, vec![3]),
            (100, None, Status::Complete, vec![8]),
        ]
    );
    let a = st.groups.get(0);
    assert_eq!(
        st.stacks.get(a.user_stack.unwrap().stack),
        &[0x5555_0000_1234, 0x5555_0000_5678]
    );
    assert_eq!(idx.cpu_ts(a.user_stack.unwrap().seq), (1, 3_000));
    assert_eq!(
        st.stacks
            .get(st.groups.events(&a)[0].kernel_stack().unwrap()),
        &[0xffffffff81200010, 0xffffffff81100020]
    );
    assert_eq!(
        st.stacks
            .get(st.groups.get(2).user_stack.unwrap().stack)
            .len(),
        1
    );
    assert_eq!(idx.comms.get(100), "app");
    assert_eq!(idx.comms.get(200), "other");

    // Records can be found again from the index, without another pass.
    let rec = file::record(&f, buf, &idx.events[3]).unwrap();
    assert_eq!((rec.cpu, rec.ts, rec.common_pid()), (1, 1_500, Some(200)));
    let fmt = idx.formats.get(&ID_SYS_ENTER).unwrap();
    assert_eq!(
        rec.u64_array_field(fmt, "args").unwrap(),
        [0, 1, 2, 3, 4, 5]
    );

    // Symbols: kernel from the saved kallsyms, user falls back to the map.
    let mut sym = file::symbolizer(&f);
    assert_eq!(
        sym.kernel(0xffffffff81200010).name(),
        "__x64_sys_write+0x10"
    );
    let u = sym.user(100, 0x5555_0000_1234, false);
    assert_eq!(
        (u.symbol.as_deref(), u.object.as_deref()),
        (None, Some("/nonexistent/app"))
    );
    assert_eq!(sym.maps().comm(100), Some("app"));
}

#[test]
fn loss_of_unknown_size_takes_the_kernel_count_from_cpustat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    let mut b = ustack_testdata::TraceBuilder::new(3);
    b.sys_enter(0, 1000, 42, 35)
        .lost(0, None)
        .sys_enter(0, 2000, 42, 35)
        .sys_enter(1, 1100, 43, 35)
        .lost(1, Some(7))
        .sys_enter(1, 2100, 43, 35)
        .sys_enter(2, 1200, 44, 35)
        .lost(2, None)
        .sys_enter(2, 2200, 44, 35)
        .cpu_stats(0, "entries: 2\noverrun: 17784\ndropped events: 16\n")
        .cpu_stats(1, "entries: 2\noverrun: 7\ndropped events: 0\n");
    // CPU 2 has no stats: its count stays unknown.
    b.write(&path).unwrap();
    let f = TraceFile::open(&path).unwrap();
    let idx = file::load(&f, file::buffer(&f, None).unwrap());
    assert_eq!(idx.kernel_lost, vec![(0, 17800), (1, 7)]);
    assert_eq!(
        idx.drops_per_cpu(),
        vec![(0, 17800, false), (1, 7, false), (2, 0, true)]
    );
    // The stitcher itself only knows what the pages said.
    assert_eq!(
        idx.stitched.drops_per_cpu(),
        vec![(0, 0, true), (1, 7, false), (2, 0, true)]
    );
}

#[test]
fn indexing_reports_progress_and_stops_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.dat");
    ustack_testdata::demo(30_000, 2).write(&path).unwrap();
    let f = TraceFile::open(&path).unwrap();
    let buf = file::buffer(&f, None).unwrap();
    let all = file::load(&f, buf);
    assert!(all.events.len() > 3 * 65_536);
    // 24 bytes an event: the index moved into its temporary file.
    assert!(all.events.spilled());

    // Progress grows, never past the data's size; a false stops indexing
    // right there, as if the records ended.
    let mut seen = Vec::new();
    let cut = file::load_with(&f, buf, file::Extent::All, |done, all| {
        seen.push((done, all));
        seen.len() < 2
    });
    assert_eq!(seen.len(), 2);
    assert!(seen[0].0 < seen[1].0 && seen[1].0 <= seen[1].1, "{seen:?}");
    assert_eq!(cut.events.len() + cut.losses.len(), 2 * 65_536 - 1);
    assert_eq!(cut.events[..], all.events[..cut.events.len()]);

    let first = file::load_with(&f, buf, file::Extent::First(1000), |_, _| true);
    assert_eq!(first.events.len() + first.losses.len(), 1000);
    assert_eq!(first.events[..], all.events[..first.events.len()]);
}
