//! One symbolized address.

/// One symbolized address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The raw address.
    pub addr: u64,
    /// Function name, when found.
    pub symbol: Option<String>,
    /// Offset of `addr` from the start of `symbol`.
    pub offset: u64,
    /// The object: a file path for user addresses (`[anon]`, `[heap]`,
    /// `[vdso]`, ... for memory not backed by a file), a module name for
    /// kernel module addresses.
    pub object: Option<String>,
    /// Offset of `addr` in the object's file, when the address is in a
    /// mapped ELF file: what `binary+0xoffset` shows when there is no
    /// symbol.
    pub file_offset: Option<u64>,
    /// `file:line` from the object's DWARF line table, when it has one.
    pub location: Option<String>,
    /// Why a user frame has no symbol.
    pub unresolved: Option<crate::Unresolved>,
    /// How a user frame was found, for stacks unwound from a snapshot
    /// (`None`: the kernel's walk, as written).
    pub via: Option<crate::unwind::Via>,
}

impl Frame {
    /// A frame with nothing resolved.
    pub fn unknown(addr: u64) -> Self {
        Frame {
            addr,
            symbol: None,
            offset: 0,
            object: None,
            file_offset: None,
            location: None,
            unresolved: None,
            via: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let mut f = Frame::unknown(0x401234);
        f.object = Some("/usr/bin/prog".into());
        f.file_offset = Some(0x1234);
        assert_eq!(f.name(), "0x401234");
        f.symbol = Some("main".into());
        assert_eq!(f.name(), "main");
        f.offset = 4;
        assert_eq!(f.name(), "main+0x4");
    }
}
