//! The trace.dat reader on arbitrary bytes: open, then read everything a
//! consumer reads (formats, stats, options, kallsyms, every record of every
//! buffer).
//! Any panic, abort, or allocation beyond libFuzzer's -rss_limit_mb fails.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ustack_tracedata::{Item, TraceFile};

fuzz_target!(|data: &[u8]| {
    let Ok(f) = TraceFile::from_bytes("fuzz.dat", data.to_vec()) else {
        return;
    };
    let _ = f.formats().check();
    let _ = f.buffer_stats();
    let _ = (f.clock(), f.ts_offset(true), f.clock_counts_ns(), f.procmaps());
    let _ = f.kallsyms();
    for b in f.buffers() {
        for it in f.records(b) {
            if let Ok(Item::Event(r)) = it {
                if let Some(fmt) = f.formats().of(&r) {
                    for field in &fmt.fields {
                        let _ = r.u64_field(fmt, &field.name);
                    }
                }
            }
        }
    }
});
