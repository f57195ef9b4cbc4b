//! POSIX basic regular expressions (what `regcomp(3)` compiles without
//! `REG_EXTENDED`, with the GNU extensions `\+ \? \| \< \> \w \s \b`)
//! translated to the `regex` crate's syntax.
//!
//! trace-cmd matches `list -e` patterns this way (basic syntax, ignoring
//! case, unanchored), so `sched|irq` is the literal text `sched|irq` and
//! `sched\|irq` is the alternation.

use anyhow::{bail, Result};

/// A compiled basic regular expression, case-insensitive, that matches
/// anywhere in the text (as `regexec` does).
pub struct Bre(regex::Regex);

impl Bre {
    /// Compiles `pattern`; an error names it.
    pub fn new(pattern: &str) -> Result<Bre> {
        let translated = translate(pattern)?;
        match regex::RegexBuilder::new(&translated)
            .case_insensitive(true)
            .build()
        {
            Ok(r) => Ok(Bre(r)),
            Err(_) => bail!("invalid regex '{pattern}'"),
        }
    }

    /// Whether the expression matches somewhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

/// Pushes `c` as a literal character.
fn literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// Where a `*` is literal and `^` is an anchor: at the start of the
/// expression, after `\(`, after `\|`, and (for `*`) after a leading `^`.
fn at_start(out: &str) -> bool {
    out.is_empty()
        || out.ends_with('(') && !out.ends_with("\\(")
        || out.ends_with('|') && !out.ends_with("\\|")
}

/// Translates a basic regular expression into `regex` crate syntax.
fn translate(pattern: &str) -> Result<String> {
    let bad = || anyhow::anyhow!("invalid regex '{pattern}'");
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    // True right after an anchoring `^` (a following `*` is literal).
    let mut after_caret = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let was_after_caret = std::mem::take(&mut after_caret);
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err(bad());
                };
                i += 1;
                match n {
                    '(' | ')' | '{' | '}' | '|' | '+' | '?' => out.push(n),
                    '<' | '>' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
                        out.push('\\');
                        out.push(n);
                    }
                    '1'..='9' => {
                        bail!("invalid regex '{pattern}': back-references are not supported")
                    }
                    _ => literal(&mut out, n),
                }
            }
            '*' if at_start(&out) || was_after_caret => literal(&mut out, '*'),
            '^' if at_start(&out) => {
                out.push('^');
                after_caret = true;
            }
            '$' if i + 1 == chars.len()
                || chars[i + 1..].starts_with(&['\\', ')'])
                || chars[i + 1..].starts_with(&['\\', '|']) =>
            {
                out.push('$')
            }
            '[' => i = bracket(&chars, i, &mut out).ok_or_else(bad)?,
            '.' | '*' => out.push(c),
            _ => literal(&mut out, c),
        }
        i += 1;
    }
    Ok(out)
}

/// Translates the bracket expression starting at `chars[start] == '['`;
/// returns the index of its closing `]`.
fn bracket(chars: &[char], start: usize, out: &mut String) -> Option<usize> {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the list is a member, not the end.
    if chars.get(i) == Some(&']') {
        out.push_str("\\]");
        i += 1;
    }
    loop {
        let c = *chars.get(i)?;
        match c {
            ']' => {
                out.push(']');
                return Some(i);
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == ':' && chars[j + 1] == ']')?;
                out.extend(&chars[i..=end + 1]);
                i = end + 2;
                continue;
            }
            // Equivalence classes and collating symbols: not supported.
            '[' if matches!(chars.get(i + 1), Some('=') | Some('.')) => return None,
            // Inside brackets a backslash is an ordinary member in POSIX.
            '\\' | '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                out.push_str("\\-");
            }
            _ => out.push(c),
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Bre::new(p).unwrap().is_match(t)
    }

    #[test]
    fn basic_syntax_as_regcomp() {
        assert!(m("^irq", "irq_vectors"));
        assert!(!m("^irq", "softirq"));
        assert!(m("IRQ", "irq"));
        assert!(m("sched|irq", "x sched|irq y"));
        assert!(!m("sched|irq", "sched"));
        assert!(m("sched\\|irq", "irq"));
        assert!(m("a+", "a+"));
        assert!(!m("a+", "aa"));
        assert!(m("ba\\+c", "baaac"));
        assert!(m("*a", "*a"));
        assert!(m("^*a", "*a"));
        assert!(!m("^*a", "a"));
        assert!(m("x\\(ab\\)*y", "xababy"));
        assert!(m("a\\{2\\}", "caab"));
        assert!(m("(a)", "(a)"));
        assert!(m("a$", "ba"));
        assert!(!m("a$", "ab"));
        assert!(m("a$b", "a$b"));
        assert!(m("x^y", "x^y"));
        assert!(m("sched_s.*ch", "sched_switch"));
        assert!(m("[]x]", "]"));
        assert!(m("[\\]", "\\"));
        assert!(m("[[:digit:]]", "a1"));
        assert!(!m("[^a-z_]", "sched_switch"));
        assert!(m("a{1}", "a{1}"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        for p in ["\\", "[abc", "\\(a\\)\\1", "a\\{1", "[[=a=]]"] {
            assert!(Bre::new(p).is_err(), "{p}");
        }
    }
}
