//! The filters of the group and event lists.

/// How a text filter compares: `work` is the name `work` exactly, `~work`
/// any name containing `work`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMatch {
    /// Equal to this.
    Exact(String),
    /// Contains this.
    Contains(String),
}

impl TextMatch {
    /// Parses prompt text; `None` for empty text (no filter).
    pub fn parse(text: &str) -> Option<TextMatch> {
        match text.strip_prefix('~') {
            Some("") => None,
            Some(t) => Some(TextMatch::Contains(t.to_string())),
            None if text.is_empty() => None,
            None => Some(TextMatch::Exact(text.to_string())),
        }
    }

    /// Whether `s` matches.
    pub fn matches(&self, s: &str) -> bool {
        match self {
            TextMatch::Exact(t) => s == t,
            TextMatch::Contains(t) => s.contains(t.as_str()),
        }
    }

    /// The text that [`TextMatch::parse`] turns into this.
    pub fn prompt_text(&self) -> String {
        match self {
            TextMatch::Exact(t) => t.clone(),
            TextMatch::Contains(t) => format!("~{t}"),
        }
    }

    /// `=work` or `~work`.
    fn describe(&self) -> String {
        match self {
            TextMatch::Exact(t) => format!("={t}"),
            TextMatch::Contains(t) => format!("~{t}"),
        }
    }
}

/// Active filters (all must match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this pid.
    pub pid: Option<i32>,
    /// Command name.
    pub comm: Option<TextMatch>,
    /// Event name contains this.
    pub event: Option<String>,
}

impl Filter {
    /// True when no filter is set.
    pub fn is_empty(&self) -> bool {
        self.pid.is_none() && self.comm.is_none() && self.event.is_none()
    }

    /// Short description, e.g. `pid=5 comm=nginx event~sys`.
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        if let Some(p) = self.pid {
            v.push(format!("pid={p}"));
        }
        if let Some(c) = &self.comm {
            v.push(format!("comm{}", c.describe()));
        }
        if let Some(e) = &self.event {
            v.push(format!("event~{e}"));
        }
        v.join(" ")
    }
}
