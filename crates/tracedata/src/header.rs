//! Parsers of `events/header_page` and `events/header_event`.

use crate::error::{Error, Result};
use crate::format::parse_field;

/// Layout of a ring-buffer page, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPage {
    /// Offset of the u64 page timestamp.
    pub timestamp_offset: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Size of the commit word: the kernel's `sizeof(long)`.
    pub commit_size: usize,
    /// Offset of the event data.
    pub data_offset: usize,
    /// Size of the data area (page size minus header).
    pub data_size: usize,
}

impl HeaderPage {
    /// The layout of a 64-bit kernel with 4 KiB pages.
    pub const DEFAULT_64: HeaderPage = HeaderPage {
        timestamp_offset: 0,
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
        data_size: 4080,
    };

    /// Parses the text of `events/header_page`.
    pub fn parse(text: &str) -> Result<HeaderPage> {
        let mut ts = None;
        let mut commit = None;
        let mut data = None;
        for line in text.lines() {
            let l = line.trim();
            if !l.starts_with("field:") {
                continue;
            }
            let f = parse_field(l).map_err(|e| e.context("header_page"))?;
            match f.name.as_str() {
                "timestamp" => ts = Some(f),
                "commit" => commit = Some(f),
                "data" => data = Some(f),
                _ => {}
            }
        }
        let missing = |n: &str| Error::parse(format!("no `{n}` field")).context("header_page");
        let ts = ts.ok_or_else(|| missing("timestamp"))?;
        let commit = commit.ok_or_else(|| missing("commit"))?;
        let data = data.ok_or_else(|| missing("data"))?;
        if commit.size != 4 && commit.size != 8 {
            return Err(
                Error::parse(format!("commit size {} is not 4 or 8", commit.size))
                    .context("header_page"),
            );
        }
        if ts.size != 8 {
            return Err(
                Error::parse(format!("timestamp size {} is not 8", ts.size)).context("header_page")
            );
        }
        Ok(HeaderPage {
            timestamp_offset: ts.offset,
            commit_offset: commit.offset,
            commit_size: commit.size,
            data_offset: data.offset,
            data_size: data.size,
        })
    }
}

/// Event header layout, from `events/header_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderEvent {
    /// Bits of type_len (5).
    pub type_len_bits: u32,
    /// Bits of time_delta (27).
    pub time_delta_bits: u32,
    /// type_len of padding (29).
    pub padding: u8,
    /// type_len of a time extend (30).
    pub time_extend: u8,
    /// type_len of an absolute time stamp (31).
    pub time_stamp: u8,
    /// Largest type_len that encodes a data length (28).
    pub data_max: u8,
}

impl Default for HeaderEvent {
    fn default() -> Self {
        HeaderEvent {
            type_len_bits: 5,
            time_delta_bits: 27,
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max: 28,
        }
    }
}

impl HeaderEvent {
    /// Parses the text of `events/header_event`. Values that are missing keep
    /// their defaults; values that differ from what [`crate::page`] decodes
    /// are an error.
    pub fn parse(text: &str) -> Result<HeaderEvent> {
        let mut h = HeaderEvent::default();
        let num = |s: &str| -> Result<u32> {
            s.trim()
                .trim_end_matches("bits")
                .trim()
                .parse()
                .map_err(|_| Error::parse(format!("bad number {s:?}")).context("header_event"))
        };
        for line in text.lines() {
            let Some((key, val)) = line.split_once(':') else {
                continue;
            };
            let val = val.trim();
            let after_eq = || val.rsplit("==").next().unwrap_or(val);
            match key.trim() {
                "type_len" => h.type_len_bits = num(val)?,
                "time_delta" => h.time_delta_bits = num(val)?,
                "padding" => h.padding = num(after_eq())? as u8,
                "time_extend" => h.time_extend = num(after_eq())? as u8,
                "time_stamp" => h.time_stamp = num(after_eq())? as u8,
                "data max type_len" => h.data_max = num(after_eq())? as u8,
                _ => {}
            }
        }
        if h != HeaderEvent::default() {
            return Err(
                Error::unsupported(format!("event header layout {h:?}")).context("header_event")
            );
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::build::{HEADER_EVENT as EVENT, HEADER_PAGE as PAGE};

    #[test]
    fn parses_host_headers() {
        assert_eq!(HeaderPage::parse(PAGE).unwrap(), HeaderPage::DEFAULT_64);
        assert_eq!(HeaderEvent::parse(EVENT).unwrap(), HeaderEvent::default());
    }

    #[test]
    fn rejects_bad_headers() {
        assert!(HeaderPage::parse("").is_err());
        let bad = PAGE.replace("size:8;\tsigned:1", "size:3;\tsigned:1");
        assert!(HeaderPage::parse(&bad).is_err());
        assert!(HeaderEvent::parse(&EVENT.replace("== 29", "== 28")).is_err());
    }
}
