//! A stand-in for the kernel's stack snapshot, for checking the unwinder
//! against ground truth on any kernel: a program runs under ptrace; at
//! each of its marked system calls (see progs/truth.c) the tracer takes
//! what the kernel patch writes (ip, sp, bp and the stack bytes from sp
//! up, bounded by sp's mapping), does the kernel's frame-pointer walk of
//! the same stack, and reads the call chain the program recorded with
//! glibc's `backtrace()`.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{execv, fork, ForkResult, Pid};
use object::{Object, ObjectSymbol};
use ustack_tracedata::ProcMap;

/// One marked system call, as the tracer saw it.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The task that made the call.
    pub tid: i32,
    /// Its registers at the call.
    pub ip: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer register.
    pub bp: u64,
    /// The stack from sp up, bounded by the snapshot size and sp's mapping.
    pub stack: Vec<u8>,
    /// The kernel's frame-pointer walk (ip first).
    pub kernel: Vec<u64>,
    /// The program's own backtrace(): its first entry is in the function
    /// that made the call.
    pub truth: Vec<u64>,
    /// The process's maps at the call.
    pub maps: ProcMap,
}

/// Compiles `src` (C, C++ or Rust, by extension) into `dir` with `args`.
pub fn compile(src: &str, out: &Path, args: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("progs")
        .join(src);
    let tool = match src.extension().and_then(|e| e.to_str()) {
        Some("c") => "gcc",
        Some("cpp") => "g++",
        Some("rs") => "rustc",
        _ => panic!("unknown source {}", src.display()),
    };
    let st = Command::new(tool)
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(st.success(), "{tool} {args:?} {} failed", src.display());
    out.to_path_buf()
}

/// Builds progs/truth.c into `dir` as distributions build (-O2, PIE,
/// dynamically linked) with `flags` added (e.g. `-fomit-frame-pointer`);
/// returns the binary's path.
pub fn build_truth_c(dir: &Path, flags: &[&str]) -> String {
    let mut args = vec!["-O2", "-g0", "-pthread"];
    args.extend_from_slice(flags);
    compile("truth.c", &dir.join("truth"), &args)
        .display()
        .to_string()
}

/// Reads `len` bytes at `addr` of task `tid` (fewer where memory ends).
fn read_mem(mem: &File, addr: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match mem.read_at(&mut buf[got..], addr + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

fn read_u64(mem: &File, addr: u64) -> Option<u64> {
    let b = read_mem(mem, addr, 8);
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// The end of the mapping that holds `addr` in process `pid`.
fn vma_end(pid: i32, addr: u64) -> Option<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines().find_map(|l| {
        let (range, _) = l.split_once(' ')?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        (a <= addr && addr < b).then_some(b)
    })
}

/// The kernel's frame-pointer walk of a user stack (unwind_user_fp): ip,
/// then [bp + 8] while the frame pointers go up the stack.
fn kernel_walk(mem: &File, ip: u64, sp: u64, bp: u64) -> Vec<u64> {
    let mut out = vec![ip];
    let (mut fp, mut last_cfa) = (bp, sp);
    while out.len() < 128 {
        let cfa = fp.wrapping_add(16);
        if cfa <= last_cfa || fp & 7 != 0 {
            break;
        }
        let (Some(ra), Some(next)) = (read_u64(mem, cfa - 8), read_u64(mem, cfa - 16)) else {
            break;
        };
        if ra == 0 {
            break;
        }
        out.push(ra);
        last_cfa = cfa;
        fp = next;
    }
    out
}

/// Runs `argv` under ptrace and captures each marked system call with a
/// stack snapshot of at most `snap` bytes.
pub fn run_traced(argv: &[&str], snap: usize) -> Vec<Capture> {
    let cargs: Vec<std::ffi::CString> = argv
        .iter()
        .map(|a| std::ffi::CString::new(*a).unwrap())
        .collect();
    // SAFETY: the child only calls async-signal-safe functions (ptrace,
    // execv, _exit) before exec.
    let child = match unsafe { fork() }.expect("fork") {
        ForkResult::Child => {
            let _ = ptrace::traceme();
            let _ = execv(&cargs[0], &cargs);
            // SAFETY: leaving the forked child without running destructors.
            unsafe { libc::_exit(127) }
        }
        ForkResult::Parent { child } => child,
    };
    match waitpid(child, None).expect("waitpid") {
        WaitStatus::Stopped(_, Signal::SIGTRAP) => {}
        s => panic!("child did not stop at exec: {s:?}"),
    }
    ptrace::setoptions(
        child,
        ptrace::Options::PTRACE_O_TRACESYSGOOD
            | ptrace::Options::PTRACE_O_TRACECLONE
            | ptrace::Options::PTRACE_O_EXITKILL,
    )
    .expect("setoptions");
    ptrace::syscall(child, None).expect("resume");
    let mut in_call: HashMap<Pid, bool> = HashMap::new();
    let mut caps = Vec::new();
    let mut status = None;
    let mut latest = None;
    loop {
        let ws = match waitpid(None, Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD)) {
            Ok(ws) => ws,
            Err(nix::errno::Errno::ECHILD) => break,
            Err(e) => panic!("waitpid: {e}"),
        };
        match ws {
            WaitStatus::PtraceSyscall(tid) => {
                let entering = !in_call.get(&tid).copied().unwrap_or(false);
                in_call.insert(tid, entering);
                if entering {
                    if let Some(c) = capture(child, tid, snap, &mut latest) {
                        caps.push(c);
                    }
                }
                let _ = ptrace::syscall(tid, None);
            }
            WaitStatus::PtraceEvent(tid, _, _) => {
                let _ = ptrace::syscall(tid, None);
            }
            WaitStatus::Stopped(tid, sig) => {
                let deliver = (sig != Signal::SIGSTOP).then_some(sig);
                let _ = ptrace::syscall(tid, deliver);
            }
            WaitStatus::Exited(pid, code) if pid == child => status = Some(code),
            WaitStatus::Signaled(pid, sig, _) if pid == child => panic!("{argv:?} killed by {sig}"),
            _ => {}
        }
    }
    assert_eq!(status, Some(0), "{argv:?} failed");
    caps
}

/// Takes the marked call `tid` stopped at, if it is one. `latest` is where
/// the program keeps its latest chain (announced by `write(-2, &latest,
/// 16)`), for marked calls that cannot carry it in their arguments.
fn capture(pid: Pid, tid: Pid, snap: usize, latest: &mut Option<u64>) -> Option<Capture> {
    let r = ptrace::getregs(tid).ok()?;
    let mem = File::open(format!("/proc/{tid}/mem")).ok()?;
    let (chain, n) = match r.orig_rax as i64 {
        libc::SYS_write if r.rdi as u32 as i32 == -1 => (r.rsi, r.rdx / 8),
        libc::SYS_write if r.rdi as u32 as i32 == -2 => {
            *latest = Some(r.rsi);
            return None;
        }
        libc::SYS_getppid if r.rdi != 0 && (1..=256).contains(&r.rsi) => (r.rdi, r.rsi),
        // clock_gettime(CLOCK_PROCESS_CPUTIME_ID), made by the vDSO
        libc::SYS_clock_gettime if r.rdi == 2 => {
            let at = (*latest)?;
            (read_u64(&mem, at)?, read_u64(&mem, at + 8)?)
        }
        _ => return None,
    };
    let truth = read_mem(&mem, chain, n as usize * 8)
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let end = vma_end(pid.as_raw(), r.rsp).unwrap_or(r.rsp);
    let len = (end - r.rsp).min(snap as u64) as usize;
    let text = |what: &str| std::fs::read_to_string(format!("/proc/{pid}/{what}")).ok();
    let maps = ProcMap::from_proc_maps(pid.as_raw() as u32, &text("comm")?, &text("maps")?);
    Some(Capture {
        tid: tid.as_raw(),
        ip: r.rip,
        sp: r.rsp,
        bp: r.rbp,
        stack: read_mem(&mem, r.rsp, len),
        kernel: kernel_walk(&mem, r.rip, r.rsp, r.rbp),
        truth,
        maps,
    })
}

/// The function (file, symbol address, name) that holds `addr` (looked
/// up at `addr - 1` for a return address), from the ELF symbol tables:
/// an oracle independent of the symbolizer.
pub fn function_of(maps: &ProcMap, addr: u64, return_addr: bool) -> Option<(String, u64, String)> {
    let look = if return_addr { addr - 1 } else { addr };
    let m = maps.maps.iter().find(|m| m.start <= look && look < m.end)?;
    let data = std::fs::read(&m.path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    use object::ObjectSegment;
    let first = file.segments().map(|s| s.address()).min()? & !0xfff;
    let va = first + (look - m.start);
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| {
            s.kind() == object::SymbolKind::Text
                && s.address() <= va
                && va < s.address() + s.size().max(1)
        })
        .map(|s| {
            (
                m.path.clone(),
                s.address(),
                s.name().unwrap_or("").to_string(),
            )
        })
        .next()
}
