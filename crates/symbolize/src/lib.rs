//! Symbolization of the addresses of a trace.
//!
//! * Kernel addresses go through the kallsyms text saved in the trace file
//!   ([`kallsyms`], parsed on first use, names kept as ranges of the text).
//! * User addresses go through the process's mappings ([`spaces`]: PROCMAPS
//!   saved in the trace file, threads through their process, or, live,
//!   `/proc` via [`procfs`]) to a (file, offset from its load base) pair,
//!   then through the ELF program headers to a virtual address, then
//!   through the ELF symbol tables ([`elf`](mod@elf): `.symtab`, a separate
//!   debug file found by build id or `.gnu_debuglink`, else `.dynsym`), and
//!   `file:line` from DWARF when there is any.
//! * Frames in `[vdso]` go through the traced kernel's vDSO image
//!   ([`vdso`]: this process's own, or the one installed for the trace's
//!   kernel release).
//!
//! Each ELF file is loaded once, on the first address that falls into it,
//! and each resolved (file, offset) is cached, so a million frames from a
//! few thousand distinct addresses cost a few thousand lookups. Only
//! regular files are opened, mapped and bounded ([`elf::MAX_FILE`]): a
//! trace naming `/dev/zero` or a FIFO cannot hang the reader.
//!
//! The `object` crate is used for ELF rather than blazesym: it is already a
//! workspace dependency and builds in seconds on a shared machine.

mod dwarf;
pub mod elf;
mod frame;
pub mod kallsyms;
pub mod procfs;
pub mod spaces;
pub mod unwind;
pub mod vdso;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use frame::Frame;
pub use kallsyms::KernelSymbols;
pub use spaces::{AddressSpaces, Unresolved};

use elf::ElfSymbols;

/// Rust names (legacy `_ZN...E` and v0 `_R...`) demangled without their
/// hash; other names as they are.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

/// What a (file, offset from base) resolves to.
#[derive(Debug, Clone)]
struct Resolved {
    symbol: Option<String>,
    /// Offset of the looked-up address from the symbol.
    offset: u64,
    /// Offset of the looked-up address in the file.
    file_offset: Option<u64>,
    location: Option<String>,
    /// Why there is no symbol.
    miss: Option<Unresolved>,
}

/// Symbolizer for one trace: kernel and user addresses, lazily loaded and
/// cached.
#[derive(Debug, Default)]
pub struct Symbolizer {
    kallsyms: Option<String>,
    kernel: Option<KernelSymbols>,
    spaces: AddressSpaces,
    live: bool,
    /// Tasks whose /proc was read already (live), found or not.
    live_read: std::collections::HashSet<u32>,
    root: Option<PathBuf>,
    /// Index of each file path in `elves`.
    files: HashMap<String, usize>,
    elves: Vec<Option<ElfSymbols>>,
    /// (file index, offset from its load base) -> result.
    cache: HashMap<(usize, u64), Resolved>,
    /// Looks every frame up again (for measuring what the cache saves).
    no_cache: bool,
    /// Unwinds stack snapshots (made on first use, with `root`).
    unwinder: Option<unwind::Unwinder>,
    /// The uname of the traced system (for its vDSO).
    uname: Option<String>,
    /// The traced kernel's vDSO ([`vdso::find`]), looked for once.
    vdso: Option<Option<vdso::Vdso>>,
}

impl Symbolizer {
    /// A symbolizer over the kallsyms text and the process maps of a trace.
    /// The kallsyms text is parsed on the first kernel lookup.
    pub fn new(kallsyms: Option<String>, spaces: AddressSpaces) -> Self {
        Symbolizer {
            kallsyms,
            spaces,
            ..Default::default()
        }
    }

    /// Reads `/proc` (once per task) for tasks whose process has no saved
    /// mappings: for live tracing.
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

    /// Tells the uname of the traced system (the UNAME a trace file
    /// saves): frames in `[vdso]` are unwound and named with that kernel's
    /// vDSO, when [`vdso::find`] finds it.
    pub fn with_uname(mut self, uname: Option<String>) -> Self {
        self.uname = uname;
        self
    }

    /// Without the (file, offset) cache: every frame is looked up in its
    /// file's symbol tables and line table again (files still load once).
    /// Only for measuring what the cache saves (`bench/symbols.sh`).
    pub fn without_cache(mut self) -> Self {
        self.no_cache = true;
        self
    }

    /// The process address spaces.
    pub fn maps(&self) -> &AddressSpaces {
        &self.spaces
    }

    /// Symbolizes a kernel address.
    pub fn kernel(&mut self, addr: u64) -> Frame {
        let text = &mut self.kallsyms;
        self.kernel
            .get_or_insert_with(|| KernelSymbols::parse(text.take().unwrap_or_default()))
            .lookup(addr)
    }

    /// Symbolizes a user address of task `pid`. `return_addr` says the
    /// address is a return address (every frame but the innermost): the
    /// symbol is then looked up at `addr - 1`, inside the call. A frame
    /// without a symbol says why in [`Frame::unresolved`].
    pub fn user(&mut self, pid: i32, addr: u64, return_addr: bool) -> Frame {
        self.user_at(pid, None, addr, return_addr)
    }

    /// Like [`Symbolizer::user`], for a stack taken at trace time `ts`:
    /// the address is looked up in the maps of the image the process ran
    /// then (`None`: the latest; see [`AddressSpaces::find_at`]).
    pub fn user_at(&mut self, pid: i32, ts: Option<u64>, addr: u64, return_addr: bool) -> Frame {
        let (mut f, why) = self.user_frame(pid as u32, ts, addr, return_addr);
        f.unresolved = why;
        f
    }

    /// Like [`Symbolizer::user_at`], with the reason apart.
    pub fn user_frame(
        &mut self,
        pid: u32,
        ts: Option<u64>,
        addr: u64,
        return_addr: bool,
    ) -> (Frame, Option<Unresolved>) {
        if self.live && !self.spaces.has(pid) && self.live_read.insert(pid) {
            self.read_live(pid);
        }
        let (start, path) = match self.spaces.find_at(pid, ts, addr) {
            Ok(m) => (m.start, m.path.clone()),
            Err(why) => {
                let mut f = Frame::unknown(addr);
                if why == Unresolved::Anonymous {
                    f.object = Some("[anon]".into());
                }
                return (f, Some(why));
            }
        };
        let vdso = path == "[vdso]" && self.vdso().is_some();
        if !path.starts_with('/') && !vdso {
            // [vdso] of an unknown kernel, [heap], [stack]: no file to
            // read; the offset in the mapping still tells vdso functions
            // apart.
            let mut f = Frame::unknown(addr);
            f.object = Some(path);
            f.file_offset = Some(addr - start);
            return (f, Some(Unresolved::Special));
        }
        let look = if return_addr && addr > start {
            addr - 1
        } else {
            addr
        };
        let base_off = look - start;
        let file = match self.files.get(&path) {
            Some(&i) => i,
            None => {
                let e = if vdso {
                    self.vdso_symbols()
                } else {
                    ElfSymbols::load(Path::new(&path), self.root.as_deref())
                };
                self.elves.push(e);
                self.files.insert(path.clone(), self.elves.len() - 1);
                self.elves.len() - 1
            }
        };
        let r = match self.cache.get(&(file, base_off)) {
            Some(r) => r.clone(),
            None if self.no_cache => resolve(self.elves[file].as_ref(), base_off),
            None => {
                let r = resolve(self.elves[file].as_ref(), base_off);
                self.cache.insert((file, base_off), r.clone());
                r
            }
        };
        // Offsets are reported for the address itself.
        let back = addr - look;
        let frame = Frame {
            addr,
            offset: if r.symbol.is_some() {
                r.offset + back
            } else {
                0
            },
            symbol: r.symbol,
            object: Some(path),
            file_offset: r.file_offset.map(|o| o + back),
            location: r.location,
            unresolved: None,
            via: None,
        };
        (frame, r.miss)
    }

    /// The traced kernel's vDSO, looked for on the first call.
    fn vdso(&mut self) -> Option<&vdso::Vdso> {
        let (uname, root) = (&self.uname, &self.root);
        self.vdso
            .get_or_insert_with(|| vdso::find(uname.as_deref()?, root.as_deref()))
            .as_ref()
    }

    /// The symbols of the traced kernel's vDSO: of its installed file
    /// (with its line tables), or of the running kernel's image.
    fn vdso_symbols(&mut self) -> Option<ElfSymbols> {
        let v = self.vdso()?;
        match &v.file {
            Some(file) => ElfSymbols::load(file, None),
            None => ElfSymbols::from_image(&v.image),
        }
    }

    /// The user stack of task `pid` unwound from the kernel's snapshot of
    /// it at trace time `ts` (see [`unwind`]), with `kernel` the kernel's
    /// own walk of the same stack, symbolized. Each frame says how it was
    /// found ([`Frame::via`]); the second value is the index of the first
    /// frame the CFI walk did not find and why, when the stack is not
    /// complete.
    pub fn user_unwound(
        &mut self,
        pid: i32,
        ts: Option<u64>,
        snap: &unwind::Snapshot<'_>,
        kernel: &[u64],
    ) -> (Vec<Frame>, Option<(usize, unwind::End)>) {
        let tid = pid as u32;
        if self.live && !self.spaces.has(tid) && self.live_read.insert(tid) {
            self.read_live(tid);
        }
        let image = match self.unwinder {
            None => self.vdso().map(|v| v.image.clone()),
            Some(_) => None,
        };
        let root = &self.root;
        let unwinder = self.unwinder.get_or_insert_with(|| {
            let u = unwind::Unwinder::new(root.clone());
            match image {
                Some(image) => u.with_vdso(image),
                None => u,
            }
        });
        let spaces = &self.spaces;
        let u = unwinder.unwind(snap, kernel, |a| {
            spaces.find_at(tid, ts, a).ok().map(|m| unwind::Mapping {
                base: m.start,
                end: m.end,
                path: &m.path,
            })
        });
        let frames = u
            .frames
            .iter()
            .map(|f| {
                let mut s = self.user_at(pid, ts, f.addr, !f.exact);
                s.via = Some(f.via);
                s
            })
            .collect();
        (frames, u.cut)
    }

    /// Adds the maps of live task `pid`'s process.
    fn read_live(&mut self, pid: u32) {
        let Some(tgid) = procfs::tgid_of(pid) else {
            return;
        };
        self.spaces.add_thread(pid, tgid);
        if !self.spaces.pids().any(|p| p == tgid) {
            if let Ok(m) = procfs::read_proc_map(tgid) {
                self.spaces.add(m);
            }
        }
    }
}

fn resolve(elf: Option<&ElfSymbols>, base_off: u64) -> Resolved {
    let mut r = Resolved {
        symbol: None,
        offset: 0,
        file_offset: None,
        location: None,
        miss: Some(Unresolved::FileUnreadable),
    };
    let Some(elf) = elf else {
        return r;
    };
    r.miss = Some(Unresolved::NoSymbol);
    let Some(va) = elf.vaddr_from_base(base_off) else {
        return r;
    };
    r.file_offset = elf.file_offset(va);
    r.location = elf.location(va);
    if let Some((name, off)) = elf.lookup(va) {
        r.symbol = Some(demangle(name));
        r.offset = off;
        r.miss = None;
    }
    r
}
