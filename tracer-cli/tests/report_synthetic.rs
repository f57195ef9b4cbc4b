//! `tracer-cli report` against `trace-cmd report` on synthetic files: pages
//! built by hand (time extends, padding, long events, lost events with and
//! without a count, equal timestamps across CPUs), a top buffer plus two
//! instances, written by the crate's writer as v6, v7 and v7+zstd. Needs
//! trace-cmd but not root; without trace-cmd the tests print `SKIP: ...`
//! (and fail under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use ustack_tracedata::compress::Compression;
use ustack_tracedata::page::build::{
    PageBuilder, COMMON_FIELDS as COMMON, HEADER_EVENT, HEADER_PAGE,
};
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, FileVersion, TraceMeta, WriteOptions,
};

const PAGE: usize = 4096;

fn tick_format() -> String {
    format!(
        "name: tick\nID: 600\nformat:\n{COMMON}\tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:int delta;\toffset:16;\tsize:4;\tsigned:1;\n\n\
print fmt: \"value=%llu delta=%d\", REC->value, REC->delta\n"
    )
}

fn name_format() -> String {
    format!(
        "name: a_rather_long_event_name\nID: 601\nformat:\n{COMMON}\
\tfield:__data_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;\n\n\
print fmt: \"msg=%s\", __get_str(msg)\n"
    )
}

/// A stack event whose format has 4 callers, stored with fewer (as the
/// kernel stores a `kernel_stack`): libtraceevent reads the array whole,
/// into the bytes of the next record on the page.
fn short_stack_format() -> String {
    format!(
        "name: short_stack\nID: 602\nformat:\n{COMMON}\
\tfield:unsigned long caller[4];\toffset:8;\tsize:32;\tsigned:0;\n\n\
print fmt: \"last=%lx\", REC->caller[3]\n"
    )
}

fn short_stack(pid: i32, callers: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&602u16.to_le_bytes());
    p.extend_from_slice(&[1, 0]);
    p.extend_from_slice(&pid.to_le_bytes());
    for c in callers {
        p.extend_from_slice(&c.to_le_bytes());
    }
    p
}

fn tick(pid: i32, value: u64, delta: i32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&600u16.to_le_bytes());
    p.extend_from_slice(&[1, 0]);
    p.extend_from_slice(&pid.to_le_bytes());
    p.extend_from_slice(&value.to_le_bytes());
    p.extend_from_slice(&delta.to_le_bytes());
    p
}

fn named(pid: i32, msg: &str) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&601u16.to_le_bytes());
    p.extend_from_slice(&[0, 1]);
    p.extend_from_slice(&pid.to_le_bytes());
    let len = msg.len() as u32 + 1;
    p.extend_from_slice(&(12u32 | len << 16).to_le_bytes());
    p.extend_from_slice(msg.as_bytes());
    p.push(0);
    p
}

/// Per-CPU page data of one buffer; `base` shifts all timestamps.
fn cpu_data(base: u64, cpu: u32) -> Vec<u8> {
    let pid = 100 + cpu as i32;
    let mut out = Vec::new();
    // Page 1: ordinary events, one at the same time as the other CPU.
    let mut b = PageBuilder::new(base + 1_000_000_000);
    for i in 0..20u64 {
        b = b.event(
            if i == 0 { 0 } else { 1_000 },
            &tick(pid, i, -(i as i32)),
            false,
        );
        if i == 4 {
            // Two of its four callers stored, then the next tick.
            b = b.event(500, &short_stack(pid, &[0xffffffff81000010, 0x1234]), false);
        }
    }
    b = b.event(17, &named(pid, "same time on both cpus"), true);
    out.extend(b.finish(PAGE).unwrap());
    // Page 2: lost events with a count, a time extend, padding, a long event.
    let b = PageBuilder::new(base + 3_000_000_000 + u64::from(cpu))
        .missed(Some(40 + u64::from(cpu)))
        .event(0, &tick(pid, 1000, 5), false)
        .time_extend(5_000_000_000)
        .event(3, &named(pid + 1, "after a time extend"), false)
        .padding(2, 24)
        .event(9, &tick(0, 1001, 6), true);
    out.extend(b.finish(PAGE).unwrap());
    // Page 3: lost events without a count.
    let b = PageBuilder::new(base + 9_000_000_000)
        .missed(None)
        .event(0, &tick(pid, 2000, 7), false)
        .event(1, &named(77, "unknown pid"), false);
    out.extend(b.finish(PAGE).unwrap());
    out
}

fn trace_cmd_available() -> bool {
    if Command::new("trace-cmd").arg("--help").output().is_ok() {
        return true;
    }
    ustack_testdata::skip_unless_ci("needs trace-cmd");
    false
}

fn write(dir: &Path, name: &str, opts: WriteOptions, instances: &[&str], top: bool) -> PathBuf {
    write_with(dir, name, opts, instances, top, |_| {})
}

/// [`write`] with the metadata changed by `edit` first.
fn write_with(
    dir: &Path,
    name: &str,
    opts: WriteOptions,
    instances: &[&str],
    top: bool,
    edit: impl FnOnce(&mut TraceMeta),
) -> PathBuf {
    let mut meta = TraceMeta {
        page_size: PAGE as u32,
        long_size: 8,
        header_page: HEADER_PAGE.as_bytes().to_vec(),
        header_event: HEADER_EVENT.as_bytes().to_vec(),
        event_systems: vec![EventSystem {
            name: "synth".into(),
            formats: vec![
                tick_format().into_bytes(),
                name_format().into_bytes(),
                short_stack_format().into_bytes(),
            ],
        }],
        kallsyms: b"ffffffff81000000 T _stext\n".to_vec(),
        cmdlines: b"100 worker-zero\n101 w1\n102 a_very_long_comm_name\n".to_vec(),
        trace_clock: Some("[local] global counter".into()),
        cpu_count: 2,
        ..TraceMeta::default()
    };
    edit(&mut meta);
    let mut buffers = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    if top {
        names.push("");
    }
    names.extend_from_slice(instances);
    for (i, bname) in names.iter().enumerate() {
        let mut cpus = Vec::new();
        for cpu in 0..2u32 {
            let p = dir.join(format!("{name}.{i}.cpu{cpu}"));
            std::fs::write(&p, cpu_data(i as u64 * 333_333, cpu)).unwrap();
            let mut c = CpuData::new(cpu, p);
            c.stats = Some(format!(
                "entries: 0\noverrun: {}\ndropped events: 0\n",
                40 + cpu
            ));
            cpus.push(c);
        }
        buffers.push(BufferData {
            name: bname.to_string(),
            clock: "local".into(),
            cpus,
        });
    }
    let out = dir.join(name);
    write_trace_dat(&out, &meta, &buffers, &opts).unwrap();
    out
}

fn run(cmd: &mut Command) -> Vec<u8> {
    let o = cmd.output().expect("run");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn compare(file: &Path, args: &[&str]) -> String {
    // trace-cmd takes its options before the file name.
    let theirs = run(Command::new("trace-cmd").arg("report").args(args).arg(file));
    let ours = run(Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["report", "-i"])
        .arg(file)
        .args(args));
    let (t, o) = (
        String::from_utf8_lossy(&theirs),
        String::from_utf8_lossy(&ours),
    );
    if let Some(i) = t.lines().zip(o.lines()).position(|(a, b)| a != b) {
        panic!(
            "{} {args:?}: line {} differs\ntrace-cmd: {:?}\nours:      {:?}",
            file.display(),
            i + 1,
            t.lines().nth(i).unwrap(),
            o.lines().nth(i).unwrap()
        );
    }
    assert_eq!(
        t.len(),
        o.len(),
        "{} {args:?}: lengths differ",
        file.display()
    );
    t.into_owned()
}

#[test]
fn synthetic_files_report_like_trace_cmd() {
    if !trace_cmd_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("report_synth_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, version, compression) in [
        ("v7.dat", FileVersion::V7, Compression::None),
        ("v7z.dat", FileVersion::V7, Compression::Zstd),
        ("v6.dat", FileVersion::V6, Compression::None),
    ] {
        let opts = WriteOptions {
            version,
            compression,
        };
        // Top buffer plus two instances: prefixes aligned to the longest name.
        let f = write(&dir, name, opts, &["aa", "instance_b"], true);
        let text = compare(&f, &[]);
        for needle in [
            "\ncpus=2\n",
            "CPU:0 [40 EVENTS DROPPED]\n",
            "CPU:1 [41 EVENTS DROPPED]\n",
            "CPU:0 [EVENTS DROPPED]\n",
            "worker-zero-100   [000]",
            "a_very_long_comm_name-102   [001]",
            "<idle>-0     [000]",
            "<...>-77    [001]",
            "a_rather_long_event_name: msg=after a time extend",
            "tick:                 value=0 delta=0",
            "\n        aa: ",
            "\ninstance_b: ",
            "\n              ",
        ] {
            assert!(
                format!("\n{text}").contains(needle),
                "{name}: report lacks {needle:?}"
            );
        }
        // A record stored shorter than its format: raw (`-R`), trace-cmd
        // prints the bytes that follow it on its page as the rest of the
        // array (the next record's header, then its payload: type 600 is
        // `58, 02`); so must we, neither zeros nor our heap.
        let short = "short_stack:          last=0\n";
        assert!(text.contains(short), "{name}: report lacks {short:?}");
        let raw = compare(&f, &["-R"]);
        let next = "caller=ARRAY[10, 00, 00, 81, ff, ff, ff, ff, 34, 12, 00, 00, 00, 00, 00, 00, 05, 7d, 00, 00, 58, 02, 01, 00, 64, 00";
        assert!(raw.contains(next), "{name}: -R lacks {next:?}");
        compare(&f, &["-t"]);
        let lat = compare(&f, &["-l"]);
        assert!(lat.contains("worker-z-100     0"), "latency format");
        compare(&f, &["-l", "-t"]);
        for a in ["--stat", "--uname", "--version"] {
            compare(&f, &[a]);
        }
        // Only the top buffer: no prefixes; filters and CPU selection work
        // in trace-cmd there.
        let top = write(&dir, &format!("top-{name}"), opts, &[], true);
        let t = compare(&top, &[]);
        assert_eq!(
            t.lines().nth(1).unwrap(),
            "     worker-zero-100   [000]     1.000000: tick:                 value=0 delta=0"
        );
        compare(&top, &["--cpu", "1"]);
        compare(&top, &["--cpu", "0,1"]);
        compare(&top, &["-F", "tick"]);
        compare(&top, &["-F", "tick: value > 10"]);
        compare(&top, &["-v", "-F", "tick"]);
        // Only an instance.
        let inst = write(&dir, &format!("inst-{name}"), opts, &["only"], false);
        compare(&inst, &[]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// (file name, cmdlines, kallsyms, texts the report must hold).
type RejectCase<'a> = (&'a str, &'a [u8], &'a [u8], &'a [&'a str]);

#[test]
fn cmdlines_and_kallsyms_libtraceevent_rejects_print_like_trace_cmd() {
    // libtraceevent stops at the first line it cannot parse and keeps the
    // lines before; trace-cmd ignores the failure. A last cmdline cut to its
    // pid is what trace-cmd extract writes when saved_cmdlines grows while
    // it copies it.
    if !trace_cmd_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("report_synth_rej_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: Compression::Zstd,
    };
    let cases: [RejectCase; 4] = [
        (
            "bad-line",
            b"100 worker-zero\nx\n101 w1\n102 a_very_long_comm_name\n",
            b"ffffffff81000000 T _stext\n",
            &["worker-zero-100   [000]", "<...>-101", "<...>-102"],
        ),
        (
            "cut-to-pid",
            b"100 worker-zero\n101 w1\n102",
            b"ffffffff81000000 T _stext\n",
            &["worker-zero-100   [000]", "w1-101", "<...>-102"],
        ),
        (
            "cut-to-pid-space",
            b"100 worker-zero\n101 w1\n102 ",
            b"ffffffff81000000 T _stext\n",
            &["w1-101", "<...>-102"],
        ),
        (
            "bad-kallsyms",
            b"100 worker-zero\n101 w1\n102 a_very_long_comm_name\n",
            b"ffffffff81000000 T _stext\nzzzz\n",
            &["a_very_long_comm_name-102"],
        ),
    ];
    for (name, cmdlines, kallsyms, needles) in cases {
        let f = write_with(&dir, &format!("{name}.dat"), opts, &[], true, |m| {
            m.cmdlines = cmdlines.to_vec();
            m.kallsyms = kallsyms.to_vec();
        });
        let text = compare(&f, &[]);
        for n in needles {
            assert!(text.contains(n), "{name}: report lacks {n:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `trace-cmd report ARGS` and `tracer-cli report ARGS` print the same and
/// exit the same; the output.
fn compare_args(args: &[&str]) -> String {
    let theirs = Command::new("trace-cmd")
        .arg("report")
        .args(args)
        .output()
        .expect("run trace-cmd");
    let ours = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .arg("report")
        .args(args)
        .output()
        .expect("run tracer-cli");
    assert_eq!(
        theirs.status.code(),
        ours.status.code(),
        "{args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let (t, o) = (
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&ours.stdout),
    );
    if let Some(i) = t.lines().zip(o.lines()).position(|(a, b)| a != b) {
        panic!(
            "{args:?}: line {} differs\ntrace-cmd: {:?}\nours:      {:?}",
            i + 1,
            t.lines().nth(i).unwrap(),
            o.lines().nth(i).unwrap()
        );
    }
    assert_eq!(t.len(), o.len(), "{args:?}: lengths differ");
    t.into_owned()
}

/// `--ts-offset` shifts the file named by the `-i` before it, from the
/// second file on (trace-cmd 3.1.6 sets the first file up before it reads
/// the offset), and the shifted file merges at its new times.
#[test]
fn ts_offset_shifts_the_file_before_it_like_trace_cmd() {
    if !trace_cmd_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: Compression::None,
    };
    let a = write(dir.path(), "a.dat", opts, &[], true);
    let b = write(dir.path(), "b.dat", opts, &[], true);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let plain = compare_args(&["-i", a, "-i", b]);
    for args in [
        &["-i", a, "-i", b, "--ts-offset", "1500000"][..],
        &["-i", a, "-i", b, "--ts-offset", "-500000"],
        &["-i", a, "--ts-offset", "700", "-i", b],
        &["-i", a, "-i", b, "--ts-offset", "9", "--ts-offset", "2000"],
        &["-i", a, "-i", b, "--ts-offset", "1500000", "--ts-diff"],
        &["-i", a, "-i", b, "--ts-offset", "1500000", "-t"],
        &["-i", a, "-i", b, "--ts-offset", "1500000", "--raw-ts"],
        &["-i", a, "-i", b, "--ts-offset", "1500000", "--align-ts"],
        &["-i", a, "--ts-offset", "1500000"],
    ] {
        let text = compare_args(args);
        let shifted = args[..4] == ["-i", a, "-i", b] && args[4..].len() == 2;
        if shifted {
            assert_ne!(text, plain, "{args:?} changed nothing");
        }
    }
    // Before any -i: refused by both.
    let o = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["report", "--ts-offset", "5", "-i", a])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "tracer-cli: --ts-offset must come after -i\n"
    );
}
