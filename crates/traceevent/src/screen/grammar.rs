//! The shape of the print fmts kernels write, as a whitelist: a format
//! string, then comma-separated C expressions over `REC->field`, numbers,
//! literals, casts, calls of helpers and brace lists (the tables of
//! `__print_symbolic()` and `__print_flags()`).
//!
//! libtraceevent's parser is fragile on anything else: each crash the
//! fuzzer found was a shape no kernel writes (two operands with no
//! operator between them, a `->` after a number, a stray `;`). Refusing
//! every shape outside this grammar, rather than each crash shape found,
//! keeps such inputs away from it. The contents of a statement expression
//! `({ ... })` are not parsed: the other rules of the screen bound them.
//!
//! This is a recognizer: it says whether the tokens have this shape, with
//! the first token where they stop having it, and builds nothing.

use super::{tok_text, Tok};

/// Why `toks` (a whole print fmt) is not a format string followed by
/// comma-separated expressions, or `None` if it is. The brackets of `toks`
/// must pair up, and their nesting be bounded (the screen checks both
/// first): the recursion goes one level per bracket.
pub(super) fn refusal(toks: &[Tok<'_>]) -> Option<String> {
    let mut p = Parser { toks, pos: 0 };
    p.print_fmt().err().map(|at| match toks.get(at) {
        Some(t) => format!("'{}' where a kernel's print fmt has none", tok_text(t)),
        None => "a print fmt that ends too early".into(),
    })
}

/// The index of the token where the shape broke.
type Parsed = Result<(), usize>;

struct Parser<'t, 'a> {
    toks: &'t [Tok<'a>],
    pos: usize,
}

/// Operators of two bytes (the tokenizer gives one `Punct` per byte).
const TWO_BYTE_OPS: [[u8; 2]; 8] = [
    *b"<<", *b">>", *b"<=", *b">=", *b"==", *b"!=", *b"&&", *b"||",
];
/// Operators of one byte between two operands.
const ONE_BYTE_OPS: &[u8] = b"+-*/%&|^<>";
/// Prefix operators.
const PREFIX_OPS: &[u8] = b"-+!~*&";

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn punct_at(&self, i: usize) -> Option<u8> {
        match self.toks.get(i) {
            Some(Tok::Punct(c)) => Some(*c),
            _ => None,
        }
    }

    fn is(&self, c: u8) -> bool {
        self.punct_at(self.pos) == Some(c)
    }

    fn expect(&mut self, c: u8) -> Parsed {
        if self.is(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.pos)
        }
    }

    /// `"format" ["more"...] (, expression)*` and nothing after.
    fn print_fmt(&mut self) -> Parsed {
        if self.peek() != Some(Tok::Literal) {
            return Err(self.pos);
        }
        while self.peek() == Some(Tok::Literal) {
            self.pos += 1;
        }
        while self.is(b',') {
            self.pos += 1;
            self.expr()?;
        }
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.pos),
        }
    }

    /// A conditional expression: binary operators between unary
    /// expressions (their precedence does not matter to the shape), then
    /// optionally `? expr : expr`.
    fn expr(&mut self) -> Parsed {
        self.unary()?;
        while let Some(len) = self.binary_op() {
            self.pos += len;
            self.unary()?;
        }
        if self.is(b'?') {
            self.pos += 1;
            self.expr()?;
            self.expect(b':')?;
            self.expr()?;
        }
        Ok(())
    }

    /// The length in tokens of the binary operator at the position, if any.
    fn binary_op(&self) -> Option<usize> {
        let a = self.punct_at(self.pos)?;
        if let Some(b) = self.punct_at(self.pos + 1) {
            if TWO_BYTE_OPS.contains(&[a, b]) {
                return Some(2);
            }
            // `a - >b` is no operator: a `->` member access is postfix.
            if a == b'-' && b == b'>' {
                return None;
            }
        }
        ONE_BYTE_OPS.contains(&a).then_some(1)
    }

    fn unary(&mut self) -> Parsed {
        match self.peek() {
            Some(Tok::Punct(c)) if PREFIX_OPS.contains(&c) => {
                self.pos += 1;
                self.unary()
            }
            Some(Tok::Ident("sizeof")) => {
                self.pos += 1;
                if self.is(b'(') && self.cast_end().is_some() {
                    self.pos = self.cast_end().unwrap_or(self.pos);
                    Ok(())
                } else {
                    self.unary()
                }
            }
            Some(Tok::Punct(b'(')) => match self.cast_end() {
                // A cast, `(unsigned long)x`, when an operand follows.
                Some(end) if self.starts_operand(end) => {
                    self.pos = end;
                    self.unary()
                }
                _ => self.postfix(),
            },
            _ => self.postfix(),
        }
    }

    /// Whether an operand can start at token `i`.
    fn starts_operand(&self, i: usize) -> bool {
        match self.toks.get(i) {
            Some(Tok::Literal | Tok::Number(_) | Tok::Ident(_)) => true,
            Some(Tok::Punct(c)) => *c == b'(' || PREFIX_OPS.contains(c),
            Some(Tok::OpenLiteral) | None => false,
        }
    }

    /// If a type name in parentheses starts at the position (`(u64)`,
    /// `(unsigned long)`, `(struct foo *)`, `(char[16])`), the index after
    /// its `)`.
    fn cast_end(&self) -> Option<usize> {
        let mut i = self.pos + 1;
        let mut names = 0;
        loop {
            match self.toks.get(i)? {
                Tok::Ident("REC") => return None,
                Tok::Ident(_) => names += 1,
                Tok::Punct(b'*') if names > 0 => {}
                Tok::Punct(b'[') if names > 0 => {
                    if let Some(Tok::Number(_)) = self.toks.get(i + 1) {
                        i += 1;
                    }
                    if self.punct_at(i + 1) != Some(b']') {
                        return None;
                    }
                    i += 1;
                }
                Tok::Punct(b')') if names > 0 => return Some(i + 1),
                _ => return None,
            }
            i += 1;
        }
    }

    /// A primary expression, then subscripts, `->member` on REC or a
    /// parenthesized expression, and calls of a named function.
    fn postfix(&mut self) -> Parsed {
        let named = matches!(self.peek(), Some(Tok::Ident(_)));
        let arrow_ok = matches!(self.peek(), Some(Tok::Ident("REC") | Tok::Punct(b'(')));
        self.primary()?;
        loop {
            if self.is(b'[') {
                self.pos += 1;
                self.expr()?;
                self.expect(b']')?;
            } else if self.is(b'-') && self.punct_at(self.pos + 1) == Some(b'>') {
                if !arrow_ok {
                    return Err(self.pos);
                }
                self.pos += 2;
                match self.peek() {
                    Some(Tok::Ident(_)) => self.pos += 1,
                    _ => return Err(self.pos),
                }
            } else if self.is(b'(') && named {
                self.pos += 1;
                self.arguments(b')')?;
            } else {
                return Ok(());
            }
        }
    }

    /// Comma-separated expressions or brace lists up to `close` (an empty
    /// list and a trailing comma included), and `close`.
    fn arguments(&mut self, close: u8) -> Parsed {
        while !self.is(close) {
            if self.is(b'{') {
                self.pos += 1;
                self.arguments(b'}')?;
            } else {
                self.expr()?;
            }
            if !self.is(b',') {
                break;
            }
            self.pos += 1;
        }
        self.expect(close)
    }

    fn primary(&mut self) -> Parsed {
        match self.peek() {
            Some(Tok::Number(_) | Tok::Ident(_)) => {
                self.pos += 1;
                Ok(())
            }
            Some(Tok::Literal) => {
                while self.peek() == Some(Tok::Literal) {
                    self.pos += 1;
                }
                Ok(())
            }
            Some(Tok::Punct(b'(')) if self.punct_at(self.pos + 1) == Some(b'{') => {
                self.statement_expression()
            }
            Some(Tok::Punct(b'(')) => {
                self.pos += 1;
                self.expr()?;
                self.expect(b')')
            }
            // A brace list is an argument of a helper (`arguments`),
            // never an operand: libtraceevent crashes on a bare one.
            _ => Err(self.pos),
        }
    }

    /// `({ ... })`, its statements skipped up to the matching `})`.
    fn statement_expression(&mut self) -> Parsed {
        let mut depth = 0usize;
        let start = self.pos;
        while let Some(t) = self.peek() {
            self.pos += 1;
            match t {
                Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
                Tok::Punct(b')' | b']' | b'}') => {
                    depth = depth.checked_sub(1).ok_or(self.pos - 1)?;
                    if depth == 0 {
                        // The block must end with `})`.
                        return if self.punct_at(self.pos - 2) == Some(b'}') {
                            Ok(())
                        } else {
                            Err(self.pos - 1)
                        };
                    }
                }
                _ => {}
            }
        }
        Err(start)
    }
}
