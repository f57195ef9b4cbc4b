//! The trace.dat that grows with a recording (`GrowingTraceDat`), on
//! hand-built ring-buffer pages (no root needed): after each update it
//! reads as the file `write_trace_dat` writes from the same page files
//! (metadata, page bytes, events; and for `trace-cmd report` when it is
//! installed), an update writes the new pages and a small tail only, a
//! reader that opened it before an update still reads what it saw, and
//! data that outgrows its slot is refused without touching the file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ustack_tracedata::compress::Compression;
use ustack_tracedata::reader::{Item, TraceFile};
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, FileVersion, GrowingTraceDat, LibMap, ProcMap, TraceMeta,
    WriteOptions,
};

mod common;

use common::{
    sample_meta, sample_page, trace_cmd_available, trace_cmd_quiet, EVENTS_PER_PAGE, PAGE,
};

/// A slot far larger than the data: the file is sparse.
const SLOT: u64 = 1 << 30;

/// Pages `first..first + pages` of a CPU: `EVENTS_PER_PAGE` events each
/// (16-byte payloads), their values and times following the page number.
fn pages(cpu: u32, first: u64, pages: u64) -> Vec<u8> {
    (first..first + pages)
        .flat_map(|p| {
            sample_page(cpu, p, |i| {
                (u64::from(cpu) << 40) | (p * EVENTS_PER_PAGE + i)
            })
            .0
        })
        .collect()
}

fn meta(cmdlines: &str, procs: u32) -> TraceMeta {
    TraceMeta {
        cmdlines: cmdlines.as_bytes().to_vec(),
        cpu_count: 4,
        procmaps: (0..procs)
            .map(|i| ProcMap {
                pid: 4242 + i,
                comm: format!("proc{i}"),
                maps: vec![LibMap {
                    start: 0x5555_0000_0000,
                    end: 0x5555_0001_0000,
                    path: format!("/usr/bin/prog{i}"),
                }],
                threads: vec![],
                replaced: Vec::new(),
                at: None,
            })
            .collect(),
        ..sample_meta()
    }
}

struct Files {
    dir: PathBuf,
}

impl Files {
    fn new(tag: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("tracedata-grow-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Files { dir }
    }

    fn cpu_path(&self, buffer: &str, cpu: u32) -> PathBuf {
        self.dir.join(format!("{buffer}.cpu{cpu}"))
    }

    /// Appends `bytes` to the page file of `cpu` of `buffer`.
    fn append(&self, buffer: &str, cpu: u32, bytes: &[u8]) {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.cpu_path(buffer, cpu))
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    /// The buffers as a recorder gives them: an instance of CPUs 0, 1
    /// (never any data) and 3, with their stats (`entries` as given).
    fn buffers(&self, entries: u64) -> Vec<BufferData> {
        let cpu = |c: u32| {
            let mut d = CpuData::new(c, self.cpu_path("inst", c));
            d.stats = Some(format!("entries: {entries}\noverrun: 0\n"));
            d
        };
        vec![BufferData {
            name: "inst".into(),
            clock: "local".into(),
            cpus: vec![cpu(3), cpu(0), cpu(1)],
        }]
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Everything a reader gives of a file, events included.
fn contents(f: &TraceFile) -> Vec<String> {
    let mut v = vec![
        format!("version {}", f.version()),
        format!("header_page {:?}", f.header_page_text()),
        format!("header_event {:?}", f.header_event()),
        format!("ftrace {:?}", f.ftrace_format_texts()),
        format!("events {:?}", f.event_format_texts()),
        format!("kallsyms {:?}", f.kallsyms().unwrap()),
        format!("printk {:?}", f.printk_formats()),
        format!("cmdlines {:?}", String::from_utf8_lossy(f.cmdlines())),
        format!("procmaps {:?}", f.procmaps()),
        format!("cpustat {:?}", f.cpustat_texts()),
        format!("uname {:?} clock {:?}", f.uname(), f.clock()),
        format!("cpus {}", f.cpu_count()),
    ];
    for b in f.buffers() {
        v.push(format!("buffer {:?} {:?} {}", b.name, b.clock, b.page_size));
        for c in &b.cpus {
            let data = f.cpu_data(c);
            v.push(format!(
                "cpu {} {} bytes, sum {}",
                c.cpu,
                data.len(),
                data.iter().map(|&x| u64::from(x)).sum::<u64>()
            ));
        }
        for it in f.records(b) {
            match it.unwrap() {
                Item::Event(r) => v.push(format!("{} {} {:?}", r.cpu, r.ts, r.data)),
                Item::Lost { cpu, ts, count } => v.push(format!("lost {cpu} {ts} {count:?}")),
            }
        }
    }
    v
}

/// What `write_trace_dat` writes (v7, uncompressed) from the same inputs.
fn whole(dir: &Path, meta: &TraceMeta, buffers: &[BufferData]) -> Vec<String> {
    let path = dir.join("whole.dat");
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: Compression::None,
    };
    write_trace_dat(&path, meta, buffers, &opts).unwrap();
    contents(&TraceFile::open(&path).unwrap())
}

fn events(c: &[String]) -> usize {
    c.iter().filter(|l| l.starts_with(char::is_numeric)).count()
}

/// The bytes this thread has written so far (`wchar` of
/// /proc/thread-self/io: write, pwrite and copy_file_range alike), if the
/// kernel counts them.
fn thread_written() -> Option<u64> {
    let io = fs::read_to_string("/proc/thread-self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn after_each_update_it_reads_as_the_whole_file() {
    let fl = Files::new("same");
    fl.append("inst", 0, &pages(0, 0, 3));
    fl.append("inst", 3, &pages(3, 0, 1));
    let path = fl.dir.join("live.dat");
    let m = meta("4242 sampler\n", 3);
    let b = fl.buffers(300);
    let (mut g, first) = GrowingTraceDat::create(&path, &m, &b, SLOT).unwrap();
    assert_eq!(first.appended, 4 * PAGE as u64);
    let got = contents(&TraceFile::open(&path).unwrap());
    assert_eq!(got, whole(&fl.dir, &m, &b));
    assert_eq!(events(&got), 400);
    // The summary says where each CPU's data is, as write_trace_dat's does.
    let cpus = &first.buffers[0].cpus;
    assert_eq!(
        cpus.iter().map(|c| (c.cpu, c.pages)).collect::<Vec<_>>(),
        [(0, 3), (1, 0), (3, 1)]
    );
    assert_eq!(cpus[1].offset - cpus[0].offset, SLOT);

    // More pages, a partial page (left out until it is whole), other
    // names, fewer processes (a shorter tail), new stats.
    fl.append("inst", 0, &pages(0, 3, 2));
    fl.append("inst", 3, &pages(3, 1, 5));
    fl.append("inst", 3, &[1, 2, 3]);
    let m = meta("4242 sampler\n4243 other\n", 1);
    let b = fl.buffers(1000);
    let next = g.update(&m, &b).unwrap().unwrap();
    assert_eq!(next.appended, 7 * PAGE as u64);
    assert_eq!(next.buffers[0].cpus[2].partial_tail, 3);
    let got = contents(&TraceFile::open(&path).unwrap());
    assert_eq!(got, whole(&fl.dir, &m, &b));
    assert_eq!(events(&got), 1100);
    // The file is sparse: on disk, about what it holds.
    use std::os::unix::fs::MetadataExt;
    let md = fs::metadata(&path).unwrap();
    assert!(md.len() > 3 * SLOT, "{}", md.len());
    assert!(md.blocks() * 512 < 1 << 20, "{} blocks", md.blocks());
}

#[test]
fn an_update_writes_the_new_pages_and_a_small_tail_only() {
    let fl = Files::new("cost");
    // 16 MiB recorded before the first snapshot.
    fl.append("inst", 0, &pages(0, 0, 2048));
    fl.append("inst", 3, &pages(3, 0, 2048));
    let path = fl.dir.join("live.dat");
    let m = meta("4242 sampler\n", 20);
    let (mut g, first) = GrowingTraceDat::create(&path, &m, &fl.buffers(1), SLOT).unwrap();
    assert_eq!(first.appended, 4096 * PAGE as u64);
    for round in 0..3u64 {
        // Three new pages on CPU 3, then none at all.
        if round < 2 {
            fl.append("inst", 3, &pages(3, 2048 + 3 * round, 3));
        }
        let before = thread_written();
        let grown = g.update(&m, &fl.buffers(2 + round)).unwrap().unwrap();
        let written = thread_written().zip(before).map(|(a, b)| a - b);
        let new = if round < 2 { 3 * PAGE as u64 } else { 0 };
        assert_eq!(grown.appended, new, "round {round}");
        // The tail: options (20 processes' maps, the stats), the command
        // names, the strings; not the 16 MiB nor the kallsyms.
        assert!(grown.rewritten < 8 << 10, "{grown:?}");
        if let Some(w) = written {
            assert_eq!(w, grown.appended + grown.rewritten, "round {round}");
        }
    }
    let got = contents(&TraceFile::open(&path).unwrap());
    assert_eq!(events(&got), (4096 + 6) * EVENTS_PER_PAGE as usize);
}

#[test]
fn a_reader_opened_before_an_update_still_reads_what_it_saw() {
    let fl = Files::new("old");
    fl.append("inst", 0, &pages(0, 0, 4));
    let path = fl.dir.join("live.dat");
    let (mut g, _) =
        GrowingTraceDat::create(&path, &meta("1 a\n", 30), &fl.buffers(1), SLOT).unwrap();
    let old = TraceFile::open(&path).unwrap();
    let saw = contents(&old);
    for round in 0..3 {
        fl.append("inst", 0, &pages(0, 4 + round, 1));
        fl.append("inst", 3, &pages(3, round, 2));
        // Ever fewer processes: the tail shrinks, the file does not.
        let size = g.file_size();
        g.update(&meta("1 a\n", 10 - 5 * round as u32), &fl.buffers(2))
            .unwrap()
            .unwrap();
        assert_eq!(g.file_size(), size, "round {round}");
    }
    assert_eq!(contents(&old), saw);
    let now = contents(&TraceFile::open(&path).unwrap());
    assert_eq!(events(&now), events(&saw) + 9 * EVENTS_PER_PAGE as usize);
}

#[test]
fn data_that_outgrows_its_slot_is_refused_and_the_file_kept() {
    let fl = Files::new("full");
    fl.append("inst", 0, &pages(0, 0, 2));
    let path = fl.dir.join("live.dat");
    let m = meta("1 a\n", 1);
    let slot = 2 * PAGE as u64;
    let (mut g, _) = GrowingTraceDat::create(&path, &m, &fl.buffers(1), slot).unwrap();
    let saw = contents(&TraceFile::open(&path).unwrap());
    fl.append("inst", 3, &pages(3, 0, 1));
    fl.append("inst", 0, &pages(0, 2, 1));
    assert_eq!(g.update(&m, &fl.buffers(2)).unwrap(), None);
    assert_eq!(contents(&TraceFile::open(&path).unwrap()), saw);
    // Data already larger than the slot: no file.
    let e = GrowingTraceDat::create(&fl.dir.join("x.dat"), &m, &fl.buffers(1), slot)
        .unwrap_err()
        .to_string();
    assert!(e.contains("larger than a slot of 8192 bytes"), "{e}");
    assert!(!fl.dir.join("x.dat").exists());
    // Other buffers than at the start are an error, not a wrong file.
    let mut other = fl.buffers(1);
    other[0].name = "else".into();
    let e = g.update(&m, &other).unwrap_err().to_string();
    assert!(e.contains("\"inst\" is gone"), "{e}");
}

fn trace_cmd(args: &[&str], path: &Path) -> String {
    String::from_utf8(trace_cmd_quiet(args, path, "growing")).unwrap()
}

/// The layout is a plain v7 file to trace-cmd: `report` prints what it
/// prints for the whole file, and `dump --all`, which walks the sections
/// by their sizes, finds every one of them.
#[test]
fn trace_cmd_reads_it_as_the_whole_file() {
    if !trace_cmd_available() {
        return ustack_testdata::skip_unless_ci("needs trace-cmd");
    }
    let fl = Files::new("tc");
    fl.append("inst", 0, &pages(0, 0, 3));
    fl.append("inst", 3, &pages(3, 0, 2));
    let path = fl.dir.join("live.dat");
    let m = meta("4242 sampler\n", 2);
    let (mut g, _) = GrowingTraceDat::create(&path, &m, &fl.buffers(1), SLOT).unwrap();
    fl.append("inst", 3, &pages(3, 2, 2));
    let b = fl.buffers(2);
    g.update(&m, &b).unwrap().unwrap();
    let whole_path = fl.dir.join("whole.dat");
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: Compression::None,
    };
    write_trace_dat(&whole_path, &m, &b, &opts).unwrap();
    let report = trace_cmd(&["report"], &path);
    assert_eq!(report, trace_cmd(&["report"], &whole_path));
    assert_eq!(report.matches("value=").count(), 700, "{report:.2000}");
    let dump = trace_cmd(&["dump", "--all"], &path);
    for s in [
        "\"headers\"",
        "\"kallsyms\"",
        "\"buffer flyrecord \"",
        "\"buffer flyrecord inst\"",
        "\"options\"",
        "\"command lines\"",
        "\"strings\"",
    ] {
        assert!(dump.contains(s), "dump lacks {s}:\n{dump}");
    }
}
