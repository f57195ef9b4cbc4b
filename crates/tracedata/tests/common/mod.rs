//! What the writer tests share: the sample event's format, the metadata
//! around it, ring-buffer pages of it built byte by byte, and trace-cmd.

use std::path::Path;
use std::process::Command;

use ustack_tracedata::page::build::{HEADER_EVENT, HEADER_PAGE};
use ustack_tracedata::writer::{EventSystem, TraceMeta};

/// Bytes of a ring-buffer page.
pub const PAGE: usize = 4096;
/// Id of the sample event (`ustacktest:sample`).
pub const EVENT_ID: u16 = 500;
/// Events on each sample page.
pub const EVENTS_PER_PAGE: u64 = 100;

/// The format file of an event `name` with id `id`: the common fields and
/// a `u64 value`.
pub fn format_text(name: &str, id: u16) -> String {
    format!(
        "name: {name}
ID: {id}
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;

print fmt: \"value=%llu\", REC->value
"
    )
}

/// The metadata of a trace of the sample event (and an ftrace event), with
/// kallsyms, printk formats, uname and clock; no cmdlines, CPUs or process
/// maps (each test sets its own).
pub fn sample_meta() -> TraceMeta {
    TraceMeta {
        page_size: PAGE as u32,
        long_size: 8,
        header_page: HEADER_PAGE.as_bytes().to_vec(),
        header_event: HEADER_EVENT.as_bytes().to_vec(),
        ftrace_formats: vec![format_text("ustack_ft", 501).into_bytes()],
        event_systems: vec![EventSystem {
            name: "ustacktest".into(),
            formats: vec![format_text("sample", EVENT_ID).into_bytes()],
        }],
        kallsyms: b"ffffffff81000000 T _stext\nffffffff81000100 t helper\n".to_vec(),
        printk_formats: b"0xffffffff82000000 : \"hello %d\\n\"\n".to_vec(),
        cmdlines: Vec::new(),
        uname: Some("Linux testhost 6.18.0 x86_64".into()),
        trace_clock: Some("[local] global counter\n".into()),
        version: None,
        cpu_count: 0,
        procmaps: Vec::new(),
        trace_id: None,
    }
}

/// Page number `p` of `cpu`: `EVENTS_PER_PAGE` sample events of pid 4242
/// (16-byte payloads), 1000 ns apart from the page's time stamp on, the
/// `i`th with the value `value(i)`. Also the time of each event.
pub fn sample_page(cpu: u32, p: u64, value: impl Fn(u64) -> u64) -> (Vec<u8>, Vec<u64>) {
    let base = 1_000_000_000 + p * 1_000_000 + u64::from(cpu) * 7;
    let mut page = Vec::with_capacity(PAGE);
    page.extend_from_slice(&base.to_le_bytes());
    let commit = EVENTS_PER_PAGE * 20;
    page.extend_from_slice(&commit.to_le_bytes());
    let mut times = Vec::new();
    let mut ts = base;
    for i in 0..EVENTS_PER_PAGE {
        let delta = 1000u32;
        ts += u64::from(delta);
        let header = 4u32 | (delta << 5); // type_len 4 = 16-byte payload
        page.extend_from_slice(&header.to_le_bytes());
        page.extend_from_slice(&EVENT_ID.to_le_bytes());
        page.extend_from_slice(&[0, 0]); // flags, preempt count
        page.extend_from_slice(&4242i32.to_le_bytes());
        page.extend_from_slice(&value(i).to_le_bytes());
        times.push(ts);
    }
    page.resize(PAGE, 0);
    (page, times)
}

/// Whether trace-cmd can be run.
pub fn trace_cmd_available() -> bool {
    Command::new("trace-cmd").arg("-h").output().is_ok()
}

/// Runs `trace-cmd ARGS -i path`, which must succeed and print nothing on
/// stderr; returns its stdout.
pub fn trace_cmd_quiet(args: &[&str], path: &Path, tag: &str) -> Vec<u8> {
    let out = Command::new("trace-cmd")
        .args(args)
        .arg("-i")
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{tag}: trace-cmd {args:?}: {:?} stderr:\n{stderr}",
        out.status
    );
    out.stdout
}
