//! The kernel's mapping records (`user_unwind_mapping`) in a trace.dat:
//! decoded by the index, and resolving the frames of a process that the
//! file has no PROCMAPS entry for.

use ustack_stitch::file;
use ustack_symbolize::Unresolved;
use ustack_tracedata::reader::TraceFile;

#[inline(never)]
fn marker_function_for_mapping_records(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

/// This test binary's mapping (start, end, offset, path) that holds `addr`,
/// from /proc/self/maps.
fn own_mapping(addr: u64) -> (u64, u64, u64, String) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for l in maps.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (s, e) = w[0].split_once('-').unwrap();
        let (s, e) = (
            u64::from_str_radix(s, 16).unwrap(),
            u64::from_str_radix(e, 16).unwrap(),
        );
        if s <= addr && addr < e {
            let off = u64::from_str_radix(w[2], 16).unwrap();
            return (s, e, off, w[5].to_string());
        }
    }
    panic!("{addr:#x} is in no mapping");
}

#[test]
fn records_resolve_a_process_without_procmaps() {
    let addr = marker_function_for_mapping_records as fn(u64) -> u64 as usize as u64;
    let (start, end, off, path) = own_mapping(addr);
    let (pid, thread) = (0x7ff0_0001_u32, 0x7ff0_0002_u32);
    let mut t = ustack_testdata::TraceBuilder::new(1);
    t.procmap(99, "other", &[(start - off, end, "/bin/other")]);
    // The thread's stack needed the record; the main thread's only uses it.
    t.sys_enter(0, 1_000, thread as i32, 35)
        .cookie(0, 1_001, thread as i32, 0x1_0000_0001)
        .mapping(
            0,
            1_002,
            thread as i32,
            pid as i32,
            1,
            (start, end, off),
            &[0xec, 0x64],
            &path,
        )
        .unwind_stack(0, 1_003, thread as i32, 0x1_0000_0001, &[addr])
        .sys_enter(0, 2_000, pid as i32, 35)
        .cookie(0, 2_001, pid as i32, 0x1_0000_0002)
        .unwind_stack(0, 2_002, pid as i32, 0x1_0000_0002, &[addr]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.dat");
    t.write(&p).unwrap();

    let f = TraceFile::open(&p).unwrap();
    let buf = file::buffer(&f, None).unwrap();
    let idx = file::load(&f, buf);
    let recs = idx.mappings.of(pid);
    assert_eq!(recs.len(), 1);
    let m = &recs[0];
    assert_eq!(
        (m.ts, m.tid, m.exec_id, m.start, m.end, m.offset),
        (1_002, thread, 1, start, end, off)
    );
    assert_eq!(
        (m.build_id_hex().as_str(), m.path.as_str()),
        ("ec64", path.as_str())
    );
    assert_eq!(idx.mappings.find(pid, 1_003, addr), Some(m));
    assert_eq!(idx.mappings.find(pid, 1_001, addr), None, "not yet written");
    // The mapping record is no group's event: both groups are complete.
    assert_eq!(idx.stitched.groups.len(), 2);

    // Without the records the process is unknown ...
    let (_, why) = file::symbolizer(&f).user_frame(thread, None, addr, false);
    assert_eq!(why, Some(Unresolved::ProcessUnknown));
    // ... with them, both threads resolve through the process.
    let mut sym = file::symbolizer_for(&f, &idx, None);
    for tid in [thread, pid] {
        let fr = sym.user(tid as i32, addr, false);
        let name = fr.symbol.clone().unwrap_or_default();
        assert!(
            name.contains("marker_function_for_mapping_records"),
            "{fr:?}"
        );
        assert_eq!(fr.object.as_deref(), Some(path.as_str()));
    }
    // PROCMAPS wins for the processes it has.
    assert_eq!(
        sym.maps().find(99, start).map(|l| l.path.as_str()),
        Ok("/bin/other")
    );
    assert_eq!(marker_function_for_mapping_records(2), 6);
}
