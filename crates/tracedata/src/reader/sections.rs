//! The pieces of a trace.dat that v6 and v7 share: a bounds-checked cursor,
//! the metadata blocks (headers, formats, kallsyms, printk formats,
//! cmdlines) and the bounds of mapped CPU data.

use std::ops::Range;

use crate::dat;
use crate::error::{Error, Result};

/// A bounds-checked little-endian cursor over a byte slice.
pub(super) struct Cur<'a> {
    pub(super) b: &'a [u8],
    pub(super) pos: usize,
    /// Offset of `b` in the file, for error messages.
    pub(super) base: u64,
    pub(super) what: &'static str,
}

impl<'a> Cur<'a> {
    pub(super) fn new(b: &'a [u8], base: u64, what: &'static str) -> Self {
        Cur {
            b,
            pos: 0,
            base,
            what,
        }
    }

    pub(super) fn err(&self, msg: String) -> Error {
        Error::corrupt(msg)
            .context(self.what)
            .at(self.base + self.pos as u64)
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.pos.checked_add(n).filter(|&e| e <= self.b.len()) {
            Some(end) => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(format!(
                "expected {n} bytes, only {} left",
                self.b.len().saturating_sub(self.pos)
            ))),
        }
    }

    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u16(&mut self) -> Result<u16> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    pub(super) fn u32(&mut self) -> Result<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn u64(&mut self) -> Result<u64> {
        let s = self.take(8)?;
        Ok(u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
    pub(super) fn cstr(&mut self) -> Result<&'a str> {
        let rest = &self.b[self.pos.min(self.b.len())..];
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return Err(self.err("unterminated string".into()));
        };
        let s =
            std::str::from_utf8(&rest[..n]).map_err(|_| self.err("string is not UTF-8".into()))?;
        self.pos += n + 1;
        Ok(s)
    }
    pub(super) fn len_u64(&mut self) -> Result<usize> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.err(format!("size {v} too large")))
    }
    pub(super) fn seek(&mut self, off: u64) -> Result<()> {
        let o = off
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o <= self.b.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "offset {off:#x} is outside the file ({} bytes)",
                    self.b.len()
                ))
                .context(self.what)
            })?;
        self.pos = o;
        Ok(())
    }
}

pub(super) fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Where the kallsyms text of a file is. It is the largest metadata block
/// (5 MiB and more) and only libtraceevent and the symbolizer read it,
/// once each, so a file holds where it is, not the text
/// ([`super::TraceFile::kallsyms`] reads it when asked).
#[derive(Debug, Default, Clone)]
pub(super) enum KallsymsAt {
    /// The file has none.
    #[default]
    Absent,
    /// Version 6: these bytes of the file.
    Range(Range<usize>),
    /// Version 7: the section at this offset (compressed or not).
    Section(u64),
}

/// Result of parsing the metadata blocks (shared by v6 and v7).
#[derive(Default)]
pub(super) struct Meta {
    pub(super) header_page: Vec<u8>,
    pub(super) header_event: Vec<u8>,
    pub(super) ftrace: Vec<Vec<u8>>,
    pub(super) events: Vec<(String, Vec<Vec<u8>>)>,
    pub(super) kallsyms: KallsymsAt,
    pub(super) printk: Vec<u8>,
    pub(super) cmdlines: Vec<u8>,
}

pub(super) fn parse_header_info(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    if c.take(dat::HEADER_PAGE.len())? != dat::HEADER_PAGE {
        return Err(c.err("missing \"header_page\" marker".into()));
    }
    let n = c.len_u64()?;
    m.header_page = c.take(n)?.to_vec();
    if c.take(dat::HEADER_EVENT.len())? != dat::HEADER_EVENT {
        return Err(c.err("missing \"header_event\" marker".into()));
    }
    let n = c.len_u64()?;
    m.header_event = c.take(n)?.to_vec();
    Ok(())
}

pub(super) fn parse_ftrace_events(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    let count = c.u32()?;
    for _ in 0..count {
        let n = c.len_u64()?;
        m.ftrace.push(c.take(n)?.to_vec());
    }
    Ok(())
}

pub(super) fn parse_event_formats(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    let systems = c.u32()?;
    for _ in 0..systems {
        let name = c.cstr()?.to_string();
        let count = c.u32()?;
        let mut v = Vec::new();
        for _ in 0..count {
            let n = c.len_u64()?;
            v.push(c.take(n)?.to_vec());
        }
        m.events.push((name, v));
    }
    Ok(())
}

pub(super) fn parse_u32_blob(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let r = skip_u32_blob(c)?;
    Ok(c.b[r].to_vec())
}

/// Moves `c` past a blob with a u32 length; returns where its bytes are
/// in `c`'s slice.
pub(super) fn skip_u32_blob(c: &mut Cur<'_>) -> Result<Range<usize>> {
    let n = c.u32()? as usize;
    let start = c.pos;
    c.take(n)?;
    Ok(start..c.pos)
}

pub(super) fn parse_u64_blob(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let n = c.len_u64()?;
    Ok(c.take(n)?.to_vec())
}

/// The body of a v7 CMDLINES section: a u64 size, then `saved_cmdlines`.
///
/// trace-cmd 3.1.6 writes the size from one read of `saved_cmdlines` and
/// the contents from a second read; when the kernel's list changes in
/// between (any process that gets traced meanwhile), the size is wrong
/// (it warns "error in size of file" and still exits 0). The section's own
/// framing is right, so the contents are what the section holds, and no
/// more than the announced size (trace-cmd reads no further).
pub(super) fn parse_cmdlines_section(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let n = c.len_u64()?;
    let left = c.b.len().saturating_sub(c.pos);
    Ok(c.take(n.min(left))?.to_vec())
}

pub(super) fn mapped_range(b: &[u8], off: u64, size: u64) -> Result<Range<usize>> {
    let end = off.checked_add(size);
    match end {
        Some(e) if e <= b.len() as u64 => Ok(off as usize..e as usize),
        _ => Err(Error::corrupt(format!(
            "data at {off:#x} of {size} bytes runs past the end of the file ({} bytes)",
            b.len()
        ))),
    }
}
