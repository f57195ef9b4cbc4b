//! The event formats of a trace.dat file, parsed on first use.

use std::sync::OnceLock;

use crate::error::Result;
use crate::format::EventFormat;
use crate::record::Record;

/// All event formats of a file, with lookups by id and by name.
///
/// Formats are parsed on first use: opening a file only reads each
/// format's `name:` and `ID:` lines, and [`EventFormat::parse`] runs the
/// first time a format is asked for (a file holds every event of the system,
/// about 2,300 formats, of which a trace uses a few). A format whose fields
/// cannot be parsed is then treated as absent (`None`, left out of
/// [`Formats::iter`]); [`Formats::check`] reports it.
#[derive(Debug, Default)]
pub struct Formats {
    pub(super) ftrace_texts: Vec<Vec<u8>>,
    pub(super) event_texts: Vec<(String, Vec<Vec<u8>>)>,
    list: Vec<Slot>,
    /// Index into `list` by event id, `u32::MAX` for none (ids are 16-bit,
    /// so a table beats hashing on the per-event path).
    by_id: Vec<u32>,
    long_size: usize,
    /// The formats without a usable `name:` or `ID:` line, left out:
    /// (index into `event_texts` or `None` for ftrace, index of the text).
    unusable: Vec<(Option<u32>, u32)>,
}

/// One format: what open reads, and the full parse once done.
#[derive(Debug)]
struct Slot {
    id: u16,
    name: String,
    /// Index into `event_texts`, or `None` for the ftrace formats.
    system: Option<u32>,
    /// Index of the text within its system.
    text: u32,
    parsed: OnceLock<Option<EventFormat>>,
}

impl Formats {
    /// Reads the name and id of every format and keeps the texts. A format
    /// without a usable `name:` or `ID:` line is left out (its events, if
    /// any, are unknown), as trace-cmd skips the formats it cannot parse:
    /// one corrupt format of an event absent from the data must not make
    /// the file unreadable. [`Formats::check`] reports it.
    pub(super) fn new(
        ftrace_texts: Vec<Vec<u8>>,
        event_texts: Vec<(String, Vec<Vec<u8>>)>,
        long_size: usize,
    ) -> Result<Formats> {
        let mut f = Formats {
            by_id: vec![u32::MAX; 1 << 16],
            long_size,
            ..Formats::default()
        };
        let mut list = Vec::new();
        for (i, t) in ftrace_texts.iter().enumerate() {
            let (name, id) = match crate::format::name_and_id("ftrace", &String::from_utf8_lossy(t))
            {
                Ok(v) => v,
                Err(_) => {
                    f.unusable.push((None, i as u32));
                    continue;
                }
            };
            list.push(Slot {
                id,
                name,
                system: None,
                text: i as u32,
                parsed: OnceLock::new(),
            });
        }
        for (si, (sys, texts)) in event_texts.iter().enumerate() {
            for (i, t) in texts.iter().enumerate() {
                let (name, id) = match crate::format::name_and_id(sys, &String::from_utf8_lossy(t))
                {
                    Ok(v) => v,
                    Err(_) => {
                        f.unusable.push((Some(si as u32), i as u32));
                        continue;
                    }
                };
                list.push(Slot {
                    id,
                    name,
                    system: Some(si as u32),
                    text: i as u32,
                    parsed: OnceLock::new(),
                });
            }
        }
        for (i, s) in list.iter().enumerate() {
            f.by_id[s.id as usize] = i as u32;
        }
        f.list = list;
        f.ftrace_texts = ftrace_texts;
        f.event_texts = event_texts;
        Ok(f)
    }

    fn system(&self, s: &Slot) -> &str {
        s.system
            .map_or("ftrace", |i| &self.event_texts[i as usize].0)
    }

    fn text(&self, s: &Slot) -> &[u8] {
        match s.system {
            None => &self.ftrace_texts[s.text as usize],
            Some(i) => &self.event_texts[i as usize].1[s.text as usize],
        }
    }

    fn parse_slot(&self, s: &Slot) -> Result<EventFormat> {
        let text = self.text(s);
        let mut f = EventFormat::parse(self.system(s), &String::from_utf8_lossy(text))?;
        f.long_size = self.long_size;
        Ok(f)
    }

    fn get<'a>(&'a self, s: &'a Slot) -> Option<&'a EventFormat> {
        s.parsed.get_or_init(|| self.parse_slot(s).ok()).as_ref()
    }

    /// The format of event `id` (`common_type`).
    pub fn by_id(&self, id: u16) -> Option<&EventFormat> {
        let i = *self.by_id.get(id as usize)?;
        self.list.get(i as usize).and_then(|s| self.get(s))
    }

    /// The system and raw text of the format of event `id`, without
    /// parsing it (e.g. to hand it to libtraceevent on first use).
    pub fn text_by_id(&self, id: u16) -> Option<(&str, &[u8])> {
        let i = *self.by_id.get(id as usize)?;
        let s = self.list.get(i as usize)?;
        Some((self.system(s), self.text(s)))
    }

    /// The ids of all formats, in file order (ftrace first), without
    /// parsing them.
    pub fn ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.list.iter().map(|s| s.id)
    }

    /// The format of `system:name`.
    pub fn by_name(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.list
            .iter()
            .find(|s| s.name == name && self.system(s) == system)
            .and_then(|s| self.get(s))
    }

    /// The format of a record.
    pub fn of(&self, r: &Record<'_>) -> Option<&EventFormat> {
        r.common_type().and_then(|id| self.by_id(id))
    }

    /// All formats, in file order (ftrace first). Parses every format not
    /// parsed yet; formats that do not parse are left out.
    pub fn iter(&self) -> impl Iterator<Item = &EventFormat> {
        self.list.iter().filter_map(|s| self.get(s))
    }

    /// Parses every format and returns the first error, if any (open only
    /// checks the `name:` and `ID:` lines).
    pub fn check(&self) -> Result<()> {
        if let Some(&(system, text)) = self.unusable.first() {
            let s = Slot {
                id: 0,
                name: String::new(),
                system,
                text,
                parsed: OnceLock::new(),
            };
            let system = self.system(&s);
            let text = String::from_utf8_lossy(self.text(&s));
            return crate::format::name_and_id(system, &text).map(|_| ());
        }
        for s in &self.list {
            if self.get(s).is_none() {
                return self.parse_slot(s).map(|_| ());
            }
        }
        Ok(())
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True if there are no formats.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt_text(name: &str, id: u32, field: &str) -> Vec<u8> {
        format!(
            "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\t{field}\n\nprint fmt: \"x\"\n"
        )
        .into_bytes()
    }

    #[test]
    fn formats_parse_on_first_use() {
        let good = "field:int a;\toffset:8;\tsize:4;\tsigned:1;";
        let f = Formats::new(
            vec![fmt_text("fn", 1, good)],
            vec![(
                "sched".to_string(),
                vec![
                    fmt_text("one", 300, good),
                    fmt_text("bad", 301, "field:int b;\toffset:x;"),
                ],
            )],
            4,
        )
        .unwrap();
        assert_eq!(f.len(), 3);
        assert!(f.list.iter().all(|s| s.parsed.get().is_none()));
        let one = f.by_id(300).unwrap();
        assert_eq!(
            (one.system.as_str(), one.name.as_str(), one.long_size),
            ("sched", "one", 4)
        );
        assert_eq!(one.fields.len(), 2);
        assert_eq!(one.fields[1].name, "a");
        // Only that one was parsed.
        assert_eq!(
            f.list.iter().filter(|s| s.parsed.get().is_some()).count(),
            1
        );
        assert_eq!(f.by_name("ftrace", "fn").unwrap().id, 1);
        assert!(f.by_name("sched", "fn").is_none());
        assert!(f.by_id(2).is_none());
        assert_eq!(
            f.text_by_id(301),
            Some((
                "sched",
                &fmt_text("bad", 301, "field:int b;\toffset:x;")[..]
            ))
        );
        assert_eq!(f.text_by_id(1).unwrap().0, "ftrace");
        assert!(f.text_by_id(2).is_none());
        assert_eq!(f.ids().collect::<Vec<_>>(), [1, 300, 301]);
        // A format whose fields do not parse is absent, and check says why.
        assert!(f.by_id(301).is_none());
        assert_eq!(f.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 300]);
        let e = f.check().unwrap_err().to_string();
        assert!(e.contains("offset"), "{e}");
        // A bad ID leaves that format out; check says why.
        let f = Formats::new(
            vec![fmt_text("fn", 70000, good), fmt_text("ok", 5, good)],
            Vec::new(),
            8,
        )
        .unwrap();
        assert_eq!(f.ids().collect::<Vec<_>>(), [5]);
        let e = f.check().unwrap_err().to_string();
        assert!(e.contains("ID 70000 does not fit in 16 bits"), "{e}");
    }
}
