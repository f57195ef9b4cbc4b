//! The info text of events with a plain print fmt, written here instead of
//! by libtraceevent.
//!
//! Most events of a busy trace are system calls, whose print fmts are
//! literal text and integer conversions of fields, such as
//! `"fd: 0x%08lx, buf: 0x%08lx", ((unsigned long)(REC->fd)), ...`.
//! libtraceevent re-reads the conversions and compares the cast type names
//! as strings for every record; about two thirds of `report`'s time per
//! event was spent there. A print fmt made only of what this module knows
//! exactly is compiled once per event id into [`Plain`], which writes the
//! same bytes libtraceevent 1.7 writes; anything else (other conversions,
//! arithmetic, helper functions, escapes, plugins) stays with
//! libtraceevent. The `plain_matches_libtraceevent*` tests compare the two
//! on generated records and on every format of the host.
//!
//! What libtraceevent does for what is accepted here (event-parse.c):
//! a field argument reads `size` bytes of the record as an unsigned number
//! (`tep_read_number`, no sign extension); a cast to `char`, `short` or
//! `int` (signed or not, or `u8`..`s32`) keeps the low 8, 16 or 32 bits
//! (`eval_type_str`), a cast to `long`, `long long` or `u64`/`s64` keeps
//! the value; the conversion then prints the value cast to `char`, `short`,
//! `int`, `long` or `long long` as its length modifier says
//! (`print_arg_number`) through the C library's `printf`.

use ustack_tracedata::format::FieldKind;
use ustack_tracedata::EventFormat;

/// Largest width or precision accepted (the kernel's formats use up to 16).
const MAX_WIDTH: usize = 64;

/// One integer conversion: `%[-0#][width][.prec][hh|h|l|ll](d|i|u|x|X)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spec {
    left: bool,
    zero: bool,
    alt: bool,
    width: usize,
    prec: Option<usize>,
    /// Bits of the C type the value is cast to: 8, 16, 32 or 64.
    bits: u32,
    conv: u8,
}

/// A field read as a number, masked by the casts around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arg {
    offset: usize,
    size: usize,
    mask: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(Box<[u8]>),
    Num(Spec, Arg),
}

/// A compiled plain print fmt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plain {
    parts: Vec<Part>,
    /// Bytes a record needs for every field argument.
    min_len: usize,
}

impl Plain {
    /// Compiles the print fmt of `f` (a format of a file whose `long` has
    /// `long_size` bytes), or `None` when it has anything this module does
    /// not print exactly as libtraceevent does.
    pub(crate) fn compile(f: &EventFormat, long_size: usize) -> Option<Plain> {
        if long_size != 8 {
            return None;
        }
        let (text, args) = split_print_fmt(&f.print_fmt)?;
        let mut args = args.into_iter();
        let mut parts = Vec::new();
        let mut lit = Vec::new();
        let mut min_len = 0;
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'%' {
                lit.push(b[i]);
                i += 1;
                continue;
            }
            let (spec, used) = parse_spec(&b[i + 1..])?;
            i += 1 + used;
            let arg = parse_arg(f, args.next()?)?;
            min_len = min_len.max(arg.offset + arg.size);
            if !lit.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut lit).into()));
            }
            parts.push(Part::Num(spec, arg));
        }
        if args.next().is_some() {
            return None;
        }
        if !lit.is_empty() {
            parts.push(Part::Text(lit.into()));
        }
        Some(Plain { parts, min_len })
    }

    /// Appends the info text of the record `data` to `out`; false (and
    /// nothing appended) when the record is too short for its fields.
    pub(crate) fn write(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        if data.len() < self.min_len {
            return false;
        }
        for p in &self.parts {
            match p {
                Part::Text(t) => out.extend_from_slice(t),
                Part::Num(spec, arg) => {
                    let mut raw = [0u8; 8];
                    raw[..arg.size].copy_from_slice(&data[arg.offset..arg.offset + arg.size]);
                    write_num(out, spec, u64::from_le_bytes(raw) & arg.mask);
                }
            }
        }
        true
    }
}

/// Splits `"text", arg, arg` into the text and the argument strings; `None`
/// for escapes, `%%` or anything after the text that is not arguments.
fn split_print_fmt(fmt: &str) -> Option<(&str, Vec<&str>)> {
    let rest = fmt.trim().strip_prefix('"')?;
    let end = rest.find('"')?;
    let (text, rest) = (&rest[..end], &rest[end + 1..]);
    if text.contains('\\') || text.contains("%%") {
        return None;
    }
    let rest = rest.trim();
    if rest.is_empty() {
        return Some((text, Vec::new()));
    }
    let mut rest = rest.strip_prefix(',')?;
    let mut args = Vec::new();
    loop {
        let mut depth = 0i32;
        let mut cut = rest.len();
        for (j, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    cut = j;
                    break;
                }
                '"' | '\'' | '[' | '?' => return None,
                _ => {}
            }
            if depth < 0 {
                return None;
            }
        }
        args.push(rest[..cut].trim());
        if cut == rest.len() {
            return Some((text, args));
        }
        rest = &rest[cut + 1..];
    }
}

/// Parses a conversion after its `%`; returns it and the bytes it took.
fn parse_spec(b: &[u8]) -> Option<(Spec, usize)> {
    let mut i = 0;
    let (mut left, mut zero, mut alt) = (false, false, false);
    while let Some(&c) = b.get(i) {
        match c {
            b'-' => left = true,
            b'0' => zero = true,
            b'#' => alt = true,
            _ => break,
        }
        i += 1;
    }
    let number = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        let n: usize = std::str::from_utf8(&b[start..*i]).ok()?.parse().ok()?;
        (n <= MAX_WIDTH).then_some(n)
    };
    let width = if b.get(i).is_some_and(u8::is_ascii_digit) {
        number(&mut i)?
    } else {
        0
    };
    let prec = if b.get(i) == Some(&b'.') {
        i += 1;
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        Some(number(&mut i)?)
    } else {
        None
    };
    let bits = match (b.get(i), b.get(i + 1)) {
        (Some(b'h'), Some(b'h')) => {
            i += 2;
            8
        }
        (Some(b'h'), _) => {
            i += 1;
            16
        }
        (Some(b'l'), Some(b'l')) => {
            i += 2;
            64
        }
        (Some(b'l'), _) => {
            i += 1;
            64
        }
        _ => 32,
    };
    let conv = *b.get(i)?;
    if !matches!(conv, b'd' | b'i' | b'u' | b'x' | b'X') {
        return None;
    }
    let spec = Spec {
        left,
        zero,
        alt,
        width,
        prec,
        bits,
        conv,
    };
    Some((spec, i + 1))
}

/// Bits a cast to `ty` keeps (`eval_type_str`), for the types accepted.
fn cast_mask(ty: &str) -> Option<u64> {
    let ty: Vec<&str> = ty.split_whitespace().collect();
    Some(match ty.join(" ").as_str() {
        "char" | "unsigned char" | "u8" | "s8" => 0xff,
        "short" | "unsigned short" | "u16" | "s16" => 0xffff,
        "int" | "unsigned int" | "u32" | "s32" => 0xffff_ffff,
        "long" | "unsigned long" | "long long" | "unsigned long long" | "u64" | "s64" => u64::MAX,
        _ => return None,
    })
}

/// Parses `REC->field`, `(arg)` and `(type)arg` for a scalar field of 1,
/// 2, 4 or 8 bytes.
fn parse_arg(f: &EventFormat, s: &str) -> Option<Arg> {
    let s = s.trim();
    if let Some(name) = s.strip_prefix("REC->") {
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return None;
        }
        let field = f.field(name)?;
        if field.kind != FieldKind::Scalar || !matches!(field.size, 1 | 2 | 4 | 8) {
            return None;
        }
        return Some(Arg {
            offset: field.offset,
            size: field.size,
            mask: u64::MAX,
        });
    }
    let inner = s.strip_prefix('(')?;
    // The parenthesis that closes the first one.
    let mut depth = 1;
    let close = inner.char_indices().find_map(|(j, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        (depth == 0).then_some(j)
    })?;
    let (head, tail) = (&inner[..close], inner[close + 1..].trim());
    if tail.is_empty() {
        return parse_arg(f, head);
    }
    let mask = cast_mask(head)?;
    let mut a = parse_arg(f, tail)?;
    a.mask &= mask;
    Some(a)
}

/// `printf(spec, (type)v)` for the C type of `spec.bits` bits.
fn write_num(out: &mut Vec<u8>, spec: &Spec, v: u64) {
    // The value as the C type of `spec.bits` bits, signed for %d/%i.
    let (neg, mag) = if matches!(spec.conv, b'd' | b'i') {
        let s = match spec.bits {
            8 => i64::from(v as i8),
            16 => i64::from(v as i16),
            32 => i64::from(v as i32),
            _ => v as i64,
        };
        (s < 0, s.unsigned_abs())
    } else {
        let m = match spec.bits {
            8 => v & 0xff,
            16 => v & 0xffff,
            32 => v & 0xffff_ffff,
            _ => v,
        };
        (false, m)
    };
    let mut digits = [0u8; 24];
    let mut n = digits.len();
    let (base, upper) = match spec.conv {
        b'x' => (16, false),
        b'X' => (16, true),
        _ => (10, false),
    };
    let mut m = mag;
    while m != 0 {
        n -= 1;
        let d = (m % base) as u8;
        digits[n] = match d {
            0..=9 => b'0' + d,
            _ if upper => b'A' + d - 10,
            _ => b'a' + d - 10,
        };
        m /= base;
    }
    let mut body = &digits[n..];
    // C: precision 0 and value 0 print no digits; otherwise at least one.
    if body.is_empty() && spec.prec != Some(0) {
        body = b"0";
    }
    let zeros = spec.prec.unwrap_or(0).saturating_sub(body.len());
    let prefix: &[u8] = if neg {
        b"-"
    } else if spec.alt && base == 16 && mag != 0 {
        if upper {
            b"0X"
        } else {
            b"0x"
        }
    } else {
        b""
    };
    let len = prefix.len() + zeros + body.len();
    let pad = spec.width.saturating_sub(len);
    let zero_pad = spec.zero && !spec.left && spec.prec.is_none();
    if !spec.left && !zero_pad {
        out.resize(out.len() + pad, b' ');
    }
    out.extend_from_slice(prefix);
    if zero_pad {
        out.resize(out.len() + pad, b'0');
    }
    out.resize(out.len() + zeros, b'0');
    out.extend_from_slice(body);
    if spec.left {
        out.resize(out.len() + pad, b' ');
    }
}

#[cfg(test)]
mod tests;
