//! The trace.dat writer against the real kernel and Debian's trace-cmd.
//!
//! Both tests trace in a private instance of the host's tracefs (events
//! only: sched_switch, write syscalls and trace_marker prints, with the
//! `stacktrace` and `userstacktrace` options adding kernel_stack and
//! user_stack events), remove it
//! afterwards, and judge our files with `trace-cmd report` (3.1.6), which
//! must print no warning at all.
//!
//! - `same_pages_as_trace_cmd_extract`: `trace-cmd extract` records the
//!   instance; we take its exact per-CPU pages and saved_cmdlines out of the
//!   file (offsets from `trace-cmd dump`), write v7 none, v7 zstd and v6
//!   with them, and require `trace-cmd report` to print the same bytes for
//!   all four files.
//! - `own_capture_counts_and_markers`: we read `trace_pipe_raw` ourselves,
//!   as the recorder does, and check the per-CPU event counts against the
//!   kernel's `entries` stats and that every marker string we wrote is there.
//!
//! They need root, tracefs and trace-cmd and are `#[ignore]`d: run them
//! with `cargo test -- --include-ignored` (scripts/test.sh does as root).

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use ustack_testdata::TestInstance;
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, FileVersion, ProcMap, TraceMeta,
    WriteOptions,
};

/// Whether `trace-cmd` runs here; says why the test skips when not.
fn have_trace_cmd() -> bool {
    match Command::new("trace-cmd").arg("-h").output() {
        Ok(_) => true,
        Err(e) => {
            ustack_testdata::skip_unless_ci(&format!("needs trace-cmd ({e})"));
            false
        }
    }
}

/// A text file of the instance.
fn read_text(inst: &TestInstance, rel: &str) -> String {
    let b = inst.read(rel).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(b).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Its number of CPUs.
fn cpus(inst: &TestInstance) -> u32 {
    inst.cpu_count().unwrap_or_else(|e| panic!("{e}"))
}

/// Enables the events (with kernel and user stacks after each when
/// `stacks`) in `inst`, writes `markers` into its trace_marker with some
/// sleeps around them, and stops tracing.
fn generate(inst: &TestInstance, markers: &[String], stacks: bool) {
    inst.write("buffer_size_kb", "4096");
    if stacks {
        inst.write("options/stacktrace", "1");
        inst.write("options/userstacktrace", "1");
    }
    for e in [
        "sched/sched_switch",
        "syscalls/sys_enter_write",
        "syscalls/sys_exit_write",
    ] {
        inst.write(&format!("events/{e}/enable"), "1");
    }
    inst.write("tracing_on", "1");
    let mut marker = fs::OpenOptions::new()
        .write(true)
        .open(inst.dir().join("trace_marker"))
        .expect("open trace_marker");
    for (i, m) in markers.iter().enumerate() {
        marker.write_all(m.as_bytes()).expect("write trace_marker");
        if i % 8 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    inst.write("tracing_on", "0");
}

/// Reads a whole tracefs/procfs file with large reads: some tracefs files
/// (events/header_page, header_event) end after the first read() however
/// small it was, so `std::fs::read` (which starts with a 32-byte probe
/// when the size is 0) would cut them.
fn read_bytes(p: impl AsRef<Path>) -> Vec<u8> {
    let p = p.as_ref();
    let mut f = fs::File::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read {}: {e}", p.display()),
        }
    }
    out
}

fn sorted_dirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(p)
        .unwrap_or_else(|e| panic!("readdir {}: {e}", p.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// The metadata of the host, as the recorder collects it: every event
/// format (like trace-cmd extract), kallsyms, printk formats, cmdlines.
fn host_meta(inst: &TestInstance) -> TraceMeta {
    let t = inst.tracefs().root();
    let events = t.join("events");
    let ftrace_formats = sorted_dirs(&events.join("ftrace"))
        .into_iter()
        .filter(|d| d.join("format").exists())
        .map(|d| read_bytes(d.join("format")))
        .collect();
    let mut event_systems = Vec::new();
    for sys in sorted_dirs(&events) {
        let name = sys.file_name().unwrap().to_string_lossy().into_owned();
        if name == "ftrace" {
            continue;
        }
        let formats: Vec<Vec<u8>> = sorted_dirs(&sys)
            .into_iter()
            .filter(|d| d.join("format").exists())
            .map(|d| read_bytes(d.join("format")))
            .collect();
        if !formats.is_empty() {
            event_systems.push(EventSystem { name, formats });
        }
    }
    let k = |f: &str| {
        fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .unwrap()
            .trim()
            .to_string()
    };
    TraceMeta {
        page_size: 4096,
        long_size: 8,
        header_page: read_bytes(events.join("header_page")),
        header_event: read_bytes(events.join("header_event")),
        ftrace_formats,
        event_systems,
        kallsyms: read_bytes("/proc/kallsyms"),
        printk_formats: read_bytes(t.join("printk_formats")),
        cmdlines: read_bytes(t.join("saved_cmdlines")),
        uname: Some(format!(
            "{} {} {} {}",
            k("ostype"),
            k("hostname"),
            k("osrelease"),
            std::env::consts::ARCH
        )),
        trace_clock: Some(read_text(inst, "trace_clock")),
        version: None,
        cpu_count: cpus(inst),
        procmaps: vec![ProcMap::from_proc_maps(
            std::process::id(),
            "writer_host",
            &std::fs::read_to_string("/proc/self/maps").expect("own maps"),
        )],
        trace_id: Some(0x1234_5678_9abc_def0),
    }
}

/// Runs `trace-cmd report` on `file`: returns stdout, and fails if it exits
/// non-zero or prints anything on stderr.
fn report(file: &Path) -> String {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg("-i")
        .arg(file)
        .output()
        .expect("run trace-cmd report");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "trace-cmd report {}: status {:?}, stderr:\n{stderr}",
        file.display(),
        out.status
    );
    String::from_utf8(out.stdout).expect("report output is UTF-8")
}

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracedata-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

const ALL_FORMATS: [(FileVersion, Compression, &str); 3] = [
    (FileVersion::V7, Compression::None, "v7none"),
    (FileVersion::V7, Compression::Zstd, "v7zstd"),
    (FileVersion::V6, Compression::None, "v6"),
];

fn markers(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("ustack-writer-{tag}-{i:04}\n"))
        .collect()
}

#[test]
#[ignore = "needs root and tracefs"]
fn same_pages_as_trace_cmd_extract() {
    if !have_trace_cmd() {
        return;
    }
    let Some(inst) = TestInstance::create("wext") else {
        return;
    };
    let dir = scratch_dir("extract");
    let marks = markers("ext", 200);
    generate(&inst, &marks, true);
    // Everything from the instance first: trace-cmd extract removes it.
    let mut meta = host_meta(&inst);
    let stats: Vec<String> = (0..cpus(&inst))
        .map(|cpu| read_text(&inst, &format!("per_cpu/cpu{cpu}/stats")))
        .collect();

    // trace-cmd's own recording of the instance, then an uncompressed copy
    // whose byte offsets `trace-cmd dump` tells us.
    let reference = dir.join("ref.dat");
    // trace-cmd extract also resets the host's top instance: the shared
    // helper holds the tests' top lock and puts the top back.
    let st = ustack_testdata::top::trace_cmd_extract(inst.name(), &reference);
    assert!(st.status.success(), "extract: {st:?}");
    let plain = dir.join("ref-none.dat");
    let st = Command::new("trace-cmd")
        .args(["convert", "--compression", "none", "-i"])
        .arg(&reference)
        .arg("-o")
        .arg(&plain)
        .output()
        .expect("trace-cmd convert");
    assert!(st.status.success(), "convert: {st:?}");
    let dump = Command::new("trace-cmd")
        .args(["dump", "--options", "-i"])
        .arg(&plain)
        .output()
        .expect("trace-cmd dump");
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();

    let (cpus, cmdlines_at) = parse_dump(&dump, inst.name());
    assert!(
        !cpus.is_empty(),
        "no cpu data for {} in dump:\n{dump}",
        inst.name()
    );
    let plain_bytes = read_bytes(&plain);
    let mut cpu_data = Vec::new();
    for (cpu, off, size) in &cpus {
        let p = dir.join(format!("pages.cpu{cpu}"));
        fs::write(&p, &plain_bytes[*off as usize..(*off + *size) as usize]).unwrap();
        let mut c = CpuData::new(*cpu, p);
        c.stats = Some(stats[*cpu as usize].clone());
        cpu_data.push(c);
    }
    // saved_cmdlines as trace-cmd saved it: section header, u64 size, text.
    let at = cmdlines_at as usize + 16;
    let len = u64::from_ne_bytes(plain_bytes[at..at + 8].try_into().unwrap()) as usize;
    meta.cmdlines = plain_bytes[at + 8..at + 8 + len].to_vec();
    let buffers = [BufferData {
        name: inst.name().to_string(),
        clock: "local".into(),
        cpus: cpu_data,
    }];
    drop(inst);

    let want = report(&reference);
    assert_eq!(
        want.matches("ustack-writer-ext-").count(),
        marks.len(),
        "trace-cmd's own file lacks markers:\n{want}"
    );
    for (version, compression, tag) in ALL_FORMATS {
        let ours = dir.join(format!("ours-{tag}.dat"));
        let opts = WriteOptions {
            version,
            compression,
        };
        let summary = write_trace_dat(&ours, &meta, &buffers, &opts).expect("write");
        assert_eq!(summary.file_size, fs::metadata(&ours).unwrap().len());
        let got = report(&ours);
        if got != want {
            let diff = got
                .lines()
                .zip(want.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b);
            panic!(
                "{tag}: report differs from trace-cmd's file ({} vs {} lines), first: {diff:?}",
                got.lines().count(),
                want.lines().count()
            );
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// From `trace-cmd dump --options`: (cpu, offset, size) of `buffer`'s data
/// and the offset of the CMDLINES section.
fn parse_dump(dump: &str, buffer: &str) -> (Vec<(u32, u64, u64)>, u64) {
    let mut current = String::new();
    let mut cpus = Vec::new();
    let mut cmdlines = 0;
    for line in dump.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_suffix(" [name]") {
            current = rest.trim_matches('"').to_string();
        } else if l.ends_with("[id, data offset and size]") && current == buffer {
            let n: Vec<u64> = l
                .split_whitespace()
                .take(3)
                .map(|x| x.parse().unwrap())
                .collect();
            cpus.push((n[0] as u32, n[1], n[2]));
        } else if l.starts_with("[Option CMDLINES") {
            cmdlines = l.rsplit("@ ").next().unwrap().parse().unwrap();
        }
    }
    (cpus, cmdlines)
}

#[test]
#[ignore = "needs root and tracefs"]
fn own_capture_counts_and_markers() {
    let Some(inst) = TestInstance::create("wcap") else {
        return;
    };
    let dir = scratch_dir("capture");
    let marks = markers("cap", 300);
    generate(&inst, &marks, true);

    // The kernel's count of events per CPU, then the pages, read the way
    // the recorder reads them (whole pages, non-blocking, until empty).
    let mut entries = BTreeMap::new();
    let mut cpu_data = Vec::new();
    for cpu in 0..cpus(&inst) {
        let stats = read_text(&inst, &format!("per_cpu/cpu{cpu}/stats"));
        let n: u64 = stats
            .lines()
            .find_map(|l| l.strip_prefix("entries: "))
            .expect("entries line")
            .trim()
            .parse()
            .unwrap();
        let overrun = stats
            .lines()
            .find_map(|l| l.strip_prefix("overrun: "))
            .unwrap()
            .trim();
        assert_eq!(
            overrun, "0",
            "cpu {cpu} overran; the test needs every event"
        );
        entries.insert(cpu, n);
        let p = dir.join(format!("cpu{cpu}.raw"));
        read_pages(
            &inst.dir().join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")),
            &p,
        );
        let mut c = CpuData::new(cpu, p);
        c.stats = Some(stats);
        cpu_data.push(c);
    }
    let meta = host_meta(&inst);
    let clock = read_text(&inst, "trace_clock")
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap()
        .to_string();
    let buffers = [BufferData {
        name: inst.name().to_string(),
        clock,
        cpus: cpu_data,
    }];
    drop(inst);
    assert!(entries.values().sum::<u64>() >= marks.len() as u64);

    let mut first: Option<String> = None;
    for (version, compression, tag) in ALL_FORMATS {
        let ours = dir.join(format!("cap-{tag}.dat"));
        let opts = WriteOptions {
            version,
            compression,
        };
        let summary = write_trace_dat(&ours, &meta, &buffers, &opts).expect("write");
        assert!(summary.buffers[0].cpus.iter().all(|c| c.partial_tail == 0));
        let text = report(&ours);
        // Every event line carries "[NNN]"; these events print one line each.
        let mut per_cpu: BTreeMap<u32, u64> = entries.keys().map(|&c| (c, 0)).collect();
        for line in text.lines() {
            if let Some(i) = line.find(" [") {
                if let Some(cpu) = line[i + 2..].get(..3).and_then(|c| c.parse::<u32>().ok()) {
                    *per_cpu.entry(cpu).or_default() += 1;
                }
            }
        }
        assert_eq!(per_cpu, entries, "{tag}: events per CPU");
        // The stacktrace/userstacktrace options add these after each event.
        for (needle, what) in [
            ("kernel_stack:         <stack trace >", "kernel stacks"),
            ("user_stack:           \t=> 0x", "user stacks"),
        ] {
            assert!(
                text.matches(needle).count() >= marks.len(),
                "{tag}: {what} missing"
            );
        }
        for m in &marks {
            let needle = format!("tracing_mark_write: {}", m.trim_end());
            assert_eq!(text.matches(&needle).count(), 1, "{tag}: marker {m:?}");
        }
        match &first {
            None => first = Some(text),
            Some(f) => assert!(f == &text, "{tag}: report differs from v7 none"),
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Copies whole pages from a `trace_pipe_raw` file until it has no more.
fn read_pages(src: &Path, dst: &Path) {
    // O_NONBLOCK: the same value on every architecture Debian's tracefs
    // tests run on (x86, arm, riscv).
    const O_NONBLOCK: i32 = 0o4000;
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(src)
        .unwrap_or_else(|e| panic!("open {}: {e}", src.display()));
    let mut out = fs::File::create(dst).unwrap();
    let mut page = vec![0u8; 4096];
    loop {
        match f.read(&mut page) {
            Ok(0) => break,
            Ok(n) => {
                assert_eq!(n, page.len(), "short read from {}", src.display());
                out.write_all(&page).unwrap();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("read {}: {e}", src.display()),
        }
    }
}
