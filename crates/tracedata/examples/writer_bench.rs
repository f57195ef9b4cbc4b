//! Throughput of the trace.dat writer (a benchmark, not a test).
//!
//! `cargo run --release -p tracedata --example writer_bench [MB_PER_CPU [CPUS]]`
//!
//! Builds synthetic ring-buffer pages (sched_switch-sized events with
//! pseudo-random pids and timestamps, so zstd has real work to do), then
//! writes them as v7 none, v7 zstd and v6 and prints MB/s of page data.
//! When trace-cmd is installed it also times `trace-cmd convert` from our
//! uncompressed file to zstd, as a reference for the compression cost.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, FileVersion, TraceMeta, WriteOptions,
};

const PAGE: usize = 4096;

fn pages(cpu: u32, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * PAGE);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(cpu);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ts = 1_000_000_000u64;
    for _ in 0..n {
        let start = out.len();
        out.extend_from_slice(&ts.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // commit, set below
                                                    // 64-byte payloads (like sched_switch): type_len 16.
        while out.len() - start + 68 <= PAGE {
            let delta = (next() % 5000) as u32 + 100;
            ts += u64::from(delta);
            out.extend_from_slice(&(16u32 | (delta << 5)).to_le_bytes());
            out.extend_from_slice(&316u16.to_le_bytes());
            out.extend_from_slice(&[1, 0]);
            let pid = (next() % 3000) as i32;
            out.extend_from_slice(&pid.to_le_bytes());
            out.extend_from_slice(b"kworker/u8:1\0\0\0\0");
            out.extend_from_slice(&pid.to_le_bytes());
            out.extend_from_slice(&120i32.to_le_bytes());
            out.extend_from_slice(&(next() % 4).to_le_bytes());
            out.extend_from_slice(b"swapper/0\0\0\0\0\0\0\0");
            out.extend_from_slice(&0i32.to_le_bytes());
            out.extend_from_slice(&120i32.to_le_bytes());
        }
        let commit = (out.len() - start - 16) as u64;
        out[start + 8..start + 16].copy_from_slice(&commit.to_le_bytes());
        out.resize(start + PAGE, 0);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let cpus: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2);
    let dir = std::env::temp_dir().join(format!("tracedata-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let n = mb * 1024 * 1024 / PAGE;
    let mut cpu_data = Vec::new();
    for cpu in 0..cpus {
        let p = dir.join(format!("cpu{cpu}"));
        fs::write(&p, pages(cpu, n)).unwrap();
        cpu_data.push(CpuData::new(cpu, p));
    }
    let total = (n * PAGE) as f64 * f64::from(cpus) / 1e6;
    let meta = TraceMeta {
        cpu_count: cpus,
        ..TraceMeta::default()
    };
    let buffers = [BufferData {
        name: String::new(),
        clock: "local".into(),
        cpus: cpu_data,
    }];
    println!("page data: {total:.0} MB on {cpus} CPUs");
    for (version, compression, tag) in [
        (FileVersion::V7, Compression::None, "v7 none"),
        (FileVersion::V7, Compression::Zstd, "v7 zstd"),
        (FileVersion::V6, Compression::None, "v6"),
    ] {
        let out = dir.join(format!("{}.dat", tag.replace(' ', "-")));
        let t = Instant::now();
        let s = write_trace_dat(
            &out,
            &meta,
            &buffers,
            &WriteOptions {
                version,
                compression,
            },
        )
        .unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{tag:8} {:8.1} MB/s  {:7.3} s  file {:7.1} MB",
            total / secs,
            secs,
            s.file_size as f64 / 1e6
        );
    }
    if Command::new("trace-cmd").arg("-h").output().is_ok() {
        let t = Instant::now();
        let st = Command::new("trace-cmd")
            .args(["convert", "--compression", "zstd", "-i"])
            .arg(dir.join("v7-none.dat"))
            .arg("-o")
            .arg(dir.join("tc-zstd.dat"))
            .output()
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        let size = fs::metadata(dir.join("tc-zstd.dat"))
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "trace-cmd convert to zstd: {:8.1} MB/s  {secs:7.3} s  file {:7.1} MB  ({})",
            total / secs,
            size as f64 / 1e6,
            if st.status.success() { "ok" } else { "failed" }
        );
    }
    let _ = fs::remove_dir_all(Path::new(&dir));
}
