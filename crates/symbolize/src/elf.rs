//! Function symbols and line tables of one ELF file, opened safely.
//!
//! A trace names the files to open (PROCMAPS), so a hostile trace can name
//! `/dev/zero`, a FIFO, `/dev/stdin` or a huge sparse file. Only regular
//! files are opened (without blocking: a FIFO is refused, not waited on),
//! they are mapped rather than read, files larger than [`MAX_FILE`] are
//! refused, and DWARF is only loaded when its (possibly compressed)
//! sections are within [`MAX_DWARF`].
//!
//! Symbols come from `.symtab`, else from a separate debug file found by
//! build id (`/usr/lib/debug/.build-id/xx/yyyy.debug`) or by
//! `.gnu_debuglink` (next to the file, in its `.debug/` directory, or under
//! `/usr/lib/debug`), else from `.dynsym`.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::dwarf::LazyDwarf;

/// Largest file opened: bigger than any real binary or debug file we
/// expect, small enough to refuse absurd sparse files early.
pub const MAX_FILE: u64 = 4 << 30;

/// Largest total size of the DWARF sections (after decompression) loaded.
pub const MAX_DWARF: u64 = 1 << 30;

/// How far past the load base (where the lowest `PT_LOAD` segment's page
/// is mapped) a mapping of `len` bytes of the ELF file `path` (looked up
/// under `root` first) from file offset `offset` is mapped: its load base
/// is its start minus this. The segment is the one whose pages hold the
/// whole mapping (a page at a segment boundary is in two segments, the
/// length tells them apart). `None` when the file cannot be read as ELF or
/// no segment holds the mapping. For mapping records that give (start,
/// end, file offset), as the kernel's do.
pub fn base_distance(path: &Path, root: Option<&Path>, offset: u64, len: u64) -> Option<u64> {
    let map = candidates(path, root)
        .into_iter()
        .find_map(|p| Mapped::open(&p))?;
    let file = object::File::parse(map.bytes()).ok()?;
    let mut first = u64::MAX;
    let mut found = None;
    for s in file.segments() {
        let (off, _) = s.file_range();
        let va = s.address();
        first = first.min(va & !0xfff);
        let span = (off & !0xfff)..off.saturating_add(s.size()).saturating_add(0xfff) & !0xfff;
        if span.contains(&offset) && offset.saturating_add(len) <= span.end {
            found = Some((va.wrapping_sub(off).wrapping_add(offset)) & !0xfff);
        }
    }
    found?.checked_sub(first)
}

/// A read-only mapping of a regular file.
pub(crate) struct Mapped(memmap2::Mmap);

impl Mapped {
    /// Maps `path` if it is a regular, non-empty file of at most
    /// [`MAX_FILE`] bytes; `None` for anything else (devices, FIFOs,
    /// sockets, directories, missing files).
    pub(crate) fn open(path: &Path) -> Option<Mapped> {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
        // checked on the opened file, so a symlink cannot swap it in later.
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.file_type().is_file() || meta.len() == 0 || meta.len() > MAX_FILE {
            return None;
        }
        // SAFETY: a private read-only mapping of a regular file. Nothing in
        // this process writes it; another process truncating it while it is
        // mapped would fault (SIGBUS), as for any tool that maps binaries.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        Some(Mapped(map))
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Function symbols of one ELF file, its load segments and its DWARF line
/// tables.
pub(crate) struct ElfSymbols {
    /// (file offset, file size, vaddr) of each PT_LOAD.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name) sorted by address.
    syms: Vec<(u64, u64, String)>,
    /// Line tables (read at the first lookup, one unit at a time), when
    /// the file or its debug file has DWARF.
    dwarf: Option<LazyDwarf>,
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
    /// Loads the file the trace names `path`, and its separate debug file;
    /// each is looked up under `root` (a sysroot, e.g. for a trace recorded
    /// in a VM) first, then at its plain path.
    pub(crate) fn load(path: &Path, root: Option<&Path>) -> Option<Self> {
        let (opened, map) = open_file(path, root)?;
        let file = object::File::parse(map.bytes()).ok()?;
        let segments = segments_of(&file);
        let mut syms = collect_syms(&file);
        let mut dwarf_path = has_dwarf(&file).then_some(opened);
        if file.section_by_name(".symtab").is_none() || dwarf_path.is_none() {
            if let Some((dbg_path, dbg)) = debug_file(&file, path, root) {
                if let Ok(df) = object::File::parse(dbg.bytes()) {
                    let more = collect_syms(&df);
                    if more.len() > syms.len() {
                        syms = more;
                    }
                    if dwarf_path.is_none() && has_dwarf(&df) {
                        dwarf_path = Some(dbg_path);
                    }
                }
            }
        }
        let dwarf = dwarf_path.map(LazyDwarf::new);
        Some(ElfSymbols {
            segments,
            syms,
            dwarf,
        })
    }

    /// The symbols of an ELF image in memory (the running kernel's vDSO):
    /// no separate debug file, no line tables.
    pub(crate) fn from_image(image: &[u8]) -> Option<Self> {
        let file = object::File::parse(image).ok()?;
        Some(ElfSymbols {
            segments: segments_of(&file),
            syms: collect_syms(&file),
            dwarf: None,
        })
    }

    /// `file:line` of a virtual address in the function the symbol names:
    /// the outermost of the inline frames there (the innermost may be code
    /// inlined from anywhere).
    pub(crate) fn location(&self, vaddr: u64) -> Option<String> {
        self.dwarf.as_ref()?.location(vaddr)
    }

    /// Virtual address of `off` bytes after the load base (where the lowest
    /// `PT_LOAD` segment's page is mapped).
    pub(crate) fn vaddr_from_base(&self, off: u64) -> Option<u64> {
        let first = self.segments.iter().map(|s| s.2).min()?;
        Some((first & !0xfff).wrapping_add(off))
    }

    /// File offset of a virtual address, when a segment holds it in the
    /// file.
    pub(crate) fn file_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(_, size, va)| vaddr >= va && vaddr - va < size)
            .map(|&(off, _, va)| off + (vaddr - va))
    }

    /// The function symbol covering `vaddr` and the offset into it.
    pub(crate) fn lookup(&self, vaddr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= vaddr);
        let (a, size, name) = self.syms.get(i.checked_sub(1)?)?;
        // Size 0 symbols (hand-written asm) cover up to the next symbol.
        (size == &0 || vaddr < a.saturating_add(*size)).then_some((name.as_str(), vaddr - a))
    }
}

/// (file offset, file size, vaddr) of each `PT_LOAD` of `file`.
fn segments_of(file: &object::File<'_>) -> Vec<(u64, u64, u64)> {
    file.segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (off, size, s.address())
        })
        .collect()
}

/// True when the file has line tables of a loadable size.
fn has_dwarf(file: &object::File<'_>) -> bool {
    if file.section_by_name(".debug_line").is_none() {
        return false;
    }
    let total: u64 = file
        .sections()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
        .map(|s| match s.compressed_file_range() {
            Ok(r) => r.uncompressed_size,
            Err(_) => u64::MAX,
        })
        .fold(0u64, u64::saturating_add);
    total <= MAX_DWARF
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

/// Opens the file a trace names `path`: under `root` (a sysroot) first,
/// then at its plain path. Returns where it was found and its mapping.
pub(crate) fn open_file(path: &Path, root: Option<&Path>) -> Option<(PathBuf, Mapped)> {
    candidates(path, root)
        .into_iter()
        .find_map(|p| Mapped::open(&p).map(|m| (p, m)))
}

/// The separate debug file (by build id, then `.gnu_debuglink`) of the ELF
/// file a trace names `path`, whose bytes are `main`.
pub(crate) fn open_debug_file(main: &[u8], path: &Path, root: Option<&Path>) -> Option<Mapped> {
    let file = object::File::parse(main).ok()?;
    debug_file(&file, path, root).map(|(_, m)| m)
}

/// `path` under `root` (when given) first, then `path` itself.
fn candidates(path: &Path, root: Option<&Path>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(r) = root {
        v.push(r.join(path.strip_prefix("/").unwrap_or(path)));
    }
    v.push(path.to_path_buf());
    v
}

/// The separate debug file of `file` (at `path`): by build id, then by
/// `.gnu_debuglink`. A candidate with a build id must have the same one.
fn debug_file(
    file: &object::File<'_>,
    path: &Path,
    root: Option<&Path>,
) -> Option<(PathBuf, Mapped)> {
    let id = file.build_id().ok().flatten().filter(|id| id.len() >= 2);
    let mut tries: Vec<PathBuf> = Vec::new();
    if let Some(id) = id {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        ));
        tries.extend(candidates(&p, root));
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = Path::new(std::str::from_utf8(name).ok()?);
        if name.components().count() == 1 {
            let dir = path.parent().unwrap_or(Path::new("/"));
            for p in [
                dir.join(name),
                dir.join(".debug").join(name),
                Path::new("/usr/lib/debug")
                    .join(dir.strip_prefix("/").unwrap_or(dir))
                    .join(name),
            ] {
                // A debug link naming the file itself is no debug file.
                if p != path {
                    tries.extend(candidates(&p, root));
                }
            }
        }
    }
    tries.into_iter().find_map(|p| {
        let m = Mapped::open(&p)?;
        let ok = match object::File::parse(m.bytes()) {
            Ok(df) => match (id, df.build_id().ok().flatten()) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            },
            Err(_) => false,
        };
        ok.then_some((p, m))
    })
}
