//! Parser of tracefs event `format` files.
//!
//! ```text
//! name: sched_switch
//! ID: 316
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     field:char prev_comm[16];    offset:8;    size:16;    signed:0;
//!     field:__data_loc char[] filename;    offset:8;    size:4;    signed:0;
//!
//! print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//! ```

use crate::error::{Error, Result};

/// The shape of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A plain scalar (or pointer) of `size` bytes.
    Scalar,
    /// A fixed array of `count` elements stored inline. `count == 0` (declared
    /// as `type name[]` with size 0) means the array runs to the end of the
    /// record.
    Array {
        /// Number of elements (0 = up to the end of the record).
        count: usize,
    },
    /// `__data_loc`: a u32 whose low 16 bits are the offset of the data in the
    /// record and whose high 16 bits are its length in bytes.
    DataLoc,
    /// `__rel_loc`: like [`FieldKind::DataLoc`] but the offset is relative to
    /// the end of this field.
    RelLoc,
}

/// One field of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name, e.g. `prev_comm`.
    pub name: String,
    /// Element type without the name, array suffix or `__data_loc`/`__rel_loc`
    /// prefix, e.g. `char`, `unsigned long`, `pid_t`.
    pub type_name: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes as declared (for arrays the whole array, for
    /// `__data_loc`/`__rel_loc` the 4-byte locator).
    pub size: usize,
    /// Whether the element type is signed.
    pub signed: bool,
    /// Shape of the field.
    pub kind: FieldKind,
}

impl Field {
    /// Size in bytes of one element: the scalar size, `size / count` for
    /// fixed arrays, or derived from the type name for dynamic arrays
    /// (`long_size` is the kernel's `sizeof(long)`).
    pub fn elem_size(&self, long_size: usize) -> usize {
        match self.kind {
            FieldKind::Scalar => self.size,
            FieldKind::Array { count } if count > 0 => self.size / count,
            _ => type_size(&self.type_name, long_size),
        }
    }

    /// True if the field holds characters (a string).
    pub fn is_string(&self) -> bool {
        let t = self.type_name.trim_start_matches("const ").trim();
        !matches!(self.kind, FieldKind::Scalar) && (t == "char" || t == "unsigned char")
    }
}

/// Size of a C type by name; unknown types count as 4 bytes.
fn type_size(t: &str, long_size: usize) -> usize {
    let t = t.trim().trim_start_matches("const ").trim();
    if t.ends_with('*') {
        return long_size;
    }
    match t {
        "char" | "signed char" | "unsigned char" | "u8" | "s8" | "bool" | "_Bool" => 1,
        "short" | "unsigned short" | "u16" | "s16" | "__u16" | "__s16" => 2,
        "long long" | "unsigned long long" | "u64" | "s64" | "__u64" | "__s64" => 8,
        "long" | "unsigned long" => long_size,
        _ => 4,
    }
}

/// A parsed event format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// Event id (`common_type` of its records).
    pub id: u16,
    /// System (directory under `events/`), e.g. `sched`.
    pub system: String,
    /// Event name, e.g. `sched_switch`.
    pub name: String,
    /// All fields, common ones first, in file order.
    pub fields: Vec<Field>,
    /// The text after `print fmt: `.
    pub print_fmt: String,
    /// The kernel's `sizeof(long)`, used for `unsigned long` elements of
    /// dynamic arrays. [`EventFormat::parse`] sets 8; the reader sets the
    /// value of the file (from the header_page commit size).
    pub long_size: usize,
}

/// The `name:` and `ID:` of a format file, read the way
/// [`EventFormat::parse`] reads them (same errors), without parsing the
/// fields.
pub fn name_and_id(system: &str, text: &str) -> Result<(String, u16)> {
    let mut name = None;
    let mut id = None;
    for (lineno, line) in text.lines().enumerate() {
        let l = line.trim_start();
        if let Some(v) = l.strip_prefix("name:") {
            name = Some(v.trim());
        } else if let Some(v) = l.strip_prefix("ID:") {
            id = Some(parse_id(system, lineno, v)?);
        }
    }
    let name =
        name.ok_or_else(|| Error::parse("no `name:` line").context(format!("format of {system}")))?;
    let id = id.ok_or_else(|| {
        Error::parse("no `ID:` line").context(format!("format of {system}/{name}"))
    })?;
    Ok((name.to_string(), id))
}

/// The number of an `ID:` line (`v` is the text after `ID:`).
fn parse_id(system: &str, lineno: usize, v: &str) -> Result<u16> {
    let ctx = || format!("format of {system}: line {}", lineno + 1);
    let v: u32 = v
        .trim()
        .parse()
        .map_err(|_| Error::parse(format!("bad ID {:?}", v.trim())).context(ctx()))?;
    u16::try_from(v)
        .map_err(|_| Error::parse(format!("ID {v} does not fit in 16 bits")).context(ctx()))
}

/// The lines of a format file as the kernel wrote them: the field lines
/// (those after `format:`, blank lines left out) and the `print fmt:` line.
/// For tools that show a format as text (`list -F`); the values are parsed
/// by [`EventFormat::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatLines<'a> {
    text: &'a str,
}

impl<'a> FormatLines<'a> {
    /// The lines of `text`.
    pub fn new(text: &'a str) -> FormatLines<'a> {
        FormatLines { text }
    }

    /// The field lines, as written (leading tab kept).
    pub fn fields(&self) -> impl Iterator<Item = &'a str> {
        self.text
            .lines()
            .skip_while(|l| !l.starts_with("format:"))
            .skip(1)
            .take_while(|l| !l.starts_with("print fmt:"))
            .filter(|l| !l.trim().is_empty())
    }

    /// The `print fmt:` line, as written.
    pub fn print_fmt(&self) -> Option<&'a str> {
        self.text.lines().find(|l| l.starts_with("print fmt:"))
    }
}

impl EventFormat {
    /// Parses a format file belonging to `system`, up to its first
    /// `print fmt:` line.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        for (lineno, line) in text.lines().enumerate() {
            let l = line.trim();
            let ctx = || format!("format of {system}: line {}", lineno + 1);
            if let Some(v) = l.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = l.strip_prefix("ID:") {
                id = Some(parse_id(system, lineno, v)?);
            } else if l.starts_with("field:") {
                fields.push(parse_field(l).map_err(|e| e.context(ctx()))?);
            } else if let Some(v) = l.strip_prefix("print fmt:") {
                // The print fmt ends the file, for the kernel and for
                // libtraceevent, which prints with the first one: what
                // follows is no field and no print fmt of this event.
                print_fmt = v.trim().to_string();
                break;
            }
        }
        let name = name.ok_or_else(|| {
            Error::parse("no `name:` line").context(format!("format of {system}"))
        })?;
        let id = id.ok_or_else(|| {
            Error::parse("no `ID:` line").context(format!("format of {system}/{name}"))
        })?;
        Ok(EventFormat {
            id,
            system: system.to_string(),
            name,
            fields,
            print_fmt,
            long_size: 8,
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses one `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` line.
pub fn parse_field(line: &str) -> Result<Field> {
    let bad = |what: &str| Error::parse(format!("{what} in {line:?}"));
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = Some(v.trim().parse::<usize>().map_err(|_| bad("bad offset"))?);
        } else if let Some(v) = part.strip_prefix("size:") {
            size = Some(v.trim().parse::<usize>().map_err(|_| bad("bad size"))?);
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() != "0";
        }
    }
    let decl = decl.ok_or_else(|| bad("no declaration"))?;
    let offset = offset.ok_or_else(|| bad("no offset"))?;
    let size = size.ok_or_else(|| bad("no size"))?;

    let (mut decl, mut kind) = (decl, FieldKind::Scalar);
    if let Some(rest) = decl.strip_prefix("__data_loc ") {
        decl = rest.trim();
        kind = FieldKind::DataLoc;
    } else if let Some(rest) = decl.strip_prefix("__rel_loc ") {
        decl = rest.trim();
        kind = FieldKind::RelLoc;
    }
    // Split "TYPE NAME" (NAME may carry "[N]"); for __data_loc the "[]" sits on
    // the type: "__data_loc char[] name".
    let (at, sep) = decl
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_whitespace() || c == '*')
        .ok_or_else(|| bad("declaration without a type"))?;
    let split = at + sep.len_utf8();
    let mut type_name = decl[..split].trim().to_string();
    let mut name = decl[split..].trim();
    if name.is_empty() {
        return Err(bad("declaration without a name"));
    }
    if let Some(b) = name.find('[') {
        let inner = name[b + 1..].trim_end_matches(']').trim();
        name = &name[..b];
        if kind == FieldKind::Scalar {
            let count = if inner.is_empty() {
                0
            } else {
                // Some kernels write symbolic counts such as [TASK_COMM_LEN];
                // fall back to the byte size then.
                inner.parse::<usize>().unwrap_or(size)
            };
            kind = FieldKind::Array { count };
        }
    }
    if let Some(t) = type_name.strip_suffix("[]") {
        type_name = t.trim().to_string();
    }
    Ok(Field {
        name: name.to_string(),
        type_name,
        offset,
        size,
        signed,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_lines_as_written() {
        let text = "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n\n\
\tfield:int b;\toffset:4;\tsize:4;\tsigned:1;\n\nprint fmt: \"%d\", REC->a\n";
        let l = FormatLines::new(text);
        let fields: Vec<&str> = l.fields().collect();
        assert_eq!(
            fields,
            [
                "\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;",
                "\tfield:int b;\toffset:4;\tsize:4;\tsigned:1;"
            ]
        );
        assert_eq!(l.print_fmt(), Some("print fmt: \"%d\", REC->a"));
        assert_eq!(name_and_id("s", text).unwrap(), ("x".to_string(), 7));
        assert_eq!(FormatLines::new("junk").fields().count(), 0);
    }

    #[test]
    fn parse_stops_at_the_first_print_fmt() {
        // libtraceevent prints with the first print fmt: a second section
        // after it (a hostile file) must neither add fields nor replace it.
        let text = "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n\n\
print fmt: \"%1073741824d\", REC->a\nformat:\n\tfield:int b;\toffset:4;\tsize:4;\tsigned:1;\n\n\
print fmt: \"%d\", REC->b\n";
        let f = EventFormat::parse("s", text).unwrap();
        assert_eq!(f.print_fmt, "\"%1073741824d\", REC->a");
        let names: Vec<&str> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a"]);
    }

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:__data_loc char[] filename;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc char[] rel;\toffset:28;\tsize:4;\tsigned:0;\n\
\tfield:unsigned long caller[];\toffset:32;\tsize:0;\tsigned:0;\n\
\tfield:const char * fmt;\toffset:40;\tsize:8;\tsigned:0;\n\n\
print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn parses_fields() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        assert_eq!(
            (f.id, f.name.as_str(), f.system.as_str()),
            (316, "sched_switch", "sched")
        );
        assert_eq!(f.print_fmt, "\"prev_comm=%s\", REC->prev_comm");
        let names: Vec<_> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "common_type",
                "common_pid",
                "prev_comm",
                "filename",
                "rel",
                "caller",
                "fmt"
            ]
        );
        let pid = f.field("common_pid").unwrap();
        assert_eq!(
            (pid.offset, pid.size, pid.signed, pid.kind),
            (4, 4, true, FieldKind::Scalar)
        );
        assert_eq!(pid.type_name, "int");
        let comm = f.field("prev_comm").unwrap();
        assert_eq!(comm.kind, FieldKind::Array { count: 16 });
        assert_eq!(comm.type_name, "char");
        assert!(comm.is_string());
        let fname = f.field("filename").unwrap();
        assert_eq!(
            (fname.kind, fname.type_name.as_str()),
            (FieldKind::DataLoc, "char")
        );
        assert_eq!(f.field("rel").unwrap().kind, FieldKind::RelLoc);
        let caller = f.field("caller").unwrap();
        assert_eq!(caller.kind, FieldKind::Array { count: 0 });
        assert_eq!(caller.elem_size(8), 8);
        assert_eq!(caller.elem_size(4), 4);
        let fmt = f.field("fmt").unwrap();
        assert_eq!(
            (fmt.type_name.as_str(), fmt.kind),
            ("const char *", FieldKind::Scalar)
        );
    }

    #[test]
    fn a_non_ascii_space_in_a_declaration_does_not_panic() {
        // U+3000 is whitespace of 3 bytes in UTF-8.
        let f = parse_field("field:int\u{3000}value;\toffset:8;\tsize:4;\tsigned:1;").unwrap();
        assert_eq!((f.type_name.as_str(), f.name.as_str()), ("int", "value"));
        let f = parse_field("field:int\u{3000};\toffset:8;\tsize:4;\tsigned:1;");
        assert!(f.is_err());
    }

    #[test]
    fn rejects_garbage() {
        assert!(EventFormat::parse("x", "ID: 3\n").is_err());
        assert!(EventFormat::parse("x", "name: a\n").is_err());
        assert!(EventFormat::parse("x", "name: a\nID: 99999999\n").is_err());
        assert!(
            EventFormat::parse("x", "name: a\nID: 1\n\tfield:int;\toffset:0;\tsize:4;\n").is_err()
        );
        let e = EventFormat::parse("x", "name: a\nID: 1\n\tfield:int a;\toffset:z;\tsize:4;\n")
            .unwrap_err();
        assert_eq!(e.to_string(), "format of x: line 3: parse error: bad offset in \"field:int a;\\toffset:z;\\tsize:4;\"");
    }
}
