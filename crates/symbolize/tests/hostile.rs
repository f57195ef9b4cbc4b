//! A trace names the files the symbolizer opens: files that are not
//! regular ELF files must neither hang it nor make it read them whole.

use std::sync::mpsc;
use std::time::Duration;

use ustack_symbolize::{AddressSpaces, Symbolizer, Unresolved};
use ustack_tracedata::ProcMap;

/// Peak RSS of this process in KiB.
fn max_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru.ru_maxrss
    }
}

/// Symbolizes one address in a process mapping `path` at 0x400000, in a
/// thread, and fails if that takes more than 20 s.
fn lookup(path: &str) -> (Option<String>, Option<Unresolved>) {
    let text = format!("64 1 hostile\n400000 c0400000 {path}\n");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = Symbolizer::new(None, AddressSpaces::new(ProcMap::parse_all(&text)));
        let (f, why) = s.user_frame(100, None, 0x401000, false);
        tx.send((f.symbol, why)).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("symbolizing through {path} hangs"))
}

#[test]
fn devices_fifos_and_huge_sparse_files_are_refused_or_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    // A real ELF file followed by 3 GB of hole: parsed from the mapping,
    // the hole never read.
    let elf_sparse = dir.path().join("elf-sparse");
    std::fs::copy(std::env::current_exe().unwrap(), &elf_sparse).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&elf_sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let huge = dir.path().join("huge");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(ustack_symbolize::elf::MAX_FILE + 1)
        .unwrap();

    let before = max_rss_kib();
    for path in [
        "/dev/zero",
        "/dev/stdin",
        "/dev/urandom",
        "/proc/self/mem",
        "/",
        fifo.to_str().unwrap(),
        sparse.to_str().unwrap(),
        huge.to_str().unwrap(),
    ] {
        assert_eq!(
            lookup(path),
            (None, Some(Unresolved::FileUnreadable)),
            "{path}"
        );
    }
    // The ELF file is read (its symbols may or may not cover the address).
    let (_, why) = lookup(elf_sparse.to_str().unwrap());
    assert_ne!(why, Some(Unresolved::FileUnreadable));
    let grown = max_rss_kib() - before;
    assert!(grown < 200 * 1024, "peak RSS grew by {grown} KiB");
}
