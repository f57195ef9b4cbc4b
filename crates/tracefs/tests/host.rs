//! Root tests against the machine's real tracefs, each in a private
//! instance. They are `#[ignore]`d: run them as root with
//! `cargo test -- --include-ignored` (scripts/test.sh does); a missing
//! prerequisite then fails them.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use ustack_tracefs::{EventId, Guard, Tracefs};

fn host() -> Tracefs {
    let why = if !nix::unistd::geteuid().is_root() {
        "needs root".to_string()
    } else {
        match Tracefs::find() {
            Ok(fs) => return fs,
            Err(e) => format!("no tracefs: {e}"),
        }
    };
    panic!("this host test cannot run: {why}");
}

fn ev(s: &str, n: &str) -> EventId {
    EventId {
        system: s.into(),
        name: n.into(),
    }
}

/// Counts data events with type id `id` in a file of raw ring-buffer pages.
fn count_events(data: &[u8], page_size: usize, id: u16) -> (u64, u64) {
    let (mut matching, mut other) = (0, 0);
    for page in data.chunks(page_size) {
        let commit = u64::from_le_bytes(page[8..16].try_into().unwrap()) & 0x0fff_ffff;
        let end = (16 + commit as usize).min(page.len());
        let mut off = 16;
        while off + 4 <= end {
            let hdr = u32::from_le_bytes(page[off..off + 4].try_into().unwrap());
            let type_len = hdr & 0x1f;
            let (payload, len) = match type_len {
                29 => {
                    if hdr >> 5 == 0 {
                        break;
                    }
                    let l = u32::from_le_bytes(page[off + 4..off + 8].try_into().unwrap()) as usize;
                    (None, 4 + l)
                }
                30 | 31 => (None, 8),
                0 => {
                    let l = u32::from_le_bytes(page[off + 4..off + 8].try_into().unwrap()) as usize;
                    (Some(off + 8), 4 + l)
                }
                n => (Some(off + 4), 4 + n as usize * 4),
            };
            if let Some(p) = payload {
                if u16::from_le_bytes(page[p..p + 2].try_into().unwrap()) == id {
                    matching += 1;
                } else {
                    other += 1;
                }
            }
            off += len;
        }
    }
    (matching, other)
}

fn event_id(fs: &Tracefs, s: &str, n: &str) -> u16 {
    let f = fs.event_format(s, n).unwrap();
    f.lines()
        .find_map(|l| l.strip_prefix("ID: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
#[ignore = "needs root and tracefs"]
fn splice_reader_gets_every_event_and_stats_agree() {
    let fs = host();
    let name = format!("tracefs-test-splice-{}", std::process::id());
    let inst = fs.create_instance(&name).unwrap();
    let e = ev("syscalls", "sys_enter_getppid");
    let tid = nix::unistd::gettid().as_raw();
    inst.set_tracing_on(false).unwrap();
    inst.set_buffer_size_kb(1024).unwrap();
    inst.set_event_filter(&e, Some(&format!("common_pid == {tid}")))
        .unwrap();
    inst.set_event_enabled(&e, true).unwrap();
    inst.clear_buffer().unwrap();
    inst.set_tracing_on(true).unwrap();
    const N: u64 = 3000;
    for _ in 0..N {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    inst.set_tracing_on(false).unwrap();

    let page = inst.page_size();
    let mut total = Vec::new();
    let mut spliced = 0;
    for cpu in inst.cpus().unwrap() {
        let mut r = inst.cpu_reader(cpu).unwrap();
        let mut out = tempfile::tempfile().unwrap();
        let st = r.flush_into(&mut out).unwrap();
        spliced += st.spliced_pages;
        assert_eq!(st.bytes % page as u64, 0);
        out.seek(SeekFrom::Start(0)).unwrap();
        let mut buf = Vec::new();
        out.read_to_end(&mut buf).unwrap();
        assert_eq!(buf.len() as u64, st.bytes);
        total.extend_from_slice(&buf);
        let stats = inst.cpu_stats(cpu).unwrap();
        assert_eq!(
            stats.entries,
            Some(0),
            "cpu{cpu} not drained: {}",
            stats.raw
        );
        assert_eq!(stats.overrun, Some(0));
    }
    // 3000 events of 12 bytes do not fit in one page: splice moved some.
    assert!(spliced > 0, "no page was spliced");
    let (n, other) = count_events(&total, page, event_id(&fs, "syscalls", "sys_enter_getppid"));
    assert_eq!(n, N);
    assert_eq!(other, 0);
    let read_events: u64 = inst
        .cpus()
        .unwrap()
        .iter()
        .map(|&c| inst.cpu_stats(c).unwrap().read_events.unwrap())
        .sum();
    assert_eq!(read_events, N);
    inst.remove().unwrap();
    assert!(fs.instance(&name).is_err());
}

#[test]
#[ignore = "needs root and tracefs"]
fn guard_restores_real_instance_settings() {
    let fs = host();
    let name = format!("tracefs-test-guard-{}", std::process::id());
    let owned = fs.create_instance(&name).unwrap();
    let sw = ev("sched", "sched_switch");
    let snapshot = |i: &ustack_tracefs::Instance| {
        (
            i.option("stacktrace").unwrap(),
            i.option("userstacktrace").unwrap(),
            i.buffer_size_kb().unwrap(),
            i.trace_clock().unwrap().0,
            i.tracing_on().unwrap(),
            i.event_enabled(&sw).unwrap(),
            i.event_filter(&sw).unwrap(),
            i.event_pids().unwrap(),
        )
    };
    let before = snapshot(&owned);
    {
        let g = Guard::new();
        g.set_option(&owned, "stacktrace", true).unwrap();
        g.set_option(&owned, "userstacktrace", true).unwrap();
        g.set_buffer_size_kb(&owned, 64).unwrap();
        g.set_trace_clock(&owned, "global").unwrap();
        g.set_tracing_on(&owned, false).unwrap();
        g.set_event_enabled(&owned, &sw, true).unwrap();
        g.set_event_filter(&owned, &sw, Some("prev_pid != 0"))
            .unwrap();
        g.set_event_pids(&owned, &[1]).unwrap();
        let during = snapshot(&owned);
        assert!(during.2.unwrap() >= 64, "{:?}", during.2);
        assert_eq!(during.3, "global");
        assert_eq!(during.6.as_deref(), Some("prev_pid != 0"));
        assert_eq!(during.7, vec![1]);
        assert_ne!(during, before);
        let err = owned
            .set_event_filter(&sw, Some("no_such_field == 1"))
            .unwrap_err();
        // The kernel's reason, from error_log.
        assert_eq!(
            err.to_string(),
            "tracefs: bad filter for sched:sched_switch: Field not found at '== 1': no_such_field == 1"
        );
    }
    assert_eq!(snapshot(&owned), before);
    drop(owned);
    assert!(fs.instance(&name).is_err(), "instance not removed");
}

#[test]
#[ignore = "needs root and tracefs"]
fn top_level_metadata_is_readable() {
    let fs = host();
    assert!(fs.header_page().unwrap().contains("field: u64 timestamp;"));
    let he = fs.header_event().unwrap();
    assert!(he.contains("type_len"), "{he:?}");
    assert!(fs
        .event_format("sched", "sched_switch")
        .unwrap()
        .starts_with("name: sched_switch\nID: "));
    fs.printk_formats().unwrap();
    fs.saved_cmdlines().unwrap();
    assert!(Tracefs::kallsyms().unwrap().len() > 1000);
    assert!(Tracefs::uname().starts_with("Linux "));
    let _ = File::open(fs.root().join("trace")).unwrap();
}

#[test]
#[ignore = "needs root and tracefs"]
fn marker_writes_come_back_through_the_page_readers() {
    let fs = host();
    let name = format!("tracefs-test-marker-{}", std::process::id());
    let inst = fs.create_instance(&name).unwrap();
    inst.set_buffer_size_kb(64).unwrap();
    let mut readers: Vec<_> = inst
        .cpus()
        .unwrap()
        .into_iter()
        .map(|c| inst.page_reader(c).unwrap())
        .collect();
    let mut buf = vec![0u8; inst.page_size()];
    for r in &mut readers {
        assert_eq!(r.read_page(&mut buf).unwrap(), None, "CPU {}", r.cpu());
    }
    let marker = inst.marker().unwrap();
    let text = format!("tracefs-marker-{}", std::process::id());
    marker.write(&text).unwrap();
    inst.set_tracing_on(false).unwrap();
    // With tracing off, the partial page the marker is on is read too.
    let mut found = 0;
    for r in &mut readers {
        while let Some(n) = r.read_page(&mut buf).unwrap() {
            found += buf[..n]
                .windows(text.len())
                .filter(|w| *w == text.as_bytes())
                .count();
        }
    }
    assert_eq!(found, 1, "the marker text in the pages read");
    drop((marker, readers));
    inst.remove().unwrap();
}
