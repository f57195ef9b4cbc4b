//! The call frame information of one mapped ELF file: its FDEs, indexed
//! by address, and the unwind rule at an address.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use crate::elf::{open_debug_file, open_file, Mapped};
use gimli::{
    BaseAddresses, CieOrFde, DebugFrame, EhFrame, EndianSlice, LittleEndian, UnwindContext,
    UnwindSection,
};
use object::{Object, ObjectSection, ObjectSegment};

use super::rule::Rule;

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// Which section an FDE is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Eh,
    Debug,
}

/// One FDE: the addresses it covers and where it is.
#[derive(Debug, Clone, Copy)]
struct Fde {
    start: u64,
    end: u64,
    offset: usize,
    section: Section,
}

/// The bytes of an ELF file: mapped from disk, or an image in memory
/// (the vDSO).
enum Image {
    Mapped(Mapped),
    Owned(Vec<u8>),
}

impl Image {
    fn bytes(&self) -> &[u8] {
        match self {
            Image::Mapped(m) => m.bytes(),
            Image::Owned(v) => v,
        }
    }
}

/// The CFI of one ELF file.
pub(crate) struct Module {
    /// Holds `.eh_frame`'s bytes.
    main: Image,
    /// `.eh_frame` in `main`, and its virtual address.
    eh_frame: Option<(Range<usize>, u64)>,
    /// `.debug_frame` (of the file or of its debug file), decompressed.
    debug_frame: Option<Vec<u8>>,
    /// Bases for `.eh_frame`'s pc-relative and data-relative pointers.
    bases: BaseAddresses,
    /// Page of the lowest `PT_LOAD` vaddr: the load base's virtual address.
    first_page: u64,
    /// FDEs sorted by start; `.eh_frame` first where both cover an address.
    fdes: Vec<Fde>,
}

impl Module {
    /// Loads the CFI of the file the trace names `path` (under `root`
    /// first), and of its separate debug file. `None` when the file cannot
    /// be read as ELF.
    pub(crate) fn load(path: &Path, root: Option<&Path>) -> Option<Module> {
        let (_, main) = open_file(path, root)?;
        let debug = |main: &[u8]| {
            let dbg = open_debug_file(main, path, root)?;
            let file = object::File::parse(dbg.bytes()).ok()?;
            section_data(&file, ".debug_frame")
        };
        Module::from_image(Image::Mapped(main), debug)
    }

    /// The CFI of an ELF image in memory (the vDSO's).
    pub(crate) fn from_bytes(image: Vec<u8>) -> Option<Module> {
        Module::from_image(Image::Owned(image), |_| None)
    }

    /// `debug_frame` gives the `.debug_frame` of the separate debug file,
    /// asked only when the image has none of its own.
    fn from_image(
        main: Image,
        debug_frame: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Option<Module> {
        let (eh_frame, mut bases, first_page, own_debug_frame) = {
            let file = object::File::parse(main.bytes()).ok()?;
            let first_page = file.segments().map(|s| s.address()).min()? & !0xfff;
            let mut bases = BaseAddresses::default();
            let mut eh_frame = None;
            for s in file.sections() {
                match s.name() {
                    Ok(".eh_frame") => {
                        if let Some((off, len)) = s.file_range() {
                            let r = usize::try_from(off).ok()?..usize::try_from(off + len).ok()?;
                            eh_frame = Some((r, s.address()));
                            bases = bases.set_eh_frame(s.address());
                        }
                    }
                    Ok(".eh_frame_hdr") => bases = bases.set_eh_frame_hdr(s.address()),
                    Ok(".text") => bases = bases.set_text(s.address()),
                    Ok(".got") => bases = bases.set_got(s.address()),
                    _ => {}
                }
            }
            (
                eh_frame,
                bases,
                first_page,
                section_data(&file, ".debug_frame"),
            )
        };
        let debug_frame = own_debug_frame.or_else(|| debug_frame(main.bytes()));
        if eh_frame.is_none() {
            bases = BaseAddresses::default();
        }
        let mut m = Module {
            main,
            eh_frame,
            debug_frame,
            bases,
            first_page,
            fdes: Vec::new(),
        };
        m.index();
        Some(m)
    }

    /// The virtual address (in the file's own numbering) of an address
    /// `off` bytes past the load base.
    #[inline]
    pub(crate) fn vaddr(&self, off: u64) -> u64 {
        self.first_page.wrapping_add(off)
    }

    fn eh(&self) -> Option<EhFrame<Slice<'_>>> {
        let (r, _) = self.eh_frame.as_ref()?;
        let mut s = EhFrame::new(self.main.bytes().get(r.clone())?, LittleEndian);
        s.set_address_size(8);
        Some(s)
    }

    fn debug(&self) -> Option<DebugFrame<Slice<'_>>> {
        let mut s = DebugFrame::new(self.debug_frame.as_deref()?, LittleEndian);
        s.set_address_size(8);
        Some(s)
    }

    /// Builds the sorted FDE index of both sections. A malformed entry
    /// ends the walk of its section: what came before it stays usable.
    fn index(&mut self) {
        let mut fdes = Vec::new();
        if let Some(eh) = self.eh() {
            collect(&eh, &self.bases, Section::Eh, &mut fdes);
        }
        if let Some(df) = self.debug() {
            collect(&df, &BaseAddresses::default(), Section::Debug, &mut fdes);
        }
        // Stable: at one start, .eh_frame's FDE stays first.
        fdes.sort_by_key(|f| f.start);
        self.fdes = fdes;
    }

    /// The unwind rule at virtual address `va`, `None` when no FDE covers
    /// it or its CFI cannot be read.
    pub(crate) fn rule_at(&self, va: u64, ctx: &mut UnwindContext<usize>) -> Option<Rule> {
        let i = self.fdes.partition_point(|f| f.start <= va);
        let fde = self.fdes[..i]
            .iter()
            .rev()
            .take(4)
            .find(|f| va < f.end)
            .copied()?;
        match fde.section {
            Section::Eh => rule_in(&self.eh()?, &self.bases, fde.offset, va, ctx),
            Section::Debug => rule_in(
                &self.debug()?,
                &BaseAddresses::default(),
                fde.offset,
                va,
                ctx,
            ),
        }
    }
}

/// A section's bytes, decompressed when it is compressed.
fn section_data(file: &object::File<'_>, name: &str) -> Option<Vec<u8>> {
    let s = file.section_by_name(name)?;
    match s.uncompressed_data().ok()? {
        Cow::Borrowed(b) => Some(b.to_vec()),
        Cow::Owned(v) => Some(v),
    }
}

fn collect<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    kind: Section,
    out: &mut Vec<Fde>,
) where
    S::Offset: gimli::UnwindOffset<usize>,
{
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        if let CieOrFde::Fde(partial) = entry {
            let Ok(fde) = partial.parse(S::cie_from_offset) else {
                continue;
            };
            let start = fde.initial_address();
            out.push(Fde {
                start,
                end: start.saturating_add(fde.len()),
                offset: fde.offset(),
                section: kind,
            });
        }
    }
}

fn rule_in<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    offset: usize,
    va: u64,
    ctx: &mut UnwindContext<usize>,
) -> Option<Rule>
where
    S::Offset: gimli::UnwindOffset<usize>,
{
    let fde = section
        .fde_from_offset(bases, offset.into(), S::cie_from_offset)
        .ok()?;
    let row = fde.unwind_info_for_address(section, bases, ctx, va).ok()?;
    Rule::from_row(
        row,
        section,
        fde.cie().return_address_register(),
        fde.is_signal_trampoline(),
    )
}
