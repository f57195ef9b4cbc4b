//! The unwinder against ground truth: programs built as distributions
//! build them record their own call chain with glibc's backtrace() right
//! before a system call; every frame of the unwound stack is checked
//! against it (see tests/common).

use ustack_symbolize::unwind::{End, Snapshot, Unwinder, Unwound, Via};
use ustack_testdata::truth::{build_truth_c, compile, function_of, run_traced, Capture};

/// A stack snapshot as large as any stack here: the whole stack.
const WHOLE: usize = 1 << 20;

fn unwind(u: &mut Unwinder, c: &Capture) -> Unwound {
    let snap = Snapshot {
        ip: c.ip,
        sp: c.sp,
        bp: c.bp,
        data: &c.stack,
    };
    u.unwind_in(&snap, &c.kernel, &c.maps.maps)
}

/// Frames exact / frames delivered of one stack, checked against the
/// program's backtrace(): frame 1 is in the function that recorded it,
/// frames 2.. are its chain from entry 1 on, address for address.
/// Returns (exact, delivered, expected).
fn score(c: &Capture, got: &Unwound) -> (usize, usize, usize) {
    let addrs: Vec<u64> = got.frames.iter().map(|f| f.addr).collect();
    let expected = c.truth.len() + 1;
    let mut exact = usize::from(addrs.first() == Some(&c.ip));
    if let (Some(&f1), Some(&t0)) = (addrs.get(1), c.truth.first()) {
        let a = function_of(&c.maps, f1, true).map(|f| (f.0, f.1));
        let b = function_of(&c.maps, t0, true).map(|f| (f.0, f.1));
        exact += usize::from(a.is_some() && a == b);
    }
    for (i, &a) in addrs.iter().enumerate().skip(2) {
        exact += usize::from(c.truth.get(i - 1) == Some(&a));
    }
    (exact, addrs.len(), expected)
}

/// Checks every capture with a whole-stack snapshot: every frame exact,
/// none missing, the stack complete.
fn all_exact(what: &str, caps: &[Capture], want: usize) {
    assert_eq!(caps.len(), want, "{what}: marked calls seen");
    let mut u = Unwinder::new(None);
    let (mut exact, mut delivered, mut expected) = (0, 0, 0);
    for c in caps {
        let got = unwind(&mut u, c);
        let (e, d, x) = score(c, &got);
        assert_eq!(
            (e, d),
            (x, x),
            "{what}: tid {} stack {:x?} ({:?}), truth {:x?}",
            c.tid,
            got.frames.iter().map(|f| f.addr).collect::<Vec<_>>(),
            got.end,
            c.truth
        );
        assert_eq!(got.end, End::Complete, "{what}");
        assert!(got.frames[1..].iter().all(|f| f.via == Via::Cfi), "{what}");
        exact += e;
        delivered += d;
        expected += x;
    }
    eprintln!("{what}: {exact} exact / {delivered} delivered / {expected} expected frames");
}

fn truth_c(dir: &tempfile::TempDir, flags: &[&str]) -> String {
    build_truth_c(dir.path(), flags)
}

#[test]
fn c_o2_without_frame_pointers_threads_and_libc_wrappers() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fomit-frame-pointer"]);
    // 5 threads x 3 calls, through write() and syscall()
    all_exact("-O2", &run_traced(&[&bin, "recurse"], WHOLE), 15);
}

#[test]
fn c_o2_with_frame_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fno-omit-frame-pointer"]);
    all_exact(
        "-O2 -fno-omit-frame-pointer",
        &run_traced(&[&bin, "recurse"], WHOLE),
        15,
    );
}

#[test]
fn libc_frames_in_the_middle_qsort_comparator() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &[]);
    let caps = run_traced(&[&bin, "qsort"], WHOLE);
    assert!(caps.len() >= 5, "comparator calls: {}", caps.len());
    let n = caps.len();
    all_exact("qsort", &caps, n);
}

#[test]
fn dlopened_library_in_a_pie() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-pie", "-fPIE", "-ldl"]);
    let lib = dir.path().join("libtruth.so");
    compile("truthlib.c", &lib, &["-O2", "-shared", "-fPIC"]);
    all_exact(
        "dlopen",
        &run_traced(&[&bin, "dlopen", lib.to_str().unwrap()], WHOLE),
        2,
    );
}

#[test]
fn through_a_signal_frame() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fomit-frame-pointer"]);
    // the handler's two calls, through write() and syscall()
    all_exact("signal", &run_traced(&[&bin, "signal"], WHOLE), 2);
}

/// Unwind tables only in `.debug_frame`, only in a separate debug file,
/// found by its debuglink under a `--symfs` root: the program runs built
/// with `.eh_frame` (for its own `backtrace()`), and the root holds the
/// same code built without it (`-fno-asynchronous-unwind-tables -g`: the
/// same `.text` at the same addresses, checked), its debug sections split
/// off into `truth.debug`.
#[test]
fn debug_frame_from_a_separate_debug_file_under_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let run = truth_c(&dir, &["-fomit-frame-pointer"]);
    let other = tempfile::tempdir().unwrap();
    let df = compile(
        "truth.c",
        &other.path().join("truth"),
        &[
            "-O2",
            "-g",
            "-pthread",
            "-fomit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
        ],
    );
    let text = |p: &std::path::Path| {
        let data = std::fs::read(p).unwrap();
        let f = object::File::parse(&*data).unwrap();
        let s = object::Object::section_by_name(&f, ".text").unwrap();
        (
            object::ObjectSection::address(&s),
            object::ObjectSection::data(&s).unwrap().to_vec(),
        )
    };
    assert_eq!(
        text(std::path::Path::new(&run)),
        text(&df),
        "same code at the same place"
    );
    let root = tempfile::tempdir().unwrap();
    let at = root.path().join(run.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let debug = at.with_file_name("truth.debug");
    let objcopy = |args: &[&std::ffi::OsStr]| {
        assert!(std::process::Command::new("objcopy")
            .args(args)
            .status()
            .unwrap()
            .success());
    };
    objcopy(&[
        "--only-keep-debug".as_ref(),
        df.as_os_str(),
        debug.as_os_str(),
    ]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&[
        "--strip-debug".as_ref(),
        link.as_ref(),
        df.as_os_str(),
        at.as_os_str(),
    ]);
    let caps = run_traced(&[&run, "recurse"], WHOLE);
    assert_eq!(caps.len(), 15);
    let mut u = Unwinder::new(Some(root.path().to_path_buf()));
    for c in &caps {
        let got = unwind(&mut u, c);
        let (e, d, x) = score(c, &got);
        assert_eq!((e, d), (x, x), "{got:x?}");
        assert_eq!(got.end, End::Complete);
    }
    // Without the debug file the program's own frames have no CFI.
    std::fs::remove_file(&debug).unwrap();
    let mut u = Unwinder::new(Some(root.path().to_path_buf()));
    assert!(caps.iter().all(|c| unwind(&mut u, c).end != End::Complete));
}

/// The running kernel's uname text, as a trace file saves it.
fn this_uname() -> String {
    let read = |w: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{w}")).unwrap();
    format!(
        "Linux host {} {} x86_64",
        read("osrelease").trim(),
        read("version").trim()
    )
}

/// A system call made by the vDSO itself (clock_gettime of a clock it has
/// no fast path for): the vDSO frame is unwound with the running kernel's
/// vDSO image, then libc's clock_gettime, then the chain.
#[test]
fn through_the_vdso() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fomit-frame-pointer"]);
    let caps = run_traced(&[&bin, "vdso"], WHOLE);
    assert_eq!(caps.len(), 2);
    let vdso = ustack_symbolize::vdso::of_running_kernel(&this_uname()).expect("own vDSO");
    assert!(ustack_symbolize::vdso::of_running_kernel("Linux host 0.0 #1 x86_64").is_none());
    let mut u = Unwinder::new(None).with_vdso(vdso);
    let mut without = Unwinder::new(None);
    for c in &caps {
        let in_vdso = |a: u64| {
            c.maps
                .maps
                .iter()
                .any(|m| m.path == "[vdso]" && m.start <= a && a < m.end)
        };
        assert!(in_vdso(c.ip), "the call is made in the vDSO");
        let got = unwind(&mut u, c);
        assert_eq!(got.end, End::Complete, "{got:x?}");
        let addrs: Vec<u64> = got.frames.iter().map(|f| f.addr).collect();
        // the frame in work_vdso, then the chain address for address
        let k = addrs
            .iter()
            .position(|&a| function_of(&c.maps, a, true).is_some_and(|f| f.2 == "work_vdso"))
            .expect("work_vdso in the stack");
        assert_eq!(&addrs[k + 1..], &c.truth[1..], "{addrs:x?}");
        assert!(
            (2..=4).contains(&k),
            "vDSO and libc frames before work_vdso: {addrs:x?}"
        );
        assert!(got.frames.iter().skip(1).all(|f| f.via == Via::Cfi));
        // Without the image the walk stops at the vDSO frame: nothing
        // guessed past it but what the kernel's walk gave, marked.
        let blind = unwind(&mut without, c);
        assert_eq!(blind.cut.map(|c| c.0), Some(1), "{blind:x?}");
        assert!(blind.frames[1..].iter().all(|f| f.via == Via::Kernel));
    }
}

#[test]
fn cpp_lambda_under_std_sort_after_a_caught_exception() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("truthxx");
    compile("truth.cpp", &bin, &["-O2"]);
    all_exact("C++", &run_traced(&[bin.to_str().unwrap()], WHOLE), 4);
}

#[test]
fn rust_release_binary_with_threads() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("truthrs");
    compile("truth.rs", &bin, &["-C", "opt-level=3", "--edition=2021"]);
    all_exact("Rust", &run_traced(&[bin.to_str().unwrap()], WHOLE), 6);
}

/// Frame-pointer code with a small snapshot: per size, how many stacks
/// have every delivered frame exact and the caller of the libc wrapper
/// present. Prints the table; checks the default size.
#[test]
fn frame_pointer_code_needs_only_a_small_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fno-omit-frame-pointer"]);
    let caps = run_traced(&[&bin, "recurse"], WHOLE);
    assert_eq!(caps.len(), 15);
    let mut u = Unwinder::new(None);
    for size in [
        0usize,
        8,
        16,
        32,
        48,
        64,
        128,
        ustack_symbolize::unwind::DEFAULT_SNAPSHOT,
    ] {
        // A stack is good when every frame is exact and frame 1, the
        // wrapper's caller (which the kernel's walk skips), is there.
        let (mut good, mut exact, mut delivered, mut expected) = (0, 0, 0, 0);
        for c in &caps {
            let small = Capture {
                stack: c.stack[..size.min(c.stack.len())].to_vec(),
                truth: c.truth.clone(),
                maps: c.maps.clone(),
                kernel: c.kernel.clone(),
                ..*c
            };
            let got = unwind(&mut u, &small);
            let (e, d, x) = score(&small, &got);
            good += usize::from(e == d && d >= 2);
            exact += e;
            delivered += d;
            expected += x;
        }
        eprintln!(
            "snapshot {size:5} B: {good}/15 stacks exact with the wrapper's caller; \
             frames {exact} exact / {delivered} delivered / {expected} expected"
        );
        if size == ustack_symbolize::unwind::DEFAULT_SNAPSHOT {
            assert_eq!(good, caps.len(), "default snapshot on frame-pointer code");
            assert_eq!(exact, delivered);
        }
    }
}

/// The kernel's walk goes on past a frameless function with whatever is
/// in rbp there (libc's start-up frames have no frame pointer): such a
/// frame is refused, not appended.
#[test]
fn kernel_frames_past_a_frameless_function_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fno-omit-frame-pointer"]);
    let caps = run_traced(
        &[&bin, "recurse"],
        ustack_symbolize::unwind::DEFAULT_SNAPSHOT,
    );
    let mut u = Unwinder::new(None);
    for c in &caps {
        let honest = unwind(&mut u, c);
        let mut bogus = Capture {
            stack: c.stack.clone(),
            truth: c.truth.clone(),
            maps: c.maps.clone(),
            kernel: c.kernel.clone(),
            ..*c
        };
        bogus.kernel.push(c.truth[1]);
        let got = unwind(&mut u, &bogus);
        assert_eq!(
            got, honest,
            "the frame after libc's frameless start-up code"
        );
        assert_eq!(got.end, End::KernelChain);
        let (e, d, _) = score(c, &got);
        assert_eq!(e, d);
    }
}

/// A stack deeper than the snapshot, without frame pointers: what is
/// delivered is exact, and the stack is marked as cut where the snapshot
/// ran out.
#[test]
fn deeper_than_the_snapshot_ends_cleanly_and_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let bin = truth_c(&dir, &["-fomit-frame-pointer"]);
    let caps = run_traced(&[&bin, "deep"], 2048);
    assert_eq!(caps.len(), 3);
    let mut u = Unwinder::new(None);
    for c in &caps {
        let got = unwind(&mut u, c);
        let (e, d, x) = score(c, &got);
        assert_eq!(e, d, "every delivered frame exact");
        assert!(d > 20 && d < x, "cut inside the recursion: {d} of {x}");
        assert_eq!(got.end, End::SnapshotExhausted);
        assert_eq!(got.cut, Some((d, End::SnapshotExhausted)));
        assert!(got.frames.iter().skip(1).all(|f| f.via == Via::Cfi));
    }
}
