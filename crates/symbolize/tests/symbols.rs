//! Symbolization: kallsyms, process maps, ELF symbols.

use ustack_symbolize::{demangle, AddressSpaces, Frame, KernelSymbols, Symbolizer, Unresolved};
use ustack_tracedata::ProcMap;

fn spaces(text: &str) -> AddressSpaces {
    AddressSpaces::new(ProcMap::parse_all(text))
}

#[test]
fn rust_names_are_demangled() {
    assert_eq!(
        demangle("_ZN4core3num23_$LT$impl$u20$usize$GT$16from_ascii_radix17h81be102ed004fbbdE"),
        "core::num::<impl usize>::from_ascii_radix"
    );
    assert_eq!(demangle("__libc_start_main"), "__libc_start_main");
    assert_eq!(
        demangle("_ZNKSt6vectorIiE4sizeEv"),
        "_ZNKSt6vectorIiE4sizeEv"
    );
}

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 t do_one_initcall
0000000000000000 A fixed_percpu_data
ffffffff81002000 D some_data
ffffffff81003000 T schedule
ffffffffc0100000 t ext4_write [ext4]
";

#[test]
fn kallsyms_lookup() {
    let k = KernelSymbols::parse(KALLSYMS.to_string());
    assert_eq!(k.len(), 4);
    let f = k.lookup(0xffffffff81003010);
    assert_eq!(f.name(), "schedule+0x10");
    assert_eq!(f.object, None);
    // Data symbols are skipped: 0x...2010 is still in do_one_initcall.
    assert_eq!(
        k.lookup(0xffffffff81002010).name(),
        "do_one_initcall+0x1010"
    );
    let m = k.lookup(0xffffffffc0100004);
    assert_eq!(m.name(), "ext4_write+0x4");
    assert_eq!(m.object.as_deref(), Some("ext4"));
    assert_eq!(k.lookup(0x1000), Frame::unknown(0x1000));
    assert_eq!(
        (m.addr, m.object.as_deref()),
        (0xffffffffc0100004, Some("ext4"))
    );
}

#[test]
fn procmaps_tracecmd_format() {
    let text = "\
1f4 2 myprog
55d000000000 55d000003000 /usr/bin/myprog
7f0000000000 7f0000200000 /usr/lib/x86_64-linux-gnu/libc.so.6
a 1 other
400000 402000 /opt/other
";
    let m = spaces(text);
    assert_eq!(m.comm(500), Some("myprog"));
    assert_eq!(m.comm(10), Some("other"));
    let l = m.find(500, 0x7f0000001234).unwrap();
    assert_eq!(l.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    assert_eq!(l.start, 0x7f0000000000);
    assert_eq!(m.find(500, 0x7f0000200000), Err(Unresolved::Anonymous));
    assert_eq!(m.find(500, 0x1000), Err(Unresolved::Anonymous));
    assert_eq!(m.find(10, 0x401000).unwrap().path, "/opt/other");
    assert_eq!(m.find(11, 0x401000), Err(Unresolved::ProcessUnknown));
}

#[inline(never)]
fn marker_function_for_symbolization(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

#[test]
fn user_address_through_live_maps_and_elf_symtab() {
    marker_function_for_symbolization(1);
    let addr = marker_function_for_symbolization as fn(u64) -> u64 as usize as u64;
    let pid = std::process::id() as i32;
    let mut s = Symbolizer::new(None, AddressSpaces::default()).with_live_maps(true);
    let f = s.user(pid, addr + 2, false);
    let sym = f.symbol.clone().expect("symbol of our own function");
    assert!(sym.contains("marker_function_for_symbolization"), "{sym}");
    assert_eq!(f.offset, 2);
    let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
    assert_eq!(f.object.as_deref(), exe.to_str());
    // The test binary has DWARF line tables: the location is in this file
    // (the outermost inline frame, even where wrapping_mul was inlined).
    let loc = f.location.clone().expect("a DWARF location");
    assert!(loc.contains("tests/symbols.rs:"), "{loc}");
    // As a return address, addr+1 is looked up at addr: same function.
    let r = s.user(pid, addr + 1, true);
    assert_eq!(r.symbol, f.symbol);
    assert_eq!(r.offset, 1);
    // Not mapped: anonymous or nothing.
    let (f, why) = s.user_frame(pid as u32, None, 0x10, false);
    assert_eq!((f.symbol, f.object.as_deref()), (None, Some("[anon]")));
    assert_eq!(why, Some(Unresolved::Anonymous));
}

#[test]
fn user_address_through_saved_tracecmd_maps() {
    // The same lookup, through a PROCMAPS text built from our own maps,
    // for a pid that does not exist.
    let addr = marker_function_for_symbolization as fn(u64) -> u64 as usize as u64;
    let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
    let exe = exe.to_str().unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    // trace-cmd keeps each library's lowest mapping start (file offset 0)
    // and its highest end.
    let mut lo = u64::MAX;
    let mut hi = 0;
    for l in maps.lines().filter(|l| l.ends_with(exe)) {
        let (s, e) = l
            .split_whitespace()
            .next()
            .unwrap()
            .split_once('-')
            .unwrap();
        lo = lo.min(u64::from_str_radix(s, 16).unwrap());
        hi = hi.max(u64::from_str_radix(e, 16).unwrap());
    }
    let text = format!("7ffffff0 1 fake\n{lo:x} {hi:x} {exe}\n");
    let mut s = Symbolizer::new(Some(KALLSYMS.to_string()), spaces(&text));
    let f = s.user(0x7ffffff0, addr, false);
    let sym = f.symbol.clone().unwrap_or_default();
    assert!(sym.contains("marker_function_for_symbolization"), "{f:?}");
    assert_eq!(f.offset, 0);
    assert_eq!(s.kernel(0xffffffff81000008).name(), "_stext+0x8");
}

#[test]
fn threads_use_the_mapping_of_their_process_and_nothing_is_guessed() {
    // Two non-PIE programs map the same addresses; the thread 0x11 of 0x10
    // is listed with its process, 0x12 is not known.
    let text = "\
10 2 app
400000 500000 /nonexistent/app
7f0000000000 7f0000200000 /usr/lib/libc.so.6
tasks: 11
20 1 other
400000 480000 /nonexistent/other
";
    let mut s = Symbolizer::new(None, spaces(text));
    let f = s.user(0x11, 0x400100, false);
    assert_eq!(f.object.as_deref(), Some("/nonexistent/app"));
    let f = s.user(0x20, 0x400100, false);
    assert_eq!(f.object.as_deref(), Some("/nonexistent/other"));
    let (f, why) = s.user_frame(0x12, None, 0x400100, false);
    assert_eq!(f, Frame::unknown(0x400100));
    assert_eq!(why, Some(Unresolved::ProcessUnknown));
    let (_, why) = s.user_frame(0x11, None, 0x400100, false);
    assert_eq!(why, Some(Unresolved::FileUnreadable));
    // A special mapping: its name and the offset in it.
    let text = "30 2 app\n400000 500000 /bin/app\n7fff0000 7fff2000 [vdso]\n";
    let mut s = Symbolizer::new(None, spaces(text));
    let (f, why) = s.user_frame(0x30, None, 0x7fff0950, false);
    assert_eq!(why, Some(Unresolved::Special));
    assert_eq!(
        (f.object.as_deref(), f.file_offset),
        (Some("[vdso]"), Some(0x950))
    );
}

/// Maps the first `PT_LOAD`-aligned range of `exe` at a made-up base for
/// pid 0x7ffffff1, named `path` (as a trace from another machine would).
fn fake_process(path: &str, base: u64) -> AddressSpaces {
    spaces(&format!(
        "7ffffff1 1 fake\n{base:x} {:x} {path}\n",
        base + 0x1000_0000
    ))
}

/// The offset of `marker_function_for_symbolization` from our load base.
fn marker_offset() -> u64 {
    let addr = marker_function_for_symbolization as fn(u64) -> u64 as usize as u64;
    let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let base = maps
        .lines()
        .filter(|l| l.ends_with(exe.to_str().unwrap()))
        .map(|l| u64::from_str_radix(l.split('-').next().unwrap(), 16).unwrap())
        .min()
        .unwrap();
    addr - base
}

#[test]
fn stripped_file_finds_its_debug_file_by_build_id_under_symfs() {
    let exe = std::env::current_exe().unwrap();
    let bytes = std::fs::read(&exe).unwrap();
    let id = {
        use object::Object;
        let f = object::File::parse(&*bytes).unwrap();
        f.build_id()
            .unwrap()
            .expect("test binaries have a build id")
            .to_vec()
    };
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let root = tempfile::tempdir().unwrap();
    // The trace names /guest/bin/app; under the root it is a stripped copy,
    // and the root's /usr/lib/debug holds the full file by build id.
    let app = root.path().join("guest/bin/app");
    std::fs::create_dir_all(app.parent().unwrap()).unwrap();
    let st = std::process::Command::new("strip")
        .args(["--strip-all", "-o"])
        .arg(&app)
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success());
    let dbg = root.path().join(format!(
        "usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    std::fs::create_dir_all(dbg.parent().unwrap()).unwrap();
    std::fs::write(&dbg, &bytes).unwrap();

    let base = 0x5555_0000_0000;
    let addr = base + marker_offset();
    // Without the root: the file is not there.
    let mut s = Symbolizer::new(None, fake_process("/guest/bin/app", base));
    let (_, why) = s.user_frame(0x7ffffff1, None, addr, false);
    assert_eq!(why, Some(Unresolved::FileUnreadable));
    // With it: the symbol and the line come from the debug file.
    let mut s = Symbolizer::new(None, fake_process("/guest/bin/app", base))
        .with_root(Some(root.path().to_path_buf()));
    let f = s.user(0x7ffffff1, addr + 1, false);
    let sym = f.symbol.clone().unwrap_or_default();
    assert!(sym.contains("marker_function_for_symbolization"), "{f:?}");
    assert_eq!(f.offset, 1);
    assert!(f.location.unwrap_or_default().contains("tests/symbols.rs:"));
    // Stripped without any debug file: the file offset, no symbol.
    std::fs::remove_file(&dbg).unwrap();
    let mut s = Symbolizer::new(None, fake_process("/guest/bin/app", base))
        .with_root(Some(root.path().to_path_buf()));
    let (f, why) = s.user_frame(0x7ffffff1, None, addr, false);
    assert_eq!(why, Some(Unresolved::NoSymbol));
    assert_eq!(
        (f.symbol, f.object.as_deref()),
        (None, Some("/guest/bin/app"))
    );
    let off = f.file_offset.expect("a file offset");
    // The file offset holds the same bytes as the function in memory.
    let real = marker_function_for_symbolization as fn(u64) -> u64 as usize as u64;
    let stripped = std::fs::read(&app).unwrap();
    assert_eq!(
        &stripped[off as usize..off as usize + 16],
        &own_code(real, 16)[..]
    );
}

/// `len` bytes of this process's memory at `addr`.
fn own_code(addr: u64, len: usize) -> Vec<u8> {
    let f = std::fs::File::open("/proc/self/mem").unwrap();
    let mut buf = vec![0u8; len];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, addr).unwrap();
    buf
}

/// Line tables read lazily: from zlib-compressed sections (unit found by
/// `.debug_aranges`), and from a copy without `.debug_aranges` (every unit
/// parsed, as addr2line does), the same location as the plain file.
#[test]
fn locations_from_compressed_sections_and_without_aranges() {
    let exe = std::env::current_exe().unwrap();
    let root = tempfile::tempdir().unwrap();
    let base = 0x5555_0000_0000;
    let addr = base + marker_offset();
    let want = {
        let mut s = Symbolizer::new(None, fake_process(exe.to_str().unwrap(), base));
        s.user(0x7ffffff1, addr + 1, false).location
    };
    let want = want.expect("the test binary has line tables");
    assert!(want.contains("tests/symbols.rs:"), "{want}");
    for (name, args) in [
        ("zlib", &["--compress-debug-sections=zlib"][..]),
        ("noaranges", &["--remove-section", ".debug_aranges"][..]),
    ] {
        let copy = root.path().join(name);
        let st = std::process::Command::new("objcopy")
            .args(args)
            .arg(&exe)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(st.success(), "objcopy {args:?}");
        let mut s = Symbolizer::new(None, fake_process(copy.to_str().unwrap(), base));
        let f = s.user(0x7ffffff1, addr + 1, false);
        assert_eq!(f.location.as_deref(), Some(&*want), "{name}");
    }
}
