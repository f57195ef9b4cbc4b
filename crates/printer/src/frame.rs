//! The one way a stack frame is written, in each place it appears.

use ustack_symbolize::Frame;

/// Where a frame is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameStyle {
    /// A kernel frame in a text block: `sym+0xoff (addr) [module]`, or
    /// `addr [module]` without a symbol.
    Kernel,
    /// A user frame in a text block: `sym+0xoff (addr) object at
    /// file:line`, or `addr object+0xfileoffset` without a symbol (`addr
    /// object` when the file could not be read).
    User,
    /// One element of a folded stack: the function alone, else
    /// `[object file name]`, else `0xaddr`.
    Folded,
}

/// Writes `f` the way `style` says.
pub fn format_frame(f: &Frame, style: FrameStyle) -> String {
    if style == FrameStyle::Folded {
        return match (&f.symbol, &f.object) {
            (Some(s), _) => s.clone(),
            (None, Some(o)) => format!("[{}]", o.rsplit('/').next().unwrap_or(o)),
            (None, None) => format!("{:#x}", f.addr),
        };
    }
    let mut s = match f.symbol {
        Some(_) => format!("{} ({:x})", f.name(), f.addr),
        None => format!("{:x}", f.addr),
    };
    match (style, &f.object) {
        (FrameStyle::Kernel, Some(m)) => s.push_str(&format!(" [{m}]")),
        (FrameStyle::User, Some(o)) => {
            s.push(' ');
            s.push_str(o);
            // No symbol: the offset in the file, as perf shows it.
            if let (None, Some(off)) = (&f.symbol, f.file_offset) {
                s.push_str(&format!("+{off:#x}"));
            }
        }
        _ => {}
    }
    if let (FrameStyle::User, Some(l)) = (style, &f.location) {
        s.push_str(" at ");
        s.push_str(l);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(sym: Option<&str>, off: u64, obj: Option<&str>, loc: Option<&str>) -> Frame {
        Frame {
            addr: 0x7f00_1234,
            symbol: sym.map(Into::into),
            offset: off,
            object: obj.map(Into::into),
            file_offset: None,
            location: loc.map(Into::into),
            unresolved: None,
            via: None,
        }
    }

    #[test]
    fn each_style_spells_a_frame_its_way() {
        let full = frame(Some("main"), 0x1c, Some("/usr/bin/app"), Some("app.c:7"));
        assert_eq!(
            format_frame(&full, FrameStyle::User),
            "main+0x1c (7f001234) /usr/bin/app at app.c:7"
        );
        assert_eq!(
            format_frame(&full, FrameStyle::Kernel),
            "main+0x1c (7f001234) [/usr/bin/app]"
        );
        assert_eq!(format_frame(&full, FrameStyle::Folded), "main");
        let bare = frame(None, 0, Some("/usr/lib/libc.so.6"), None);
        assert_eq!(
            format_frame(&bare, FrameStyle::User),
            "7f001234 /usr/lib/libc.so.6"
        );
        assert_eq!(format_frame(&bare, FrameStyle::Folded), "[libc.so.6]");
        let stripped = Frame {
            file_offset: Some(0x2a34),
            ..frame(None, 0, Some("/usr/bin/app"), None)
        };
        assert_eq!(
            format_frame(&stripped, FrameStyle::User),
            "7f001234 /usr/bin/app+0x2a34"
        );
        let none = frame(None, 0, None, None);
        assert_eq!(format_frame(&none, FrameStyle::Kernel), "7f001234");
        assert_eq!(format_frame(&none, FrameStyle::Folded), "0x7f001234");
        let exact = frame(Some("f"), 0, None, None);
        assert_eq!(format_frame(&exact, FrameStyle::Kernel), "f (7f001234)");
    }
}
