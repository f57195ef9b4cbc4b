//! The print-format screen on arbitrary format text. Formats it accepts
//! whose print fmt has no function calls are also handed to libtraceevent
//! and one record is printed: what the screen lets through must not crash
//! or hang it. (Helpers such as __print_flags reach parts of libtraceevent
//! the screen does not claim to cover.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use ustack_traceevent::{screen, Print, Record, Tep, TraceSeq};

fuzz_target!(|data: &[u8]| {
    let Ok(()) = screen::check(data) else {
        return;
    };
    let text = String::from_utf8_lossy(data);
    let Some(print) = text.lines().find_map(|l| l.strip_prefix("print fmt:")) else {
        return;
    };
    if print.contains('(') || print.contains('[') || text.len() > 4096 {
        return;
    }
    let Ok(mut tep) = Tep::new(8, 4096) else {
        return;
    };
    if tep.parse_event(data, "fuzz").is_err() {
        return;
    }
    let Ok(f) = ustack_tracedata::EventFormat::parse("fuzz", &text) else {
        return;
    };
    // Fields end within 64 KiB (screen::MAX_FIELD_END); so do __data_loc
    // offsets (16 bits).
    let mut rec = vec![0u8; 2 * screen::MAX_FIELD_END];
    rec[..2].copy_from_slice(&f.id.to_le_bytes());
    let mut seq = TraceSeq::new();
    tep.print(&mut seq, &mut Record::new(&rec, 1, 0), Print::Info);
});
