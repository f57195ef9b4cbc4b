//! The ring-buffer page decoder on arbitrary bytes: the first byte picks the
//! header layout (8-byte or 4-byte commit), the rest is one page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ustack_tracedata::header::HeaderPage;
use ustack_tracedata::page::build::HEADER_PAGE;
use ustack_tracedata::page::Page;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, page)) = data.split_first() else {
        return;
    };
    let text = if kind & 1 == 0 {
        HEADER_PAGE.to_string()
    } else {
        HEADER_PAGE.replace(
            "local_t commit;\toffset:8;\tsize:8;",
            "local_t commit;\toffset:8;\tsize:4;",
        )
    };
    let Ok(hp) = HeaderPage::parse(&text) else {
        return;
    };
    if let Ok(p) = Page::new(page, &hp) {
        for e in p.events() {
            if e.is_err() {
                break;
            }
        }
    }
});
