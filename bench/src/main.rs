//! `ustack-bench`: the small programs `bench/run.sh` needs.
//!
//! * `load`: a fixed syscall load, one thread pinned per CPU, optionally
//!   rate-limited or run until a tracefs instance's buffers are full.
//! * `decode FILE`: raw decoding speed of `tracedata` (open, then every
//!   event of every buffer merged over the CPUs).
//! * `stitch FILE`: indexing and stitching speed of `stitch`.
//! * `tui FILE`: time until the TUI holds the whole index and has drawn
//!   it, headless (open, index, refresh, render into ratatui's
//!   `TestBackend`).
//! * `tui-first FILE`: time until the TUI's first frame as `tracer-cli tui`
//!   draws it, over the first events, before the whole file is indexed.
//! * `gen-cookie OUT GROUPS none|zstd`: a synthetic trace.dat with cookie
//!   and deferred user stack events (`ustack_testdata::demo`).
//! * `gen-symbols OUT GROUPS DISTINCT`, `symbolize FILE`,
//!   `symbolize-nocache FILE`: user stacks from DISTINCT libc functions,
//!   and their symbolization with and without the symbol cache
//!   ([`symbols`], `bench/symbols.sh`).
//!
//! Timers print one Markdown table row each, so that `run.sh` can paste
//! them into its result table. Errors print one line and exit 1.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{FileVersion, WriteOptions};
use ustack_tracedata::{Item, TraceFile};

mod symbols;

type Res<T> = Result<T, String>;

const USAGE: &str = "usage: ustack-bench load [--secs S] [--rate OPS_PER_CPU_PER_S] [--mix] [--until-full INSTANCE_DIR]
       ustack-bench decode FILE [ROUNDS]
       ustack-bench stitch FILE [ROUNDS]
       ustack-bench tui FILE [ROUNDS]
       ustack-bench tui-first FILE [ROUNDS]
       ustack-bench gen-cookie OUT GROUPS none|zstd
       ustack-bench gen-symbols OUT GROUPS DISTINCT
       ustack-bench symbolize|symbolize-nocache FILE [ROUNDS]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("load") => load(&args[1..]),
        Some("decode") => timed(&args[1..], decode),
        Some("stitch") => timed(&args[1..], stitch_load),
        Some("tui") => timed(&args[1..], tui_first_frame),
        Some("tui-first") => timed(&args[1..], tui_first_screen),
        Some("gen-cookie") => gen_cookie(&args[1..]),
        Some("gen-symbols") => symbols::gen(&args[1..]),
        Some("symbolize") => timed(&args[1..], symbols::cached),
        Some("symbolize-nocache") => timed(&args[1..], symbols::uncached),
        _ => Err(USAGE.to_string()),
    };
    if let Err(e) = res {
        eprintln!("ustack-bench: {e}");
        std::process::exit(1);
    }
}

/// What one timed round measured: events handled, a checksum (so the work
/// cannot be optimized away and runs can be compared) and a detail text.
struct Round {
    events: u64,
    check: u64,
    detail: String,
}

/// Runs `f` on FILE for ROUNDS rounds (default 5) and prints the row
/// `| FILE | events | min ms | median ms | M events/s (median) | detail |`.
fn timed(args: &[String], f: fn(&Path) -> Res<Round>) -> Res<()> {
    let path = PathBuf::from(args.first().ok_or(USAGE)?);
    let rounds: usize = match args.get(1) {
        Some(r) => r.parse().map_err(|_| format!("bad round count {r:?}"))?,
        None => 5,
    };
    let mut times = Vec::new();
    let mut first: Option<Round> = None;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let r = f(&path)?;
        times.push(t.elapsed().as_secs_f64());
        if let Some(p) = &first {
            if (p.events, p.check) != (r.events, r.check) {
                return Err(format!("{}: rounds disagree", path.display()));
            }
        } else {
            first = Some(r);
        }
    }
    times.sort_by(f64::total_cmp);
    let (min, med) = (times[0], times[times.len() / 2]);
    let r = first.ok_or("no round")?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    println!(
        "| {name} | {} | {:.1} | {:.1} | {:.2} | {}, peak RSS {} MiB |",
        r.events,
        min * 1e3,
        med * 1e3,
        r.events as f64 / med / 1e6,
        r.detail,
        peak_rss_mib()
    );
    if std::env::var_os("USTACK_BENCH_RSS").is_some() {
        let st = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        for l in st
            .lines()
            .filter(|l| l.starts_with("Rss") || l.starts_with("VmHWM"))
        {
            eprintln!("{l}");
        }
    }
    Ok(())
}

/// The peak resident set of this process (`VmHWM`), in MiB.
fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn open(path: &Path) -> Res<TraceFile> {
    TraceFile::open(path).map_err(|e| e.to_string())
}

/// Opens the file and decodes every event of every buffer, merged over the
/// CPUs, reading each event's type and pid.
fn decode(path: &Path) -> Res<Round> {
    let t = Instant::now();
    let f = open(path)?;
    let opened = t.elapsed();
    let (mut events, mut lost, mut check) = (0u64, 0u64, 0u64);
    for b in f.buffers() {
        for it in f.records(b) {
            match it.map_err(|e| e.to_string())? {
                Item::Event(r) => {
                    events += 1;
                    check = check
                        .wrapping_mul(31)
                        .wrapping_add(u64::from(r.common_type().unwrap_or(0)))
                        .wrapping_add(r.common_pid().unwrap_or(0) as u64)
                        .wrapping_add(r.ts);
                }
                Item::Lost { .. } => lost += 1,
            }
        }
    }
    Ok(Round {
        events,
        check,
        detail: format!(
            "open {:.1} ms, {lost} loss marks, {} MiB of event data",
            opened.as_secs_f64() * 1e3,
            f.buffers()
                .iter()
                .flat_map(|b| &b.cpus)
                .map(|c| c.data_size())
                .sum::<usize>()
                >> 20
        ),
    })
}

/// Opens the file, indexes and stitches the buffer `tracer-cli tui` and
/// `report --stacks` pick (the first one that holds data).
fn stitch_load(path: &Path) -> Res<Round> {
    let f = open(path)?;
    let buf = ustack_stitch::file::buffer(&f, None).map_err(|e| e.to_string())?;
    let idx = ustack_stitch::file::load(&f, buf);
    if let Some(e) = &idx.error {
        return Err(format!("{}: {e}", path.display()));
    }
    let groups = idx.stitched.groups.len() as u64;
    Ok(Round {
        events: idx.events.len() as u64,
        check: groups,
        detail: format!("{groups} groups"),
    })
}

/// The TUI over the whole index, drawn once on a 200x50 screen.
fn tui_first_frame(path: &Path) -> Res<Round> {
    let size = (200, 50);
    let (app, src) = ustack_tui::open(path, None, size).map_err(|e| e.to_string())?;
    drawn(app, src, size)
}

/// What `tracer-cli tui` does before its first frame, on a 200x50 screen:
/// the whole file is indexed afterwards, in the background (stopped here).
fn tui_first_screen(path: &Path) -> Res<Round> {
    let size = (200, 50);
    let select = ustack_tui::Selection::default();
    let (app, src, loader) =
        ustack_tui::open_first(path, None, size, &select).map_err(|e| e.to_string())?;
    let r = drawn(app, src, size);
    drop(loader);
    r
}

/// Refreshes and draws `app`; the round counts the non-blank cells.
fn drawn(
    mut app: ustack_tui::app::App,
    mut src: ustack_tui::source::FileSource,
    size: (u16, u16),
) -> Res<Round> {
    app.refresh(&mut src);
    let mut term = Terminal::new(TestBackend::new(size.0, size.1)).map_err(|e| e.to_string())?;
    ustack_tui::draw(&mut term, &mut app, &mut src).map_err(|e| e.to_string())?;
    // The screen must show the file: count its non-blank cells.
    let cells = term
        .backend()
        .buffer()
        .content()
        .iter()
        .filter(|c| c.symbol() != " ")
        .count() as u64;
    Ok(Round {
        events: app.idx.events.len() as u64,
        check: cells,
        detail: format!(
            "{} groups, {cells} cells drawn",
            app.idx.stitched.groups.len()
        ),
    })
}

fn gen_cookie(args: &[String]) -> Res<()> {
    let [out, groups, comp] = args else {
        return Err(USAGE.to_string());
    };
    let groups: usize = groups
        .parse()
        .map_err(|_| format!("bad group count {groups:?}"))?;
    let compression = match comp.as_str() {
        "none" => Compression::None,
        "zstd" => Compression::Zstd,
        c => return Err(format!("unknown compression {c:?}")),
    };
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression,
    };
    ustack_testdata::demo(groups, 2)
        .write_with(Path::new(out), &opts)
        .map_err(|e| e.to_string())
}

/// Load options.
struct LoadOpts {
    secs: f64,
    rate: Option<u64>,
    mix: bool,
    until_full: Option<PathBuf>,
}

fn load(args: &[String]) -> Res<()> {
    let mut o = LoadOpts {
        secs: 1.0,
        rate: None,
        mix: false,
        until_full: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--secs" => o.secs = val()?.parse().map_err(|_| "bad --secs")?,
            "--rate" => o.rate = Some(val()?.parse().map_err(|_| "bad --rate")?),
            "--mix" => o.mix = true,
            "--until-full" => o.until_full = Some(PathBuf::from(val()?)),
            _ => return Err(USAGE.to_string()),
        }
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let threads: Vec<_> = (0..ncpu)
        .map(|cpu| {
            let stop = stop.clone();
            let (rate, mix) = (o.rate, o.mix);
            std::thread::spawn(move || worker(cpu, &stop, rate, mix))
        })
        .collect();
    let limit = Duration::from_secs_f64(o.secs);
    let mut full = false;
    while start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(10));
        if let Some(dir) = &o.until_full {
            if all_full(dir, ncpu)? {
                full = true;
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    let secs = start.elapsed().as_secs_f64();
    if o.until_full.is_some() && !full {
        return Err(format!("buffers not full after {secs:.1} s"));
    }
    println!("{ops} {secs:.3}");
    Ok(())
}

/// True when every CPU of the instance has overwritten events (the buffer
/// went round once: it is full).
fn all_full(dir: &Path, ncpu: usize) -> Res<bool> {
    for cpu in 0..ncpu {
        let p = dir.join(format!("per_cpu/cpu{cpu}/stats"));
        let s = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let overrun = s
            .lines()
            .find_map(|l| l.strip_prefix("overrun:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if overrun == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One pinned thread of the load: `getppid` (or a mix of syscalls that also
/// makes sched and timer events), optionally held to `rate` ops/s. Returns
/// the number of ops done.
fn worker(cpu: usize, stop: &AtomicBool, rate: Option<u64>, mix: bool) -> u64 {
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        // Unpinned on failure: the load still runs, only less evenly.
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
    let zero = std::fs::File::open("/dev/zero").ok();
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .ok();
    let start = Instant::now();
    let mut buf = [0u8; 64];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..100 {
            std::hint::black_box(nix::unistd::getppid());
            n += 1;
            if mix {
                use std::io::{Read, Write};
                if let Some(mut z) = zero.as_ref() {
                    let _ = z.read(&mut buf);
                }
                if let Some(mut w) = null.as_ref() {
                    let _ = w.write(&buf);
                }
                if n % 64 == 0 {
                    let _ = std::fs::metadata("/etc/hostname");
                }
                if n % 256 == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        if let Some(r) = rate {
            // Hold the pace: sleep until the schedule catches up.
            let due = Duration::from_secs_f64(n as f64 / r as f64);
            let el = start.elapsed();
            if due > el {
                std::thread::sleep(due - el);
            }
        }
    }
    n
}
