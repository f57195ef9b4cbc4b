//! Checks `-F` text before libtraceevent parses it: its parser crashes on
//! some malformed expressions (one ending in an operator, unbalanced
//! parentheses), so those are refused here with a message instead.

/// Why the expression part of `s` (after the first `:` outside quotes)
/// cannot be handed to libtraceevent, or `None` when it may be.
pub(super) fn problem(s: &str) -> Option<&'static str> {
    let expr = split_event(s)?;
    let mut depth = 0usize;
    let mut quote = None;
    let mut last = None;
    let mut chars = expr.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q {
                quote = None;
            }
            last = Some('"');
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return Some("unbalanced ')'"),
            },
            _ => {}
        }
        if !c.is_whitespace() {
            last = Some(c);
        }
    }
    if quote.is_some() {
        return Some("unterminated string");
    }
    if depth > 0 {
        return Some("unbalanced '('");
    }
    match last {
        Some(c) if "=<>!&|~+-*/%^,(".contains(c) => Some("expression ends in an operator"),
        _ => None,
    }
}

/// The expression after the first `:` outside quotes, if any.
fn split_event(s: &str) -> Option<&str> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ':') => return Some(&s[i + 1..]),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::problem;

    #[test]
    fn refuses_trailing_operators_and_unbalanced_parentheses() {
        assert_eq!(
            problem("ev: value >"),
            Some("expression ends in an operator")
        );
        assert_eq!(
            problem("ev: a == 1 &&"),
            Some("expression ends in an operator")
        );
        assert_eq!(problem("ev: (a == 1"), Some("unbalanced '('"));
        assert_eq!(problem("ev: a == 1)"), Some("unbalanced ')'"));
        assert_eq!(problem("ev: comm == \"x"), Some("unterminated string"));
    }

    #[test]
    fn accepts_well_formed_text() {
        assert_eq!(problem("ev: value > 3"), None);
        assert_eq!(problem("ev: (a == 1) && comm == \"a:(b\""), None);
        assert_eq!(problem("sched_switch"), None);
        assert_eq!(problem("ev: comm ~ \"x*\""), None);
    }
}
