//! What the (file, offset) symbol cache saves: a trace of user stacks
//! drawn from a few thousand distinct libc functions (`gen-symbols`), and
//! the symbolization of every user frame of a trace as `report --stacks`
//! does it, with the cache and without (`symbolize`, `symbolize-nocache`).

use std::path::Path;

use ustack_stitch::file;
use ustack_testdata::{Rng, TraceBuilder, DEMO_LIBC};
use ustack_tracedata::writer::{FileVersion, WriteOptions};

use crate::{open, Res, Round};

/// Where the trace maps libc.
const LIBC_BASE: u64 = 0x7f00_0000_0000;
/// Frames per stack.
const DEPTH: usize = 4;

/// Offsets from libc's load base of up to `n` of its functions, spread
/// over the whole list (sorted by address).
fn libc_offsets(n: usize) -> Res<Vec<u64>> {
    use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
    let data = std::fs::read(DEMO_LIBC).map_err(|e| format!("{DEMO_LIBC}: {e}"))?;
    let f = object::File::parse(&*data).map_err(|e| format!("{DEMO_LIBC}: {e}"))?;
    let base = f.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
    let mut offs: Vec<u64> = f
        .dynamic_symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 8)
        .map(|s| s.address() - base + 4)
        .collect();
    offs.sort_unstable();
    offs.dedup();
    if offs.is_empty() {
        return Err(format!("{DEMO_LIBC}: no functions"));
    }
    let step = (offs.len() / n.max(1)).max(1);
    Ok(offs.into_iter().step_by(step).take(n).collect())
}

/// `gen-symbols OUT GROUPS DISTINCT`: GROUPS deferred groups of one
/// process, each with a 4-frame user stack drawn from DISTINCT libc
/// functions (uncompressed v7).
pub fn gen(args: &[String]) -> Res<()> {
    let [out, groups, distinct] = args else {
        return Err(crate::USAGE.to_string());
    };
    let groups: usize = groups
        .parse()
        .map_err(|_| format!("bad count {groups:?}"))?;
    let distinct: usize = distinct
        .parse()
        .map_err(|_| format!("bad count {distinct:?}"))?;
    let offs = libc_offsets(distinct)?;
    let mut t = TraceBuilder::new(2);
    let pid = 500;
    t.comm(pid, "symbench");
    t.procmap(
        pid as u32,
        "symbench",
        &[(LIBC_BASE, LIBC_BASE + 0x20_0000, DEMO_LIBC)],
    );
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut ts = 1_000_000_000u64;
    for i in 0..groups as u64 {
        let cpu = (i % 2) as u32;
        let cookie = ((i + 1) << 32) | u64::from(cpu + 1);
        ts += 1_000;
        t.sys_enter(cpu, ts, pid, 0);
        t.cookie(cpu, ts, pid, cookie);
        let stack: Vec<u64> = (0..DEPTH)
            .map(|_| LIBC_BASE + offs[rng.below(offs.len() as u64) as usize])
            .collect();
        t.unwind_stack(cpu, ts + 500, pid, cookie, &stack);
    }
    let opts = WriteOptions {
        version: FileVersion::V7,
        compression: ustack_tracedata::compress::Compression::None,
    };
    t.write_with(Path::new(out), &opts)
        .map_err(|e| e.to_string())
}

/// Symbolizes every user frame of the file's first buffer with data, as
/// `report --stacks` does (each stack at its time).
fn symbolize(path: &Path, cache: bool) -> Res<Round> {
    let f = open(path)?;
    let buf = file::buffer(&f, None).map_err(|e| e.to_string())?;
    let idx = file::load(&f, buf);
    let mut sym = file::symbolizer(&f);
    if !cache {
        sym = sym.without_cache();
    }
    let (mut frames, mut named) = (0u64, 0u64);
    for g in idx.stitched.groups.iter() {
        let Some(u) = g.user_stack else { continue };
        let ts = Some(idx.cpu_ts(u.seq).1);
        for (i, &a) in idx.stitched.stacks.get(u.stack).iter().enumerate() {
            frames += 1;
            named += u64::from(sym.user_at(g.pid, ts, a, i > 0).symbol.is_some());
        }
    }
    Ok(Round {
        events: frames,
        check: named,
        detail: format!("{frames} frames, {named} with a symbol"),
    })
}

/// [`symbolize`] with the cache.
pub fn cached(path: &Path) -> Res<Round> {
    symbolize(path, true)
}

/// [`symbolize`] without the cache.
pub fn uncached(path: &Path) -> Res<Round> {
    symbolize(path, false)
}
