//! Lazy, cached symbolization of kernel and user addresses.
//!
//! * Kernel addresses go through the kallsyms text saved in the trace file
//!   (parsed on first use, names kept as ranges of the original text).
//! * User addresses go through the process mappings saved in the trace file
//!   (trace-cmd's PROCMAPS option) or, for live processes, `/proc/PID/maps`,
//!   to a (file, file offset) pair, then through the ELF program headers to a
//!   virtual address, then through the ELF symbol tables (`.symtab`, or the
//!   separate debug file found by build id, else `.dynsym`).
//!
//! The `object` crate is used for ELF rather than blazesym: it is already a
//! workspace dependency and builds in seconds on a shared machine. Function
//! names come from the ELF symbol tables; where the file has DWARF line
//! tables, `addr2line` (over the same `object` crate) adds `file:line`.
//!
//! Each ELF file is loaded once, on the first address that falls into it,
//! and each resolved (file, offset) is cached.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// One symbolized address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The raw address.
    pub addr: u64,
    /// Function name, when found.
    pub symbol: Option<String>,
    /// Offset of `addr` from the start of `symbol`.
    pub offset: u64,
    /// The object: a file path for user addresses, a module name for
    /// kernel module addresses.
    pub object: Option<String>,
    /// `file:line` from the object's DWARF line table, when it has one.
    pub location: Option<String>,
}

impl Frame {
    /// A frame with nothing resolved.
    pub fn unknown(addr: u64) -> Self {
        Frame {
            addr,
            symbol: None,
            offset: 0,
            object: None,
            location: None,
        }
    }

    /// `sym+0xoff` (`sym` at offset 0), or `0xaddr` when there is no
    /// symbol. The rest of a frame's spelling is the printer's.
    pub fn name(&self) -> String {
        match &self.symbol {
            Some(s) if self.offset == 0 => s.clone(),
            Some(s) => format!("{s}+{:#x}", self.offset),
            None => format!("{:#x}", self.addr),
        }
    }
}

/// Kernel symbols from a kallsyms text.
#[derive(Debug, Default)]
pub struct KernelSymbols {
    text: String,
    /// (address, name start, name len, module start, module len) sorted by
    /// address; module len 0 means the core kernel.
    syms: Vec<(u64, u32, u16, u32, u16)>,
}

impl KernelSymbols {
    /// Parses `/proc/kallsyms` text (`addr type name [module]`). Lines that do
    /// not parse, data symbols and zero addresses (kptr_restrict) are
    /// skipped.
    pub fn parse(text: String) -> Self {
        let mut syms = Vec::new();
        let base = text.as_ptr() as usize;
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(a), Some(t), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(a, 16) else {
                continue;
            };
            if addr == 0 || !matches!(t, "t" | "T" | "w" | "W") {
                continue;
            }
            let (ms, ml) = match it.next() {
                Some(m) => {
                    let m = m.trim_start_matches('[').trim_end_matches(']');
                    (m.as_ptr() as usize - base, m.len())
                }
                None => (0, 0),
            };
            syms.push((
                addr,
                (name.as_ptr() as usize - base) as u32,
                name.len().min(u16::MAX as usize) as u16,
                ms as u32,
                ml.min(u16::MAX as usize) as u16,
            ));
        }
        syms.sort_by_key(|s| s.0);
        KernelSymbols { text, syms }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol at or before `addr`.
    pub fn lookup(&self, addr: u64) -> Frame {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        if i == 0 {
            return Frame::unknown(addr);
        }
        let (a, ns, nl, ms, ml) = self.syms[i - 1];
        let name = &self.text[ns as usize..ns as usize + nl as usize];
        let module =
            (ml > 0).then(|| self.text[ms as usize..ms as usize + ml as usize].to_string());
        Frame {
            addr,
            symbol: Some(name.to_string()),
            offset: addr - a,
            object: module,
            location: None,
        }
    }
}

/// One file-backed mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset mapped at `start` (`/proc/PID/maps`), or `None` when
    /// `start` is the load base of the file, i.e. where its lowest `PT_LOAD`
    /// segment is mapped (trace-cmd's PROCMAPS).
    pub offset: Option<u64>,
    /// Path of the file.
    pub path: String,
}

/// Mappings of the processes of a trace.
#[derive(Debug, Default, Clone)]
pub struct ProcMaps {
    procs: HashMap<i32, (String, Vec<Mapping>)>,
}

impl ProcMaps {
    /// Parses trace-cmd's PROCMAPS text: for each process a line
    /// `PID NR COMM` (PID and NR in hex), then NR lines `START END PATH`
    /// (hex; each library's lowest mapping, which maps file offset 0). A
    /// line of the `/proc/PID/maps` shape (`start-end perms offset dev inode
    /// path`) is accepted in place of a `START END PATH` line. Malformed
    /// lines are skipped.
    pub fn parse_procmaps(text: &str) -> Self {
        let mut procs: HashMap<i32, (String, Vec<Mapping>)> = HashMap::new();
        let mut cur: Option<(i32, usize)> = None;
        for line in text.lines() {
            let line = line.trim_end_matches('\0');
            if let Some((pid, left)) = cur.filter(|c| c.1 > 0) {
                cur = Some((pid, left - 1));
                if let Some(m) = parse_lib_line(line) {
                    procs.entry(pid).or_default().1.push(m);
                }
                continue;
            }
            let toks: Vec<&str> = line.split_ascii_whitespace().collect();
            if toks.len() < 2 {
                continue;
            }
            let (Ok(pid), Ok(nr)) = (
                i32::from_str_radix(toks[0], 16),
                usize::from_str_radix(toks[1], 16),
            ) else {
                continue;
            };
            let comm = toks.get(2).copied().unwrap_or("").to_string();
            procs.entry(pid).or_default().0 = comm;
            cur = Some((pid, nr));
        }
        for (_, maps) in procs.values_mut() {
            maps.sort_by_key(|m| m.start);
        }
        ProcMaps { procs }
    }

    /// Parses the text of one `/proc/PID/maps` file for `pid`.
    pub fn add_proc_maps(&mut self, pid: i32, text: &str) {
        let mut maps: Vec<Mapping> = text.lines().filter_map(parse_maps_line).collect();
        maps.sort_by_key(|m| m.start);
        self.procs.entry(pid).or_default().1 = maps;
    }

    /// True when mappings of `pid` are known.
    pub fn has(&self, pid: i32) -> bool {
        self.procs.contains_key(&pid)
    }

    /// The command name recorded for `pid`, if any.
    pub fn comm(&self, pid: i32) -> Option<&str> {
        self.procs
            .get(&pid)
            .map(|p| p.0.as_str())
            .filter(|c| !c.is_empty())
    }

    /// The mapping of `pid` that holds `addr`.
    pub fn find(&self, pid: i32, addr: u64) -> Option<&Mapping> {
        let maps = &self.procs.get(&pid)?.1;
        let i = maps.partition_point(|m| m.start <= addr);
        let m = maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// For a task without saved mappings (typically a thread: mappings are
    /// saved per process), the mapping of `addr` if every saved process
    /// that maps `addr` maps the same file the same way there. With address
    /// space randomization an address is rarely mapped by unrelated
    /// processes; processes that share a layout (forks) agree.
    pub fn find_unique(&self, addr: u64) -> Option<&Mapping> {
        let mut found: Option<&Mapping> = None;
        let mut pids: Vec<&i32> = self.procs.keys().collect();
        pids.sort_unstable();
        for pid in pids {
            let Some(m) = self.find(*pid, addr) else {
                continue;
            };
            match found {
                None => found = Some(m),
                Some(f) if f.path == m.path && f.start == m.start && f.offset == m.offset => {}
                Some(_) => return None,
            }
        }
        found
    }

    /// Pids with mappings.
    pub fn pids(&self) -> impl Iterator<Item = i32> + '_ {
        self.procs.keys().copied()
    }
}

fn parse_lib_line(line: &str) -> Option<Mapping> {
    if let Some(m) = parse_maps_line(line) {
        return Some(m);
    }
    let mut it = line.splitn(3, ' ');
    let start = u64::from_str_radix(it.next()?, 16).ok()?;
    let end = u64::from_str_radix(it.next()?, 16).ok()?;
    let path = it.next()?.trim().to_string();
    (end > start && !path.is_empty()).then_some(Mapping {
        start,
        end,
        offset: None,
        path,
    })
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
    let mut it = line.split_ascii_whitespace();
    let range = it.next()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    let _perms = it.next()?;
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let _dev = it.next()?;
    let _inode = it.next()?;
    // The path is the rest of the line (it may contain spaces).
    let path = line
        .split_ascii_whitespace()
        .skip(5)
        .collect::<Vec<_>>()
        .join(" ");
    if !path.starts_with('/') {
        return None;
    }
    Some(Mapping {
        start,
        end,
        offset: Some(offset),
        path,
    })
}

/// Function symbols of one ELF file, and its DWARF line tables.
struct ElfSymbols {
    /// (file offset, file size, vaddr) of each PT_LOAD.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name) sorted by address.
    syms: Vec<(u64, u64, String)>,
    /// Line tables (parsed lazily by addr2line), when the file has DWARF.
    dwarf: Option<addr2line::Loader>,
}

impl std::fmt::Debug for ElfSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ElfSymbols({} segments, {} symbols, dwarf: {})",
            self.segments.len(),
            self.syms.len(),
            self.dwarf.is_some()
        )
    }
}

impl ElfSymbols {
    fn load(path: &Path) -> Option<Self> {
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let mut syms = collect_syms(&file);
        if !file.symbols().any(|_| true) {
            // Stripped: try the separate debug file, by build id.
            if let Some(dbg) = debug_file(&file) {
                if let Ok(d) = std::fs::read(&dbg) {
                    if let Ok(df) = object::File::parse(&*d) {
                        let more = collect_syms(&df);
                        if more.len() > syms.len() {
                            syms = more;
                        }
                    }
                }
            }
        }
        let has_lines = file.section_by_name(".debug_line").is_some();
        let dwarf = if has_lines {
            addr2line::Loader::new(path).ok()
        } else {
            None
        };
        Some(ElfSymbols {
            segments,
            syms,
            dwarf,
        })
    }

    /// `file:line` of a virtual address in the function the symbol names:
    /// the outermost of the inline frames there (the innermost may be
    /// code inlined from anywhere).
    fn location(&self, vaddr: u64) -> Option<String> {
        let mut frames = self.dwarf.as_ref()?.find_frames(vaddr).ok()?;
        let mut out = None;
        while let Ok(Some(f)) = frames.next() {
            if let Some(loc) = f.location {
                if let Some(file) = loc.file {
                    out = Some(match loc.line {
                        Some(l) => format!("{file}:{l}"),
                        None => file.to_string(),
                    });
                }
            }
        }
        out
    }

    /// Virtual address of `off` bytes after the load base.
    fn vaddr_from_base(&self, off: u64) -> Option<u64> {
        let first = self.segments.iter().map(|s| s.2).min()?;
        Some((first & !0xfff).wrapping_add(off))
    }

    fn vaddr(&self, file_off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(off, size, _)| file_off >= off && file_off < off.saturating_add(size))
            .map(|&(off, _, va)| (file_off - off).wrapping_add(va))
    }

    fn lookup(&self, vaddr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= vaddr);
        let (a, size, name) = self.syms.get(i.checked_sub(1)?)?;
        // Size 0 symbols (hand-written asm) cover up to the next symbol.
        (size == &0 || vaddr < a.saturating_add(*size)).then_some((name.as_str(), vaddr - a))
    }
}

fn collect_syms(file: &object::File<'_>) -> Vec<(u64, u64, String)> {
    // Several names often share an address (`write`, `__write`,
    // `__GI___libc_write`): keep the greatest in byte order, which prefers
    // public names over `_`-prefixed aliases and is what a lookup in sorted
    // `nm -n` output gives. Symbol versions (`@@GLIBC_2.34`) are dropped.
    let mut syms: Vec<(u64, std::cmp::Reverse<String>, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0 && s.is_definition())
        .filter_map(|s| {
            let name = s.name().ok()?;
            let name = name.split('@').next().unwrap_or(name);
            Some((s.address(), std::cmp::Reverse(name.to_string()), s.size()))
        })
        .collect();
    syms.sort();
    syms.dedup_by_key(|s| s.0);
    syms.into_iter()
        .map(|(a, n, size)| (a, size, n.0))
        .collect()
}

/// Rust names (legacy `_ZN...E` and v0 `_R...`) demangled without their
/// hash; other names as they are.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

fn debug_file(file: &object::File<'_>) -> Option<PathBuf> {
    let id = file.build_id().ok()??;
    if id.len() < 2 {
        return None;
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let p = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    p.exists().then_some(p)
}

/// What a (file, offset) resolves to: symbol, offset in it, `file:line`.
type Resolved = (Option<String>, u64, Option<String>);

/// Symbolizer for one trace: kernel and user addresses, lazily loaded and
/// cached.
#[derive(Debug, Default)]
pub struct Symbolizer {
    kallsyms: Option<String>,
    kernel: Option<KernelSymbols>,
    maps: ProcMaps,
    live: bool,
    root: Option<PathBuf>,
    elves: HashMap<String, Option<ElfSymbols>>,
    cache: HashMap<(String, u64), Resolved>,
}

impl Symbolizer {
    /// A symbolizer over the kallsyms text and the process maps of a trace.
    /// The kallsyms text is parsed on the first kernel lookup.
    pub fn new(kallsyms: Option<String>, maps: ProcMaps) -> Self {
        Symbolizer {
            kallsyms,
            maps,
            ..Default::default()
        }
    }

    /// Reads `/proc/PID/maps` (once) for pids that have no saved mappings:
    /// for live tracing.
    pub fn with_live_maps(mut self, live: bool) -> Self {
        self.live = live;
        self
    }

    /// Looks files up under `root` (a sysroot, e.g. for a trace recorded in
    /// a VM); falls back to the plain path.
    pub fn with_root(mut self, root: Option<PathBuf>) -> Self {
        self.root = root;
        self
    }

    /// The process maps.
    pub fn maps(&self) -> &ProcMaps {
        &self.maps
    }

    /// Symbolizes a kernel address.
    pub fn kernel(&mut self, addr: u64) -> Frame {
        if self.kernel.is_none() {
            let text = self.kallsyms.take().unwrap_or_default();
            self.kernel = Some(KernelSymbols::parse(text));
        }
        match &self.kernel {
            Some(k) => k.lookup(addr),
            None => Frame::unknown(addr),
        }
    }

    /// Symbolizes a user address of `pid`. `return_addr` says the address
    /// is a return address (every frame but the innermost): the symbol is
    /// then looked up at `addr - 1`, inside the call.
    pub fn user(&mut self, pid: i32, addr: u64, return_addr: bool) -> Frame {
        if self.live && !self.maps.has(pid) {
            let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
            self.maps.add_proc_maps(pid, &text);
        }
        let m = if self.maps.has(pid) {
            self.maps.find(pid, addr)
        } else {
            self.maps.find_unique(addr)
        };
        let Some(m) = m else {
            return Frame::unknown(addr);
        };
        let path = m.path.clone();
        let look = if return_addr && addr > m.start {
            addr - 1
        } else {
            addr
        };
        // Key: (file, offset in the file) or (file, offset from the load
        // base | 1<<63) for base-only mappings.
        let key_off = match m.offset {
            Some(o) => (look - m.start).wrapping_add(o) & !(1 << 63),
            None => (look - m.start) | 1 << 63,
        };
        let key = (path.clone(), key_off);
        let (symbol, sym_off, location) = match self.cache.get(&key) {
            Some(v) => v.clone(),
            None => {
                let v = self.resolve(&path, key_off);
                self.cache.insert(key, v.clone());
                v
            }
        };
        // The offset is reported for the address itself.
        let offset = if symbol.is_some() {
            sym_off + (addr - look)
        } else {
            0
        };
        Frame {
            addr,
            symbol,
            offset,
            object: Some(path),
            location,
        }
    }

    fn resolve(&mut self, path: &str, key_off: u64) -> Resolved {
        let root = self.root.clone();
        let elf = self.elves.entry(path.to_string()).or_insert_with(|| {
            root.as_ref()
                .map(|r| r.join(path.trim_start_matches('/')))
                .and_then(|p| ElfSymbols::load(&p))
                .or_else(|| ElfSymbols::load(Path::new(path)))
        });
        let Some(elf) = elf else {
            return (None, 0, None);
        };
        let va = if key_off & 1 << 63 != 0 {
            elf.vaddr_from_base(key_off & !(1 << 63))
        } else {
            elf.vaddr(key_off)
        };
        let Some(va) = va else {
            return (None, 0, None);
        };
        let location = elf.location(va);
        match elf.lookup(va) {
            Some((name, off)) => (Some(demangle(name)), off, location),
            None => (None, 0, location),
        }
    }
}
