//! User stacks unwound from a snapshot of the user stack, with the
//! binaries' own call frame information.
//!
//! The kernel writes, per kernel entry, the user registers unwinding
//! starts from (ip, sp, bp) and the live bytes of the user stack from sp
//! upward ([`Snapshot`]), beside its own frame-pointer walk of the same
//! stack. [`Unwinder::unwind`] walks the snapshot with the CFI of each
//! mapped file (`.eh_frame`, found through an index of its FDEs, and
//! `.debug_frame`, also from a separate debug file), as perf's
//! `--call-graph dwarf` and samply do, then continues on the kernel's
//! frame-pointer chain where the snapshot ends, when that chain is the
//! same stack (see [`walk`]).
//!
//! Every frame says how it was found ([`Via`]) and every stack says where
//! and why the unwinding stopped ([`End`]): a frame is never guessed.
//!
//! The unwind rules come from gimli's CFI parser rather than framehop:
//! the per-frame provenance and the refusal to guess (framehop falls back
//! to frame pointers and prologue analysis on its own) are what the
//! reader shows, and gimli is already the workspace's DWARF reader. Rules
//! are cached per (file, address), so a warm stack costs a hash lookup
//! and a few loads per frame.

mod module;
mod rule;
pub mod walk;

pub use walk::{End, Unwinder, Unwound, UnwoundFrame, Via};

/// The default snapshot size (bytes) of `--user-stacks deferred`: enough
/// for the CFI of a frameless libc wrapper to find its caller, so that
/// stacks of frame-pointer code are exact (tests/ground_truth.rs measures
/// it); code without frame pointers needs the whole stack.
pub const DEFAULT_SNAPSHOT: usize = 128;

/// The user registers and stack bytes the kernel saved for one kernel
/// entry (x86_64).
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Instruction pointer at the kernel entry.
    pub ip: u64,
    /// Stack pointer at the kernel entry: `data` starts there.
    pub sp: u64,
    /// Frame pointer register (`rbp`) at the kernel entry.
    pub bp: u64,
    /// The user stack from `sp` upward, as far as it was copied.
    pub data: &'a [u8],
}

impl Snapshot<'_> {
    /// The 8 bytes at user address `addr`, when the snapshot holds them.
    #[inline]
    pub fn read_u64(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let b = self.data.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// The first address past the snapshot.
    pub fn end(&self) -> u64 {
        self.sp.saturating_add(self.data.len() as u64)
    }
}

/// Where a file is mapped in the traced process: the address of file
/// offset 0's page (the load base, as the symbolizer's maps keep it), the
/// end of the mapping and the path the trace names.
#[derive(Debug, Clone, Copy)]
pub struct Mapping<'a> {
    /// Load base: where the file's lowest `PT_LOAD` page is mapped.
    pub base: u64,
    /// First address past the mapping.
    pub end: u64,
    /// The file, as the trace names it (`[vdso]` and the like have no
    /// file).
    pub path: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reads_only_what_it_holds() {
        let data: Vec<u8> = (0u8..24).collect();
        let s = Snapshot {
            ip: 0,
            sp: 0x1000,
            bp: 0,
            data: &data,
        };
        assert_eq!(s.read_u64(0x1000), Some(0x0706050403020100));
        assert_eq!(s.read_u64(0x1010), Some(0x1716151413121110));
        assert_eq!(s.read_u64(0x1011), None);
        assert_eq!(s.read_u64(0xff8), None);
        assert_eq!(s.read_u64(u64::MAX), None);
        assert_eq!(s.end(), 0x1018);
    }
}
