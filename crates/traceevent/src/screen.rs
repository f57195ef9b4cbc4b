//! The screen of event formats before libtraceevent sees them.
//!
//! libtraceevent 1.7 trusts the formats of a file: some bytes crash its
//! parser, and some print fmts crash or hang it for every record printed
//! (division by zero, 100,000 nested parentheses, `__print_array` over 4 GB,
//! a `%1073741824d` width). The checks here work on the fields and print fmt
//! that tracedata parsed ([`EventFormat`]) and are conservative: a format a
//! real kernel writes passes (the `host_formats` test runs every format of
//! the host), anything else that could hurt is refused, and the caller
//! hands libtraceevent the format without its print fmt.

use ustack_tracedata::{EventFormat, Field};

/// Deepest nesting of `(`, `[` and `{` in a print fmt. The kernel's own
/// formats stay below 20; libtraceevent recurses once per level.
pub const MAX_NESTING: usize = 200;
/// Largest width or precision of a conversion in a print fmt's strings.
pub const MAX_WIDTH: u64 = 4096;
/// Largest constant byte count of a `__print_array`, `__print_hex` or
/// `__print_hex_str`: no record is larger than a ring-buffer page.
pub const MAX_PRINT_BYTES: u64 = 1 << 16;
/// Largest end (offset + size) of a field: libtraceevent reads fields at
/// their declared offsets without checking the record's size.
pub const MAX_FIELD_END: usize = 1 << 16;

/// Why a format is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A byte other than printable ASCII, tab and newline: libtraceevent's
    /// parser crashes on some (e.g. in an array size, as in
    /// `char comm[\xe96]`), and the kernel writes no other bytes. The format
    /// is not given to libtraceevent at all.
    NotText,
    /// Its fields do not parse, or lie beyond [`MAX_FIELD_END`]: libtraceevent
    /// would read there for every record (the common fields of the first
    /// format it gets are read for every event). Not given to libtraceevent
    /// at all; why.
    Layout(String),
    /// Its print fmt could crash or hang libtraceevent; why.
    PrintFmt(String),
}

/// Screens the event format file `text`.
pub fn check(text: &[u8]) -> Result<(), Refusal> {
    let f = layout(text)?;
    match check_format(&f) {
        Some(why) => Err(Refusal::PrintFmt(why)),
        None => Ok(()),
    }
}

/// The fields of the event format file `text`, if it is text and its
/// fields parse and lie within [`MAX_FIELD_END`] (its print fmt is not
/// screened: see [`check_format`]).
pub fn layout(text: &[u8]) -> Result<EventFormat, Refusal> {
    if !text
        .iter()
        .all(|&b| b == b'\t' || b == b'\n' || (b' '..=b'~').contains(&b))
    {
        return Err(Refusal::NotText);
    }
    let text = std::str::from_utf8(text).map_err(|_| Refusal::NotText)?;
    // libtraceevent reads tokens, not lines: a `print fmt:` inside another
    // line (`format: print fmt: ...`) would be a print fmt to it that the
    // line-based parse below never screens.
    let before_print_fmt = text
        .lines()
        .map(str::trim)
        .take_while(|l| !is_print_fmt_line(l));
    if let Some(l) = before_print_fmt.into_iter().find(|l| {
        !(l.is_empty()
            || *l == "format:"
            || ["name:", "ID:", "field:"].iter().any(|p| l.starts_with(p)))
    }) {
        return Err(Refusal::Layout(format!("an unexpected line '{l}'")));
    }
    let f = EventFormat::parse("", text).map_err(|e| Refusal::Layout(e.to_string()))?;
    for field in &f.fields {
        if field
            .offset
            .checked_add(field.size)
            .is_none_or(|end| end > MAX_FIELD_END)
        {
            return Err(Refusal::Layout(format!(
                "field {} at {} of {} bytes lies beyond {MAX_FIELD_END} bytes",
                field.name, field.offset, field.size
            )));
        }
    }
    Ok(f)
}

/// Why the print fmt `print_fmt` (the text after `print fmt:`) of an event
/// with `fields` could crash or hang libtraceevent, or `None`.
pub fn check_format(f: &EventFormat) -> Option<String> {
    print_fmt_refusal(&f.print_fmt, &f.fields)
}

fn print_fmt_refusal(print_fmt: &str, fields: &[Field]) -> Option<String> {
    let toks = tokenize(print_fmt);
    let toks = parsed_by_libtraceevent(&toks);
    if toks.is_empty() {
        return None;
    }
    if toks.last() == Some(&Tok::OpenLiteral) {
        // libtraceevent crashes (SIGSEGV) parsing the rest of the line as
        // one argument.
        return Some("an argument literal that is never closed".into());
    }
    nesting(toks)
        .or_else(|| foreign_punct(toks))
        .or_else(|| unbalanced(toks))
        .or_else(|| statement_only(toks))
        .or_else(|| missing_operator(toks))
        .or_else(|| stray_semicolon(toks))
        .or_else(|| widths(print_fmt))
        .or_else(|| print_counts(toks))
        .or_else(|| unsafe_division(toks, fields))
        .or_else(|| foreign_member(toks))
        .or_else(|| grammar::refusal(toks))
}

/// The tokens of a print fmt that libtraceevent parses as one: all of
/// them, or none when it gives up before the first argument, which is
/// safe (it keeps the event and prints its records as
/// `[FAILED TO PARSE] field=value ...`). It gives up unless the print fmt
/// starts with a string (adjacent ones are one) that ends, followed by a
/// `,` or by nothing. A kernel's tab ends a string for it (see
/// [`literal_close`]), so maple_tree's `"%s\tNode: %p ...", REC->fn, ...`
/// is such a print fmt, and the arguments it never reads are not screened.
fn parsed_by_libtraceevent<'t, 'a>(toks: &'t [Tok<'a>]) -> &'t [Tok<'a>] {
    let strings = toks.iter().take_while(|t| **t == Tok::Literal).count();
    match toks.get(strings) {
        _ if strings == 0 => &[],
        None | Some(Tok::Punct(b',')) => toks,
        Some(_) => &[],
    }
}

fn is_print_fmt_line(trimmed: &str) -> bool {
    trimmed.starts_with("print fmt:")
}

/// The part of the format file `text` that libtraceevent may be given: up
/// to the end of its `print fmt:` line, the one the screen reads.
/// libtraceevent reads a print fmt's arguments on to the end of its input,
/// where the kernel writes nothing after that line.
pub fn through_print_fmt(text: &[u8]) -> &[u8] {
    let mut start = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let end = start + line.len();
        if is_print_fmt_line(String::from_utf8_lossy(line).trim()) {
            return &text[..end];
        }
        start = end;
    }
    text
}

/// The `name:` of an event format, or `?`.
pub fn event_name(format: &[u8]) -> String {
    String::from_utf8_lossy(format)
        .lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map_or_else(|| "?".into(), |n| n.trim().to_string())
}

/// `format` with everything from `print fmt:` on replaced by a print fmt
/// libtraceevent cannot parse, so that nothing of it is evaluated: it keeps
/// the event and its fields and prints its records as
/// `[FAILED TO PARSE] field=value ...`.
pub fn without_print_fmt(format: &[u8]) -> Vec<u8> {
    const PRINT_FMT: &[u8] = b"print fmt:";
    let cut = format
        .windows(PRINT_FMT.len())
        .position(|w| w == PRINT_FMT)
        .unwrap_or(format.len());
    [&format[..cut], b"print fmt: refused\n"].concat()
}

/// A token of a print fmt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    /// A string or char literal (its text does not matter here).
    Literal,
    /// A literal that nothing ends before the end of the text (always the
    /// last token).
    OpenLiteral,
    /// A number as written, suffixes included (`1000`, `0x10`, `1000L`).
    Number(&'a str),
    /// An identifier or keyword.
    Ident(&'a str),
    /// Any other byte (operators and punctuation, one byte each).
    Punct(u8),
}

/// A token as the screen's messages show it (a literal as `"..."`).
fn tok_text(t: &Tok<'_>) -> String {
    match *t {
        Tok::Literal => "\"...\"".to_string(),
        Tok::OpenLiteral => "\"...".to_string(),
        Tok::Number(s) | Tok::Ident(s) => s.to_string(),
        Tok::Punct(c) => (c as char).to_string(),
    }
}

/// The end of the string or char literal that starts at `s[start]` (see
/// [`literal_close`]), or `s.len()` if nothing ends it.
fn literal_end(s: &[u8], start: usize) -> usize {
    literal_close(s, start).unwrap_or(s.len())
}

/// The index after the last byte of the literal at `s[start]` as
/// libtraceevent 1.7 reads it, or `None` if nothing ends it before the
/// end of the text. Its tokenizer ends a literal at its quote, and also at
/// any byte that is neither printable nor a newline, such as a tab, which
/// it takes for the closing quote: `"\t,u/", 1` is to it an empty string,
/// then `, u / ", 1"`, which it divides by zero (SIGFPE) while folding
/// constants. Either byte goes into the literal when a backslash comes
/// just before it, even the second of `\\`.
fn literal_close(s: &[u8], start: usize) -> Option<usize> {
    let quote = s[start];
    (start + 1..s.len())
        .find(|&i| {
            let c = s[i];
            s[i - 1] != b'\\' && (c == quote || !(c == b'\n' || (b' '..=b'~').contains(&c)))
        })
        .map(|i| i + 1)
}

/// Splits C expression text into tokens, keeping the contents of string
/// and char literals (`"%d%%"`, `'/'`) out of the operators.
fn tokenize(text: &str) -> Vec<Tok<'_>> {
    let s = text.as_bytes();
    let word = |i: usize| {
        s[i..]
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .map_or(s.len(), |n| i + n)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            match literal_close(s, i) {
                Some(end) => {
                    out.push(Tok::Literal);
                    i = end;
                }
                None => {
                    out.push(Tok::OpenLiteral);
                    i = s.len();
                }
            }
        } else if c.is_ascii_digit() {
            let e = word(i);
            out.push(Tok::Number(&text[i..e]));
            i = e;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let e = word(i);
            out.push(Tok::Ident(&text[i..e]));
            i = e;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// The value of a C integer constant (`1000`, `0x3e8`, `01750`, with `u`/`l`
/// suffixes), or `None` if `n` is not one.
fn int_constant(n: &str) -> Option<u64> {
    let digits = n.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }
}

/// Nesting deeper than [`MAX_NESTING`].
fn nesting(toks: &[Tok<'_>]) -> Option<String> {
    let mut depth = 0usize;
    for t in toks {
        match t {
            Tok::Punct(b'(' | b'[' | b'{') => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(format!("nested deeper than {MAX_NESTING} levels"));
                }
            }
            Tok::Punct(b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A byte outside literals that is no C operator (`` ` ``, `@`, `$`, `\`,
/// `#`): the kernel never writes one, and libtraceevent takes it for an
/// operator it does not know and crashes (SIGSEGV) parsing ``a ? b : c ` d``.
fn foreign_punct(toks: &[Tok<'_>]) -> Option<String> {
    toks.iter().find_map(|t| match *t {
        Tok::Punct(c @ (b'`' | b'@' | b'$' | b'\\' | b'#')) => {
            Some(format!("'{}' is no C operator", c as char))
        }
        _ => None,
    })
}

/// Brackets that do not pair up: a closer with no opener or another
/// kind of opener, or an opener never closed. The kernel's are balanced;
/// libtraceevent crashes (SIGSEGV) parsing `a ? b : c } d`.
fn unbalanced(toks: &[Tok<'_>]) -> Option<String> {
    let mut open = Vec::new();
    for t in toks {
        match *t {
            Tok::Punct(c @ (b'(' | b'[' | b'{')) => open.push(c),
            Tok::Punct(c @ (b')' | b']' | b'}')) => {
                let want = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if open.pop() != Some(want) {
                    return Some(format!("a '{}' that closes nothing", c as char));
                }
            }
            _ => {}
        }
    }
    open.last()
        .map(|&c| format!("a '{}' that is never closed", c as char))
}

/// A `.` or an assignment `=` outside the braces of a `({ ... })`: the
/// kernel writes them only in such statements, and libtraceevent crashes
/// (SIGSEGV) parsing `a ? b : c . d` and `a ? b : c = d`.
fn statement_only(toks: &[Tok<'_>]) -> Option<String> {
    // Per open bracket: whether it opens a statement block, and the '?'
    // not yet answered by a ':' inside it.
    let mut open: Vec<(bool, usize)> = vec![(false, 0)];
    let punct = |i: usize| match toks.get(i) {
        Some(Tok::Punct(c)) => Some(*c),
        _ => None,
    };
    for (i, t) in toks.iter().enumerate() {
        let in_statement = open.iter().any(|o| o.0);
        match *t {
            Tok::Punct(b'{') => open.push((i > 0 && punct(i - 1) == Some(b'('), 0)),
            Tok::Punct(b'(' | b'[') => open.push((false, 0)),
            // The outermost level stays.
            Tok::Punct(b')' | b']' | b'}') if open.len() > 1 => {
                open.pop();
            }
            Tok::Punct(b')' | b']' | b'}') => {}
            _ if in_statement => {}
            Tok::Punct(b'.') => return Some("a '.' outside a ({ ... })".into()),
            Tok::Punct(b'?') => {
                if let Some(o) = open.last_mut() {
                    o.1 += 1;
                }
            }
            Tok::Punct(b':') => match open.last_mut() {
                Some(o) if o.1 > 0 => o.1 -= 1,
                _ => return Some("a ':' with no '?' before it".into()),
            },
            Tok::Punct(b'=') => {
                // Only in ==, !=, <= and >=.
                let start = (i > 0 && punct(i - 1) == Some(b'=')).then(|| i - 1);
                let ok = match start {
                    // The second '=' of "==": no third.
                    Some(s) => punct(i + 1) != Some(b'=') && (s == 0 || punct(s - 1) != Some(b'=')),
                    None => {
                        matches!(i.checked_sub(1).and_then(punct), Some(b'!' | b'<' | b'>'))
                            || punct(i + 1) == Some(b'=')
                    }
                };
                if !ok {
                    return Some("an '=' that is no comparison outside a ({ ... })".into());
                }
            }
            _ => {}
        }
    }
    None
}

/// Two operands with no operator between them, as the `10 x` of a mangled
/// `10 / x`: libtraceevent's parser does not refuse them but builds trees
/// that crash it while it folds them (SIGSEGV, SIGFPE). An identifier may
/// follow an identifier (`unsigned long`) and a string a string (`"a" "b"`).
fn missing_operator(toks: &[Tok<'_>]) -> Option<String> {
    toks.windows(2).find_map(|w| {
        let joined = matches!(
            (w[0], w[1]),
            (
                Tok::Number(_),
                Tok::Number(_) | Tok::Ident(_) | Tok::Literal
            ) | (Tok::Ident(_), Tok::Number(_) | Tok::Literal)
                | (Tok::Literal, Tok::Number(_) | Tok::Ident(_))
        );
        joined.then(|| {
            format!(
                "no operator between '{}' and '{}'",
                tok_text(&w[0]),
                tok_text(&w[1])
            )
        })
    })
}

/// A `->` on a name other than `REC` (`a->b`, `REC->a->b`), on anything
/// else (`4->`), or with no member name after it: the kernel's print fmts
/// reach fields only as `REC->f` or `(REC)->f`, and libtraceevent crashes
/// (SIGSEGV) on `1 ? 2 : a->b` and on `0 ? D : 4->`.
fn foreign_member(toks: &[Tok<'_>]) -> Option<String> {
    let arrows =
        (1..toks.len()).filter(|&i| toks[i - 1] == Tok::Punct(b'-') && toks[i] == Tok::Punct(b'>'));
    for i in arrows {
        let on = i.checked_sub(2).map(|j| toks[j]);
        match on {
            Some(Tok::Ident("REC") | Tok::Punct(b')')) => {}
            Some(Tok::Ident(name)) => return Some(format!("a '->' on '{name}', not on REC")),
            Some(t) => return Some(format!("a '->' on '{}', not on REC", tok_text(&t))),
            None => return Some("a '->' on nothing".into()),
        }
        if !matches!(toks.get(i + 1), Some(Tok::Ident(_))) {
            return Some("a '->' with no member name after it".into());
        }
    }
    None
}

/// A `;` outside braces: the kernel writes them only in the statements of
/// a `({ ... })`, and libtraceevent crashes (SIGSEGV) folding `a / 1 ? b : 4;`.
fn stray_semicolon(toks: &[Tok<'_>]) -> Option<String> {
    let mut open = Vec::new();
    for t in toks {
        match *t {
            Tok::Punct(c @ (b'(' | b'[' | b'{')) => open.push(c),
            Tok::Punct(b')' | b']' | b'}') => {
                open.pop();
            }
            Tok::Punct(b';') if !open.contains(&b'{') => {
                return Some("a ';' outside braces".into());
            }
            _ => {}
        }
    }
    None
}

/// A width or precision above [`MAX_WIDTH`] in any string of the print fmt
/// (libtraceevent pads with one call per character).
fn widths(print_fmt: &str) -> Option<String> {
    let s = print_fmt.as_bytes();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'"' {
            i += 1;
            continue;
        }
        let end = literal_end(s, i);
        let lit = &s[i + 1..end.saturating_sub(1).max(i + 1)];
        let mut j = 0;
        while j < lit.len() {
            if lit[j] != b'%' {
                j += 1;
                continue;
            }
            j += 1;
            if lit.get(j) == Some(&b'%') {
                j += 1;
                continue;
            }
            while j < lit.len() && b"-+ #0'".contains(&lit[j]) {
                j += 1;
            }
            for _ in 0..2 {
                let start = j;
                while j < lit.len() && lit[j].is_ascii_digit() {
                    j += 1;
                }
                let n = std::str::from_utf8(&lit[start..j]).unwrap_or("");
                if !n.is_empty() && n.parse::<u64>().map_or(true, |v| v > MAX_WIDTH) {
                    return Some(format!("a width or precision of {n}"));
                }
                if lit.get(j) == Some(&b'.') {
                    j += 1;
                } else {
                    break;
                }
            }
        }
        i = end;
    }
    None
}

/// The top-level comma-separated arguments of the call whose `(` is at
/// `toks[open]`.
fn call_args<'t, 'a>(toks: &'t [Tok<'a>], open: usize) -> Vec<&'t [Tok<'a>]> {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(b')' | b']' | b'}') => {
                depth -= 1;
                if depth == 0 {
                    args.push(&toks[start..i]);
                    return args;
                }
            }
            Tok::Punct(b',') if depth == 1 => {
                args.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args.push(&toks[start..]);
    args
}

/// A constant byte count of `__print_array(a, count, size)`,
/// `__print_hex(a, len)` or `__print_hex_str(a, len)` above
/// [`MAX_PRINT_BYTES`] (libtraceevent reads that many bytes of the record).
fn print_counts(toks: &[Tok<'_>]) -> Option<String> {
    let constant = |arg: &[Tok<'_>]| match arg {
        [Tok::Number(n)] => int_constant(n),
        _ => None,
    };
    for (i, t) in toks.iter().enumerate() {
        let Tok::Ident(name @ ("__print_array" | "__print_hex" | "__print_hex_str")) = *t else {
            continue;
        };
        if toks.get(i + 1) != Some(&Tok::Punct(b'(')) {
            continue;
        }
        let args = call_args(toks, i + 1);
        let bytes = if name == "__print_array" {
            let count = args.get(1).and_then(|a| constant(a));
            let size = args.get(2).and_then(|a| constant(a));
            match (count, size) {
                (Some(c), Some(s)) => Some(c.saturating_mul(s)),
                (Some(c), None) => Some(c),
                _ => None,
            }
        } else {
            args.get(1).and_then(|a| constant(a))
        };
        if let Some(b) = bytes.filter(|&b| b > MAX_PRINT_BYTES) {
            return Some(format!("{name} of {b} bytes"));
        }
    }
    None
}

/// The first `*`, `/` or `%` outside brackets in the divisor that starts
/// `toks`. The divisor runs to the first operator of lower precedence or
/// closing bracket outside brackets; other tokens, as the `x` of
/// `10 x / 11`, do not end it.
fn second_multiplication(toks: &[Tok<'_>]) -> Option<char> {
    let mut depth = 0usize;
    for t in toks {
        let Tok::Punct(c) = *t else { continue };
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => return None,
            b')' | b']' | b'}' => depth -= 1,
            b'*' | b'/' | b'%' if depth == 0 => return Some(c as char),
            _ if depth == 0 && b"+-<>=!&|^?:,;".contains(&c) => return None,
            _ => {}
        }
    }
    None
}

/// Why the argument tokens `toks` could make libtraceevent divide by zero.
///
/// libtraceevent 1.7 evaluates `/` and `%` of the arguments for every
/// record and does not check the divisor, so a divisor of 0 kills the
/// process with SIGFPE. A divisor must be a non-zero integer constant
/// (`% 1000`, `/ 1000L`) or a `sizeof(...)` (of a type, or of a `REC->field`
/// whose declared size is not 0). Everything else, e.g. `/ REC->count` or
/// the `% C->id` of a corrupt `R%C->id`, is reported.
fn unsafe_division(toks: &[Tok<'_>], fields: &[Field]) -> Option<String> {
    for (i, t) in toks.iter().enumerate() {
        let op = match *t {
            Tok::Punct(c @ (b'/' | b'%')) => c as char,
            _ => continue,
        };
        let shown = |n: usize| {
            toks[i + 1..]
                .iter()
                .take(n)
                .map(tok_text)
                .collect::<Vec<_>>()
                .join(" ")
        };
        // libtraceevent parses `a / 10 / 11` as `a / (10 / 11)` and folds
        // that to `a / 0` while parsing: no second `*`, `/` or `%` may
        // follow in the divisor, which runs to the next operator of lower
        // precedence (tokens between, as in `10 x / 11`, do not end it).
        if let Some(c) = second_multiplication(&toks[i + 1..]) {
            return Some(format!(
                "'{op}' by '{}', which libtraceevent folds at '{c}'",
                shown(3)
            ));
        }
        match toks.get(i + 1) {
            Some(Tok::Number(n)) => match int_constant(n) {
                None => return Some(format!("'{op}' by {n}, not an integer constant")),
                Some(0) => return Some(format!("'{op}' by 0")),
                Some(_) => {
                    // A postfix operator would make the constant only a part
                    // of the divisor (`4[p]`, `4(x)`).
                    if let Some(Tok::Punct(b'[' | b'(' | b'.')) = toks.get(i + 2) {
                        return Some(format!("'{op}' by '{}'", shown(2)));
                    }
                }
            },
            Some(Tok::Ident("sizeof")) => {
                if toks.get(i + 2) != Some(&Tok::Punct(b'(')) {
                    return Some(format!("'{op}' by '{}'", shown(2)));
                }
                let close = toks[i + 3..]
                    .iter()
                    .position(|t| *t == Tok::Punct(b')'))
                    .map(|n| i + 3 + n);
                let Some(close) = close else {
                    return Some(format!("'{op}' by an unclosed sizeof"));
                };
                // sizeof(REC->field) is the field's declared size.
                if let [Tok::Ident("REC"), Tok::Punct(b'-'), Tok::Punct(b'>'), Tok::Ident(f)] =
                    toks[i + 3..close]
                {
                    let size = fields.iter().find(|x| x.name == f).map(|x| x.size);
                    if !matches!(size, Some(s) if s > 0) {
                        return Some(format!(
                            "'{op}' by sizeof(REC->{f}), of no field of non-zero size"
                        ));
                    }
                }
            }
            _ => return Some(format!("'{op}' by '{}', not a constant", shown(3))),
        }
    }
    None
}

mod grammar;
#[cfg(test)]
mod tests;
