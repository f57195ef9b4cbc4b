//! The stitcher on arbitrary trace.dat bytes: index and stitch the first
//! buffer with data, then build every group's detail view, with the
//! printer's generic event text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ustack_stitch::{file, view};
use ustack_tracedata::TraceFile;

fuzz_target!(|data: &[u8]| {
    let Ok(f) = TraceFile::from_bytes("fuzz.dat", data.to_vec()) else {
        return;
    };
    let Ok(buf) = file::buffer(&f, None) else {
        return;
    };
    let idx = file::load(&f, buf);
    let mut texts = ustack_printer::text::Texts::generic();
    let mut sym = ustack_symbolize::Symbolizer::default();
    for g in idx.stitched.groups.iter() {
        let _ = view::detail(
            &idx,
            &g,
            |s| file::record(&f, buf, &idx.events[s as usize]),
            &mut texts,
            &mut sym,
        );
    }
});
