//! Reader tests on trace.dat files built by hand in the test, byte by byte
//! from the format description (independently of the crate's writer):
//! v6 and v7 (uncompressed, zlib, zstd), instances, lost events, merging,
//! and generated corrupt and truncated files that must give one-line errors
//! and never panic.

use std::io::Write;

use ustack_tracedata::page::build::{PageBuilder, COMMON_FIELDS, HEADER_EVENT, HEADER_PAGE};
use ustack_tracedata::{Item, TraceFile};

const PAGE: usize = 4096;

fn ev_format() -> String {
    format!(
        "name: ev\nID: 42\nformat:\n{COMMON_FIELDS}\
\tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;\n\n\
print fmt: \"value=%llu\", REC->value\n"
    )
}

fn ftrace_format() -> String {
    format!(
        "name: print\nID: 5\nformat:\n{COMMON_FIELDS}\
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n\
print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
    )
}

fn payload(pid: i32, value: u64) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&42u16.to_le_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&pid.to_le_bytes());
    p.extend_from_slice(&value.to_le_bytes());
    p
}

/// Per-CPU data: cpu 0 has two pages (the second flagged with 7 lost
/// events), cpu 1 one page; one timestamp (200) is on both CPUs.
fn cpu_pages() -> Vec<Vec<u8>> {
    let c0p0 = PageBuilder::new(100)
        .event(0, &payload(10, 1), false)
        .event(100, &payload(10, 2), false) // ts 200
        .finish(PAGE)
        .unwrap();
    let c0p1 = PageBuilder::new(1000)
        .missed(Some(7))
        .event(0, &payload(10, 3), false)
        .time_extend(1 << 30)
        .event(5, &payload(10, 4), true)
        .finish(PAGE)
        .unwrap();
    let c1p0 = PageBuilder::new(150)
        .event(0, &payload(11, 5), false)
        .event(50, &payload(11, 6), false) // ts 200, after cpu 0's
        .padding(10, 16)
        .event(0, &payload(11, 7), false) // ts 210
        .finish(PAGE)
        .unwrap();
    vec![[c0p0, c0p1].concat(), c1p0]
}

/// What the merged stream of [`cpu_pages`] must be: (cpu, ts, value) or lost.
fn expected() -> Vec<String> {
    [
        "ev 0 100 1",
        "ev 1 150 5",
        "ev 0 200 2",
        "ev 1 200 6",
        "ev 1 210 7",
        "lost 0 1000 Some(7)",
        "ev 0 1000 3",
        "ev 0 1073742829 4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn dump(f: &TraceFile, buffer: &str) -> Vec<String> {
    let b = f.buffer(buffer).expect("buffer");
    let fmt = f.formats().by_name("test", "ev").expect("format");
    f.records(b)
        .map(|it| match it.expect("record") {
            Item::Event(r) => format!(
                "ev {} {} {}",
                r.cpu,
                r.ts,
                r.u64_field(fmt, "value").unwrap()
            ),
            Item::Lost { cpu, ts, count } => format!("lost {cpu} {ts} {count:?}"),
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Codec {
    None,
    Zlib,
    Zstd,
}

fn compress(c: Codec, data: &[u8]) -> Vec<u8> {
    match c {
        Codec::None => data.to_vec(),
        Codec::Zstd => zstd::bulk::compress(data, 3).unwrap(),
        Codec::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
    }
}

struct Out(Vec<u8>);

impl Out {
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn cstr(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
    }
    fn align(&mut self) {
        while self.0.len() % PAGE != 0 {
            self.0.push(0);
        }
    }
    fn pos(&self) -> u64 {
        self.0.len() as u64
    }
    fn patch_u64(&mut self, at: u64, v: u64) {
        self.0[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
    }
}

fn start(version: &str) -> Out {
    let mut o = Out(Vec::new());
    o.bytes(&[0x17, 0x08, 0x44]);
    o.bytes(b"tracing");
    o.cstr(version);
    o.bytes(&[0, 8]);
    o.u32(PAGE as u32);
    o
}

fn header_info() -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.cstr("header_page");
    o.u64(HEADER_PAGE.len() as u64);
    o.bytes(HEADER_PAGE.as_bytes());
    o.cstr("header_event");
    o.u64(HEADER_EVENT.len() as u64);
    o.bytes(HEADER_EVENT.as_bytes());
    o.0
}

fn ftrace_events() -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u32(1);
    let ftrace = ftrace_format();
    o.u64(ftrace.len() as u64);
    o.bytes(ftrace.as_bytes());
    o.0
}

fn event_formats() -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u32(1);
    o.cstr("test");
    o.u32(1);
    let ev = ev_format();
    o.u64(ev.len() as u64);
    o.bytes(ev.as_bytes());
    o.0
}

fn blob32(s: &str) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u32(s.len() as u32);
    o.bytes(s.as_bytes());
    o.0
}

fn blob64(s: &str) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u64(s.len() as u64);
    o.bytes(s.as_bytes());
    o.0
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\n";
const CMDLINES: &str = "10 worker\n11 other\n";

/// A v7 file with the data in buffer `name` ("" = top).
fn build_v7(codec: Codec, name: &str) -> Vec<u8> {
    build_v7_with(codec, name, cpu_pages())
}

/// A v7 file with the given per-CPU page data.
fn build_v7_with(codec: Codec, name: &str, pages: Vec<Vec<u8>>) -> Vec<u8> {
    build_v7_cmdlines(codec, name, pages, blob64(CMDLINES))
}

/// A v7 file with the given per-CPU page data and CMDLINES section body.
fn build_v7_cmdlines(codec: Codec, name: &str, pages: Vec<Vec<u8>>, cmdlines: Vec<u8>) -> Vec<u8> {
    build_v7_chunked(codec, name, pages, cmdlines, PAGE)
}

/// A v7 file whose compressed CPU data is cut into chunks of `chunk` bytes.
fn build_v7_chunked(
    codec: Codec,
    name: &str,
    pages: Vec<Vec<u8>>,
    cmdlines: Vec<u8>,
    chunk: usize,
) -> Vec<u8> {
    let ncpus = pages.len() as u32;
    let cname = match codec {
        Codec::None => "none",
        Codec::Zlib => "zlib",
        Codec::Zstd => "zstd",
    };
    let mut o = start("7");
    o.cstr(cname);
    o.cstr(if codec == Codec::None { "" } else { "1.0" });
    let first_opt = o.pos();
    o.u64(0);
    let section = |o: &mut Out, id: u16, body: &[u8]| -> u64 {
        let at = o.pos();
        o.u16(id);
        o.u16(if codec == Codec::None { 0 } else { 1 });
        o.u32(0);
        if codec == Codec::None {
            o.u64(body.len() as u64);
            o.bytes(body);
        } else {
            let c = compress(codec, body);
            o.u64(c.len() as u64 + 8);
            o.u32(c.len() as u32);
            o.u32(body.len() as u32);
            o.bytes(&c);
        }
        at
    };
    let mut offsets = Vec::new();
    for (id, body) in [
        (16u16, header_info()),
        (17, ftrace_events()),
        (18, event_formats()),
        (19, blob32(KALLSYMS)),
        (20, blob32("")),
        (21, cmdlines),
    ] {
        offsets.push((id, section(&mut o, id, &body)));
    }
    // Flyrecord section: header, then page-aligned per-CPU data.
    let fly = o.pos();
    o.u16(3);
    o.u16(if codec == Codec::None { 0 } else { 1 });
    o.u32(0);
    o.u64(0);
    let mut cpus = Vec::new();
    for (cpu, data) in pages.into_iter().enumerate() {
        o.align();
        let at = o.pos();
        if codec == Codec::None {
            o.bytes(&data);
            cpus.push((cpu as u32, at, data.len() as u64));
        } else {
            let chunks: Vec<&[u8]> = data.chunks(chunk).collect();
            o.u32(chunks.len() as u32);
            let mut size = 0u64;
            for ch in chunks {
                let c = compress(codec, ch);
                o.u32(c.len() as u32);
                o.u32(ch.len() as u32);
                o.bytes(&c);
                size += 8 + c.len() as u64;
            }
            // trace-cmd's size does not count the u32 chunk count.
            cpus.push((cpu as u32, at, size));
        }
    }
    let mut opts = Out(Vec::new());
    for (id, off) in offsets {
        opts.u16(id);
        opts.u32(8);
        opts.u64(off);
    }
    opts.u16(8);
    opts.u32(4);
    opts.u32(ncpus);
    opts.u16(4);
    opts.u32(16);
    opts.bytes(b"[local] global\0\0");
    let mut b = Out(Vec::new());
    b.u64(fly);
    b.cstr(name);
    b.cstr("local");
    b.u32(PAGE as u32);
    b.u32(cpus.len() as u32);
    for (cpu, off, size) in cpus {
        b.u32(cpu);
        b.u64(off);
        b.u64(size);
    }
    opts.u16(3);
    opts.u32(b.0.len() as u32);
    opts.bytes(&b.0);
    opts.u16(0);
    opts.u32(8);
    opts.u64(0);
    let opt_at = section(&mut o, 0, &opts.0);
    o.patch_u64(first_opt, opt_at);
    o.0
}

/// A v6 file; with `instance`, the data is in that buffer and the top
/// buffer's CPUs are empty (like trace-cmd extract -B).
fn build_v6(instance: Option<&str>) -> Vec<u8> {
    let mut o = start("6");
    o.bytes(&header_info());
    o.bytes(&ftrace_events());
    o.bytes(&event_formats());
    o.bytes(&blob32(KALLSYMS));
    o.bytes(&blob32(""));
    o.bytes(&blob64(CMDLINES));
    o.u32(2);
    o.bytes(b"options  \0");
    let mut buf_opt_at = None;
    if let Some(name) = instance {
        o.u16(3);
        o.u32(8 + name.len() as u32 + 1);
        buf_opt_at = Some(o.pos());
        o.u64(0);
        o.cstr(name);
    }
    o.u16(4);
    o.u32(8);
    o.bytes(b"[local]\0");
    o.u16(0);
    o.bytes(b"flyrecord\0");
    let top_table = o.pos();
    for _ in 0..2 {
        o.u64(0);
        o.u64(0);
    }
    let table = if let Some(at) = buf_opt_at {
        let t = o.pos();
        o.patch_u64(at, t);
        o.bytes(b"flyrecord\0");
        let t = o.pos();
        for _ in 0..2 {
            o.u64(0);
            o.u64(0);
        }
        t
    } else {
        top_table
    };
    for (cpu, data) in cpu_pages().into_iter().enumerate() {
        o.align();
        let at = o.pos();
        o.bytes(&data);
        o.patch_u64(table + 16 * cpu as u64, at);
        o.patch_u64(table + 16 * cpu as u64 + 8, data.len() as u64);
    }
    o.0
}

fn open(bytes: Vec<u8>) -> ustack_tracedata::Result<TraceFile> {
    TraceFile::from_bytes("gen.dat", bytes)
}

#[test]
fn v7_all_codecs_read_the_same_events() {
    for codec in [Codec::None, Codec::Zlib, Codec::Zstd] {
        let b = seed(&format!("v7-{codec:?}.dat"), build_v7(codec, ""));
        let f = open(b).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
        assert_eq!(f.version(), 7);
        assert_eq!(f.cpu_count(), 2);
        assert_eq!(f.page_size(), PAGE);
        assert_eq!(f.clock().as_deref(), Some("local"));
        assert_eq!(f.kallsyms().unwrap(), KALLSYMS.as_bytes());
        assert_eq!(f.cmdlines(), CMDLINES.as_bytes());
        assert_eq!(f.formats().len(), 2);
        assert_eq!(f.formats().by_id(5).unwrap().name, "print");
        assert_eq!(f.buffers().len(), 1);
        assert_eq!(dump(&f, ""), expected(), "{codec:?}");
    }
}

#[test]
fn v7_instance_buffer() {
    let f = open(build_v7(Codec::Zstd, "inst")).unwrap();
    assert_eq!(f.buffers()[0].name, "inst");
    assert_eq!(dump(&f, "inst"), expected());
}

#[test]
fn v6_top_and_instance() {
    let f = open(build_v6(None)).unwrap();
    assert_eq!(f.version(), 6);
    assert_eq!(f.clock().as_deref(), Some("local"));
    assert_eq!(dump(&f, ""), expected());
    let f = open(seed("v6-instance.dat", build_v6(Some("inst")))).unwrap();
    assert_eq!(f.buffers().len(), 2);
    assert_eq!(dump(&f, ""), Vec::<String>::new());
    assert_eq!(dump(&f, "inst"), expected());
}

#[test]
fn cpu_selection_and_trace_cmd_lost_rule() {
    let f = open(build_v7(Codec::None, "")).unwrap();
    let b = &f.buffers()[0];
    let n1 = f.records_of_cpus(b, Some(&[1])).count();
    assert_eq!(n1, 3);
    // The lost page starts with an event at offset 0, so trace-cmd reports it too.
    let lost = f
        .records(b)
        .trace_cmd_compat()
        .filter(|i| matches!(i, Ok(Item::Lost { .. })))
        .count();
    assert_eq!(lost, 1);
}

/// A CPU's events as a cursor gives them: (ts, payload, lost before it).
fn by_cursor(
    f: &TraceFile,
    b: &ustack_tracedata::Buffer,
    cpu: u32,
) -> Vec<(u64, Vec<u8>, Option<Option<u64>>)> {
    let mut c = f.cpu_cursor(b, cpu).unwrap().trace_cmd_compat();
    let mut out = Vec::new();
    while c.advance().unwrap() {
        let r = c.record().unwrap();
        assert_eq!(r.cpu, cpu);
        out.push((r.ts, r.data.to_vec(), c.lost()));
    }
    assert!(c.record().is_none());
    out
}

/// The same from the merged iterator of that CPU alone.
fn by_records(
    f: &TraceFile,
    b: &ustack_tracedata::Buffer,
    cpu: u32,
) -> Vec<(u64, Vec<u8>, Option<Option<u64>>)> {
    let mut out = Vec::new();
    let mut lost = None;
    for it in f.records_of_cpus(b, Some(&[cpu])).trace_cmd_compat() {
        match it.unwrap() {
            Item::Lost { count, .. } => lost = Some(count),
            Item::Event(r) => out.push((r.ts, r.data.to_vec(), lost.take())),
        }
    }
    out
}

/// The cursor reads what the iterator reads, whatever the compression and
/// however the chunks cut the pages (one per page, a page and a half, two).
#[test]
fn cpu_cursor_reads_what_records_read() {
    for codec in [Codec::None, Codec::Zlib, Codec::Zstd] {
        for chunk in [PAGE, PAGE * 3 / 2, PAGE * 2] {
            let f = open(build_v7_chunked(
                codec,
                "",
                cpu_pages(),
                blob64(CMDLINES),
                chunk,
            ))
            .unwrap();
            let b = &f.buffers()[0];
            let mut total = 0;
            for c in &b.cpus {
                let want = by_records(&f, b, c.cpu);
                assert_eq!(
                    by_cursor(&f, b, c.cpu),
                    want,
                    "{codec:?} chunk {chunk} cpu {}",
                    c.cpu
                );
                total += want.len();
            }
            let events = expected().iter().filter(|l| l.starts_with("ev ")).count();
            assert_eq!(total, events, "{codec:?} chunk {chunk}");
        }
    }
    let f = open(build_v7(Codec::None, "")).unwrap();
    assert!(f.cpu_cursor(&f.buffers()[0], 99).is_none());
}

/// Decoded compressed data given back to the kernel while reading (and
/// all of it by `release_cpu_data`) still reads the same: records kept
/// from before, a second pass and `cpu_data`.
#[test]
fn released_decoded_pages_read_the_same() {
    // 3 MiB of pages on one CPU: more than one release step.
    let page = PageBuilder::new(100)
        .event(0, &payload(10, 1), false)
        .event(7, &payload(10, 2), false)
        .finish(PAGE)
        .unwrap();
    let data = page.repeat(3 << 20 >> 12);
    let plain = open(build_v7_with(Codec::None, "", vec![data.clone()])).unwrap();
    let f = open(build_v7_with(Codec::Zstd, "", vec![data.clone()])).unwrap();
    let b = &f.buffers()[0];
    let kept: Vec<_> = f
        .records(b)
        .map(|it| match it.unwrap() {
            Item::Event(r) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kept.len(), 2 * (3 << 20 >> 12));
    let copies: Vec<Vec<u8>> = kept.iter().map(|r| r.data.to_vec()).collect();
    f.release_cpu_data(&b.cpus[0]);
    for (r, c) in kept.iter().zip(&copies) {
        assert_eq!(r.data, &c[..]);
    }
    assert_eq!(
        f.cpu_data(&b.cpus[0]),
        plain.cpu_data(&plain.buffers()[0].cpus[0])
    );
    assert_eq!(f.records(b).count(), kept.len());
}

/// Every strict prefix of a valid file must fail to open with a one-line
/// error, and none may panic.
fn check_truncations(name: &str, full: &[u8]) {
    for len in 0..full.len() {
        match open(full[..len].to_vec()) {
            Ok(_) => panic!("{name}: prefix of {len} bytes opened without error"),
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "{name}: multi-line error {msg:?}");
                assert!(msg.starts_with("gen.dat: "), "{name}: {msg}");
            }
        }
    }
}

#[test]
fn truncated_files_are_errors() {
    check_truncations("v6", &build_v6(Some("i")));
    check_truncations("v7 none", &build_v7(Codec::None, ""));
    check_truncations("v7 zstd", &build_v7(Codec::Zstd, "i"));
    check_truncations("v7 zlib", &build_v7(Codec::Zlib, ""));
}

/// Flipping any byte must not panic: opening and reading either work or
/// give errors.
#[test]
fn corrupted_bytes_never_panic() {
    for (name, full) in [
        ("v6", build_v6(Some("i"))),
        ("v7 none", build_v7(Codec::None, "")),
        ("v7 zstd", build_v7(Codec::Zstd, "")),
        ("v7 zlib", build_v7(Codec::Zlib, "")),
    ] {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for pos in 0..full.len() {
            // Skip most of the zero padding of the big uncompressed files.
            if full[pos] == 0 && pos % 7 != 0 {
                continue;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = full.clone();
            b[pos] ^= (x as u8) | 1;
            if let Ok(f) = open(b) {
                for buf in f.buffers() {
                    for it in f.records(buf) {
                        if let Err(e) = it {
                            assert!(!e.to_string().contains('\n'), "{name}");
                        }
                    }
                    for c in &buf.cpus {
                        let mut cur = f.cpu_cursor(buf, c.cpu).unwrap();
                        loop {
                            match cur.advance() {
                                Ok(true) => assert!(cur.record().is_some(), "{name}"),
                                Ok(false) => break,
                                Err(e) => assert!(!e.to_string().contains('\n'), "{name}"),
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn specific_corruptions_have_clear_errors() {
    // Bad magic.
    let mut b = build_v7(Codec::None, "");
    b[1] = 0;
    assert_eq!(
        open(b).unwrap_err().to_string(),
        "gen.dat: file header: corrupt data: not a trace.dat file (bad magic)"
    );
    // Options offset pointing past the end.
    let mut b = build_v7(Codec::None, "");
    let at = 10 + 2 + 2 + 4 + 5 + 1;
    b[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = open(b).unwrap_err().to_string();
    assert!(
        e.contains("offset 0x10000000000 is outside the file"),
        "{e}"
    );
    // Unknown compression.
    let mut b = build_v7(Codec::Zstd, "");
    let i = b.windows(4).position(|w| w == b"zstd").unwrap();
    b[i..i + 4].copy_from_slice(b"lz77");
    let e = open(b).unwrap_err().to_string();
    assert!(e.contains("unsupported: compression \"lz77\""), "{e}");
    // A bogus compressed chunk in the CPU data.
    for codec in [Codec::Zstd, Codec::Zlib] {
        let mut b = build_v7(codec, "");
        let f = open(b.clone()).unwrap();
        let off = f.buffers()[0].cpus[1].file_offset as usize;
        for x in &mut b[off + 12..off + 40] {
            *x ^= 0x5a;
        }
        // Chunks are decompressed when the reader reaches them: the error
        // comes from the records, after the other CPU's events.
        let f = open(b).unwrap();
        let items: Vec<_> = f.records(&f.buffers()[0]).collect();
        let errs: Vec<String> = items
            .iter()
            .filter_map(|i| i.as_ref().err().map(|e| e.to_string()))
            .collect();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("cpu 1") && errs[0].contains("decompression failed"),
            "{}",
            errs[0]
        );
        let cpu0 = items
            .iter()
            .filter(|i| matches!(i, Ok(Item::Event(r)) if r.cpu == 0))
            .count();
        assert_eq!(cpu0, 4, "{codec:?}");
    }
    // A page whose commit is larger than the page.
    let mut b = build_v7(Codec::None, "");
    let f = open(b.clone()).unwrap();
    let off = f.buffers()[0].cpus[0].file_offset as usize + PAGE;
    b[off + 8..off + 16].copy_from_slice(&(PAGE as u64 * 2).to_le_bytes());
    let f = open(b).unwrap();
    let items: Vec<_> = f.records(&f.buffers()[0]).collect();
    let errs: Vec<String> = items
        .iter()
        .filter_map(|i| i.as_ref().err())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("cpu 0: page at 0x1000") && errs[0].contains("larger than its data area"),
        "{}",
        errs[0]
    );
    // The other CPU is still read completely.
    assert_eq!(
        items
            .iter()
            .filter(|i| matches!(i, Ok(Item::Event(r)) if r.cpu == 1))
            .count(),
        3
    );
    // A truncated last page (data size not a multiple of the page size).
    let mut b = build_v6(None);
    let f = open(b.clone()).unwrap();
    let table_size_at = {
        let c = &f.buffers()[0].cpus[1];
        let needle = [c.file_offset.to_le_bytes(), c.file_size.to_le_bytes()].concat();
        b.windows(16).position(|w| w == needle).unwrap() + 8
    };
    b[table_size_at..table_size_at + 8].copy_from_slice(&40u64.to_le_bytes());
    let f = open(b).unwrap();
    let errs: Vec<String> = f
        .records(&f.buffers()[0])
        .filter_map(|i| i.err())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains("cpu 1") && errs[0].contains("larger than its data area"),
        "{}",
        errs[0]
    );
}

#[test]
fn losses_of_empty_pages_carry_over() {
    // cpu 0: a page with 3 lost events and no event, then one with 4 more.
    let p0 = PageBuilder::new(10).missed(Some(3)).finish(PAGE).unwrap();
    let p1 = PageBuilder::new(20)
        .missed(Some(4))
        .event(0, &payload(1, 9), false)
        .finish(PAGE)
        .unwrap();
    let p2 = PageBuilder::new(30).missed(None).finish(PAGE).unwrap();
    let p3 = PageBuilder::new(40)
        .missed(Some(5))
        .event(0, &payload(1, 10), false)
        .finish(PAGE)
        .unwrap();
    let mut b = build_v6(None);
    let f = open(b.clone()).unwrap();
    // Replace cpu 0's two pages by p0+p1 and cpu 1's page by p2 (size 1 page)
    // then append p3 to cpu 1 by making it the last page of the file.
    let c0 = f.buffers()[0].cpus[0].file_offset as usize;
    let c1 = f.buffers()[0].cpus[1].file_offset as usize;
    b[c0..c0 + PAGE].copy_from_slice(&p0);
    b[c0 + PAGE..c0 + 2 * PAGE].copy_from_slice(&p1);
    b.truncate(c1);
    b.extend_from_slice(&p2);
    b.extend_from_slice(&p3);
    let size_at = b
        .windows(16)
        .position(|w| w == [(c1 as u64).to_le_bytes(), (PAGE as u64).to_le_bytes()].concat())
        .unwrap()
        + 8;
    b[size_at..size_at + 8].copy_from_slice(&(2 * PAGE as u64).to_le_bytes());
    let f = open(b).unwrap();
    assert_eq!(
        dump(&f, ""),
        [
            "lost 0 20 Some(7)",
            "ev 0 20 9",
            "lost 1 40 None",
            "ev 1 40 10"
        ]
    );
    // trace-cmd only knows about the loss flagged on the event's own page.
    let compat: Vec<String> = f
        .records(&f.buffers()[0])
        .trace_cmd_compat()
        .filter_map(|i| match i.unwrap() {
            Item::Lost { cpu, count, .. } => Some(format!("{cpu} {count:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(compat, ["0 Some(4)", "1 Some(5)"]);
}

#[test]
fn cpu_stats_are_grouped_by_buffer() {
    // A v6 file with trace-cmd's CPUSTAT layout: top CPUs, then an instance.
    let mut b = build_v6(None);
    let stats = [
        "CPU: 0\nentries: 0\noverrun: 5\ndropped events: 0\n",
        "CPU: 1\nentries: 0\noverrun: 0\ndropped events: 2\n",
        "\nBuffer: inst\n\n",
        "CPU: 1\nentries: 0\noverrun: 9\n",
    ];
    let at = b.windows(10).position(|w| w == b"options  \0").unwrap() + 10;
    let mut opts = Vec::new();
    for t in stats {
        opts.extend_from_slice(&2u16.to_le_bytes());
        opts.extend_from_slice(&(t.len() as u32 + 1).to_le_bytes());
        opts.extend_from_slice(t.as_bytes());
        opts.push(0);
    }
    // Shift everything after the options: rebuild with the data offsets moved.
    let shift = opts.len();
    b.splice(at..at, opts);
    // The CPU data moved by `shift` bytes: fix the offsets in the table.
    let table = b.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
    for cpu in 0..2 {
        let o = table + 16 * cpu;
        let off = u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) + shift as u64;
        b[o..o + 8].copy_from_slice(&off.to_le_bytes());
    }
    let f = open(b).unwrap();
    assert_eq!(dump(&f, ""), expected());
    let s = f.buffer_stats();
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].name.as_str(), s[0].cpus.len()), ("", 2));
    assert_eq!(s[0].cpus[0].overrun, Some(5));
    assert_eq!(s[0].cpus[1].dropped_events, Some(2));
    assert_eq!(s[0].cpus[1].commit_overrun, None);
    assert_eq!((s[1].name.as_str(), s[1].cpus[0].cpu), ("inst", 1));
    assert_eq!(s[1].cpus[0].overrun, Some(9));
}

#[test]
fn many_cpus_merge_by_time_then_cpu() {
    // 7 CPUs (the heap path), 3 pages each, timestamps with many ties.
    let mut pages = Vec::new();
    let mut all = Vec::new();
    for cpu in 0..7u64 {
        let mut data = Vec::new();
        let mut ts = 1000 + cpu % 3;
        for page in 0..3u64 {
            let mut b = PageBuilder::new(ts);
            for i in 0..50u64 {
                let delta = ((cpu * 7 + i * 3 + page) % 4) as u32;
                if i > 0 {
                    ts += u64::from(delta);
                }
                let v = cpu * 1_000_000 + page * 1000 + i;
                b = b.event(if i == 0 { 0 } else { delta }, &payload(1, v), false);
                all.push((ts, cpu, v));
            }
            data.extend(b.finish(PAGE).unwrap());
            ts += 5;
        }
        pages.push(data);
    }
    all.sort();
    let f = open(build_v7_with(Codec::Zstd, "", pages)).unwrap();
    let expect: Vec<String> = all
        .iter()
        .map(|(ts, cpu, v)| format!("ev {cpu} {ts} {v}"))
        .collect();
    assert_eq!(dump(&f, ""), expect);
    // A subset of 3 CPUs takes the scanning path and gives the same order.
    let b = &f.buffers()[0];
    let fmt = f.formats().by_name("test", "ev").unwrap();
    let got: Vec<String> = f
        .records_of_cpus(b, Some(&[1, 4, 6]))
        .map(|it| match it.unwrap() {
            Item::Event(r) => format!(
                "ev {} {} {}",
                r.cpu,
                r.ts,
                r.u64_field(fmt, "value").unwrap()
            ),
            Item::Lost { .. } => "lost".into(),
        })
        .collect();
    let sub: Vec<String> = all
        .iter()
        .filter(|(_, c, _)| [1, 4, 6].contains(c))
        .map(|(ts, cpu, v)| format!("ev {cpu} {ts} {v}"))
        .collect();
    assert_eq!(got, sub);

    // A corrupt page on CPU 3 (the heap path): one error, the rest is read.
    let mut bytes = build_v7_with(Codec::None, "", pages_again());
    let f0 = open(bytes.clone()).unwrap();
    let off = f0.buffers()[0].cpus[3].file_offset as usize + PAGE;
    bytes[off + 8..off + 16].copy_from_slice(&99_999u64.to_le_bytes());
    let f = open(bytes).unwrap();
    let items: Vec<_> = f.records(&f.buffers()[0]).collect();
    let errs = items.iter().filter(|i| i.is_err()).count();
    assert_eq!(errs, 1);
    let cpu3 = items
        .iter()
        .filter(|i| matches!(i, Ok(Item::Event(r)) if r.cpu == 3))
        .count();
    assert_eq!(cpu3, 50, "only the first page of cpu 3 is read");
    let others = items
        .iter()
        .filter(|i| matches!(i, Ok(Item::Event(r)) if r.cpu != 3))
        .count();
    assert_eq!(others, 6 * 150);
}

fn pages_again() -> Vec<Vec<u8>> {
    (0..7u64)
        .map(|cpu| {
            let mut data = Vec::new();
            for page in 0..3u64 {
                let mut b = PageBuilder::new(1000 + page * 1000 + cpu);
                for i in 0..50u64 {
                    b = b.event(1, &payload(1, i), false);
                }
                data.extend(b.finish(PAGE).unwrap());
            }
            data
        })
        .collect()
}

/// `b` with the first `from` replaced by `to` (same length).
fn patched(mut b: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let i = b
        .windows(from.len())
        .position(|w| w == from)
        .expect("bytes to patch");
    b[i..i + to.len()].copy_from_slice(to);
    b
}

fn le32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// Writes `b` as a fuzz seed when USTACK_WRITE_SEEDS names a directory
/// (scripts/fuzz.sh seeds), and returns it.
fn seed(name: &str, b: Vec<u8>) -> Vec<u8> {
    if let Some(dir) = std::env::var_os("USTACK_WRITE_SEEDS") {
        std::fs::write(std::path::Path::new(&dir).join(name), &b).unwrap();
    }
    b
}

#[test]
fn absurd_cpu_counts_are_errors() {
    // The CPUCOUNT option: id 8, 4 bytes, 2 CPUs.
    let opt = |n: u32| [&8u16.to_le_bytes()[..], &le32(4), &le32(n)].concat();
    for n in [0xffff_ffff, 1_000_000] {
        let b = seed(
            &format!("cpucount-{n}.dat"),
            patched(build_v7(Codec::None, ""), &opt(2), &opt(n)),
        );
        assert_eq!(
            open(b).unwrap_err().to_string(),
            format!(
                "gen.dat: CPUCOUNT option: corrupt data: CPU count {n} is more than \
                 the 8192 CPUs Linux supports"
            )
        );
    }
    // A CPU number of a BUFFER option.
    let cpu1 = [&le32(1)[..], &(PAGE as u64 * 3).to_le_bytes()].concat();
    let bad = [&le32(0xffff_fff0)[..], &(PAGE as u64 * 3).to_le_bytes()].concat();
    let e = open(patched(build_v7(Codec::None, ""), &cpu1, &bad))
        .unwrap_err()
        .to_string();
    assert!(e.contains("CPU number + 1 4294967281 is more than"), "{e}");
}

#[test]
fn absurd_buffer_page_size_is_an_error() {
    let from = [&b"local\0"[..], &le32(PAGE as u32)].concat();
    let to = [&b"local\0"[..], &le32(0xffff_ffff)].concat();
    let b = seed(
        "buffer-page-size.dat",
        patched(build_v7(Codec::None, ""), &from, &to),
    );
    let e = open(b).unwrap_err().to_string();
    assert!(
        e.contains("buffer \"\"") && e.contains("page size 4294967295 is not plausible"),
        "{e}"
    );
}

#[test]
fn decompression_bombs_are_refused_before_allocating() {
    // A zstd chunk of one page declaring 1 GiB.
    let b = build_v7(Codec::Zstd, "");
    let f = open(b.clone()).unwrap();
    let off = f.buffers()[0].cpus[0].file_offset as usize;
    let mut bomb = b.clone();
    bomb[off + 8..off + 12].copy_from_slice(&le32(1 << 30));
    let e = open(seed("zstd-bomb.dat", bomb)).unwrap_err().to_string();
    assert!(
        e.contains("cpu 0") && e.contains("chunk 0") && e.contains("declare 1073741824 bytes"),
        "{e}"
    );
    // A compressed KALLSYMS section (id 19) declaring 1 GiB.
    let head = [&19u16.to_le_bytes()[..], &1u16.to_le_bytes(), &le32(0)].concat();
    let i = b.windows(8).position(|w| w == head).unwrap();
    let mut big = b;
    big[i + 20..i + 24].copy_from_slice(&le32(1 << 30));
    let e = open(seed("kallsyms-bomb.dat", big))
        .unwrap_err()
        .to_string();
    assert!(e.contains("declare 1073741824 bytes"), "{e}");
}

#[test]
fn a_corrupt_format_of_an_absent_event_leaves_the_file_readable() {
    // The ftrace `print` format (ID 5) has no events in the data.
    let b = seed(
        "bad-unused-format.dat",
        patched(build_v7(Codec::None, ""), b"ID: 5\n", b"ID: x\n"),
    );
    let f = open(b).unwrap();
    assert_eq!(dump(&f, ""), expected());
    assert!(f.formats().by_name("ftrace", "print").is_none());
    let e = f.formats().check().unwrap_err().to_string();
    assert!(e.contains("bad ID \"x\""), "{e}");
}

/// A CMDLINES section whose announced size is `announced`, holding `text`.
fn cmdlines_body(announced: u64, text: &str) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u64(announced);
    o.bytes(text.as_bytes());
    o.0
}

#[test]
fn cmdlines_size_from_another_read_of_saved_cmdlines() {
    // trace-cmd extract announces the size of one read of saved_cmdlines
    // and stores the contents of another: the section holds fewer or more
    // bytes than announced. The section's own size bounds the contents,
    // and no more than the announced size is taken (as trace-cmd does).
    for codec in [Codec::None, Codec::Zstd, Codec::Zlib] {
        let n = CMDLINES.len() as u64;
        for (announced, want) in [
            (n + 15, CMDLINES),
            (n, CMDLINES),
            (n - 3, &CMDLINES[..CMDLINES.len() - 3]),
            (0, ""),
        ] {
            let body = cmdlines_body(announced, CMDLINES);
            let f = open(build_v7_cmdlines(codec, "", cpu_pages(), body))
                .unwrap_or_else(|e| panic!("{codec:?} announced {announced}: {e}"));
            assert_eq!(
                f.cmdlines(),
                want.as_bytes(),
                "{codec:?} announced {announced}"
            );
            assert_eq!(dump(&f, ""), expected(), "{codec:?} announced {announced}");
        }
        // Fewer than 8 bytes cannot hold the size: still an error.
        let e = open(build_v7_cmdlines(codec, "", cpu_pages(), vec![1, 2, 3]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("CMDLINES section"), "{e}");
    }
}

/// Resident bytes of the mappings of `path` in this process.
fn resident_of(path: &std::path::Path) -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let name = path.to_str().unwrap();
    let mut ours = false;
    let mut kib = 0;
    for l in smaps.lines() {
        if l.split_whitespace().next().is_some_and(|a| a.contains('-')) && l.contains(' ') {
            ours = l.ends_with(name);
        } else if let (true, Some(v)) = (ours, l.strip_prefix("Rss:")) {
            kib += v.trim().trim_end_matches(" kB").parse::<usize>().unwrap();
        }
    }
    kib << 10
}

/// Drops `path` from the page cache, so that reading it comes with the
/// kernel's readahead (and its large folios), as for a file recorded
/// earlier.
fn uncache(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: fadvise only advises the kernel on the cache of an open file.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
}

/// Reading a mapped file from start to end keeps only about what is being
/// read resident, compressed or not (the pages the kernel maps again
/// behind the reader are the unit tests' of `reader::records`).
#[test]
fn a_whole_read_keeps_little_of_the_file_resident() {
    // 64 MiB of pages of incompressible payloads, so that the compressed
    // frames are as large as the data.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut pages = Vec::new();
    for p in 0..(64 << 20) / PAGE {
        let mut b = PageBuilder::new(1000 * p as u64);
        for _ in 0..3 {
            let mut ev = payload(10, 0);
            ev.extend((0..1200).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }));
            b = b.event(1, &ev, false);
        }
        pages.extend(b.finish(PAGE).unwrap());
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for codec in [Codec::None, Codec::Zstd] {
        let path = dir.path().join(format!("{codec:?}.dat"));
        let bytes = build_v7_chunked(codec, "", vec![pages.clone()], blob64(CMDLINES), 64 * PAGE);
        std::fs::write(&path, &bytes).unwrap();
        uncache(&path);
        let f = TraceFile::open(&path).unwrap();
        let (mut n, mut most) = (0, 0);
        for it in f.records(&f.buffers()[0]) {
            it.unwrap();
            n += 1;
            if n % 512 == 0 {
                most = most.max(resident_of(&path));
            }
        }
        assert_eq!(n, 3 * pages.len() / PAGE, "{codec:?}");
        assert!(
            most < 8 << 20,
            "{codec:?}: {} KiB of the {} KiB file resident",
            most >> 10,
            bytes.len() >> 10
        );
    }
}
