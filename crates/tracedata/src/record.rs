//! One event record and typed access to its fields.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::field::{dynamic_span, sign_extend, uint_le};
use crate::format::{EventFormat, Field, FieldKind};

/// One event: where and when it happened and its raw payload.
///
/// `data` starts with the common fields (`common_type` at offset 0,
/// `common_flags` at 2, `common_preempt_count` at 3, `common_pid` at 4) and
/// has the length the ring buffer stored (a multiple of 4, so it may carry
/// padding after the last field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// CPU whose buffer held the event.
    pub cpu: u32,
    /// Timestamp in trace-clock units (ns for the default clocks).
    pub ts: u64,
    /// The payload.
    pub data: &'a [u8],
    /// The payload and the bytes that follow it in the CPU's data, as far
    /// as they are loaded (at least `data`). A C reader that reads past a
    /// record sees these bytes, as trace-cmd's do: libtraceevent reads a
    /// fixed array whole even in a record the kernel stored shorter (a
    /// `kernel_stack` with fewer callers than its format's 8).
    pub extent: &'a [u8],
}

impl<'a> Record<'a> {
    /// The record of payload `data` at `ts` on `cpu`, with no bytes known
    /// after it (`extent` is `data`).
    pub fn new(cpu: u32, ts: u64, data: &'a [u8]) -> Record<'a> {
        Record {
            cpu,
            ts,
            data,
            extent: data,
        }
    }

    /// `common_type`: the event id, or `None` if the record is shorter than 2 bytes.
    pub fn common_type(&self) -> Option<u16> {
        self.data
            .get(0..2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    /// `common_flags` (irqs-off, need-resched, hardirq, softirq bits).
    pub fn common_flags(&self) -> Option<u8> {
        self.data.get(2).copied()
    }

    /// `common_preempt_count`.
    pub fn common_preempt_count(&self) -> Option<u8> {
        self.data.get(3).copied()
    }

    /// `common_pid`: the task the event belongs to.
    pub fn common_pid(&self) -> Option<i32> {
        self.data
            .get(4..8)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn find<'f>(&self, fmt: &'f EventFormat, name: &str) -> Result<&'f Field> {
        fmt.field(name).ok_or_else(|| {
            Error::field(format!(
                "event {}:{} has no field {name:?}",
                fmt.system, fmt.name
            ))
        })
    }

    fn slice(&self, fmt: &EventFormat, f: &Field, off: usize, len: usize) -> Result<&'a [u8]> {
        off.checked_add(len)
            .and_then(|end| self.data.get(off..end))
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "field {} of {}:{} ({len} bytes at {off}) is outside the {}-byte record",
                    f.name,
                    fmt.system,
                    fmt.name,
                    self.data.len()
                ))
            })
    }

    /// The raw bytes of a field: the inline bytes of scalars and fixed
    /// arrays, the pointed-to bytes of `__data_loc`/`__rel_loc`, the rest of
    /// the record for a trailing `type name[]` array.
    pub fn field_bytes(&self, fmt: &EventFormat, name: &str) -> Result<&'a [u8]> {
        let f = self.find(fmt, name)?;
        self.bytes_of(fmt, f)
    }

    /// Like [`Record::field_bytes`] for an already looked-up field.
    pub fn bytes_of(&self, fmt: &EventFormat, f: &Field) -> Result<&'a [u8]> {
        match f.kind {
            FieldKind::Scalar | FieldKind::Array { count: 1.. } => {
                self.slice(fmt, f, f.offset, f.size)
            }
            FieldKind::Array { count: 0 } => {
                let start = f.offset.min(self.data.len());
                Ok(&self.data[start..])
            }
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let loc = self.slice(fmt, f, f.offset, 4)?;
                let loc = u32::from_le_bytes([loc[0], loc[1], loc[2], loc[3]]);
                let (off, len) = dynamic_span(f.kind, f.offset, f.size, loc);
                self.slice(fmt, f, off, len)
            }
        }
    }

    /// An unsigned scalar field (1, 2, 4 or 8 bytes), zero-extended.
    pub fn u64_field(&self, fmt: &EventFormat, name: &str) -> Result<u64> {
        let f = self.find(fmt, name)?;
        if f.kind != FieldKind::Scalar {
            return Err(Error::field(format!(
                "field {name} of {}:{} is not a scalar",
                fmt.system, fmt.name
            )));
        }
        let b = self.slice(fmt, f, f.offset, f.size)?;
        uint_le(b)
            .ok_or_else(|| Error::field(format!("field {name} has unsupported size {}", f.size)))
    }

    /// A signed scalar field, sign-extended from its size.
    pub fn i64_field(&self, fmt: &EventFormat, name: &str) -> Result<i64> {
        let v = self.u64_field(fmt, name)?;
        Ok(sign_extend(v, self.find(fmt, name)?.size))
    }

    /// A string field (`char name[N]`, `__data_loc char[]`, trailing
    /// `char buf[]`), up to its first NUL; invalid UTF-8 is replaced.
    pub fn str_field(&self, fmt: &EventFormat, name: &str) -> Result<Cow<'a, str>> {
        let b = self.field_bytes(fmt, name)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Ok(String::from_utf8_lossy(&b[..end]))
    }

    /// An integer array field as u64 values: fixed arrays, trailing `[]`
    /// arrays and `__data_loc`/`__rel_loc` arrays. Element size comes from
    /// the declaration (`unsigned long` uses the format's `long_size`).
    pub fn u64_array_field(&self, fmt: &EventFormat, name: &str) -> Result<Vec<u64>> {
        let f = self.find(fmt, name)?;
        let b = self.bytes_of(fmt, f)?;
        let es = f.elem_size(fmt.long_size);
        if !matches!(es, 1 | 2 | 4 | 8) {
            return Err(Error::field(format!(
                "field {name} of {}:{} has element size {es}",
                fmt.system, fmt.name
            )));
        }
        Ok(b.chunks_exact(es)
            .map(|c| uint_le(c).unwrap_or(0))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FMT: &str = "name: t\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:short s;\toffset:8;\tsize:2;\tsigned:1;\n\
\tfield:char comm[6];\toffset:10;\tsize:6;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc unsigned long[] rl;\toffset:20;\tsize:4;\tsigned:0;\n\
\tfield:__data_loc unsigned long[] stack;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:u64 cookie;\toffset:28;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int tail[];\toffset:36;\tsize:0;\tsigned:0;\n\
print fmt: \"\"\n";

    fn rec() -> Vec<u8> {
        let mut d = vec![0u8; 36];
        d[0..2].copy_from_slice(&7u16.to_le_bytes());
        d[2] = 0x81;
        d[3] = 2;
        d[4..8].copy_from_slice(&(-5i32).to_le_bytes());
        d[8..10].copy_from_slice(&(-3i16).to_le_bytes());
        d[10..16].copy_from_slice(b"bash\0\0");
        d[28..36].copy_from_slice(&0x3_0000_0008u64.to_le_bytes());
        // tail: two u32
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&2u32.to_le_bytes());
        // name at 44, len 4 "ls\0\0"
        d[16..20].copy_from_slice(&(44u32 | 3 << 16).to_le_bytes());
        d.extend_from_slice(b"ls\0\0");
        // stack at 48: 2 longs
        d[24..28].copy_from_slice(&(48u32 | 16 << 16).to_le_bytes());
        d.extend_from_slice(&0x1000u64.to_le_bytes());
        d.extend_from_slice(&0x2000u64.to_le_bytes());
        // rel_loc: relative to end of field (24) -> points at 48 too: 24
        d[20..24].copy_from_slice(&(24u32 | 8 << 16).to_le_bytes());
        d
    }

    #[test]
    fn accessors() {
        let f = EventFormat::parse("s", FMT).unwrap();
        let d = rec();
        let r = Record::new(1, 5, &d);
        assert_eq!(r.common_type(), Some(7));
        assert_eq!(r.common_flags(), Some(0x81));
        assert_eq!(r.common_preempt_count(), Some(2));
        assert_eq!(r.common_pid(), Some(-5));
        assert_eq!(r.i64_field(&f, "s").unwrap(), -3);
        assert_eq!(r.u64_field(&f, "s").unwrap(), 0xfffd);
        assert_eq!(r.u64_field(&f, "cookie").unwrap(), 0x3_0000_0008);
        assert_eq!(r.str_field(&f, "comm").unwrap(), "bash");
        assert_eq!(r.str_field(&f, "name").unwrap(), "ls");
        assert_eq!(r.u64_array_field(&f, "stack").unwrap(), [0x1000, 0x2000]);
        assert_eq!(r.u64_array_field(&f, "rl").unwrap(), [0x1000]);
        assert_eq!(
            r.u64_array_field(&f, "tail").unwrap()[..2],
            [1, 2],
            "trailing array runs to the end of the record"
        );
        assert!(r.u64_field(&f, "nope").is_err());
        assert!(r.u64_field(&f, "comm").is_err());
    }

    #[test]
    fn out_of_range_is_an_error() {
        let f = EventFormat::parse("s", FMT).unwrap();
        let mut d = rec();
        d[24..28].copy_from_slice(&(60u32 | 200 << 16).to_le_bytes());
        let r = Record::new(0, 0, &d);
        assert!(r.u64_array_field(&f, "stack").is_err());
        let short = Record::new(0, 0, &d[..10]);
        assert!(short.u64_field(&f, "cookie").is_err());
        assert_eq!(Record::new(0, 0, &[1]).common_type(), None);
    }
}
