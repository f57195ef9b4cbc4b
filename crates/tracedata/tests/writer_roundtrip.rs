//! Round trip of the trace.dat writer through the crate's reader, on
//! hand-built ring-buffer pages (no root needed).
//!
//! Two buffers (the top one with a big, an empty and a small CPU, and an
//! instance) are written as v7 none, v7 zstd and v6. The reader must give
//! back every metadata item byte for byte, the exact page bytes per CPU and
//! every event with its timestamp and value. When trace-cmd is installed,
//! `trace-cmd report` must read each file without a word on stderr and
//! print every event.

use std::fs;
use std::path::{Path, PathBuf};

use ustack_tracedata::compress::Compression;
use ustack_tracedata::reader::{Item, TraceFile};
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, FileVersion, LibMap, ProcMap, TraceMeta, WriteOptions,
};

mod common;

use common::{
    sample_meta, sample_page, trace_cmd_available, trace_cmd_quiet, EVENTS_PER_PAGE, EVENT_ID, PAGE,
};

/// `pages` sample pages (see `sample_page`) with values from `first_value`
/// on; returns the bytes and the (ts, value) of every event.
fn make_pages(cpu: u32, pages: u64, first_value: u64) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut out = Vec::new();
    let mut events = Vec::new();
    for p in 0..pages {
        let first = first_value + p * EVENTS_PER_PAGE;
        let (page, times) = sample_page(cpu, p, |i| first + i);
        out.extend_from_slice(&page);
        events.extend(times.into_iter().zip(first..));
    }
    (out, events)
}

fn meta() -> TraceMeta {
    TraceMeta {
        cmdlines: b"4242 sampler\n".to_vec(),
        cpu_count: 3,
        procmaps: vec![
            ProcMap {
                pid: 4242,
                comm: "sampler".into(),
                maps: vec![LibMap {
                    start: 0x5555_0000_0000,
                    end: 0x5555_0001_0000,
                    path: "/usr/bin/sampler".into(),
                }],
                threads: vec![4245, 4244],
                replaced: Vec::new(),
                at: None,
            },
            ProcMap {
                pid: 4243,
                comm: "other".into(),
                maps: vec![],
                threads: vec![],
                replaced: Vec::new(),
                at: None,
            },
        ],
        ..sample_meta()
    }
}

struct Setup {
    dir: PathBuf,
    buffers: Vec<BufferData>,
    expect: Vec<Expected>,
}

/// Buffer name, CPU, its page bytes and its (ts, value) events.
type Expected = (String, u32, Vec<u8>, Vec<(u64, u64)>);

fn setup(tag: &str) -> Setup {
    let dir = std::env::temp_dir().join(format!("tracedata-rt-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let mut expect = Vec::new();
    let mut file = |name: &str, cpu: u32, pages: u64, first: u64| {
        let (bytes, events) = make_pages(cpu, pages, first);
        let p = dir.join(format!(
            "{}.cpu{cpu}",
            if name.is_empty() { "top" } else { name }
        ));
        fs::write(&p, &bytes).unwrap();
        expect.push((name.to_string(), cpu, bytes, events));
        let mut c = CpuData::new(cpu, p);
        c.stats = Some(format!(
            "entries: {}\noverrun: 0\n",
            pages * EVENTS_PER_PAGE
        ));
        c
    };
    // 25 pages: three zstd chunks (10 + 10 + 5 pages).
    let top = BufferData {
        name: String::new(),
        clock: "local".into(),
        cpus: vec![
            file("", 0, 25, 0),
            file("", 1, 0, 0),
            file("", 2, 1, 100_000),
        ],
    };
    let inst = BufferData {
        name: "inst".into(),
        clock: "local".into(),
        cpus: vec![file("inst", 1, 3, 200_000)],
    };
    Setup {
        dir,
        buffers: vec![inst, top],
        expect,
    }
}

/// Every format the writer writes, with a tag for file names and messages.
const ALL_FORMATS: [(WriteOptions, &str); 3] = [
    (
        WriteOptions {
            version: FileVersion::V7,
            compression: Compression::None,
        },
        "v7none",
    ),
    (
        WriteOptions {
            version: FileVersion::V7,
            compression: Compression::Zstd,
        },
        "v7zstd",
    ),
    (
        WriteOptions {
            version: FileVersion::V6,
            compression: Compression::None,
        },
        "v6",
    ),
];

#[test]
fn reader_gets_back_everything() {
    let s = setup("reader");
    let m = meta();
    for (opts, tag) in ALL_FORMATS {
        let path = s.dir.join(format!("{tag}.dat"));
        let summary = write_trace_dat(&path, &m, &s.buffers, &opts).unwrap();
        assert_eq!(
            summary.file_size,
            fs::metadata(&path).unwrap().len(),
            "{tag}"
        );
        assert_eq!(summary.buffers.len(), 2);
        assert_eq!(summary.buffers[0].name, "inst", "{tag}: caller's order");
        let pages: Vec<u64> = summary.buffers[1].cpus.iter().map(|c| c.pages).collect();
        assert_eq!(pages, [25, 0, 1], "{tag}");

        let t = TraceFile::open(&path).unwrap_or_else(|e| panic!("{tag}: {e}"));
        assert_eq!(t.version(), opts.version.number(), "{tag}");
        assert_eq!(t.page_size(), PAGE);
        assert_eq!(t.long_size(), 8);
        assert_eq!(t.cpu_count(), 3, "{tag}");
        let want_comp = match opts.compression {
            Compression::None if opts.version == FileVersion::V6 => None,
            c => Some(c.name()),
        };
        assert_eq!(t.compression().map(|c| c.0), want_comp, "{tag}");
        assert_eq!(t.header_page_text(), m.header_page.as_slice(), "{tag}");
        assert_eq!(t.header_event(), m.header_event.as_slice(), "{tag}");
        assert_eq!(
            t.ftrace_format_texts(),
            m.ftrace_formats.as_slice(),
            "{tag}"
        );
        let systems: Vec<(String, Vec<Vec<u8>>)> = m
            .event_systems
            .iter()
            .map(|s| (s.name.clone(), s.formats.clone()))
            .collect();
        assert_eq!(t.event_format_texts(), systems.as_slice(), "{tag}");
        assert_eq!(t.kallsyms().unwrap(), m.kallsyms, "{tag}");
        assert_eq!(t.printk_formats(), m.printk_formats.as_slice(), "{tag}");
        assert_eq!(t.cmdlines(), m.cmdlines.as_slice(), "{tag}");
        assert_eq!(t.uname().as_deref(), m.uname.as_deref(), "{tag}");
        assert_eq!(
            t.tool_version(),
            Some(format!("ustack-tracedata {}", env!("CARGO_PKG_VERSION"))),
            "{tag}"
        );
        assert_eq!(t.clock().as_deref(), Some("local"), "{tag}");
        let want_stats = vec![
            "CPU: 0\nentries: 2500\noverrun: 0\n".to_string(),
            "CPU: 1\nentries: 0\noverrun: 0\n".to_string(),
            "CPU: 2\nentries: 100\noverrun: 0\n".to_string(),
            "\nBuffer: inst\n\n".to_string(),
            "CPU: 1\nentries: 300\noverrun: 0\n".to_string(),
        ];
        assert_eq!(t.cpustat_texts(), want_stats, "{tag}");
        let procmaps: Vec<String> = t
            .options()
            .iter()
            .filter(|o| o.id == ustack_tracedata::dat::option::PROCMAPS)
            .map(|o| String::from_utf8(o.data.clone()).unwrap())
            .collect();
        assert_eq!(
            procmaps,
            [
                "1092 1 sampler\n555500000000 555500010000 /usr/bin/sampler\ntasks: 1095 1094\n\0",
                "1093 0 other\n\0"
            ],
            "{tag}"
        );
        assert_eq!(
            t.procmaps().as_deref(),
            Some("1092 1 sampler\n555500000000 555500010000 /usr/bin/sampler\ntasks: 1095 1094\n1093 0 other\n"),
            "{tag}: all processes"
        );
        let parsed = t.proc_maps();
        assert_eq!(parsed.len(), 2, "{tag}");
        assert_eq!(parsed[0].threads, [4244, 4245], "{tag}");
        assert_eq!(parsed[1].pid, 4243, "{tag}");
        let fmt = t
            .formats()
            .by_name("ustacktest", "sample")
            .expect("format by name");
        assert_eq!(fmt.id, EVENT_ID);

        let names: Vec<&str> = t.buffers().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["", "inst"], "{tag}");
        for (name, cpu, bytes, events) in &s.expect {
            let b = t.buffer(name).unwrap();
            let got: Vec<u8> = b
                .cpus
                .iter()
                .find(|c| c.cpu == *cpu)
                .map(|c| t.cpu_data(c).to_vec())
                .unwrap_or_default();
            assert!(
                got == *bytes,
                "{tag}: buffer {name:?} cpu {cpu} pages differ"
            );
            let mut got_events = Vec::new();
            for item in t.records_of_cpus(b, Some(&[*cpu])) {
                match item.unwrap_or_else(|e| panic!("{tag}: {e}")) {
                    Item::Event(r) => {
                        assert_eq!(r.cpu, *cpu);
                        assert_eq!(r.common_pid(), Some(4242));
                        got_events.push((r.ts, r.u64_field(fmt, "value").unwrap()));
                    }
                    Item::Lost { .. } => panic!("{tag}: no events were lost"),
                }
            }
            assert_eq!(&got_events, events, "{tag}: buffer {name:?} cpu {cpu}");
        }
    }
    fs::remove_dir_all(&s.dir).unwrap();
}

#[test]
fn trace_cmd_report_reads_every_event() {
    if !trace_cmd_available() {
        return ustack_testdata::skip_unless_ci("needs trace-cmd");
    }
    let s = setup("report");
    let m = meta();
    let mut first: Option<String> = None;
    for (opts, tag) in ALL_FORMATS {
        let path = s.dir.join(format!("{tag}.dat"));
        write_trace_dat(&path, &m, &s.buffers, &opts).unwrap();
        let text = String::from_utf8(trace_cmd_quiet(&["report"], &path, tag)).unwrap();
        // trace-cmd dump walks every section and option by size.
        let dump = trace_cmd_quiet(&["dump", "--all"], &path, tag);
        let dump_out = String::from_utf8_lossy(&dump);
        if opts.version == FileVersion::V7 {
            for s in ["\"headers\"", "\"buffer flyrecord inst\"", "\"strings\""] {
                assert!(dump_out.contains(s), "{tag}: dump lacks {s}:\n{dump_out}");
            }
        }
        assert!(
            dump_out.contains("1092 1 sampler"),
            "{tag}: dump lacks PROCMAPS"
        );
        // (buffer, "[cpu] time: name: info") -> how many lines
        let mut seen: std::collections::HashMap<(&str, &str), usize> = Default::default();
        for l in text.lines() {
            let buffer = if l.starts_with("inst:") { "inst" } else { "" };
            if let Some(i) = l.find(" [") {
                *seen.entry((buffer, &l[i + 1..])).or_default() += 1;
            }
        }
        for (name, cpu, _, events) in &s.expect {
            for (ts, value) in events {
                let line = format!(
                    "[{cpu:03}] {:>5}.{:06}: sample:               value={value}",
                    ts / 1_000_000_000,
                    (ts % 1_000_000_000) / 1000
                );
                let n = seen.get(&(name.as_str(), line.as_str())).copied();
                assert_eq!(n, Some(1), "{tag}: {name}: {line} in\n{}", head(&text));
            }
        }
        let total: usize = s.expect.iter().map(|e| e.3.len()).sum();
        assert_eq!(text.matches("value=").count(), total, "{tag}");
        match &first {
            None => first = Some(text),
            Some(f) => assert!(f == &text, "{tag}: report differs from v7 none"),
        }
    }
    fs::remove_dir_all(&s.dir).unwrap();
}

fn head(s: &str) -> String {
    s.lines().take(8).collect::<Vec<_>>().join("\n")
}

#[test]
fn partial_trailing_page_is_left_out_and_counted() {
    let s = setup("tail");
    let mut buffers = s.buffers.clone();
    let p = s.dir.join("ragged");
    let (mut bytes, _) = make_pages(0, 2, 0);
    bytes.extend_from_slice(&[1, 2, 3]);
    fs::write(&p, &bytes).unwrap();
    buffers[0].cpus = vec![CpuData::new(0, &p)];
    for (opts, tag) in ALL_FORMATS {
        let path = s.dir.join(format!("{tag}.dat"));
        let sum = write_trace_dat(&path, &meta(), &buffers, &opts).unwrap();
        let c = &sum.buffers[0].cpus[0];
        assert_eq!((c.pages, c.partial_tail), (2, 3), "{tag}");
        let t = TraceFile::open(&path).unwrap();
        let b = t.buffer("inst").unwrap();
        assert_eq!(t.cpu_data(&b.cpus[0]), &bytes[..2 * PAGE], "{tag}");
    }
    fs::remove_dir_all(&s.dir).unwrap();
}

#[test]
fn unreadable_cpu_file_is_a_one_line_error_and_no_file() {
    let s = setup("err");
    let mut buffers = s.buffers.clone();
    // A directory where a data file should be: open succeeds, read fails.
    buffers[0].cpus = vec![CpuData::new(0, &s.dir)];
    let out = s.dir.join("out.dat");
    for (opts, tag) in ALL_FORMATS {
        let e = write_trace_dat(&out, &meta(), &buffers, &opts).unwrap_err();
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{tag}: {msg}");
        assert!(msg.contains(&s.dir.display().to_string()), "{tag}: {msg}");
        assert!(!Path::new(&out).exists(), "{tag}: partial file left behind");
    }
    fs::remove_dir_all(&s.dir).unwrap();
}

#[test]
fn file_without_trace_data_reads_cleanly() {
    let s = setup("nodata");
    let have_trace_cmd = trace_cmd_available();
    for (opts, tag) in ALL_FORMATS {
        let path = s.dir.join(format!("{tag}.dat"));
        let sum = write_trace_dat(&path, &meta(), &[], &opts).unwrap();
        assert!(sum.buffers.is_empty());
        let t = TraceFile::open(&path).unwrap_or_else(|e| panic!("{tag}: {e}"));
        assert_eq!(t.cpu_count(), 3);
        let events: usize = t.buffers().iter().map(|b| t.records(b).count()).sum();
        assert_eq!(events, 0, "{tag}");
        if have_trace_cmd {
            let out = trace_cmd_quiet(&["report"], &path, tag);
            assert_eq!(String::from_utf8_lossy(&out), "cpus=3\n", "{tag}");
        }
    }
    fs::remove_dir_all(&s.dir).unwrap();
}
