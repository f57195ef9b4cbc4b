//! Kernel symbols from the kallsyms text saved in a trace.

use crate::Frame;

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
            file_offset: None,
            location: None,
            unresolved: None,
            via: None,
        }
    }
}
