//! The event format parser (and the header parsers) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ustack_tracedata::format::{self, FormatLines};
use ustack_tracedata::header::{HeaderEvent, HeaderPage};
use ustack_tracedata::EventFormat;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(f) = EventFormat::parse("fuzz", &text) {
        for field in &f.fields {
            let _ = (field.elem_size(8), field.is_string());
        }
    }
    let _ = format::name_and_id("fuzz", &text);
    let l = FormatLines::new(&text);
    let _ = (l.fields().count(), l.print_fmt());
    let _ = HeaderPage::parse(&text);
    let _ = HeaderEvent::parse(&text);
});
