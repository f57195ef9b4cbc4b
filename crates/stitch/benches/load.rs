//! Indexing speed: `cargo bench -p stitch --bench load [-- GROUPS]`.
//!
//! Writes a demo trace of about 8 records per group (default 125 000
//! groups, about a million records) and times opening it, indexing and
//! stitching it, and resolving the first group, as the TUI does on start.

use std::time::Instant;

fn main() {
    let groups: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(125_000);
    let dir = std::env::temp_dir().join(format!("stitch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.dat");
    let t = Instant::now();
    ustack_testdata::demo(groups, 4).write(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    println!("write: {groups} groups, {size} bytes in {:?}", t.elapsed());

    for round in 0..3 {
        let t = Instant::now();
        let f = ustack_tracedata::TraceFile::open(&path).unwrap();
        let opened = t.elapsed();
        let buf = ustack_stitch::file::buffer(&f, None).unwrap();
        let idx = ustack_stitch::file::load(&f, buf);
        let loaded = t.elapsed();
        let mut sym = ustack_stitch::file::symbolizer(&f);
        let g = idx.stitched.groups.get(0);
        let d = ustack_stitch::view::detail(
            &idx,
            &g,
            |s| ustack_stitch::file::record(&f, buf, &idx.events[s as usize]),
            &mut ustack_stitch::view::NamesOnly,
            &mut sym,
        );
        let first = t.elapsed();
        println!(
            "round {round}: {} events, {} groups: open {:?}, index+stitch {:?} ({:.0} ns/event), first detail {:?} ({} frames); event index {} MiB{}",
            idx.events.len(),
            idx.stitched.groups.len(),
            opened,
            loaded - opened,
            (loaded - opened).as_nanos() as f64 / idx.events.len().max(1) as f64,
            first - loaded,
            d.user_frames.len(),
            std::mem::size_of_val(&idx.events[..]) >> 20,
            if idx.events.spilled() { " (in a temporary file)" } else { "" },
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
