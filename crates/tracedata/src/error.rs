//! The error type of the crate.
//!
//! Every error renders as one line that says where (file, section, CPU,
//! byte offset) and what was expected, e.g.
//! `trace.dat: offset 0x1000: section header: expected 16 bytes, file ends after 3`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug)]
pub enum ErrorKind {
    /// An I/O error from the operating system.
    Io(std::io::Error),
    /// The data does not follow the expected layout (bad magic, bad offset,
    /// truncated structure, inconsistent sizes, ...).
    Corrupt(String),
    /// The data is well formed but uses something this crate does not handle
    /// (unknown compression, big-endian file, ...).
    Unsupported(String),
    /// A text (format file, header file) could not be parsed.
    Parse(String),
    /// A decompression library reported an error.
    Decompress(String),
    /// A field asked for by name does not exist or has the wrong shape.
    Field(String),
}

/// The error type of the crate: a kind plus the context it happened in.
#[derive(Debug)]
pub struct Error {
    /// The file the error is about, if any.
    pub path: Option<PathBuf>,
    /// Byte offset in the file (or in the data being decoded), if known.
    pub offset: Option<u64>,
    /// Free-form context, e.g. `"cpu 3 data"` or `"section EVENT_FORMATS"`.
    pub context: String,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// Creates an error of the given kind with an empty context.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            path: None,
            offset: None,
            context: String::new(),
            kind,
        }
    }

    /// A [`ErrorKind::Corrupt`] error.
    pub fn corrupt(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt(msg.into()))
    }

    /// A [`ErrorKind::Unsupported`] error.
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported(msg.into()))
    }

    /// A [`ErrorKind::Parse`] error.
    pub fn parse(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Parse(msg.into()))
    }

    /// A [`ErrorKind::Decompress`] error.
    pub fn decompress(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Decompress(msg.into()))
    }

    /// A [`ErrorKind::Field`] error.
    pub fn field(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Field(msg.into()))
    }

    /// An I/O error about `path`.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Self::new(ErrorKind::Io(err)).with_path(path)
    }

    /// Sets the file the error is about (keeps an existing one).
    pub fn with_path(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    /// Sets the byte offset (keeps an existing one).
    pub fn at(mut self, offset: u64) -> Self {
        if self.offset.is_none() {
            self.offset = Some(offset);
        }
        self
    }

    /// Prepends a context word, e.g. `"cpu 2"`; contexts nest outer-first.
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        if self.context.is_empty() {
            self.context = ctx.to_string();
        } else {
            self.context = format!("{ctx}: {}", self.context);
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{}: ", p.display())?;
        }
        if !self.context.is_empty() {
            write!(f, "{}: ", self.context)?;
        }
        if let Some(o) = self.offset {
            write!(f, "offset {o:#x}: ")?;
        }
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "{e}"),
            ErrorKind::Corrupt(m) => write!(f, "corrupt data: {m}"),
            ErrorKind::Unsupported(m) => write!(f, "unsupported: {m}"),
            ErrorKind::Parse(m) => write!(f, "parse error: {m}"),
            ErrorKind::Decompress(m) => write!(f, "decompression failed: {m}"),
            ErrorKind::Field(m) => write!(f, "{m}"),
        }
    }
}

// The I/O error is part of the Display text, so it is not also returned as
// the `source()` (chains printed with `{:#}` would repeat it).
impl std::error::Error for Error {}
