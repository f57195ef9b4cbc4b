//! A field of an event resolved once from its format ([`FieldRef`]): where
//! it lies in a record and how to read it, so that code that reads one
//! field of many records (the recorder's watch and stack scanner, the
//! stitcher, the profile) neither looks the name up per record nor decodes
//! offsets by hand.
//!
//! The readers return `None` where a record is too short for the field (or
//! its `__data_loc` points outside it), never panic; [`crate::Record`]'s
//! accessors are the same reads by name, with errors that say why.

use crate::format::{EventFormat, Field, FieldKind};

/// Where one field of an event lies and what it holds, taken from the
/// event's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRef {
    offset: usize,
    size: usize,
    signed: bool,
    kind: FieldKind,
    /// Size of one element (the scalar's size for a scalar).
    elem: usize,
}

impl FieldRef {
    /// The reference of `f`, a field of an event whose kernel has
    /// `sizeof(long)` = `long_size` (the size of `unsigned long` elements
    /// of dynamic arrays).
    pub fn new(f: &Field, long_size: usize) -> FieldRef {
        FieldRef {
            offset: f.offset,
            size: f.size,
            signed: f.signed,
            kind: f.kind,
            elem: f.elem_size(long_size),
        }
    }

    /// The field `name` of `fmt`, if it has one.
    pub fn of(fmt: &EventFormat, name: &str) -> Option<FieldRef> {
        fmt.field(name).map(|f| FieldRef::new(f, fmt.long_size))
    }

    /// Byte offset of the field in a record.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Size in bytes as declared (the 4-byte locator of a `__data_loc`).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the (element) type is signed.
    pub fn signed(&self) -> bool {
        self.signed
    }

    /// The shape of the field.
    pub fn kind(&self) -> FieldKind {
        self.kind
    }

    /// Size in bytes of one element.
    pub fn elem_size(&self) -> usize {
        self.elem
    }

    /// The bytes at the field's place in `data`, as declared: a scalar, a
    /// fixed array, the locator of a `__data_loc`/`__rel_loc`.
    pub fn inline<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        data.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// The bytes the field holds: the inline bytes of a scalar or fixed
    /// array, the bytes a `__data_loc`/`__rel_loc` points at, the rest of
    /// the record for a trailing `type name[]`.
    pub fn bytes<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        match self.kind {
            FieldKind::Scalar | FieldKind::Array { count: 1.. } => self.inline(data),
            FieldKind::Array { count: 0 } => Some(self.tail(data)),
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let loc = u32::from_le_bytes(data.get(self.offset..)?.get(..4)?.try_into().ok()?);
                let (off, len) = dynamic_span(self.kind, self.offset, self.size, loc);
                data.get(off..off.checked_add(len)?)
            }
        }
    }

    /// The record from the field's offset to its end (empty when the
    /// record ends before the field): where an inline array the kernel
    /// sized by its entries holds what it holds.
    pub fn tail<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.offset.min(data.len())..]
    }

    /// The field's inline bytes as an unsigned number (1, 2, 4 or 8
    /// bytes, zero-extended), whatever its type says: the raw value.
    pub fn u64(&self, data: &[u8]) -> Option<u64> {
        uint_le(self.inline(data)?)
    }

    /// The field's inline bytes as a signed number, sign-extended from its
    /// size (1, 2, 4 or 8 bytes).
    pub fn i64(&self, data: &[u8]) -> Option<i64> {
        Some(sign_extend(self.u64(data)?, self.size))
    }

    /// The bytes the field holds (see [`FieldRef::bytes`]) up to the first
    /// NUL: a C string.
    pub fn cstr<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        Some(until_nul(self.bytes(data)?))
    }

    /// The elements of an array field as [`crate::Record::u64_array_field`]
    /// reads them (the bytes it holds, see [`FieldRef::bytes`], in
    /// elements of 1, 2, 4 or 8 bytes); `None` when the record does not
    /// hold them or the elements have another size.
    pub fn array<'a>(&self, data: &'a [u8]) -> Option<impl Iterator<Item = u64> + 'a> {
        let b = self.bytes(data)?;
        let elem = self.elem;
        matches!(elem, 1 | 2 | 4 | 8).then(|| b.chunks_exact(elem).map(|c| uint_le(c).unwrap_or(0)))
    }

    /// The elements of an inline array (fixed, or trailing `[]`) that the
    /// record holds: at most its declared count, fewer when the record
    /// ends first (the kernel sizes stack records by their entries). Each
    /// element is read little-endian, zero-extended (its first 8 bytes
    /// when larger).
    pub fn inline_elems<'a>(&self, data: &'a [u8]) -> impl Iterator<Item = u64> + 'a {
        let max = match self.kind {
            FieldKind::Array { count } if count > 0 => count,
            _ => usize::MAX,
        };
        let elem = self.elem.max(1);
        self.tail(data).chunks_exact(elem).take(max).map(|c| {
            let n = c.len().min(8);
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&c[..n]);
            u64::from_le_bytes(b)
        })
    }
}

/// Where the bytes of a `__data_loc` or `__rel_loc` field at `offset`, of
/// `size` bytes, are in its record: `(offset, length)` from its location
/// word `loc`.
pub(crate) fn dynamic_span(
    kind: FieldKind,
    offset: usize,
    size: usize,
    loc: u32,
) -> (usize, usize) {
    let len = (loc >> 16) as usize;
    let off = (loc & 0xffff) as usize;
    match kind {
        // Relative to the end of the location word's field.
        FieldKind::RelLoc => (off + offset + size, len),
        _ => (off, len),
    }
}

/// `v`, the value of a field of `size` bytes (1, 2, 4 or 8), sign-extended
/// from that size.
pub(crate) fn sign_extend(v: u64, size: usize) -> i64 {
    let shift = 64 - 8 * size.clamp(1, 8) as u32;
    ((v << shift) as i64) >> shift
}

/// A little-endian unsigned number of 1, 2, 4 or 8 bytes, zero-extended.
pub fn uint_le(b: &[u8]) -> Option<u64> {
    Some(match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        8 => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        _ => return None,
    })
}

/// Element `index` of an array of `size`-byte little-endian numbers (4 or
/// 8: kernel words), as [`uint_le`] reads it; `None` past its end.
pub fn word_at(bytes: &[u8], index: usize, size: usize) -> Option<u64> {
    let start = index.checked_mul(size)?;
    uint_le(bytes.get(start..start.checked_add(size)?)?)
}

/// `b` up to its first NUL.
pub fn until_nul(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    const FMT: &str = "name: t\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:short s;\toffset:8;\tsize:2;\tsigned:1;\n\
\tfield:char comm[6];\toffset:10;\tsize:6;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc char[] rel;\toffset:20;\tsize:4;\tsigned:0;\n\
\tfield:unsigned long caller[4];\toffset:24;\tsize:32;\tsigned:0;\n\
print fmt: \"\"\n";

    #[test]
    fn reads_each_shape_of_field() {
        let f = EventFormat::parse("s", FMT).unwrap();
        let r = |n| FieldRef::of(&f, n).unwrap();
        let mut d = vec![0u8; 40];
        d[4..8].copy_from_slice(&(-5i32).to_le_bytes());
        d[8..10].copy_from_slice(&(-3i16).to_le_bytes());
        d[10..16].copy_from_slice(b"bash\0\0");
        // name: 3 bytes at 40; rel: relative to the end of its field (24).
        d[16..20].copy_from_slice(&(40u32 | 3 << 16).to_le_bytes());
        d[20..24].copy_from_slice(&(16u32 | 3 << 16).to_le_bytes());
        d[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
        d[32..40].copy_from_slice(&0x2000u64.to_le_bytes());
        d.extend_from_slice(b"ls\0\0");
        assert_eq!(r("common_pid").i64(&d), Some(-5));
        assert_eq!(r("common_pid").u64(&d), Some(0xffff_fffb));
        assert_eq!(r("s").i64(&d), Some(-3));
        assert_eq!(r("s").u64(&d), Some(0xfffd));
        assert_eq!(r("comm").cstr(&d), Some(&b"bash"[..]));
        assert_eq!(r("name").cstr(&d), Some(&b"ls"[..]));
        assert_eq!(r("name").u64(&d), Some(40 | 3 << 16), "the raw locator");
        assert_eq!(r("rel").bytes(&d), Some(&b"ls\0"[..]));
        // The record holds two of the four words: those are read.
        let caller: Vec<u64> = r("caller").inline_elems(&d).collect();
        assert_eq!(caller, [0x1000, 0x2000]);
        assert_eq!(r("caller").tail(&d).len(), 20);
        assert!(r("caller").array(&d).is_none(), "the record is cut short");
        assert_eq!(
            r("name").array(&d).map(|a| a.collect::<Vec<_>>()),
            Some(vec![b'l' as u64, b's' as u64, 0])
        );
        assert_eq!(word_at(r("caller").tail(&d), 1, 8), Some(0x2000));
        assert_eq!(word_at(r("caller").tail(&d), 2, 8), None);
        assert!(FieldRef::of(&f, "nope").is_none());
    }

    #[test]
    fn a_short_record_reads_as_none() {
        let f = EventFormat::parse("s", FMT).unwrap();
        let r = |n| FieldRef::of(&f, n).unwrap();
        let d = [0u8; 9];
        assert_eq!(r("s").u64(&d), None);
        assert_eq!(r("comm").cstr(&d), None);
        assert_eq!(r("name").bytes(&d), None);
        assert_eq!(r("caller").inline_elems(&d).count(), 0);
        let mut d = vec![0u8; 24];
        d[16..20].copy_from_slice(&(20u32 | 200 << 16).to_le_bytes());
        assert_eq!(r("name").bytes(&d), None, "a locator past the end");
    }
}
