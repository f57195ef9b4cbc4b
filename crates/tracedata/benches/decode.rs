//! Decoding throughput of the reader: `cargo bench -p tracedata --bench decode`.
//!
//! With `TRACEDATA_BENCH_FILE=path` it times that file; otherwise it writes
//! a synthetic file (2 CPUs x `TRACEDATA_BENCH_MB` MiB of pages, default 64,
//! of 24-byte events) with the crate's writer into a temporary directory.
//! It reports the open time and the time to iterate every event merged over
//! all CPUs (touching each event's pid), best of 3 runs.

use std::path::PathBuf;
use std::time::Instant;

use ustack_tracedata::page::build::PageBuilder;
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, FileVersion, TraceMeta, WriteOptions,
};
use ustack_tracedata::{Item, TraceFile};

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

const EV_FORMAT: &str = "name: ev\nID: 42\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:u64 other;\toffset:16;\tsize:8;\tsigned:0;\n\n\
print fmt: \"value=%llu\", REC->value\n";

fn synth(dir: &std::path::Path, mb: usize) -> PathBuf {
    let pages = mb * 1024 * 1024 / 4096;
    let mut cpus = Vec::new();
    for cpu in 0..2u32 {
        let path = dir.join(format!("cpu{cpu}"));
        let mut data = Vec::with_capacity(pages * 4096);
        let mut ts = 1_000_000u64 + u64::from(cpu) * 7;
        for p in 0..pages {
            let mut b = PageBuilder::new(ts);
            let mut used = 0;
            let mut i = 0u64;
            while used + 28 <= 4080 {
                let mut pl = [0u8; 24];
                pl[0..2].copy_from_slice(&42u16.to_le_bytes());
                pl[4..8].copy_from_slice(&(1000 + (i % 50) as i32).to_le_bytes());
                pl[8..16].copy_from_slice(&(p as u64 * 1000 + i).to_le_bytes());
                b = b.event(if i == 0 { 0 } else { 13 }, &pl, false);
                used += 28;
                i += 1;
            }
            ts += 13 * (i - 1) + 11;
            data.extend_from_slice(&b.finish(4096).expect("page fits"));
        }
        std::fs::write(&path, &data).expect("write cpu data");
        cpus.push(CpuData::new(cpu, path));
    }
    let meta = TraceMeta {
        header_page: HEADER_PAGE.as_bytes().to_vec(),
        event_systems: vec![EventSystem {
            name: "bench".into(),
            formats: vec![EV_FORMAT.as_bytes().to_vec()],
        }],
        cpu_count: 2,
        ..TraceMeta::default()
    };
    let out = dir.join("bench.dat");
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: ustack_tracedata::compress::Compression::None,
    };
    let buffers = [BufferData {
        name: String::new(),
        clock: "local".into(),
        cpus,
    }];
    write_trace_dat(&out, &meta, &buffers, &opts).expect("write bench file");
    out
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing
    // and should stay quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let tmp = std::env::temp_dir().join(format!("tracedata_bench_{}", std::process::id()));
    let path = match std::env::var_os("TRACEDATA_BENCH_FILE") {
        Some(p) => PathBuf::from(p),
        None => {
            std::fs::create_dir_all(&tmp).expect("temp dir");
            let mb = std::env::var("TRACEDATA_BENCH_MB")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(if quick { 1 } else { 64 });
            synth(&tmp, mb)
        }
    };
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut best_open = f64::MAX;
    let mut best_iter = f64::MAX;
    let (mut events, mut lost, mut sum) = (0u64, 0u64, 0i64);
    for _ in 0..3 {
        let t = Instant::now();
        let f = TraceFile::open(&path).expect("open");
        best_open = best_open.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        (events, lost, sum) = (0, 0, 0);
        for b in f.buffers() {
            for it in f.records(b) {
                match it.expect("decode") {
                    Item::Event(r) => {
                        events += 1;
                        sum += i64::from(r.common_pid().unwrap_or(0));
                    }
                    Item::Lost { .. } => lost += 1,
                }
            }
        }
        best_iter = best_iter.min(t.elapsed().as_secs_f64());
    }
    println!(
        "decode {}: {:.1} MiB, {} events, {} lost markers (checksum {})",
        path.display(),
        size as f64 / (1 << 20) as f64,
        events,
        lost,
        sum
    );
    println!("  open:    {:.3} ms", best_open * 1e3);
    println!(
        "  iterate: {:.3} ms = {:.1} M events/s, {:.0} MiB/s",
        best_iter * 1e3,
        events as f64 / best_iter / 1e6,
        size as f64 / (1 << 20) as f64 / best_iter
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
