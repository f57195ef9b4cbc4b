//! Synthetic trace.dat files for tests, no root needed.
//!
//! [`TraceBuilder`] collects records per CPU (scheduler switches, syscalls,
//! deferred-unwind cookies and stacks, stock `user_stack`/`kernel_stack`,
//! losses), packs them into ring-buffer pages with the `tracedata` page
//! builder and writes a real trace.dat through the `tracedata` writer, with
//! the formats, kallsyms, saved_cmdlines and PROCMAPS a recorder would save.
//!
//! ```no_run
//! use ustack_testdata::TraceBuilder;
//! let mut t = TraceBuilder::new(2);
//! t.comm(42, "app");
//! t.sys_enter(0, 1_000, 42, 1);
//! t.cookie(0, 1_001, 42, 0x1_0000_0001);
//! t.unwind_stack(1, 2_000, 42, 0x1_0000_0001, &[0x401000, 0x402000]);
//! t.write(std::path::Path::new("/tmp/t.dat")).unwrap();
//! ```

pub mod instance;
pub mod skip;
pub mod top;
pub mod truth;

use std::path::Path;

use ustack_tracedata::page::build::{PageBuilder, COMMON_FIELDS as COMMON};
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, ProcMap, TraceMeta, WriteOptions,
};

pub use instance::TestInstance;
pub use skip::skip_unless_ci;
pub use ustack_tracedata::page::build::{HEADER_EVENT, HEADER_PAGE};

/// Event id of `ftrace:kernel_stack`.
pub const ID_KERNEL_STACK: u16 = 4;
/// Event id of `ftrace:user_stack`.
pub const ID_USER_STACK: u16 = 12;
/// Event id of `ftrace:user_unwind_stack`.
pub const ID_UNWIND_STACK: u16 = 20;
/// Event id of `ftrace:user_unwind_cookie`.
pub const ID_COOKIE: u16 = 21;
/// Event id of `ftrace:user_unwind_mapping`.
pub const ID_MAPPING: u16 = 23;
/// Event id of `ftrace:user_unwind_stack_snapshot` (in files that have
/// snapshots: [`TraceBuilder::stack_snapshot`] adds its format).
pub const ID_STACK_SNAPSHOT: u16 = 24;
/// Event id of `sched:sched_switch`.
pub const ID_SCHED_SWITCH: u16 = 316;
/// Event id of `raw_syscalls:sys_enter`.
pub const ID_SYS_ENTER: u16 = 343;
/// Event id of `raw_syscalls:sys_exit`.
pub const ID_SYS_EXIT: u16 = 344;

fn fmt(name: &str, id: u16, fields: &str, print: &str) -> Vec<u8> {
    format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}\nprint fmt: {print}\n").into_bytes()
}

/// The `ftrace` system formats used by the builder.
pub fn ftrace_formats() -> Vec<Vec<u8>> {
    vec![
        fmt(
            "kernel_stack",
            ID_KERNEL_STACK,
            "\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n",
            "\"\\t=> %ps\\n\", (void *)REC->caller[0]",
        ),
        fmt(
            "user_stack",
            ID_USER_STACK,
            "\tfield:unsigned int tgid;\toffset:8;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n",
            "\"\\t=> %ps\\n\", (void *)REC->caller[0]",
        ),
        fmt(
            "user_unwind_stack",
            ID_UNWIND_STACK,
            "\tfield:u64 cookie;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:__data_loc unsigned long[] stack;\toffset:16;\tsize:4;\tsigned:0;\n",
            "\"cookie=%llx\", REC->cookie",
        ),
        fmt(
            "user_unwind_cookie",
            ID_COOKIE,
            "\tfield:u64 cookie;\toffset:8;\tsize:8;\tsigned:0;\n",
            "\"cookie=%llx\", REC->cookie",
        ),
        fmt(
            "user_unwind_mapping",
            ID_MAPPING,
            "\tfield:unsigned long start;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long end;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:u64 offset;\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:int tgid;\toffset:32;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned int exec_id;\toffset:36;\tsize:4;\tsigned:0;\n\
             \tfield:__data_loc char[] path;\toffset:40;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned char build_id_size;\toffset:44;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned char build_id[20];\toffset:45;\tsize:20;\tsigned:0;\n",
            "\"tgid=%d exec=%u %lx-%lx offset=%llx build_id=%s path=%s\", REC->tgid, \
             REC->exec_id, REC->start, REC->end, REC->offset, \
             __print_hex_str(REC->build_id, REC->build_id_size), __get_str(path)",
        ),
    ]
}

/// The other event systems used by the builder.
pub fn event_systems() -> Vec<EventSystem> {
    vec![
        EventSystem {
            name: "sched".into(),
            formats: vec![fmt(
                "sched_switch",
                ID_SCHED_SWITCH,
                "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
                 \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
                 \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
                 \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n",
                "\"prev_comm=%s prev_pid=%d ==> next_comm=%s next_pid=%d\", REC->prev_comm, REC->prev_pid, REC->next_comm, REC->next_pid",
            )],
        },
        EventSystem {
            name: "raw_syscalls".into(),
            formats: vec![
                fmt(
                    "sys_enter",
                    ID_SYS_ENTER,
                    "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
                     \tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n",
                    "\"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]",
                ),
                fmt(
                    "sys_exit",
                    ID_SYS_EXIT,
                    "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
                     \tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n",
                    "\"NR %ld = %ld\", REC->id, REC->ret",
                ),
            ],
        },
    ]
}

/// A small kallsyms text matching the kernel addresses the tests use.
pub const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81100000 T do_syscall_64
ffffffff81200000 T __x64_sys_write
ffffffff81300000 T ksys_write
ffffffff81400000 T schedule
ffffffff81500000 T entry_SYSCALL_64
ffffffff81600000 T trace_event_raw_event_sys_enter
ffffffff81700000 T stack_trace_save
";

enum Rec {
    Event(u64, Vec<u8>),
    Lost(Option<u64>),
}

/// Builds a synthetic trace.dat; see the module docs.
pub struct TraceBuilder {
    cpus: Vec<Vec<Rec>>,
    comms: Vec<(i32, String)>,
    procmaps: Vec<ProcMap>,
    kallsyms: String,
    page_size: usize,
    stats: Vec<(u32, String)>,
    /// Formats beyond [`ftrace_formats`] (added by the records that need
    /// them, so that other files stay as they were).
    extra_formats: Vec<Vec<u8>>,
    /// The UNAME option (none by default).
    uname: Option<String>,
}

/// The format of `ftrace:user_unwind_stack_snapshot`: a stack entry with
/// the user registers and stack bytes of its kernel entry.
fn stack_snapshot_format() -> Vec<u8> {
    fmt(
        "user_unwind_stack_snapshot",
        ID_STACK_SNAPSHOT,
        "\tfield:u64 cookie;\toffset:8;\tsize:8;\tsigned:0;\n\
         \tfield:u64 prev;\toffset:16;\tsize:8;\tsigned:0;\n\
         \tfield:unsigned long sp;\toffset:24;\tsize:8;\tsigned:0;\n\
         \tfield:unsigned long bp;\toffset:32;\tsize:8;\tsigned:0;\n\
         \tfield:__data_loc unsigned long[] stack;\toffset:40;\tsize:4;\tsigned:0;\n\
         \tfield:__data_loc unsigned char[] data;\toffset:44;\tsize:4;\tsigned:0;\n\
         \tfield:unsigned char links;\toffset:48;\tsize:1;\tsigned:0;\n",
        "\"cookie=%llx prev=%llx links=%u sp=%lx bp=%lx len=%u\", REC->cookie, REC->prev, \
         REC->links, REC->sp, REC->bp, __get_dynamic_array_len(data)",
    )
}

fn header(id: u16, pid: i32) -> Vec<u8> {
    let mut d = Vec::with_capacity(64);
    d.extend_from_slice(&id.to_le_bytes());
    d.push(0); // flags
    d.push(0); // preempt count
    d.extend_from_slice(&pid.to_le_bytes());
    d
}

fn comm16(s: &str) -> [u8; 16] {
    let mut b = [0u8; 16];
    let n = s.len().min(15);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    b
}

impl TraceBuilder {
    /// A trace of `ncpus` CPUs, 4 KiB pages, with [`KALLSYMS`].
    pub fn new(ncpus: u32) -> Self {
        TraceBuilder {
            cpus: (0..ncpus).map(|_| Vec::new()).collect(),
            comms: Vec::new(),
            procmaps: Vec::new(),
            kallsyms: KALLSYMS.to_string(),
            page_size: 4096,
            stats: Vec::new(),
            extra_formats: Vec::new(),
            uname: None,
        }
    }

    /// Saves `text` as the traced system's uname
    /// (`sysname nodename release version machine`).
    pub fn uname(&mut self, text: &str) -> &mut Self {
        self.uname = Some(text.to_string());
        self
    }

    /// Saves `text` as the per-CPU stats of `cpu` (the CPUSTAT option).
    pub fn cpu_stats(&mut self, cpu: u32, text: &str) -> &mut Self {
        self.stats.push((cpu, text.to_string()));
        self
    }

    /// Uses another page size (a power of two, at least 256).
    pub fn page_size(&mut self, size: usize) -> &mut Self {
        self.page_size = size;
        self
    }

    /// Adds a saved_cmdlines entry.
    pub fn comm(&mut self, pid: i32, comm: &str) -> &mut Self {
        self.comms.push((pid, comm.to_string()));
        self
    }

    /// Lists `threads` as tasks of process `pid` in its PROCMAPS entry
    /// (added by [`TraceBuilder::procmap`] before).
    pub fn threads(&mut self, pid: u32, threads: &[u32]) -> &mut Self {
        if let Some(p) = self.procmaps.iter_mut().rev().find(|p| p.pid == pid) {
            p.threads.extend_from_slice(threads);
        }
        self
    }

    /// Adds a PROCMAPS entry (trace-cmd layout: each file's load base).
    pub fn procmap(&mut self, pid: u32, comm: &str, maps: &[(u64, u64, &str)]) -> &mut Self {
        self.procmaps.push(ProcMap {
            pid,
            comm: comm.to_string(),
            maps: maps
                .iter()
                .map(|&(start, end, path)| ustack_tracedata::writer::LibMap {
                    start,
                    end,
                    path: path.to_string(),
                })
                .collect(),
            threads: Vec::new(),
            replaced: Vec::new(),
            at: None,
        });
        self
    }

    fn push(&mut self, cpu: u32, ts: u64, data: Vec<u8>) -> &mut Self {
        self.cpus[cpu as usize].push(Rec::Event(ts, data));
        self
    }

    /// A raw record with payload `data` (which starts with the common
    /// header).
    pub fn raw(&mut self, cpu: u32, ts: u64, data: Vec<u8>) -> &mut Self {
        self.push(cpu, ts, data)
    }

    /// Marks lost events on `cpu`: the next record of that CPU starts a new
    /// page with the missed-events flag (and `count`, if given).
    pub fn lost(&mut self, cpu: u32, count: Option<u64>) -> &mut Self {
        self.cpus[cpu as usize].push(Rec::Lost(count));
        self
    }

    /// `sched:sched_switch` from `prev` to `next`.
    pub fn sched_switch(
        &mut self,
        cpu: u32,
        ts: u64,
        prev: (i32, &str),
        next: (i32, &str),
    ) -> &mut Self {
        let mut d = header(ID_SCHED_SWITCH, prev.0);
        d.extend_from_slice(&comm16(prev.1));
        d.extend_from_slice(&prev.0.to_le_bytes());
        d.extend_from_slice(&120i32.to_le_bytes());
        d.extend_from_slice(&1i64.to_le_bytes());
        d.extend_from_slice(&comm16(next.1));
        d.extend_from_slice(&next.0.to_le_bytes());
        d.extend_from_slice(&120i32.to_le_bytes());
        self.push(cpu, ts, d)
    }

    /// `raw_syscalls:sys_enter` of syscall `nr`.
    pub fn sys_enter(&mut self, cpu: u32, ts: u64, pid: i32, nr: i64) -> &mut Self {
        let mut d = header(ID_SYS_ENTER, pid);
        d.extend_from_slice(&nr.to_le_bytes());
        for a in 0..6u64 {
            d.extend_from_slice(&a.to_le_bytes());
        }
        self.push(cpu, ts, d)
    }

    /// `raw_syscalls:sys_exit` of syscall `nr` returning `ret`.
    pub fn sys_exit(&mut self, cpu: u32, ts: u64, pid: i32, nr: i64, ret: i64) -> &mut Self {
        let mut d = header(ID_SYS_EXIT, pid);
        d.extend_from_slice(&nr.to_le_bytes());
        d.extend_from_slice(&ret.to_le_bytes());
        self.push(cpu, ts, d)
    }

    /// `ftrace:user_unwind_cookie`.
    pub fn cookie(&mut self, cpu: u32, ts: u64, pid: i32, cookie: u64) -> &mut Self {
        let mut d = header(ID_COOKIE, pid);
        d.extend_from_slice(&cookie.to_le_bytes());
        self.push(cpu, ts, d)
    }

    /// `ftrace:user_unwind_stack`.
    pub fn unwind_stack(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: i32,
        cookie: u64,
        stack: &[u64],
    ) -> &mut Self {
        let mut d = header(ID_UNWIND_STACK, pid);
        d.extend_from_slice(&cookie.to_le_bytes());
        let loc = 20u32 | ((stack.len() as u32 * 8) << 16);
        d.extend_from_slice(&loc.to_le_bytes());
        for a in stack {
            d.extend_from_slice(&a.to_le_bytes());
        }
        self.push(cpu, ts, d)
    }

    /// `ftrace:user_unwind_stack_snapshot`: the stack entry of a kernel
    /// entry (no `prev`, no link) with its user `regs` (sp, bp) and the
    /// stack bytes from sp upward; `stack[0]` is the user ip.
    #[allow(clippy::too_many_arguments)]
    pub fn stack_snapshot(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: i32,
        cookie: u64,
        regs: (u64, u64),
        stack: &[u64],
        data: &[u8],
    ) -> &mut Self {
        if self.extra_formats.is_empty() {
            self.extra_formats.push(stack_snapshot_format());
        }
        let mut d = header(ID_STACK_SNAPSHOT, pid);
        for v in [cookie, 0, regs.0, regs.1] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        let stack_len = stack.len() as u32 * 8;
        d.extend_from_slice(&(56u32 | (stack_len << 16)).to_le_bytes());
        d.extend_from_slice(&((56 + stack_len) | ((data.len() as u32) << 16)).to_le_bytes());
        d.extend_from_slice(&[0; 8]); // links and padding
        for a in stack {
            d.extend_from_slice(&a.to_le_bytes());
        }
        d.extend_from_slice(data);
        self.push(cpu, ts, d)
    }

    /// `ftrace:user_unwind_mapping`: `map` is (start, end, file offset),
    /// written by task `pid` of process `tgid` in its image `exec_id`.
    #[allow(clippy::too_many_arguments)]
    pub fn mapping(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: i32,
        tgid: i32,
        exec_id: u32,
        map: (u64, u64, u64),
        build_id: &[u8],
        path: &str,
    ) -> &mut Self {
        let mut d = header(ID_MAPPING, pid);
        for v in [map.0, map.1, map.2] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(&tgid.to_le_bytes());
        d.extend_from_slice(&exec_id.to_le_bytes());
        let loc = 72u32 | ((path.len() as u32 + 1) << 16);
        d.extend_from_slice(&loc.to_le_bytes());
        let n = build_id.len().min(20);
        d.push(n as u8);
        let mut id = [0u8; 20];
        id[..n].copy_from_slice(&build_id[..n]);
        d.extend_from_slice(&id);
        d.resize(72, 0);
        d.extend_from_slice(path.as_bytes());
        d.push(0);
        self.push(cpu, ts, d)
    }

    fn stack_entry(id: u16, pid: i32, first: u32, stack: &[u64], full: bool) -> Vec<u8> {
        let mut d = header(id, pid);
        d.extend_from_slice(&first.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        let n = if full { 8 } else { stack.len().min(8) };
        for i in 0..n {
            d.extend_from_slice(&stack.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        d
    }

    /// `ftrace:user_stack` (stock kernels; 8 slots, zero filled).
    pub fn user_stack(&mut self, cpu: u32, ts: u64, pid: i32, stack: &[u64]) -> &mut Self {
        let d = Self::stack_entry(ID_USER_STACK, pid, pid as u32, stack, true);
        self.push(cpu, ts, d)
    }

    /// `ftrace:kernel_stack` (sized by its number of entries).
    pub fn kernel_stack(&mut self, cpu: u32, ts: u64, pid: i32, stack: &[u64]) -> &mut Self {
        let d = Self::stack_entry(ID_KERNEL_STACK, pid, stack.len() as u32, stack, false);
        self.push(cpu, ts, d)
    }

    fn pages(&self, recs: &[Rec]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut page: Option<(PageBuilder, u64)> = None;
        let mut pending_lost: Option<Option<u64>> = None;
        let flush = |p: &mut Option<(PageBuilder, u64)>, out: &mut Vec<u8>| {
            if let Some((b, _)) = p.take() {
                out.extend(b.finish(self.page_size).expect("page fits"));
            }
        };
        for r in recs {
            match r {
                Rec::Lost(c) => {
                    flush(&mut page, &mut out);
                    pending_lost = Some(*c);
                }
                Rec::Event(ts, data) => {
                    // 4 header bytes (+4 long form), 16 bytes for a time
                    // extend, the lost count and the page header.
                    let need = data.len().div_ceil(4) * 4 + 8 + 8 + 8;
                    if let Some((b, _)) = &page {
                        if 16 + b.data().len() + need > self.page_size {
                            flush(&mut page, &mut out);
                        }
                    }
                    let (b, last) = page.get_or_insert_with(|| {
                        let mut b = PageBuilder::new(*ts);
                        if let Some(c) = pending_lost.take() {
                            b = b.missed(c);
                        }
                        (b, *ts)
                    });
                    let mut delta = ts.saturating_sub(*last);
                    let mut nb = b.clone();
                    if delta >= 1 << 27 {
                        nb = nb.time_extend(delta);
                        delta = 0;
                    }
                    nb = nb.event(delta as u32, data, false);
                    *b = nb;
                    *last = (*ts).max(*last);
                }
            }
        }
        flush(&mut page, &mut out);
        out
    }

    /// Writes the trace.dat (version 7, uncompressed) at `path`. The per-CPU
    /// page files are written next to it (`path.cpuN`) and removed after.
    pub fn write(&self, path: &Path) -> Result<(), ustack_tracedata::Error> {
        self.write_with(
            path,
            &WriteOptions {
                version: ustack_tracedata::writer::FileVersion::V7,
                compression: ustack_tracedata::compress::Compression::None,
            },
        )
    }

    /// Like [`TraceBuilder::write`] with explicit writer options.
    pub fn write_with(
        &self,
        path: &Path,
        opts: &WriteOptions,
    ) -> Result<(), ustack_tracedata::Error> {
        let mut cpus = Vec::new();
        let mut tmp = Vec::new();
        for (i, recs) in self.cpus.iter().enumerate() {
            let p = path.with_extension(format!("cpu{i}"));
            std::fs::write(&p, self.pages(recs)).map_err(|e| ustack_tracedata::Error::io(&p, e))?;
            let mut data = CpuData::new(i as u32, &p);
            data.stats = self
                .stats
                .iter()
                .find(|(c, _)| *c == i as u32)
                .map(|(_, t)| t.clone());
            cpus.push(data);
            tmp.push(p);
        }
        let mut cmdlines = String::new();
        for (p, c) in &self.comms {
            cmdlines.push_str(&format!("{p} {c}\n"));
        }
        let meta = TraceMeta {
            page_size: self.page_size as u32,
            long_size: 8,
            header_page: HEADER_PAGE
                .replace("4080", &(self.page_size - 16).to_string())
                .into_bytes(),
            header_event: HEADER_EVENT.as_bytes().to_vec(),
            ftrace_formats: ftrace_formats()
                .into_iter()
                .chain(self.extra_formats.iter().cloned())
                .collect(),
            event_systems: event_systems(),
            kallsyms: self.kallsyms.clone().into_bytes(),
            cmdlines: cmdlines.into_bytes(),
            cpu_count: self.cpus.len() as u32,
            procmaps: self.procmaps.clone(),
            uname: self.uname.clone(),
            ..Default::default()
        };
        let buffers = [BufferData {
            name: String::new(),
            clock: "local".into(),
            cpus,
        }];
        let res = write_trace_dat(path, &meta, &buffers, opts).map(|_| ());
        for p in tmp {
            let _ = std::fs::remove_file(p);
        }
        res
    }
}

/// Where the demo maps libc in its processes.
pub const DEMO_LIBC_BASE: u64 = 0x7f00_0000_0000;
/// Where the demo maps its main program (a path that does not exist, so
/// its frames stay unsymbolized).
pub const DEMO_APP_BASE: u64 = 0x5555_5555_0000;
/// The demo's libc path.
pub const DEMO_LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

/// Offsets from the load base of a few libc functions (`write`, `read`,
/// `__libc_start_main`), read from the machine's libc, with their names.
/// Empty when libc cannot be read.
pub fn libc_functions() -> Vec<(String, u64)> {
    use object::{Object, ObjectSegment, ObjectSymbol};
    let Ok(data) = std::fs::read(DEMO_LIBC) else {
        return Vec::new();
    };
    let Ok(f) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let base = f.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
    let mut out = Vec::new();
    for want in ["write", "read", "__libc_start_main"] {
        if let Some(s) = f
            .dynamic_symbols()
            .find(|s| s.name() == Ok(want) && s.size() > 0x10)
        {
            out.push((want.to_string(), s.address() - base));
        }
    }
    out
}

/// A small deterministic pseudo-random generator (xorshift64) for the
/// demo and for tests; the seed must not be 0.
pub struct Rng(pub u64);
impl Rng {
    /// The next pseudo-random value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A pseudo-random value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A demo trace of `groups` deferred kernel entries spread over `ncpus`
/// CPUs and a few tasks: each entry is a `sys_enter` with a kernel stack,
/// 1-3 cookie events, a `sys_exit`, and its user stack (through libc), often
/// on another CPU. Every 97th entry loses its stack to a drop on its CPU,
/// and the last entry of each task is left pending. Roughly `groups * 7`
/// records.
pub fn demo(groups: usize, ncpus: u32) -> TraceBuilder {
    let ncpus = ncpus.max(1);
    let mut t = TraceBuilder::new(ncpus);
    let tasks: [(i32, &str); 4] = [
        (1201, "nginx"),
        (1202, "nginx"),
        (2300, "postgres"),
        (3400, "cc1"),
    ];
    for &(pid, comm) in &tasks {
        t.comm(pid, comm);
        t.procmap(
            pid as u32,
            comm,
            &[
                (
                    DEMO_APP_BASE,
                    DEMO_APP_BASE + 0x10_0000,
                    "/usr/sbin/demo-app",
                ),
                (DEMO_LIBC_BASE, DEMO_LIBC_BASE + 0x20_0000, DEMO_LIBC),
            ],
        );
    }
    let libc = libc_functions();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ts = 1_000_000_000u64;
    let mut counters = vec![1u32; ncpus as usize];
    let mut last_of_task: Vec<Option<usize>> = vec![None; tasks.len()];
    let kstack = [
        0xffff_ffff_8120_0010u64,
        0xffff_ffff_8130_0040,
        0xffff_ffff_8110_0020,
        0xffff_ffff_8150_0008,
    ];
    for i in 0..groups {
        let ti = rng.below(tasks.len() as u64) as usize;
        last_of_task[ti] = Some(i);
        let (pid, _) = tasks[ti];
        let cpu = rng.below(u64::from(ncpus)) as u32;
        let c = &mut counters[cpu as usize];
        *c += 2;
        let cookie = u64::from(*c | 1) << 32 | u64::from(cpu + 1);
        let nr = [0i64, 1, 3, 7][rng.below(4) as usize];
        ts += 1_000 + rng.below(20_000);
        t.sys_enter(cpu, ts, pid, nr);
        t.kernel_stack(cpu, ts, pid, &kstack[..2 + rng.below(3) as usize]);
        t.cookie(cpu, ts, pid, cookie);
        let extra = rng.below(3);
        for _ in 0..extra {
            ts += 100 + rng.below(2_000);
            t.sched_switch(cpu, ts, (pid, tasks[ti].1), (0, "swapper/0"));
            t.cookie(cpu, ts, pid, cookie);
        }
        ts += 200 + rng.below(5_000);
        t.sys_exit(cpu, ts, pid, nr, 0);
        t.cookie(cpu, ts, pid, cookie);
        if i % 97 == 96 {
            t.lost(cpu, Some(1 + rng.below(50)));
            continue;
        }
        if i + tasks.len() >= groups && last_of_task.iter().all(|l| l.is_some()) && i + 1 == groups
        {
            continue;
        }
        let scpu = if rng.below(4) == 0 {
            rng.below(u64::from(ncpus)) as u32
        } else {
            cpu
        };
        ts += 50 + rng.below(500);
        let mut stack = Vec::new();
        if let Some((_, off)) = libc.get((nr as usize) % libc.len().max(1)) {
            stack.push(DEMO_LIBC_BASE + off + 4);
        }
        stack.push(DEMO_APP_BASE + 0x1000 + rng.below(0x100) * 0x10);
        stack.push(DEMO_APP_BASE + 0x2340);
        if let Some((_, off)) = libc.iter().find(|l| l.0 == "__libc_start_main") {
            stack.push(DEMO_LIBC_BASE + off + 0x80);
        }
        t.unwind_stack(scpu, ts, pid, cookie, &stack);
    }
    t
}

/// Cookie of the first group of [`fixture`].
pub const FIXTURE_COOKIE_A: u64 = 0x3_0000_0001;
/// Cookie of the second group of [`fixture`].
pub const FIXTURE_COOKIE_B: u64 = 0x5_0000_0002;

/// A small fixed trace on 2 CPUs with one group of each kind:
/// pid 100 (`app`) makes a complete deferred group (cookie A: `sys_enter`
/// with a kernel stack and `sys_exit` on CPU 0, stack on CPU 1 after a
/// migration), pid 200 (`other`) loses its stack to 9 dropped events on
/// CPU 1 (cookie B), then pid 100 has a stock-kernel `user_stack` event.
/// User addresses are in `/nonexistent/app` (mapped at 0x5555_0000_0000),
/// except the sync stack's first frame, in libc's `write` when libc is
/// readable.
pub fn fixture() -> TraceBuilder {
    let mut t = TraceBuilder::new(2);
    t.comm(100, "app").comm(200, "other");
    t.procmap(
        100,
        "app",
        &[
            (0x5555_0000_0000, 0x5555_0001_0000, "/nonexistent/app"),
            (DEMO_LIBC_BASE, DEMO_LIBC_BASE + 0x20_0000, DEMO_LIBC),
        ],
    );
    t.sys_enter(0, 1_000, 100, 1);
    t.kernel_stack(0, 1_000, 100, &[0xffffffff81200010, 0xffffffff81100020]);
    t.cookie(0, 1_000, 100, FIXTURE_COOKIE_A);
    t.sys_exit(0, 2_000, 100, 1, 5);
    t.cookie(0, 2_000, 100, FIXTURE_COOKIE_A);
    t.sys_enter(1, 1_500, 200, 0);
    t.cookie(1, 1_500, 200, FIXTURE_COOKIE_B);
    t.lost(1, Some(9));
    t.unwind_stack(
        1,
        3_000,
        100,
        FIXTURE_COOKIE_A,
        &[0x5555_0000_1234, 0x5555_0000_5678],
    );
    t.sys_enter(0, 4_000, 100, 3);
    let write = libc_functions()
        .iter()
        .find(|f| f.0 == "write")
        .map(|f| DEMO_LIBC_BASE + f.1 + 4)
        .unwrap_or(0x5555_0000_0042);
    t.user_stack(0, 4_000, 100, &[write]);
    t
}

/// A trace recorded with kernel stacks only (`record -T`, no user stacks):
/// pid 100 (`app`) enters `write` on CPU 0 (kernel stack through the
/// tracing-internal `stack_trace_save` and
/// `trace_event_raw_event_sys_enter`) and leaves it without a stack; pid 200
/// (`other`) is switched out on CPU 1 in `schedule`.
pub fn fixture_kernel_only() -> TraceBuilder {
    let mut t = TraceBuilder::new(2);
    t.comm(100, "app").comm(200, "other");
    t.sys_enter(0, 1_000, 100, 1);
    t.kernel_stack(
        0,
        1_000,
        100,
        &[
            0xffffffff81700008,
            0xffffffff81600010,
            0xffffffff81200010,
            0xffffffff81100020,
        ],
    );
    t.sys_exit(0, 2_000, 100, 1, 5);
    t.sched_switch(1, 2_500, (200, "other"), (0, "swapper/1"));
    t.kernel_stack(1, 2_500, 200, &[0xffffffff81400030, 0xffffffff81100040]);
    t
}
